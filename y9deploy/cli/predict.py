"""``y9 predict SOURCE --model M``: detections for images, folders and videos (thin: parse, call, print)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def register(app: typer.Typer) -> None:
    @app.command("predict")
    def predict_cmd(
        source: Annotated[
            str, typer.Argument(help="Image, video, folder (recursive), camera index or stream URL.")
        ],
        model: Annotated[Path, typer.Option("--model", "-m", help="Model file: .engine, .onnx or .pt.")],
        conf: Annotated[float, typer.Option("--conf", min=0.0, max=1.0, help="Score threshold.")] = 0.25,
        iou: Annotated[float, typer.Option("--iou", min=0.0, max=1.0, help="NMS IoU threshold.")] = 0.45,
        max_det: Annotated[int, typer.Option("--max-det", min=1, help="Most detections per image.")] = 300,
        classes: Annotated[
            str | None,
            typer.Option("--classes", help="Keep only these class ids, comma-separated, e.g. 0,2."),
        ] = None,
        save_dir: Annotated[
            Path | None,
            typer.Option("--save-dir", help="Write annotated outputs, predictions.json and .csv here."),
        ] = None,
        device: Annotated[
            str | None, typer.Option("--device", help="cpu, cuda or cuda:N (default: best).")
        ] = None,
        imgsz: Annotated[int | None, typer.Option("--imgsz", help="Input size for .pt checkpoints.")] = None,
        vid_stride: Annotated[int, typer.Option("--vid-stride", min=1, help="Every n-th video frame.")] = 1,
        no_images: Annotated[
            bool, typer.Option("--no-images", help="Write JSON/CSV only, no annotated copies.")
        ] = False,
    ) -> None:
        """Detect objects in images, folders and videos; annotated copies and JSON/CSV go to --save-dir."""
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        from y9deploy.pipelines.batch_predict import predict_source

        class_ids = [int(c) for c in classes.split(",") if c.strip()] if classes else None
        console = Console(stderr=True)
        with Progress(
            TextColumn("[bold]predict"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.description}"),
            console=console,
            transient=False,
        ) as bar:
            task = bar.add_task("", total=None)
            summary = predict_source(
                source,
                model,
                save_dir=save_dir,
                conf=conf,
                iou=iou,
                max_det=max_det,
                classes=class_ids,
                device=device,
                imgsz=imgsz,
                vid_stride=vid_stride,
                save_images=not no_images,
                on_start=lambda total: bar.update(task, total=total),
                on_frame=lambda name, n: bar.update(
                    task, advance=1, description=f"{Path(name).name}: {n} objects"
                ),
            )
        fps = summary.frames / summary.seconds if summary.seconds > 0 else 0.0
        typer.echo(
            f"{summary.frames} frames ({summary.images} images, {summary.videos} videos), "
            f"{summary.detections} detections, {fps:.1f} frames/s"
        )
        if summary.save_dir is not None:
            typer.echo(
                f"saved to {summary.save_dir} (predictions.json, predictions.csv"
                f"{', annotated outputs' if summary.outputs else ''})"
            )
