"""``import y9`` (issue 35 item 4): one light namespace whose names are the library's own objects, listed by
``dir()`` and visible to static tools; ``y9deploy`` lists its public names the same way."""

from __future__ import annotations

import ast
import subprocess
import sys

import pytest

import y9
import y9deploy
from tests.conftest import REPO


def _type_checking_names(path) -> set[str]:
    """The names an ``if TYPE_CHECKING:`` block of a module imports (what static tools and editors see)."""
    tree = ast.parse(path.read_text())
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING":
            for stmt in node.body:
                assert isinstance(stmt, ast.ImportFrom), ast.unparse(stmt)
                names |= {a.asname or a.name for a in stmt.names}
    return names


def _lazy_names(path) -> set[str]:
    """The keys of the module's table of names loaded on first use (its ``_LAZY`` dict literal)."""
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", "") for t in node.targets] == ["_LAZY"]:
            return {ast.literal_eval(k) for k in node.value.keys}
    raise AssertionError(f"{path} has no _LAZY table")


def test_import_y9_imports_neither_torch_nor_numpy():
    code = "import sys, y9\nprint(sorted(m for m in ('torch', 'numpy', 'cv2', 'y9train') if m in sys.modules))\n" \
           "print(y9.__version__)"  # fmt: skip
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert res.returncode == 0, res.stderr[-2000:]
    loaded, version = res.stdout.split("\n")[:2]
    assert loaded == "[]"
    assert version == y9deploy.__version__


@pytest.mark.parametrize("package", [y9, y9deploy])
def test_dir_and_static_imports_list_every_public_name(package):
    public = set(package.__all__) - {"__version__"}
    init = REPO / package.__name__ / "__init__.py"
    assert _lazy_names(init) == public  # every name loaded on first use is listed, and the other way round
    assert public <= set(dir(package))
    assert _type_checking_names(init) == public


def test_every_y9_name_is_the_library_object():
    from y9.model import Model
    from y9core.errors import Y9Error
    from y9deploy.default_model import default_model_path
    from y9deploy.detections import Detections
    from y9deploy.engine.builder import build_engine
    from y9deploy.export.onnx_export import export_onnx
    from y9deploy.measure.bench import benchmark
    from y9deploy.runtime.detector import Detector
    from y9train.run.train import train

    expected = {"Model": Model, "Detector": Detector, "Detections": Detections, "train": train, "export": export_onnx,
                "build_engine": build_engine, "benchmark": benchmark, "default_model_path": default_model_path,
                "Y9Error": Y9Error}  # fmt: skip
    for name, obj in expected.items():
        assert getattr(y9, name) is obj, name
    assert y9.Detector is y9deploy.Detector
    for name in y9.__all__ + y9deploy.__all__:  # every listed name resolves
        assert getattr(y9 if name in y9.__all__ else y9deploy, name) is not None
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        y9.Nope  # noqa: B018


def test_the_y9_package_is_installed_with_the_others():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    include = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]
    assert {"y9", "y9.*"} <= set(include["include"])
