"""What deployment asks of a ``.pt`` file, in one module: the one door from ``y9deploy`` into the trainer.

``y9deploy.runtime.backends.torch_backend`` (the torch backend, which runs ``.pt`` files) imports this module and
nothing else of ``y9train``: the model of a checkpoint (``read_model``), its facts (``file_facts``, ``model_facts``),
what vouches for its tensors (``digest_state``) and the model made ready to run (``deploy_model``). The file's own
sha256 is the caller's (the deployment side hashes every artifact the same way).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from y9core.errors import ModelFileError
from y9core.model_facts import ModelFacts
from y9train import reparam
from y9train.checkpoint import load_checkpoint
from y9train.checkpoints.facts import facts_of as model_facts  # the facts of a loaded model
from y9train.checkpoints.facts import payload_facts
from y9train.checkpoints.integrity import DIGEST_KEY
from y9train.checkpoints.load import read_y9_payload

__all__ = ["deploy_model", "digest_state", "file_facts", "model_facts", "read_model"]


def read_model(path: Path) -> Any:
    """The model of a y9 or official checkpoint; anything else is refused in one sentence naming the file."""
    try:
        return load_checkpoint(path)
    except (FileNotFoundError, ModelFileError):
        raise
    except Exception as exc:  # a truncated zip, a random file, an unknown pickle ...
        raise ModelFileError(f"{path} could not be loaded as a y9 or official YOLOv9 checkpoint ({exc}).") from exc


def file_facts(path: Path, source_sha256: str) -> ModelFacts:
    """The facts of a checkpoint file: a y9 checkpoint's payload says it all (no model is built); another format's
    model is read for them."""
    payload = read_y9_payload(path)
    if payload is not None:
        return payload_facts(payload, source_sha256=source_sha256, where=str(path))
    return model_facts(read_model(path), source_sha256=source_sha256, where=str(path))


def digest_state(path: Path) -> str:
    """``"verified"`` (a y9 checkpoint whose stored digest matched on reading), ``"none"`` (a y9 checkpoint without
    one) or ``"official"`` (another format: no digest is recorded). A digest that does not match is refused on
    reading, in one sentence."""
    payload = read_y9_payload(path)
    if payload is None:
        return "official"
    return "verified" if payload.get(DIGEST_KEY) is not None else "none"


def deploy_model(model: Any, *, fuse: bool = True) -> Any:
    """The eval-mode deployment model: auxiliary branch dropped, Conv+BN and RepConvN fused (``fuse``), its
    weights laid out channels_last (cuDNN's and oneDNN's fast convolution layout: on the CPU 17-20% faster than NCHW
    with the same input, docs/benchmarks.md), the checkpoint's ``meta`` kept."""
    meta = dict(getattr(model, "meta", None) or {})
    model = reparam.to_deploy(model)
    if fuse:
        model = reparam.fuse(model)
    model.to(memory_format=torch.channels_last)
    model.meta = meta
    return model.eval()
