"""The frame-reading options that ``y9 predict`` and ``y9 inspect`` share for videos, streams and cameras."""

from __future__ import annotations

from enum import Enum
from typing import Annotated

import typer


class Policy(str, Enum):
    latest = "latest"
    queue = "queue"


PolicyOption = Annotated[
    Policy | None,
    typer.Option("--policy", help="Video/stream frames: latest (drop stale frames; default for streams and cameras) "
                                  "or queue (keep every frame; default for files)."),
]  # fmt: skip
ReconnectAttemptsOption = Annotated[
    int, typer.Option("--reconnect-attempts", min=0, help="Streams: reconnect attempts in a row before giving up.")
]
MaxFramesOption = Annotated[
    int | None, typer.Option("--max-frames", min=1, help="Stop each video or stream after this many frames.")
]
