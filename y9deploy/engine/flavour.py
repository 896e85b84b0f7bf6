"""The ONE place that knows the difference between the full TensorRT and TensorRT-RTX.

Both flavours share the TensorRT 10 builder API (``Builder``, ``OnnxParser``, ``IBuilderConfig`` with
``set_memory_pool_limit``, ``build_serialized_network``, named I/O tensors). What differs, and lives here:

| | ``tensorrt`` (NVIDIA's package index) | ``tensorrt_rtx`` (PyPI ``tensorrt-rtx``) |
|---|---|---|
| GPUs | any NVIDIA GPU | RTX GPUs: sm75, sm80, sm86, sm89, sm120, sm121 (not Hopper) |
| FP16 | ``BuilderFlag.FP16`` on a weakly typed network (TensorRT 10); strong typing with an FP16 ONNX where the flag is gone (TensorRT 11) | strongly typed: the ONNX is converted to FP16 first |
| ahead-of-time target | no: builds for the GPU it runs on | yes: ``num_compute_capabilities`` + ``set_compute_capability`` |
| timing cache | loaded and saved | ignored (its timing-cache calls are no-ops) |
| ONNX NonMaxSuppression | built as its NMS layer | parsed, but the builder has no implementation |

Nothing here imports a TensorRT module at import time; :func:`load_flavour` does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from importlib import import_module
from types import ModuleType
from typing import Any, Literal

from y9core.errors import BackendUnavailableError

FlavourName = Literal["tensorrt", "tensorrt_rtx"]
FLAVOURS: tuple[str, ...] = ("tensorrt", "tensorrt_rtx")

DISPLAY = {"tensorrt": "TensorRT", "tensorrt_rtx": "TensorRT-RTX"}

# What TensorRT-RTX 1.x builds for (its ComputeCapability enum; the loaded module is the authority, see
# Flavour.aot_targets). Kept here for sentences written without importing TensorRT.
RTX_TARGETS = ("sm75", "sm80", "sm86", "sm89", "sm120", "sm121")

INSTALL_HINT = (
    "install `tensorrt` from NVIDIA's package index "
    "(pip install --extra-index-url https://pypi.nvidia.com tensorrt) for any NVIDIA GPU, "
    f"or `tensorrt-rtx` from PyPI (pip install tensorrt-rtx) for RTX GPUs ({'/'.join(RTX_TARGETS)}), "
    "which can also build engines ahead of time on a machine without a GPU"
)


def normalize_cc(value: Any) -> str | None:
    """A compute capability as ``"sm89"``: accepts ``"sm89"``, ``"SM89"``, ``"sm_89"``, ``"8.9"``, ``"89"``,
    ``(8, 9)`` or ``None`` (returned as ``None``). Raises ValueError for anything else."""
    if value is None:
        return None
    if isinstance(value, (tuple, list)) and len(value) == 2:
        return f"sm{int(value[0])}{int(value[1])}"
    text = str(value).strip().lower()
    match = re.fullmatch(r"(?:sm_?)?(\d{1,2})\.?(\d)", text)
    if not match:
        raise ValueError(
            f"compute capability {value!r} is not understood; expected a form like 'sm89', '8.9' or '89'"
        )
    return f"sm{int(match.group(1))}{match.group(2)}"


@dataclass(frozen=True)
class Flavour:
    """An installed TensorRT flavour and everything the builder must do differently for it.

    ``trt`` is the imported module (``tensorrt`` or ``tensorrt_rtx``); ``version`` its full version string
    (engines are valid only for the exact version that built them).
    """

    name: str
    trt: ModuleType = field(repr=False, compare=False)
    version: str

    # -- facts ---------------------------------------------------------------------------------------
    @property
    def display(self) -> str:
        """``"TensorRT-RTX 1.7.1.116"``."""
        return f"{DISPLAY[self.name]} {self.version}"

    @property
    def is_rtx(self) -> bool:
        return self.name == "tensorrt_rtx"

    @property
    def fp16_by_onnx_conversion(self) -> bool:
        """True where FP16 comes from an FP16 ONNX (strong typing), False where ``BuilderFlag.FP16`` does it."""
        return self.is_rtx or not hasattr(self.trt.BuilderFlag, "FP16")

    @property
    def aot_targets(self) -> tuple[str, ...]:
        """Compute capabilities this flavour can build for ahead of time (empty: only the local GPU)."""
        if not self.is_rtx or not hasattr(self.trt, "ComputeCapability"):
            return ()
        names = [n for n in self.trt.ComputeCapability.__members__ if re.fullmatch(r"SM\d+", n)]
        return tuple(n.lower() for n in names)

    @property
    def supports_timing_cache(self) -> bool:
        return not self.is_rtx

    @property
    def builds_nms(self) -> bool:
        """Whether the builder has an implementation of the ONNX NonMaxSuppression op."""
        return not self.is_rtx

    # -- sentences -----------------------------------------------------------------------------------
    def refuse_nms_reason(self, onnx_path: Any) -> str:
        return (
            f"{onnx_path} is an end2end export (it holds the ONNX NonMaxSuppression op), which "
            f"{self.display} parses but cannot build (its builder has no implementation of that op); "
            "export without --end2end and the Detector runs NMS on the host, "
            "or build it with the full `tensorrt` package"
        )

    def timing_cache_note(self) -> str:
        return f"{self.display} ignores timing caches (its timing-cache calls are no-ops), so none was read or written"

    def check_target(self, target: str | None, local_cc: str | None) -> str:
        """The compute capability to build for, or a ValueError / BackendUnavailableError sentence.

        ``target`` is the requested one (``None``: the local GPU); ``local_cc`` the GPU of this machine.
        """
        if self.aot_targets:
            if target is None:
                if local_cc is None:
                    raise BackendUnavailableError(
                        f"no NVIDIA GPU was found to build for; with {self.display} pass a target to build "
                        f"ahead of time, e.g. --target sm89 (one of {', '.join(self.aot_targets)})"
                    )
                target = local_cc
            if target not in self.aot_targets:
                raise ValueError(
                    f"{self.display} cannot build for {target}: it supports {', '.join(self.aot_targets)} "
                    "(RTX GPUs); for other NVIDIA GPUs (e.g. Hopper sm90) build on that GPU with the full "
                    "`tensorrt` package"
                )
            return target
        # The full TensorRT builds only for the GPU it runs on.
        if local_cc is None:
            raise BackendUnavailableError(
                f"{self.display} needs an NVIDIA GPU to build an engine and none was found; build on the "
                "target machine, or use `tensorrt-rtx` (pip install tensorrt-rtx) with --target sm89 to build "
                "ahead of time for an RTX GPU"
            )
        if target is not None and target != local_cc:
            raise ValueError(
                f"{self.display} cannot build ahead of time for {target}: it builds only for the GPU it runs "
                f"on ({local_cc} here); build on a {target} machine, or use `tensorrt-rtx` with "
                f"--target {target} if that is an RTX GPU"
            )
        return local_cc

    # -- builder configuration -----------------------------------------------------------------------
    def network_flags(self) -> int:
        """Flags for ``Builder.create_network``: explicit batch is the TensorRT 10 default (0); strongly
        typed where FP16 comes from the ONNX on the full TensorRT (TensorRT-RTX is always strongly typed)."""
        trt = self.trt
        if not self.is_rtx and self.fp16_by_onnx_conversion:
            return 1 << int(trt.NetworkDefinitionCreationFlag.STRONGLY_TYPED)
        return 0

    def apply_precision(self, config: Any, fp16: bool, int8: bool = False) -> None:
        """FP16 by builder flag where that is how this flavour does it; otherwise the ONNX already is FP16. ``int8``
        (a QDQ ONNX): the INT8 flag where the network is not strongly typed (the Q/DQ nodes set the precision)."""
        if fp16 and not self.fp16_by_onnx_conversion:
            config.set_flag(self.trt.BuilderFlag.FP16)
        if int8 and self.network_flags() == 0 and hasattr(self.trt.BuilderFlag, "INT8") and not self.is_rtx:
            config.set_flag(self.trt.BuilderFlag.INT8)

    def apply_target(self, config: Any, target: str, local_cc: str | None) -> bool:
        """Set the ahead-of-time compute capability where supported; True when the build is ahead of time."""
        if not self.aot_targets:
            return False
        config.num_compute_capabilities = 1
        config.set_compute_capability(getattr(self.trt.ComputeCapability, target.upper()), 0)
        return target != local_cc

    def make_progress_monitor(self, callback: Any) -> Any | None:
        """A ``trt.IProgressMonitor`` forwarding to ``callback`` (phase_start/step_complete/phase_finish),
        or None where this TensorRT has no progress monitor interface."""
        base = getattr(self.trt, "IProgressMonitor", None)
        if base is None or callback is None:
            return None

        class _Monitor(base):  # type: ignore[misc, valid-type]
            def __init__(self) -> None:
                base.__init__(self)

            def phase_start(self, phase_name: str, parent_phase: str | None, num_steps: int) -> None:
                callback.phase_start(phase_name, parent_phase, num_steps)

            def step_complete(self, phase_name: str, step: int) -> bool:
                return bool(callback.step_complete(phase_name, step))

            def phase_finish(self, phase_name: str) -> None:
                callback.phase_finish(phase_name)

        return _Monitor()


def _import(name: str) -> ModuleType | None:
    try:
        return import_module(name)
    except ImportError:
        return None


def available_flavours() -> list[str]:
    """Names of the installed flavours, ``tensorrt`` first."""
    return [name for name in FLAVOURS if _import(name) is not None]


def load_flavour(name: str | None = None, *, prefer_aot: bool = False) -> Flavour:
    """Import and describe a TensorRT flavour.

    ``name``: ``"tensorrt"``, ``"tensorrt_rtx"`` (``"tensorrt-rtx"`` / ``"rtx"`` accepted) or None for
    whichever is installed; with both installed None picks ``tensorrt``, or ``tensorrt_rtx`` when
    ``prefer_aot`` (an ahead-of-time target was asked for). Raises BackendUnavailableError naming the
    package that suits which GPU.
    """
    if name is not None:
        key = str(name).strip().lower().replace("-", "_")
        key = {"rtx": "tensorrt_rtx", "trt": "tensorrt", "trt_rtx": "tensorrt_rtx"}.get(key, key)
        if key not in FLAVOURS:
            raise ValueError(f"TensorRT flavour {name!r} is not known; expected 'tensorrt' or 'tensorrt_rtx'")
        module = _import(key)
        if module is None:
            raise BackendUnavailableError(
                f"the {DISPLAY[key]} Python package ({key}) is not installed; {INSTALL_HINT}"
            )
        return Flavour(key, module, str(module.__version__))
    order = ("tensorrt_rtx", "tensorrt") if prefer_aot else FLAVOURS
    for key in order:
        module = _import(key)
        if module is not None:
            return Flavour(key, module, str(module.__version__))
    raise BackendUnavailableError(
        f"no TensorRT is installed (neither tensorrt nor tensorrt_rtx); {INSTALL_HINT}"
    )
