"""``y9 predict SOURCE --model M``: detections for images, folders, videos, streams and cameras (thin: parse,
call ``predict_source``, print)."""

from __future__ import annotations

import sys
import threading
from contextlib import nullcontext
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from y9cli.interrupts import (
    command_line,
    command_line_args,
    exit_code,
    graceful_stop,
    interrupted_line,
    on_interrupt,
)
from y9cli.outputs import ExistOkOption, NameOption, ProjectOption, note, run_folder, writing
from y9cli.stream_options import MaxFramesOption, PolicyOption, ReconnectAttemptsOption
from y9cli.track_options import CountLineOption, TrackOption, ZoneOption, count_lines, track_options
from y9core.wording import plural


class Merge(str, Enum):
    nms = "nms"
    nmm = "nmm"


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
                "--model", "-m", help="Model file: .engine, .onnx or .pt, or official weights by name "
                "(yolov9-c.pt, gelan-c.pt ...: downloaded once into ~/.cache/y9/weights). Default: the embedded "
                "demonstration model."
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
        project: ProjectOption = None,
        name: NameOption = None,
        exist_ok: ExistOkOption = False,
        resume: Annotated[
            bool,
            typer.Option("--resume", help="Go on with the stopped run in --name's folder: images it has results for "
                                          "are left out, videos go on after their last frame done, the rest is "
                                          "appended (what Ctrl-C prints)."),
        ] = False,  # fmt: skip
        no_save: Annotated[
            bool, typer.Option("--no-save", help="Write no files (with --stdout: JSON lines on stdout only).")
        ] = False,
        agnostic_nms: Annotated[bool, typer.Option("--agnostic-nms", help="Class-agnostic NMS.")] = False,
        half: Annotated[
            bool | None, typer.Option("--half/--no-half", help="FP16 (.pt checkpoints; default: on CUDA).")
        ] = None,
        line_width: Annotated[
            int | None, typer.Option("--line-width", min=1, help="Box lines of the annotated copies, in pixels.")
        ] = None,
        show_labels: Annotated[
            bool, typer.Option("--show-labels/--hide-labels", help="Class names on the annotated copies.")
        ] = True,
        show_conf: Annotated[
            bool, typer.Option("--show-conf/--hide-conf", help="Scores on the annotated copies.")
        ] = True,
        save_dir: Annotated[
            Path | None,
            typer.Option("--save-dir", hidden=True, help="Deprecated: --project DIR --name NAME."),
        ] = None,
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
        policy: PolicyOption = None,
        reconnect_attempts: ReconnectAttemptsOption = 10,
        max_frames: MaxFramesOption = None,
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
        track: TrackOption = None,  # tracking and counting: y9cli/track_options.py
        count_line: CountLineOption = None,
        zone: ZoneOption = None,
        # -- optional result files (y9deploy.pipelines.predict.files) --
        save_txt: Annotated[
            bool, typer.Option("--save-txt", help="labels/<image>.txt: YOLO-format lines class cx cy w h (normalised).")
        ] = False,
        save_conf: Annotated[
            bool, typer.Option("--save-conf", help="With --save-txt: a sixth column, the confidence.")
        ] = False,
        save_crop: Annotated[
            bool, typer.Option("--save-crop", help="crops/<class name>/<image>_<k>.jpg: each detection's pixels.")
        ] = False,
        save_json: Annotated[
            bool,
            typer.Option("--save-json", help="predictions_coco.json: the COCO results format (image_id, "
                         "category_id: COCO's 91-class ids for COCO-80 models, else the class id; bbox x,y,w,h, "
                         "score)."),
        ] = False,  # fmt: skip
    ) -> None:
        """Detect objects in images, folders, videos, streams and cameras; results are flushed per frame.

        Exit status:

        0: every input was processed.

        1: finished, but inputs were skipped (unreadable, more pixels than y9 --max-image-pixels, cut short or
        corrupt; a video with frames that could not be decoded), each named in a warning and in predictions.json.

        130 / 143: stopped by Ctrl-C / SIGTERM; the results of the frames done are on disk.

        2: an error (a bad model, option or source; a stream that cannot be opened or is lost for good; the only
        input cannot be read: no run folder is left).
        """
        from rich.console import Console

        from y9deploy.pipelines.predict.files import SaveOptions
        from y9deploy.pipelines.predict.run import predict_source
        from y9deploy.pipelines.sources.frame_reader import ReconnectPolicy
        from y9deploy.pipelines.sources.kinds import source_roots

        if model is None:
            from y9deploy.default_model import default_model_path

            model = default_model_path()
            note(DEMO_NOTE)
        else:
            from y9.model_files import model_file

            model = model_file(model)  # official weights by name (-m yolov9-c.pt): downloaded once
        if resume and (name is None or no_save):
            raise typer.BadParameter("--resume goes on with a named run folder; expected --name NAME (and no --no-save).")
        filters = _filters(classes, class_conf)
        tiling = _tiling(tile, overlap, full_frame, merge, merge_iou)
        run = None if no_save else run_folder("predict", project=project, name=name, exist_ok=exist_ok or resume,
                                              legacy=save_dir, inputs=source_roots(source))  # fmt: skip
        console = Console(stderr=True)
        stop, stopped_by = threading.Event(), []
        bar = _LazyBar(console)
        on_interrupt(lambda: _kept(run, bar.frames), lambda: _go_on(run))
        with (
            writing(run, reuse=REUSE) if run is not None else nullcontext(),
            graceful_stop(stop, lambda m: console.print(f"[yellow]{m}"), stopped_by),
            bar,
        ):
            summary = predict_source(
                source, model, save_dir=run.path if run is not None else None, append=bool(run and run.earlier),
                resume=resume,
                conf=conf, iou=iou, max_det=max_det, device=device, imgsz=imgsz, vid_stride=vid_stride,
                save_images=not no_images, batch=batch, tile=tiling,
                policy=policy.value if policy is not None else None,
                reconnect=ReconnectPolicy(attempts=reconnect_attempts), max_frames=max_frames,
                final_json=final_json, jsonl_stream=sys.stdout if stdout else None, stop=stop,
                track=track_options(track, count_line, zone),
                save=SaveOptions(txt=save_txt, conf=save_conf, crop=save_crop, coco_json=save_json),
                on_start=bar.start, on_frame=bar.advance,
                on_warning=lambda msg: console.print(f"warning: {msg}", style="yellow", markup=False),
                agnostic=agnostic_nms, half=half,
                draw={"thickness": line_width, "show_labels": show_labels, "show_scores": show_conf},
                **filters,
            )  # fmt: skip
            if not stopped_by:
                bar.finish()  # skipped inputs were gone through too: the bar ends full
        _report(summary, (lambda msg: typer.echo(msg, err=True)) if stdout else typer.echo)
        if stopped_by:
            typer.secho(interrupted_line(stopped_by[0]), fg=typer.colors.YELLOW, err=True)
            raise typer.Exit(exit_code(stopped_by[0]))
        if summary.exit_code:
            raise typer.Exit(summary.exit_code)


