"""Which post-processing runs: ``choose_post``, the one rule, and the one fallback rule.

Implementations (``PostImpl``), from the most device-resident down:

- ``graph``: decode + NMS replayed as CUDA graphs with the Triton kernels (``post.graph``);
- ``torch-triton``: the batched torch decode + NMS, greedy scan by the Triton kernel (``post.torch_batched``);
- ``torch``: the same, greedy scan as a fixed point of torch operations;
- ``host``: numpy decode + NMS on the downloaded raw output (``post.host``);
- ``end2end``: the model ran its own NMS; its rows are read on the host (``post.host.end2end_rows``).

Every one of them gives the same detections (the tests compare them bit for bit).

Rule (``choose_post``; the first that applies wins):

1. an end-to-end model -> ``end2end``;
2. the outputs are not torch tensors (the host pipeline: a CPU device, or CUDA without torch) or the option is
   "cpu" -> ``host``;
3. ``graphs`` is True -> ``graph`` (on CPU tensors its steps run eagerly: the tests);
4. ``graphs`` is None, the device is CUDA, triton imports and ``graph`` has not failed here -> ``graph``;
5. the device is CUDA, triton imports and ``torch-triton`` has not failed here -> ``torch-triton``;
6. otherwise ``torch``.

Fallback rule (``FALLBACK``: graph -> torch-triton -> torch -> host): an implementation hands what it cannot
take to the next one down. Work beyond its limits (a batch, bucket or image too large for its kernels or
memory budget; outputs that are not tensors on its device) goes down for that work only. A kernel that fails
to build or run, when the implementation was chosen automatically, is recorded once per process with one
warning (``record_failure``), and from then on the rule above skips it.
"""

from __future__ import annotations

import enum
import functools
import warnings
from dataclasses import dataclass


class PostImpl(str, enum.Enum):
    GRAPH = "graph"
    TORCH_TRITON = "torch-triton"
    TORCH = "torch"
    HOST = "host"
    END2END = "end2end"

    def __str__(self) -> str:
        return self.value


FALLBACK = (PostImpl.GRAPH, PostImpl.TORCH_TRITON, PostImpl.TORCH, PostImpl.HOST)
OPTIONS = ("auto", "gpu", "cpu")
_FAILED: dict[PostImpl, str] = {}  # implementations whose kernels failed in this process, and why


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
        import y9deploy.post.triton_nms  # noqa: F401 - imports triton
    except ImportError:
        return Facts(True, False)
    return Facts(True, True)


def failure(impl: PostImpl) -> str | None:
    """Why ``impl``'s kernels failed in this process (None: they did not)."""
    return _FAILED.get(impl)


def record_failure(impl: PostImpl, exc: BaseException) -> PostImpl:
    """The fallback rule for a failing kernel: note it (one warning per implementation and process) and return
    the next implementation down ``FALLBACK``."""
    if impl not in _FAILED:
        _FAILED[impl] = f"{type(exc).__name__}: {exc}"
        warnings.warn(
            f"the {impl.value} post-processing failed on this machine ({_FAILED[impl]}); using "
            f"{step_down(impl).value} from now on.",
            RuntimeWarning,
            stacklevel=3,
        )
    return step_down(impl)


def step_down(impl: PostImpl) -> PostImpl:
    """The next implementation down ``FALLBACK`` (``host`` stays ``host``; ``end2end`` has none below)."""
    if impl not in FALLBACK:
        return impl
    return FALLBACK[min(FALLBACK.index(impl) + 1, len(FALLBACK) - 1)]


def choose_post(
    *,
    device: str,
    end2end: bool,
    option: str = "auto",
    torch_tensors: bool,
    triton: bool,
    graphs: bool | None = None,
) -> PostImpl:
    """The post-processing implementation, by the rule of the module docstring.

    Args:
        device: where the backend's outputs are ("cpu", "cuda", "cuda:N").
        end2end: the model has its NMS inside.
        option: the Detector's ``postprocess`` option: "auto", "gpu" or "cpu".
        torch_tensors: the outputs are torch tensors (the torch pipeline runs).
        triton: triton imports here (``probe().triton``).
        graphs: None (automatic), True (require the CUDA-graph implementation), False (never).
    """
    if option not in OPTIONS:
        raise ValueError(f"postprocess={option!r}; expected 'auto', 'gpu' or 'cpu'.")
    if end2end:
        return PostImpl.END2END
    if not torch_tensors or option == "cpu":
        return PostImpl.HOST
    if graphs is True:
        return PostImpl.GRAPH
    cuda = str(device).startswith("cuda")
    if graphs is None and cuda and triton and failure(PostImpl.GRAPH) is None:
        return PostImpl.GRAPH
    if cuda and triton and failure(PostImpl.TORCH_TRITON) is None:
        return PostImpl.TORCH_TRITON
    return PostImpl.TORCH


def choose_scan(cuda: bool) -> str:
    """The greedy scan of ``torch_batched`` under scan="auto": "triton" on CUDA tensors when triton imports
    and its kernel has not failed here (rule 5), else "fixed-point"."""
    impl = choose_post(device="cuda" if cuda else "cpu", end2end=False, torch_tensors=True,
                       triton=cuda and probe().triton, graphs=False)  # fmt: skip
    return "triton" if impl is PostImpl.TORCH_TRITON else "fixed-point"


def default_choice(*, torch_cuda: bool, triton: bool) -> tuple[str, str, str]:
    """(device, pre-processing, post-processing) a Detector picks for a raw model on its default device here
    (``y9 doctor`` reports it): ``pre.choice.choose_pre`` then ``choose_post`` on these facts."""
    from y9deploy.pre.choice import PreImpl, choose_pre

    device = "cuda" if torch_cuda else "cpu"
    pre = choose_pre(device=device, torch_cuda=torch_cuda)
    post = choose_post(device=device, end2end=False, torch_tensors=pre is not PreImpl.HOST, triton=triton)
    return device, pre.value, post.value
