"""What a model argument names, decided once for ``y9.Model`` and every command that takes a model file.

    path = model_file("gelan-c.pt")   # official weights by name: the cached download (made once, loaded before
                                      # it is kept); a file here: itself; a model file that is not here: one sentence

The sentence for a model file named without a folder (``gelan-s.pt``) that is not here is ``missing_model_message``:
the API and the CLI (predict, val, export, reparam, inspect, info, benchmark, train) say the same words, exit 2 on the
CLI.
"""

from __future__ import annotations

import os
from pathlib import Path

from y9deploy.runtime.backends.loading import ENGINE_SUFFIXES, ONNX_SUFFIXES, TORCH_SUFFIXES

MODEL_SUFFIXES = (*TORCH_SUFFIXES, *ONNX_SUFFIXES, *ENGINE_SUFFIXES)


def missing_model_message(source: str | os.PathLike) -> str:
    """One sentence for a model file that does not exist; a bare name lists the official weights y9 downloads."""
    from y9deploy.model_file.official_weights import OFFICIAL, cache_dir

    path = Path(source)
    if path.exists():
        return f"model path {path} is a folder, not a model file."
    if path.name != str(source):
        return f"model file {path} does not exist."
    return (f"model file {path} does not exist. Official weights by name: {', '.join(OFFICIAL)} (downloaded once "
            f"into {cache_dir()}).")  # fmt: skip


def restricted_load(path: Path) -> None:
    """Load ``path`` as a checkpoint with y9's restricted loader (nothing in the file runs): the check a download
    passes before it is kept."""
    from y9train.checkpoint import load_checkpoint

    load_checkpoint(path)


def model_file(source: str | os.PathLike) -> Path:
    """The file ``source`` names (module docstring).

    Raises:
        FileNotFoundError: a bare model file name (``gelan-s.pt``) that is not here (``missing_model_message``); a
            path with a folder is left to the loader, which names what it expected.
        WeightsDownloadError: an official name whose download failed or whose cached file is damaged.
    """
    from y9deploy.model_file.official_weights import is_official_name, weights_path

    if is_official_name(source):
        return weights_path(source, verify=restricted_load)
    path = Path(source)
    if path.suffix.lower() in MODEL_SUFFIXES and path.name == str(source) and not path.exists():  # a bare name
        raise FileNotFoundError(missing_model_message(source))
    return path
