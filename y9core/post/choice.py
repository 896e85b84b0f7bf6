"""Which post-processing runs: ``choose_post``, the one rule, its conditions in one table (``POST_RULE``).

Implementations (``PostImpl``), from the most device-resident down:

- ``graph``: decode + NMS replayed as CUDA graphs with the Triton kernels (``y9deploy.post.graph``, the
  Detector's);
- ``torch-triton``: the batched torch decode + NMS, greedy scan by the Triton kernel (``post.torch_batched``);
- ``torch``: the same, greedy scan as a fixed point of torch operations;
- ``host``: numpy decode + NMS on the downloaded raw output (``post.nms``);
- ``end2end``: the model ran its own NMS; its rows are read on the host (``y9deploy.post.host.end2end_rows``).

Every one of them gives the same detections (the tests compare them bit for bit). Callers: the Detector's
pipelines (``y9deploy.post.runner.PostRunner``), ``y9core.post.rows.postprocess`` (training's validation, the
public ``y9deploy.postprocess.postprocess``, the Triton client) and the doctor. They state the facts; nothing else
decides.

Failures: a kernel that fails to build or run, when the implementation was chosen automatically, is recorded
once per process with one warning (``record_failure``); the rule then skips it (the ``failed`` column of the
table), so the caller asks ``choose_post`` again and gets the next one down. Work beyond an implementation's
limits (an image with too many candidates for its memory budget or kernel) goes down inside it, for that work
only, to the implementation the table would give without it: the graph to the batched torch one, the torch one
to the host one.
"""

from __future__ import annotations

import enum
import functools
import warnings
from collections.abc import Callable
from dataclasses import dataclass


class PostImpl(str, enum.Enum):
    GRAPH = "graph"
    TORCH_TRITON = "torch-triton"
    TORCH = "torch"
    HOST = "host"
    END2END = "end2end"

    def __str__(self) -> str:
        return self.value


OPTIONS = ("auto", "gpu", "cpu")
_FAILED: dict[PostImpl, str] = {}  # implementations whose kernels failed in this process, and why


@dataclass(frozen=True)
class PostFacts:
    """What the rule reads.

    Attributes:
        end2end: the model has its NMS inside.
        option: the Detector's ``postprocess`` option: "auto", "gpu" or "cpu".
        tensors: the outputs are torch tensors (the torch pipeline runs).
        cuda: they are on a CUDA device.
        triton: triton imports here (``probe().triton``).
        graphs: None (automatic), True (require the CUDA-graph implementation), False (never).
        multi_label: every (anchor, class) pair above conf is a candidate (only the host implementation has it).
    """

    end2end: bool = False
    option: str = "auto"
    tensors: bool = False
    cuda: bool = False
    triton: bool = False
    graphs: bool | None = None
    multi_label: bool = False


def _ok(impl: PostImpl) -> bool:
    return impl not in _FAILED


#: The rule, in order; the first row whose condition holds gives the implementation.
POST_RULE: tuple[tuple[str, Callable[[PostFacts], bool], PostImpl], ...] = (
    ("the model has its NMS inside", lambda f: f.end2end, PostImpl.END2END),
    ("numpy outputs (the host pipeline)", lambda f: not f.tensors, PostImpl.HOST),
    ("postprocess='cpu'", lambda f: f.option == "cpu", PostImpl.HOST),
    ("torch tensors on the CPU, automatic (the numpy one is faster there)",
     lambda f: not f.cuda and f.option == "auto" and f.graphs is not True, PostImpl.HOST),
    ("multi-label candidates", lambda f: f.multi_label, PostImpl.HOST),
    ("CUDA graphs required (on CPU tensors: their steps eagerly)", lambda f: f.graphs is True, PostImpl.GRAPH),
    ("automatic, CUDA, triton, graphs not failed here",
     lambda f: f.graphs is None and f.cuda and f.triton and _ok(PostImpl.GRAPH), PostImpl.GRAPH),
    ("CUDA, triton, its scan not failed here",
     lambda f: f.cuda and f.triton and _ok(PostImpl.TORCH_TRITON), PostImpl.TORCH_TRITON),
    ("torch tensors otherwise (postprocess='gpu' on the CPU: the batched torch one, as asked)", lambda f: True,
     PostImpl.TORCH),
)  # fmt: skip


def choose_post(
    *,
    device: str = "cpu",
    end2end: bool = False,
    option: str = "auto",
    torch_tensors: bool,
    triton: bool,
    graphs: bool | None = None,
    multi_label: bool = False,
) -> PostImpl:
    """The post-processing implementation: the first row of ``POST_RULE`` that holds for these facts.

    Args:
        device: where the backend's outputs are ("cpu", "cuda", "cuda:N").
        end2end: the model has its NMS inside.
        option: the Detector's ``postprocess`` option: "auto", "gpu" or "cpu".
        torch_tensors: the outputs are torch tensors (the torch pipeline runs).
        triton: triton imports here (``probe().triton``).
        graphs: None (automatic), True (require the CUDA-graph implementation), False (never).
        multi_label: multi-label candidates.
    """
    if option not in OPTIONS:
        raise ValueError(f"postprocess={option!r}; expected 'auto', 'gpu' or 'cpu'.")
    facts = PostFacts(end2end=bool(end2end), option=option, tensors=bool(torch_tensors),
                      cuda=str(device).startswith("cuda"), triton=bool(triton), graphs=graphs,
                      multi_label=bool(multi_label))  # fmt: skip
    return next(impl for _, holds, impl in POST_RULE if holds(facts))


@dataclass(frozen=True)
class Facts:
    """What imports here: torch with a CUDA GPU it sees, and triton (the GPU NMS kernels)."""

    torch_cuda: bool
    triton: bool


@functools.lru_cache(maxsize=1)
def probe() -> Facts:
    """This machine's ``Facts`` (imports torch and triton when present; probed once)."""
    try:
        import torch
    except ImportError:
        return Facts(False, False)
    cuda = bool(torch.cuda.is_available())
    if not cuda:
        return Facts(False, False)
    try:
        import y9core.post.triton_nms  # noqa: F401 - imports triton
    except ImportError:
        return Facts(True, False)
    return Facts(True, True)


def failure(impl: PostImpl) -> str | None:
    """Why ``impl``'s kernels failed in this process (None: they did not)."""
    return _FAILED.get(impl)


def record_failure(impl: PostImpl, exc: BaseException) -> None:
    """Note that ``impl``'s kernels failed here (one warning per implementation and process): from now on
    ``choose_post`` skips it where it was automatic."""
    if impl not in _FAILED:
        _FAILED[impl] = f"{type(exc).__name__}: {exc}"
        warnings.warn(
            f"the {impl.value} post-processing failed on this machine ({_FAILED[impl]}); the next implementation "
            "down is used from now on.",
            RuntimeWarning,
            stacklevel=3,
        )
