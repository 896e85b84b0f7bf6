"""The pre-processing implementations (``PreImpl``); which one runs is decided with the frame pipeline by
``y9deploy.runtime.frame_pipeline.choose_pipeline`` (one rule, one table).

- ``host``: the blob made on the host by OpenCV + numpy (``pre.host.prepare``) and given to the backend as it
  is (the host pipeline);
- ``hybrid``: letterboxed on the host into uint8 (``pre.host.letterbox_batch_u8``, a thread pool), uploaded,
  then colour, layout and normalisation on the device (``pre.device.DevicePre``);
- ``gpu``: whole frames uploaded, letterboxed on the device (``pre.torch_letterbox``);
- ``cpu``: the whole blob made on the host (``pre.host.prepare``), then uploaded.
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


#: the Detector's ``preprocess`` option
OPTIONS = ("auto", "hybrid", "gpu", "cpu")
