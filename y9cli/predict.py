"""``y9 predict SOURCE --model M``: detections for images, folders, videos, streams and cameras (thin: parse,
call ``predict_source``, print)."""

from __future__ import annotations

import signal
import sys
import threading
from contextlib import contextmanager
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer


class Merge(str, Enum):
    nms = "nms"
    nmm = "nmm"


class Policy(str, Enum):
    latest = "latest"
    queue = "queue"


@contextmanager
def _graceful_sigint(stop: threading.Event, say):
    """First Ctrl-C: finish the current frame and stop (results kept); a second one aborts at once."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        if stop.is_set():
            signal.signal(signal.SIGINT, signal.default_int_handler)
            raise KeyboardInterrupt
        stop.set()
        say("stopping after the current frame (Ctrl-C again to abort); results so far are on disk")

    old = signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)


def register(app: typer.Typer) -> None:
    @app.command("predict")
    def predict_cmd(
        source: Annotated[
            str,
            typer.Argument(help="Image, video, folder (recursive), camera index, or rtsp:// / http:// URL."),
        ],
        model: Annotated[
            Path | None,
            typer.Option(
                "--model", "-m", help="Model file: .engine, .onnx or .pt (default: the embedded model)."
            ),
        ] = None,
        conf: Annotated[float, typer.Option("--conf", min=0.0, max=1.0, help="Score threshold.")] = 0.25,
        iou: Annotated[float, typer.Option("--iou", min=0.0, max=1.0, help="NMS IoU threshold.")] = 0.45,
        max_det: Annotated[int, typer.Option("--max-det", min=1, help="Most detections per image.")] = 300,
        classes: Annotated[
            str | None,
            typer.Option(
                "--classes", help="Keep only these classes, names or ids, comma-separated: person,car or 0,2."
            ),
        ] = None,
        class_conf: Annotated[
            list[str] | None,
            typer.Option(
                "--class-conf",
                help="Per-class threshold CLASS=VALUE (name or id), repeatable: "
                "--class-conf person=0.5 --class-conf 2=0.3; other classes keep --conf.",
            ),
        ] = None,  # fmt: skip
        save_dir: Annotated[
            Path | None,
            typer.Option(
                "--save-dir",
                help="Write predictions.jsonl/.csv (flushed per frame), predictions.json and "
                "annotated copies here; refused if it is or is inside the source folder.",
            ),
        ] = None,  # fmt: skip
        device: Annotated[
            str | None, typer.Option("--device", help="cpu, cuda or cuda:N (default: best).")
        ] = None,
        imgsz: Annotated[int | None, typer.Option("--imgsz", help="Input size for .pt checkpoints.")] = None,
        batch: Annotated[int, typer.Option("--batch", min=1, help="Frames per Detector call.")] = 1,
        vid_stride: Annotated[int, typer.Option("--vid-stride", min=1, help="Every n-th video frame.")] = 1,
        tile: Annotated[
            int | None,
            typer.Option(
                "--tile",
                min=32,
                help="Sliced inference: tiles of this size in pixels (use the model's "
                "input size, e.g. 640), sent to the model as batches.",
            ),
        ] = None,  # fmt: skip
        overlap: Annotated[
            float, typer.Option("--overlap", min=0.0, max=0.95, help="Tile overlap (fraction of the tile).")
        ] = 0.2,
        full_frame: Annotated[
            bool, typer.Option("--full-frame", help="With --tile: also run the whole frame (large objects).")
        ] = False,
        merge: Annotated[
            Merge,
            typer.Option("--merge", help="With --tile: merge tile results by NMS or by non-maximum merging."),
        ] = Merge.nms,
        merge_iou: Annotated[
            float,
            typer.Option("--merge-iou", min=0.0, max=1.0, help="With --tile: IoU that matches two boxes."),
        ] = 0.5,
        policy: Annotated[
            Policy | None,
            typer.Option(
                "--policy",
                help="Video/stream frames: latest (drop stale frames; default for streams and "
                "cameras) or queue (keep every frame; default for files).",
            ),
        ] = None,  # fmt: skip
        reconnect_attempts: Annotated[
            int,
            typer.Option(
                "--reconnect-attempts", min=0, help="Streams: reconnect attempts in a row before giving up."
            ),
        ] = 10,
        max_frames: Annotated[
            int | None,
            typer.Option("--max-frames", min=1, help="Stop each video or stream after this many frames."),
        ] = None,
        stdout: Annotated[
            bool,
            typer.Option("--stdout", help="Also print each frame's JSON line on stdout (summary on stderr)."),
        ] = False,
        final_json: Annotated[
            bool,
            typer.Option("--json/--no-json", help="Build predictions.json from the JSON lines at the end."),
        ] = True,
        no_images: Annotated[
            bool, typer.Option("--no-images", help="Write JSON/CSV only, no annotated copies.")
        ] = False,
    ) -> None:
        """Detect objects in images, folders, videos, streams and cameras; results are flushed per frame.

        Exit status:

        0: every input was processed.

        1: finished, but inputs were skipped (unreadable, more pixels than y9 --max-image-pixels, cut short or
        corrupt; a video with frames that could not be decoded), each named in a warning and in predictions.json.

        130: stopped by Ctrl-C; the results of the frames done are on disk.

        2: an error (a bad model, option or source; a stream that cannot be opened or is lost for good).
        """
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        from y9deploy.pipelines.batch_predict import predict_source
        from y9deploy.pipelines.class_options import parse_class_conf
        from y9deploy.pipelines.tiling import TileOptions
        from y9deploy.pipelines.video import ReconnectPolicy

        if model is None:
            from y9deploy.default_model import default_model_path

            model = default_model_path()
        tokens = [c.strip() for c in classes.split(",") if c.strip()] if classes else None
        per_class = parse_class_conf(class_conf or [])
        tiling = TileOptions(tile=tile, overlap=overlap, full_frame=full_frame, merge=merge.value, iou=merge_iou) \
            if tile is not None else None  # fmt: skip
        console = Console(stderr=True)
        stop = threading.Event()
        echo = (lambda msg: typer.echo(msg, err=True)) if stdout else typer.echo
        with (
            _graceful_sigint(stop, lambda m: console.print(f"[yellow]{m}")),
            Progress(
                TextColumn("[bold]predict"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TextColumn("{task.description}"),
                console=console,
                transient=False,
            ) as bar,
        ):
            task = bar.add_task("", total=None)
            summary = predict_source(
                source,
                model,
                save_dir=save_dir,
                conf=conf,
                iou=iou,
                max_det=max_det,
                classes=tokens,
                class_conf=per_class,
                device=device,
                imgsz=imgsz,
                vid_stride=vid_stride,
                save_images=not no_images,
                batch=batch,
                tile=tiling,
                policy=policy.value if policy is not None else None,
                reconnect=ReconnectPolicy(attempts=reconnect_attempts),
                max_frames=max_frames,
                final_json=final_json,
                jsonl_stream=sys.stdout if stdout else None,
                stop=stop,
                on_start=lambda total: bar.update(task, total=total),
                on_frame=lambda name, n: bar.update(
                    task, advance=1, description=f"{Path(name).name}: {n} objects"
                ),
                on_warning=lambda msg: console.print(f"warning: {msg}", style="yellow", markup=False),
            )
        fps = summary.frames / summary.seconds if summary.seconds > 0 else 0.0
        extra = "".join([f", {len(summary.skipped)} skipped" if summary.skipped else "",
                         f", {summary.dropped} dropped (latest policy)" if summary.dropped else "",
                         f", {summary.reconnects} reconnects" if summary.reconnects else ""])  # fmt: skip
        echo(
            f"{summary.frames} frames ({summary.images} images, {summary.videos} videos), "
            f"{summary.detections} detections, {fps:.1f} frames/s{extra}"
        )
        for path, reason in summary.skipped:
            echo(f"skipped {path}: {reason}")
        if summary.interrupted:
            echo("interrupted: the results of the frames done so far are saved")
        if summary.save_dir is not None:
            echo(
                f"saved to {summary.save_dir} (predictions.jsonl, predictions.csv"
                f"{', predictions.json' if summary.json_path else ''}"
                f"{', annotated outputs' if summary.outputs else ''})"
            )
        if summary.exit_code:
            raise typer.Exit(summary.exit_code)
