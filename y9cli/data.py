"""``y9 data check``, ``y9 convert visdrone`` and ``y9 bench-data``: thin wrappers over ``y9train.data``."""

from __future__ import annotations

import json
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from y9cli.outputs import writing


class CacheMode(str, Enum):  # the trainer's CACHE_CHOICES (tests/cli/test_train_options.py)
    none = "none"
    ram = "ram"
    disk = "disk"


class LinkMode(str, Enum):
    hard = "hard"
    copy = "copy"
    symlink = "symlink"


def _print_stats(stats) -> None:
    from rich.box import SIMPLE
    from rich.console import Console
    from rich.table import Table

    console = Console()
    counts = Table(
        title=str(stats.data_yaml),
        caption="labels: images with a label file; bg: background images (no box); small/medium/large: COCO "
        "box areas in source pixels (< 32², < 96², larger); skipped: unreadable images left out",
        box=SIMPLE,
    )
    columns = ("split", "images", "labels", "bg", "boxes", "small", "medium", "large", "skipped")
    for col in columns:
        counts.add_column(col, justify="right" if col != "split" else "left")
    for s in stats.splits.values():
        counts.add_row(
            s.split,
            *(str(v) for v in (s.images, s.label_files, s.backgrounds, s.boxes, s.small, s.medium, s.large)),
            str(len(s.skipped)),
        )
    console.print(counts)
    classes = Table(title="boxes per class")
    classes.add_column("class")
    classes.add_column("name")
    for s in stats.splits.values():
        classes.add_column(s.split, justify="right")
    for i, name in enumerate(stats.names):
        classes.add_row(str(i), name, *(str(s.class_counts[i]) for s in stats.splits.values()))
    console.print(classes)
    sizes = Table(title="box size, sqrt(area) in original pixels (COCO: small < 32, medium < 96)")
    sizes.add_column("size")
    for s in stats.splits.values():
        sizes.add_column(s.split, justify="right")
    first = next(iter(stats.splits.values()))
    for k, (lo, hi, _) in enumerate(first.size_hist):
        label = f"{lo:g}-{hi:g}" if hi != float("inf") else f">= {lo:g}"
        sizes.add_row(label, *(str(s.size_hist[k][2]) for s in stats.splits.values()))
    console.print(sizes)
    for s in stats.splits.values():
        for path, why in s.skipped:
            console.print(f"[yellow]skipped[/yellow] {path}: it {why}", markup=True, highlight=False)
        if s.issues:
            counts = ", ".join(f"{n} {kind}" for kind, n in s.issue_counts.items() if n)
            console.print(
                f"[yellow]{s.split}: {len(s.issues)} label line(s) fixed or dropped ({counts})[/yellow]"
            )
            for line in s.issues[:SHOWN_ISSUES]:
                console.print(f"  {line}", markup=False, highlight=False)
            if len(s.issues) > SHOWN_ISSUES:
                console.print(f"  ... and {len(s.issues) - SHOWN_ISSUES} more", markup=False)
        if s.layout_warning:
            console.print(f"[bold yellow]warning[/bold yellow] {s.split}: ", end="")
            console.print(s.layout_warning, markup=False, highlight=False)
    for text in stats.warnings:
        console.print("[bold yellow]warning[/bold yellow] ", end="")
        console.print(text, markup=False, highlight=False)


SHOWN_ISSUES = 200  # label issues listed per split (the rest counted)


def data_check(
    data: Annotated[Path, typer.Argument(help="data.yaml of the dataset.")],
    cache_dir: Annotated[
        Path | None, typer.Option(help="Where the label cache goes (default beside the labels).")
    ] = None,
    no_cache: Annotated[
        bool, typer.Option("--no-cache", help="Neither read nor write the label cache.")
    ] = False,
) -> None:
    """Validate a dataset and print counts, the class histogram and box sizes.

    A bad label line stops with its file:line; zero-size boxes and repeated lines are dropped, small overshoots
    clipped, each listed by file:line (docs/training.md, "Label files"). Unusable images (unreadable, more pixels
    than y9 --max-image-pixels, cut short, corrupt JPEG data, degenerate sizes) and list entries that are not images
    are listed and skipped: training runs without them. A train split without a single box is an error naming where
    labels were looked for. Warnings: class names differing only in case or spaces, a val split sharing train's
    images, label files without an image, EXIF-turned images (docs/training.md, "Dataset warnings"); a damaged
    label cache is rebuilt with a warning.
    """
    from y9train.data.check import check_dataset

    _print_stats(check_dataset(data, cache_dir=cache_dir, label_cache=not no_cache))