DEMO_NOTE = ("no --model given: using the embedded demonstration model (gelan-s trained on 112 coco128 images; it "
             "finds little on images it has not seen); pass -m MODEL (e.g. -m yolov9-c.pt, downloaded once) for real "
             "use.")  # fmt: skip

#: options the command that goes on with a stopped run replaces (with the values they take)
_RUN_OPTIONS = {"--name": 1, "--project": 1, "--save-dir": 1, "--exist-ok": 0, "--resume": 0}


def _go_on(run) -> str:
    """The command that goes on with a stopped run, as it can be pasted: the same arguments, the run's folder by
    --project/--name, and --resume (the images done are left out, the results appended)."""
    if run is None:
        return f"to predict again: {command_line()}"
    args, argv = [], list(command_line_args())
    while argv:
        arg = argv.pop(0)
        flag = arg.split("=", 1)[0]
        if flag in _RUN_OPTIONS:
            if "=" not in arg:
                del argv[: _RUN_OPTIONS[flag]]
            continue
        args.append(arg)
    return f"to go on: {command_line([*args, '--project', str(run.path.parent), '--name', run.path.name, '--resume'])}"


def _kept(run, frames: int) -> str:
    """What a stopped predict run kept."""
    if run is None:
        return f"nothing was saved (--no-save; {plural(frames, 'frame')} done)"
    return f"kept {run.path} (predictions.jsonl, .csv and .json with the {plural(frames, 'frame')} done)"


