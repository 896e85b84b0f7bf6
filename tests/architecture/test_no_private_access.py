"""No test and no benchmark touches private state of a y9 object: tests pin behaviour through public API only.

Every ``.py`` under tests/ and benchmarks/ is parsed with ``ast``; it fails on
- an attribute ``x._name`` (one leading underscore, not a dunder) where ``x`` is not ``self`` / ``cls``, read,
  written or deleted, and on ``getattr`` / ``setattr`` / ``hasattr`` / ``delattr`` / ``monkeypatch.setattr``
  naming such an attribute as a string;
- ``from y9core / y9train / y9deploy / y9cli ... import _name`` and ``import`` of a private y9 module.
Allowed: the few private names of other libraries listed in ``ALLOWED`` (each with the reason).
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import REPO

Y9 = ("y9", "y9core", "y9train", "y9deploy", "y9cli")
FOLDERS = ("tests", "benchmarks")

#: (the expression's text, attribute) pairs that name another library's private API, and why each is needed
ALLOWED = {
    ("parser()", "_actions"),  # argparse has no public list of a parser's options (tests/cli/test_train_entry.py)
    ("sys", "_base_executable"),  # CPython's interpreter behind a venv: the Triton test server's own venv
    ("np", "_core"),  # numpy 2's home of multiarray.scalar, which official checkpoints pickle (np.core before 2)
    ("torch", "_utils"),  # torch._utils._rebuild_parameter: the function official checkpoints pickle
    ("torch._utils", "_rebuild_parameter"),  # (a crafted checkpoint calls it with a payload)
    # torchvision's own flag for its compiled ops: tests/y9/ultralytics_reference.py sets it where a plain-torch NMS
    # stands in for them (PyPI's CUDA torchvision beside CPU torch)
    ("torchvision.extension", "_has_ops"),
}
#: attribute names allowed on any object: another library's names, not y9 state
ALLOWED_NAMES = {
    "_BatchNorm",  # torch.nn.modules.batchnorm._BatchNorm: the one base class of every BatchNorm kind
    "_modules", "_parameters", "_buffers",  # torch.nn.Module's pickled state: official checkpoints are built of it
}  # fmt: skip
#: namedtuple's public methods carry an underscore so as not to clash with field names
NAMEDTUPLE = {"_replace", "_asdict", "_fields", "_make", "_field_defaults"}
STRING_ACCESS = {"getattr", "setattr", "hasattr", "delattr"}


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__") and name not in NAMEDTUPLE


def _is_y9(module: str | None) -> bool:
    return bool(module) and module.split(".")[0] in Y9


def offences(path: Path) -> list[str]:
    """``file:line: what`` for each private access in one file."""
    tree = ast.parse(path.read_text(), str(path))
    where = path.relative_to(REPO) if path.is_relative_to(REPO) else path
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            base = ast.unparse(node.value)
            if base not in ("self", "cls") and (base, node.attr) not in ALLOWED and node.attr not in ALLOWED_NAMES:
                found.append((node.lineno, f"{base}.{node.attr}"))
        elif isinstance(node, ast.ImportFrom) and _is_y9(node.module) and node.level == 0:
            names = [a.name for a in node.names if _private(a.name)]
            if names or any(_private(p) for p in node.module.split(".")):
                found.append((node.lineno, f"from {node.module} import {', '.join(names) or '...'}"))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if _is_y9(alias.name) and any(_private(p) for p in alias.name.split(".")):
                    found.append((node.lineno, f"import {alias.name}"))
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            if name in STRING_ACCESS:
                for i, arg in enumerate(node.args[:2]):
                    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                        owner, _, last = arg.value.rpartition(".")
                        if i == 1:  # getattr(obj, "_name"): obj is the first argument
                            owner = ast.unparse(node.args[0])
                        if _private(last) and owner not in ("self", "cls") and (owner, last) not in ALLOWED:
                            found.append((node.lineno, ast.unparse(node)[:80]))
    return [f"{where}:{line}: {what}" for line, what in sorted(found)]


def all_offences() -> list[str]:
    out = []
    for folder in FOLDERS:
        for path in sorted((REPO / folder).rglob("*.py")):
            out += offences(path)
    return out


def test_no_test_or_benchmark_touches_private_state():
    found = all_offences()
    assert not found, f"{len(found)} private accesses:\n  " + "\n  ".join(found)


def test_the_check_finds_each_kind_of_private_access(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text(
        "from y9deploy.runtime.detector import _stream, Detector\n"
        "import y9deploy.runtime._hidden\n"
        "det = Detector()\n"
        "det._gpu = None\n"
        "x = det.pipeline._slots\n"
        "getattr(det, '_stage')\n"
        "monkeypatch.setattr('y9deploy.measure.bench._clock', None)\n"
        "self._mine = cls._ours = point._replace(x=1)\n"
        "np._core.multiarray\n"
        "det.__class__\n"
    )
    lines = [f.split(": ", 1)[1] for f in offences(sample)]
    assert lines == [
        "from y9deploy.runtime.detector import _stream",
        "import y9deploy.runtime._hidden",
        "det._gpu",
        "det.pipeline._slots",
        "getattr(det, '_stage')",
        "monkeypatch.setattr('y9deploy.measure.bench._clock', None)",
    ]
