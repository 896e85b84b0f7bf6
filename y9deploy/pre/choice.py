"""Which pre-processing runs: ``choose_pre``, the one rule.

Implementations (``PreImpl``):

- ``host``: the blob made on the host by OpenCV + numpy (``pre.host.prepare``) and given to the backend as it
  is (the host pipeline);
- ``hybrid``: letterboxed on the host into uint8 (``pre.host.letterbox_batch_u8``, a thread pool), uploaded,
  then colour, layout and normalisation on the device (``pre.device.DevicePre``);
- ``gpu``: whole frames uploaded, letterboxed on the device (``pre.torch_letterbox``);
- ``cpu``: the whole blob made on the host (``pre.host.prepare``), then uploaded.

Rule (``choose_pre``): the torch pipeline runs when the backend is on CUDA and torch sees a CUDA GPU; then the
option ("auto" is "hybrid"); otherwise ``host`` (and the option "gpu" is an error: it needs that pipeline).
"""

from __future__ import annotations

import enum


class PreImpl(str, enum.Enum):
    HOST = "host"
    HYBRID = "hybrid"
    GPU = "gpu"
    CPU = "cpu"

    def __str__(self) -> str:
        return self.value


OPTIONS = ("auto", "hybrid", "gpu", "cpu")


def choose_pre(*, device: str, option: str = "auto", torch_cuda: bool) -> PreImpl:
    """The pre-processing implementation, by the rule of the module docstring.

    Args:
        device: the backend's device ("cpu", "cuda", "cuda:N").
        option: the Detector's ``preprocess`` option: "auto", "hybrid", "gpu" or "cpu".
        torch_cuda: torch is installed and sees a CUDA GPU (``post.choice.probe().torch_cuda``).
    """
    if option not in OPTIONS:
        raise ValueError(f"preprocess={option!r}; expected 'auto', 'hybrid', 'gpu' or 'cpu'.")
    cuda = str(device).startswith("cuda")
    if not (cuda and torch_cuda):
        if option == "gpu":
            raise ValueError(
                "preprocess='gpu' needs a CUDA backend and torch with CUDA; the backend runs on "
                f"{'a CUDA device without torch' if cuda else 'the CPU'}."
            )
        return PreImpl.HOST
    return PreImpl.HYBRID if option == "auto" else PreImpl(option)