REUSE = "predictions.jsonl and .csv are appended to, predictions.json is rebuilt from all their lines, annotated copies get new names"


def _filters(classes: str | None, class_conf: list[str] | None) -> dict:
    """``--classes`` and ``--class-conf`` as ``predict_source`` arguments."""
    from y9deploy.pipelines.predict.class_options import parse_class_conf

    tokens = [c.strip() for c in classes.split(",") if c.strip()] if classes else None
    return {"classes": tokens, "class_conf": parse_class_conf(class_conf or [])}


def _tiling(tile: int | None, overlap: float, full_frame: bool, merge: Merge, merge_iou: float):
    """The ``TileOptions`` of ``--tile`` and its companions (None: whole frames)."""
    if tile is None:
        return None
    from y9deploy.pipelines.tiling import TileOptions

    return TileOptions(tile=tile, overlap=overlap, full_frame=full_frame, merge=merge.value, iou=merge_iou)


class _LazyBar:
    """The progress bar, drawn from the first frame on: nothing is drawn before the source and model are checked
    (an error is then one line, with no bar above it)."""

    def __init__(self, console) -> None:
        self.console = console
        self.progress = None
        self.task = None
        self.total: int | None = None
        self.frames = 0

    def start(self, total: int | None) -> None:
        self.total = total  # drawn at the first frame: a camera or stream that cannot be opened draws nothing

    def _draw(self) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.progress = Progress(TextColumn("[bold]predict"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                                 TextColumn("{task.description}"), console=self.console, transient=False)  # fmt: skip
        self.progress.start()
        self.task = self.progress.add_task("", total=self.total)

    def advance(self, name: str, n: int) -> None:
        self.frames += 1
        if self.progress is None:
            self._draw()
        self.progress.update(self.task, advance=1, description=f"{Path(name).name}: {plural(n, 'object')}")

    def finish(self) -> None:
        """The run went through every input: the bar shows its total (skipped images and undecodable frames count
        as gone through; the summary line says how many were skipped)."""
        if self.progress is not None and self.total:
            self.progress.update(self.task, completed=self.total)

    def __enter__(self) -> _LazyBar:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.progress is not None:
            self.progress.stop()


def _report(summary, echo) -> None:
    """The summary lines of a finished (or stopped) run."""
    fps = summary.frames / summary.seconds if summary.seconds > 0 else 0.0
    extra = "".join([f", {len(summary.skipped)} skipped" if summary.skipped else "",
                     f", {summary.dropped} dropped (latest policy)" if summary.dropped else "",
                     f", {plural(summary.reconnects, 'reconnect')}" if summary.reconnects else ""])  # fmt: skip
    echo(
        f"{plural(summary.frames, 'frame')} ({plural(summary.images, 'image')}, {plural(summary.videos, 'video')}), "
        f"{plural(summary.detections, 'detection')}, {fps:.1f} frames/s{extra}"
    )
    if summary.resumed:
        echo(f"{plural(summary.resumed, 'frame')} done by the earlier run left out (--resume)")
    for path, reason in summary.skipped:
        echo(f"skipped {path}: {reason}")
    for line in count_lines(summary):
        echo(line)
    if summary.save_dir is not None:
        echo(
            f"saved to {summary.save_dir} (predictions.jsonl, predictions.csv"
            f"{', predictions.json' if summary.json_path else ''}"
            f"{', annotated outputs' if summary.outputs else ''}"
            f"{''.join(', ' + p.name + ('/' if p.is_dir() else '') for p in summary.files)})"
        )
