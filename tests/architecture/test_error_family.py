"""One error family: every exception class y9 defines is a ``Y9Error``, and the errors raised for a bad model
config and for an unsafe official pickle are caught as ``Y9Error`` and as their built-in bases."""

from __future__ import annotations

import ast
import os
import pickle
from importlib import import_module

import pytest

from tests.architecture.import_graph import PACKAGES, module_files
from tests.conftest import REPO
from y9core.errors import Y9Error


def _exception_classes() -> list[tuple[str, str]]:
    """(module, class) of every class defined at module level whose name ends in Error or Exception."""
    found = []
    for module, path in module_files(REPO, PACKAGES).items():
        for node in ast.parse(path.read_text(), str(path)).body:
            if isinstance(node, ast.ClassDef) and node.name.endswith(("Error", "Exception")):
                found.append((module, node.name))
    return found


def test_every_error_class_of_y9_is_a_y9error():
    classes = _exception_classes()
    assert ("y9train.models.config", "ConfigError") in classes and len(classes) >= 12
    outside = [f"{m}.{c}" for m, c in classes if not issubclass(getattr(import_module(m), c), Y9Error)]
    assert not outside, f"exception classes outside the Y9Error family: {outside}"


def test_a_malformed_model_config_is_a_y9error_and_a_valueerror(tmp_path):
    from y9train.models import build_model

    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\nstrides: [8, 16, 32]\nlayers: []\n")
    with pytest.raises(Y9Error, match="non-empty 'layers' list") as info:
        build_model(str(bad))
    assert isinstance(info.value, ValueError)


class _System:
    def __reduce__(self):
        return (os.system, ("echo pwned",))


def test_an_unsafe_pickle_is_a_y9error_and_an_unpicklingerror(tmp_path):
    from y9train.checkpoints.official_pickle import load_official

    path = tmp_path / "evil.pt"
    path.write_bytes(pickle.dumps({"model": _System()}))
    with pytest.raises(Y9Error, match="asks to call .*system.*nothing was executed") as info:
        load_official(path)
    assert isinstance(info.value, pickle.UnpicklingError)
