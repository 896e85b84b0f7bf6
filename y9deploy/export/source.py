"""What ``export_onnx`` exports: a model or a checkpoint, made deployable (re-parameterized, fused)."""

from __future__ import annotations

import copy
import hashlib
import os
from pathlib import Path
from typing import Any

from y9core.files.file_paths import expect_file
from y9deploy.engine.manifest import file_sha256


def state_dict_sha256(model: Any) -> str:
    """sha256 over a module's state dict (names, dtypes, shapes and bytes), in key order."""
    import torch

    digest = hashlib.sha256()
    for key, tensor in model.state_dict().items():
        t = tensor.detach().cpu().contiguous().reshape(-1)
        digest.update(f"{key}:{t.dtype}:{tuple(tensor.shape)}".encode())
        if t.numel():
            digest.update(t.view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()


def load_source(source: Any) -> tuple[Any, str, str]:
    """``(model in float32 eval mode, source sha256, label)`` from a model or a checkpoint path.

    A model is deep-copied (the caller's module is never changed); a path goes through
    ``y9train.checkpoint.load_checkpoint`` (y9 and official-format checkpoints).
    """
    from torch import nn

    if isinstance(source, nn.Module):
        model = copy.deepcopy(source).float().eval()
        return model, state_dict_sha256(model), getattr(source, "name", type(source).__name__)
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        expect_file(path, "checkpoint", "a y9 or official YOLOv9 .pt file (or pass a model)")
        from y9train.checkpoint import load_checkpoint

        model = load_checkpoint(path).float().eval()
        return model, file_sha256(path), str(path)
    raise TypeError(f"export source must be a model or a checkpoint path, got {type(source).__name__}")


def deployable(model: Any) -> Any:
    """A re-parameterized (auxiliary branch dropped) and fused copy of ``model``, in eval mode."""
    from y9train.reparam import fuse, to_deploy

    deployed = to_deploy(copy.deepcopy(model))
    return fuse(deployed).float().eval()


def source_facts(model: Any, source_sha256: str, label: str) -> Any:
    """The model facts of the loaded export source (``y9core.model_facts.ModelFacts``): what its checkpoint
    recorded (or derived from it), with ``source_sha256`` the checkpoint's (or the model's weights') sha256."""
    from y9train.checkpoints.facts import facts_of

    return facts_of(model, source_sha256=source_sha256, where=label)


def write_sidecar(onnx_path: Path, facts: Any) -> Path:
    """``<stem>.facts.json`` beside an export: its model facts, for engines built from it by other tools (trtexec),
    which carry no y9 manifest (``y9deploy.runtime.backends.foreign_engine``)."""
    import json

    from y9core.files.atomic_write import atomic_write
    from y9deploy.runtime.backends.foreign_engine import sidecar_path

    return atomic_write(sidecar_path(onnx_path), json.dumps(facts.to_dict(), indent=2) + "\n")
