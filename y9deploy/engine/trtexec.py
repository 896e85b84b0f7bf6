"""The ``trtexec`` command that builds the same engine as ``y9 build-engine`` with NVIDIA's own tool, e.g. on the
target device itself (a Jetson, a server with the full TensorRT): same ONNX, optimization profile, precision and
workspace. An engine built that way runs in ``Detector`` without a manifest (``y9deploy.runtime.backends.foreign_engine``).
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path


def _shape(dims: Sequence[int]) -> str:
    return "x".join(str(int(d)) for d in dims)


def trtexec_command(
    onnx_path: str | Path,
    engine_path: str | Path,
    *,
    profile: Mapping[str, Sequence[int]] | None,
    fp16: bool,
    onnx_is_fp16: bool,
    workspace_gb: float,
    input_name: str = "images",
) -> str:
    """The equivalent ``trtexec`` command line (one string, shell-quoted).

    ``profile``: ``{"min", "opt", "max"}`` shapes of ``input_name`` (None for a static input, which needs none);
    ``fp16``: an FP16 engine (``--fp16`` on an FP32 ONNX; an FP16 ONNX builds strongly typed, ``--stronglyTyped``).
    """
    args = ["trtexec", f"--onnx={onnx_path}", f"--saveEngine={engine_path}"]
    if profile is not None and profile["min"] != profile["max"]:
        for key in ("min", "opt", "max"):
            args.append(f"--{key}Shapes={input_name}:{_shape(profile[key])}")
    if onnx_is_fp16:
        args.append("--stronglyTyped")
    elif fp16:
        args.append("--fp16")
    args.append(f"--memPoolSize=workspace:{int(round(workspace_gb * 1024))}M")
    return shlex.join(args)


def parse_shapes(command: str) -> dict[str, list[int]]:
    """``{"min": [1, 3, 416, 416], ...}`` from a trtexec command's ``--minShapes/--optShapes/--maxShapes``."""
    out = {}
    for arg in shlex.split(command):
        for key in ("min", "opt", "max"):
            flag = f"--{key}Shapes="
            if arg.startswith(flag):
                out[key] = [int(d) for d in arg[len(flag):].split(":", 1)[1].split("x")]
    return out
