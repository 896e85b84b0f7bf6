"""Which frame pipeline runs: ``choose_pipeline``, the one rule, its conditions in one table (``PIPELINE_RULE``),
and ``build_pipeline``, the one place that builds a pipeline by it.

Pipelines (``PipelineImpl``, the ``runtime.pipeline.Pipeline`` protocol):

- ``host``: ``runtime.host_pipeline.HostPipeline``: the blob made on the host (``pre.host.prepare``), the
  backend's numpy outputs post-processed on the host;
- ``torch``: ``runtime.gpu_pipeline.GpuPipeline``: pre-processing on the device by ``pre.device.DevicePre``
  (``hybrid``, ``gpu`` or ``cpu``, ``pre.impl.PreImpl``), the network on device tensors, post-processing on the
  device; ``Detector.predict_stream`` runs it through ``runtime.gpu_stream.StreamRunner``.

Both post-process through ``post.runner.PostRunner`` (``y9core.post.choice.choose_post`` picks inside).
``default_choice`` states what a Detector picks on a machine (the doctor reports it).
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from y9core.post.choice import choose_post
from y9deploy.pre.impl import OPTIONS, PreImpl


class PipelineImpl(str, enum.Enum):
    HOST = "host"
    TORCH = "torch"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class PipelineFacts:
    """What the rule reads: the backend runs on CUDA, torch sees a CUDA GPU, the ``preprocess`` option."""

    cuda: bool
    torch_cuda: bool
    option: str


@dataclass(frozen=True)
class PipelineChoice:
    pipeline: PipelineImpl
    pre: PreImpl


_HOST = PipelineChoice(PipelineImpl.HOST, PreImpl.HOST)
#: The rule, in order; the first row whose condition holds gives the pipeline and its pre-processing.
PIPELINE_RULE: tuple[tuple[str, Callable[[PipelineFacts], bool], PipelineChoice], ...] = (
    ("the backend is on the CPU, or torch does not see its CUDA GPU", lambda f: not (f.cuda and f.torch_cuda), _HOST),
    ("preprocess='auto'", lambda f: f.option == "auto", PipelineChoice(PipelineImpl.TORCH, PreImpl.HYBRID)),
    ("preprocess='hybrid'", lambda f: f.option == "hybrid", PipelineChoice(PipelineImpl.TORCH, PreImpl.HYBRID)),
    ("preprocess='gpu'", lambda f: f.option == "gpu", PipelineChoice(PipelineImpl.TORCH, PreImpl.GPU)),
    ("preprocess='cpu'", lambda f: f.option == "cpu", PipelineChoice(PipelineImpl.TORCH, PreImpl.CPU)),
)  # fmt: skip


def choose_pipeline(*, device: str, option: str = "auto", torch_cuda: bool) -> PipelineChoice:
    """The frame pipeline and its pre-processing: the first row of ``PIPELINE_RULE`` that holds.

    Args:
        device: the backend's device ("cpu", "cuda", "cuda:N").
        option: the Detector's ``preprocess`` option: "auto", "hybrid", "gpu" or "cpu".
        torch_cuda: torch is installed and sees a CUDA GPU (``y9core.post.choice.probe().torch_cuda``).
    """
    if option not in OPTIONS:
        raise ValueError(f"preprocess={option!r}; expected 'auto', 'hybrid', 'gpu' or 'cpu'.")
    cuda = str(device).startswith("cuda")
    choice = next(c for _, holds, c in PIPELINE_RULE if holds(PipelineFacts(cuda, bool(torch_cuda), option)))
    if choice.pipeline is PipelineImpl.HOST and option == "gpu":
        raise ValueError(
            "preprocess='gpu' needs a CUDA backend and torch with CUDA; the backend runs on "
            f"{'a CUDA device without torch' if cuda else 'the CPU'}."
        )
    return choice


def build_pipeline(
    backend: Any, info: Any, *, preprocess: str = "auto", postprocess: str = "auto", stream: Any = None
) -> Any:
    """The pipeline ``choose_pipeline`` picks for ``backend`` (its device, what imports here), built.

    Args:
        backend: an opened backend.
        info: its ModelInfo (letterbox settings, names).
        preprocess: the Detector's ``preprocess`` option.
        postprocess: the Detector's ``postprocess`` option ("auto", "gpu" or "cpu").
        stream: the torch CUDA stream of the torch pipeline (created when None).
    """
    from y9core.post.choice import probe

    device = str(backend.device)
    choice = choose_pipeline(device=device, option=preprocess,
                             torch_cuda=device.startswith("cuda") and probe().torch_cuda)  # fmt: skip
    if choice.pipeline is PipelineImpl.HOST:
        from y9deploy.pre.spec import LetterboxSpec
        from y9deploy.runtime.host_pipeline import HostPipeline

        return HostPipeline(backend, LetterboxSpec.of(backend.input_hw, info.letterbox), list(info.names),
                            postprocess=postprocess)  # fmt: skip
    from y9deploy.runtime.gpu_pipeline import GpuPipeline

    return GpuPipeline(backend, info, stream=stream, pre=choice.pre.value, post=postprocess)


def default_choice(*, torch_cuda: bool, triton: bool) -> tuple[str, str, str]:
    """(device, pre-processing, post-processing) a Detector picks for a raw model on its default device here
    (``y9 doctor`` reports it): ``choose_pipeline`` then ``choose_post`` on these facts."""
    device = "cuda" if torch_cuda else "cpu"
    choice = choose_pipeline(device=device, torch_cuda=torch_cuda)
    tensors = choice.pipeline is PipelineImpl.TORCH
    post = choose_post(device=device, torch_tensors=tensors, triton=triton)
    return device, choice.pre.value, post.value
