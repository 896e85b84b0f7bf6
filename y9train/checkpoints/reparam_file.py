"""``y9 reparam IN OUT``: a checkpoint (y9 or official) -> ``to_deploy`` (and ``fuse``) -> a y9 checkpoint."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from y9train.checkpoint import load_checkpoint
from y9train.checkpoints.load import save_checkpoint
from y9train.reparam import fuse, to_deploy


@dataclass(frozen=True)
class ReparamResult:
    """What ``reparameterize_checkpoint`` wrote: the file, the model names before and after, their parameter counts."""

    path: Path
    source_name: str
    target_name: str
    params_before: int
    params_after: int


def check_output_suffix(output: str | Path) -> Path:
    """``output`` when it ends in ``.pt`` (what is written is a y9 checkpoint), else one sentence."""
    output = Path(output)
    if output.suffix.lower() != ".pt":
        raise ValueError(f"output {output} has suffix {output.suffix or '(none)'!r}; expected .pt: reparam writes a y9 "
                         "checkpoint (y9 export makes the .onnx of it).")  # fmt: skip
    return output


def reparameterize_checkpoint(
    source: str | Path, output: str | Path, *, fuse_layers: bool = False
) -> ReparamResult:
    """Load ``source`` (y9 or official checkpoint), ``to_deploy`` (and ``fuse``), save a y9 checkpoint to ``output``
    (a ``.pt`` file: another suffix is refused, ``check_output_suffix``)."""
    check_output_suffix(output)
    model = load_checkpoint(source)
    before = sum(p.numel() for p in model.parameters())
    deployed = to_deploy(model)
    if fuse_layers:
        fuse(deployed)
    meta = dict(getattr(model, "meta", {}))
    meta.update(reparameterized_from=model.name, source_file=Path(source).name)
    if isinstance(meta.get("facts"), dict):  # the same model: its facts travel, under its new architecture name
        meta["facts"] = {**meta["facts"], "model": deployed.name}
    path = save_checkpoint(deployed, output, **{k: v for k, v in meta.items() if k != "y9_version"})
    return ReparamResult(
        path, model.name, deployed.name, before, sum(p.numel() for p in deployed.parameters())
    )