def convert_visdrone_cmd(
    src: Annotated[
        Path, typer.Argument(help="A VisDrone-DET split folder (images/, annotations/) or their parent.")
    ],
    dst: Annotated[Path, typer.Argument(help="Output folder: images/<split>, labels/<split>, data.yaml.")],
    link: Annotated[LinkMode, typer.Option(help="How images reach DST.")] = LinkMode.hard,
    exist_ok: Annotated[
        bool,
        typer.Option("--exist-ok", help="Write into a DST that holds files (files of the same name are replaced)."),
    ] = False,
) -> None:
    """Convert VisDrone-DET annotations to YOLO labels (ignored regions and 'others' dropped)."""
    from y9core.files.run_dir import resolve_output_dir
    from y9train.data.convert_visdrone import convert_visdrone

    run = resolve_output_dir(dst, task="convert", exist_ok=exist_ok, inputs=[src], option="DST")
    with writing(run, reuse="files of the same name are replaced, the others kept"):
        r = convert_visdrone(src, dst, link=link.value)
    images = ", ".join(f"{k}: {v}" for k, v in r.images.items())
    typer.echo(
        f"wrote {r.data_yaml} ({images} images, {r.boxes} boxes; dropped {r.dropped_ignored} ignored regions, "
        f"{r.dropped_others} 'others', {r.dropped_empty} empty after clipping)"
    )


def bench_data(
    data: Annotated[Path, typer.Argument(help="data.yaml of the dataset (its train split is loaded).")],
    imgsz: Annotated[int, typer.Option(help="Network input size.")] = 640,
    batch: Annotated[int, typer.Option(help="Images per batch.")] = 64,
    workers: Annotated[int, typer.Option(help="DataLoader worker processes.")] = 8,
    cache: Annotated[CacheMode, typer.Option(help="Image cache.")] = CacheMode.ram,
    mosaic: Annotated[bool, typer.Option("--mosaic/--no-mosaic", help="Mosaic augmentation.")] = True,
    batches: Annotated[int, typer.Option(help="Timed batches (after warm-up).")] = 30,
    warmup: Annotated[int, typer.Option(help="Batches before timing starts.")] = 3,
    repeat: Annotated[int, typer.Option(help="List each image this many times per epoch.")] = 1,
    cache_dir: Annotated[Path | None, typer.Option(help="Where caches go (default beside the data).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
) -> None:
    """Measure the training loader alone: images per second with the augmentation pipeline."""
    from y9train.data.bench import bench_loader

    r = bench_loader(
        data,
        imgsz=imgsz,
        batch=batch,
        workers=workers,
        cache=None if cache is CacheMode.none else cache.value,
        mosaic=mosaic,
        batches=batches,
        warmup=warmup,
        repeat=repeat,
        cache_dir=cache_dir,
    )
    if as_json:
        typer.echo(json.dumps(r.to_dict(), indent=1))
        return
    typer.echo(
        f"{r.images_per_s:.1f} img/s ({r.images} images in {r.seconds:.2f} s; imgsz {r.imgsz}, batch {r.batch}, "
        f"{r.workers} workers, cache {r.cache}, mosaic {'on' if r.mosaic else 'off'}, {r.dataset_images} images/epoch, "
        f"setup {r.setup_s:.1f} s, first batch {r.first_batch_s:.1f} s, {r.cpu_count} CPUs)"
    )


def register(app: typer.Typer) -> None:
    data_app = typer.Typer(help="Dataset tools.", no_args_is_help=True)
    data_app.command("check")(data_check)
    app.add_typer(data_app, name="data")
    convert_app = typer.Typer(help="Convert datasets to the YOLO format.", no_args_is_help=True)
    convert_app.command("visdrone")(convert_visdrone_cmd)
    app.add_typer(convert_app, name="convert")
    app.command("bench-data")(bench_data)
