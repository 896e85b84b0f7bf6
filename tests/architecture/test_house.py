"""The house kept small and one-way (docs/architecture.md is its map): no import cycle of any kind inside or
between y9, y9core, y9train, y9deploy and y9cli, no file over 400 lines, no package folder of y9train, y9core or
y9deploy of more than 12 modules (``__init__.py`` not counted), no stand-in modules (only DESIGN.md's contract paths
re-export), and the old flat ``y9deploy.pipelines`` package paths keeping their names. The layer rule over the rooms
is tests/architecture/test_rooms.py.

"Any kind" of cycle: module-level imports, imports inside functions and imports under ``if TYPE_CHECKING:`` (which
never run, but still tie two modules together for a reader), between modules, and between the packages they
collapse into at every depth (``y9deploy.pipelines.predict`` -> ``y9deploy.pipelines.sources`` and back would
be a cycle of sub-packages even with no cycle of modules).
"""

from __future__ import annotations

import importlib
import warnings

import pytest

from tests.architecture.import_graph import PACKAGES, build_graph, cycles, module_files
from tests.conftest import REPO

MAX_LINES = 400
MAX_MODULES_PER_FOLDER = 12


@pytest.fixture(scope="module")
def graph():
    return build_graph(REPO, typing=True)


def _shown(found: list[list[str]]) -> str:
    return "; ".join(" -> ".join(c) for c in found)


def test_no_import_cycle_of_any_kind_between_modules(graph):
    found = cycles(graph.internal(lazy=True, typing=True))
    assert not found, "import cycles (module level, inside functions or TYPE_CHECKING): " + _shown(found)


def test_the_type_checking_imports_are_seen(graph):
    typing_edges = [e for e in graph.edges if e.typing]
    assert any(e.source == "y9deploy" and e.target == "y9deploy.runtime.detector" for e in typing_edges)


def _collapsed(graph, depth: int) -> dict[str, set[str]]:
    """Packages (modules with sub-modules) collapsed to their first ``depth`` name parts, and the imports between
    them (of every kind); a module directly in a package counts as that package."""
    packages = {m for m, path in graph.modules.items() if path.name == "__init__.py"}

    def home(module: str) -> str | None:
        parts = module.split(".")
        owner = module if module in packages else ".".join(parts[:-1])
        owner_parts = owner.split(".")
        return ".".join(owner_parts[:depth]) if len(owner_parts) >= depth else None

    adj: dict[str, set[str]] = {}
    for e in graph.edges:
        if e.target not in graph.modules:
            continue
        a, b = home(e.source), home(e.target)
        if a is None or b is None or a == b or b.startswith(a + ".") or a.startswith(b + "."):
            continue  # a package and what it holds are one room at this depth
        adj.setdefault(a, set()).add(b)
        adj.setdefault(b, set())
    return adj


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_no_cycle_between_packages_at_any_depth(graph, depth):
    found = cycles(_collapsed(graph, depth))
    assert not found, f"package cycles at depth {depth}: " + _shown(found)


def test_a_package_cycle_is_found():
    """The package check on a tree written here: two sub-packages importing each other through different modules."""
    from pathlib import Path

    from tests.architecture.import_graph import Edge, Graph

    g = Graph({m: Path(m.replace(".", "/") + ("/__init__.py" if m.count(".") < 2 else ".py")) for m in
               ("p", "p.a", "p.b", "p.a.x", "p.b.y", "p.b.z")})  # fmt: skip
    g.edges = [Edge("p.a.x", "p.b.y", False, 1), Edge("p.b.z", "p.a.x", False, 1, typing=True)]
    assert cycles(g.internal(lazy=True, typing=True)) == []
    assert cycles(_collapsed(g, 2)) == [["p.a", "p.b", "p.a"]]


def test_no_file_over_400_lines():
    long = {}
    for module, path in module_files(REPO, PACKAGES).items():
        n = len(path.read_text().splitlines())
        if n > MAX_LINES:
            long[module] = n
    assert not long, f"modules over {MAX_LINES} lines (split them by concern): {long}"


def _modules_per_folder(root) -> dict[str, int]:
    """Every package folder under ``root`` (``root`` included) -> its modules, ``__init__.py`` not counted."""
    out = {}
    for init in sorted(root.rglob("__init__.py")):
        out[str(init.parent.relative_to(root.parent))] = len(
            [p for p in init.parent.glob("*.py") if p.name != "__init__.py"])
    return out


@pytest.mark.parametrize("package", ["y9train", "y9core", "y9deploy"])
def test_no_package_folder_holds_more_than_twelve_modules(package):
    """A folder of more than 12 modules is a flat room a newcomer cannot read: name its parts (sub-packages)."""
    counts = _modules_per_folder(REPO / package)
    assert f"{package}" in counts and len(counts) > 3  # the walk sees the package and its sub-packages
    crowded = {folder: n for folder, n in counts.items() if n > MAX_MODULES_PER_FOLDER}
    assert not crowded, f"folders over {MAX_MODULES_PER_FOLDER} modules (__init__.py not counted): {crowded}"


def test_the_folder_count_sees_a_crowded_folder(tmp_path):
    pkg = tmp_path / "p"
    (pkg / "room").mkdir(parents=True)
    for name in ["__init__", *(f"m{i}" for i in range(13))]:
        (pkg / "room" / f"{name}.py").write_text("")
    (pkg / "__init__.py").write_text("")
    assert _modules_per_folder(pkg) == {"p": 0, "p/room": 13}


# Re-exporting modules allowed: only the contract paths DESIGN.md names whose code lives elsewhere.
CONTRACT_PATHS = {"y9train.checkpoint", "y9train.metrics", "y9deploy.preprocess", "y9deploy.postprocess"}


def _is_stand_in(path) -> bool:
    """A module (not a package's ``__init__`` or ``__main__``) with no code of its own that keeps a path alive for something that
    lives elsewhere: it only imports, re-exports (``__all__``) or calls (``stand_in(__name__)``), or it warns with
    a ``DeprecationWarning`` as it is imported, or it puts a module in ``sys.modules`` (anywhere in its code)."""
    import ast

    tree = ast.parse(path.read_text())
    if any(isinstance(n, ast.Subscript) and ast.unparse(n.value) == "sys.modules" and isinstance(n.ctx, ast.Store)
           for n in ast.walk(tree)):  # fmt: skip
        return True
    body = [n for n in tree.body if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]
    own = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    if any("DeprecationWarning" in ast.dump(n) for n in body if not isinstance(n, own)):  # warns on import
        return True

    def passive(n) -> bool:
        if isinstance(n, ast.Import | ast.ImportFrom) or (isinstance(n, ast.Expr) and isinstance(n.value, ast.Call)):
            return True
        if isinstance(n, ast.Assign | ast.AnnAssign):
            targets = n.targets if isinstance(n, ast.Assign) else [n.target]
            return all(isinstance(t, ast.Name) and t.id == "__all__" for t in targets)
        return False

    return bool(body) and all(passive(n) for n in body)


def test_no_stand_in_modules():
    """No module only keeps an old path alive (the eight flat ``y9deploy.pipelines`` stand-ins and ``moved.py`` are
    gone); the contract paths of DESIGN.md are the only re-exporting modules."""
    stand_ins = {m for m, path in module_files(REPO, PACKAGES).items()
                 if path.name not in ("__init__.py", "__main__.py") and _is_stand_in(path)}  # fmt: skip
    assert stand_ins == CONTRACT_PATHS, f"stand-in modules: {sorted(stand_ins - CONTRACT_PATHS)}; " \
        f"contract paths missing: {sorted(CONTRACT_PATHS - stand_ins)}"


def test_a_stand_in_is_recognised(tmp_path):
    one = tmp_path / "old.py"
    one.write_text('"""Moved."""\nimport warnings\nwarnings.warn("moved", DeprecationWarning)\nfrom a.b import *\n')
    two = tmp_path / "reexport.py"
    two.write_text('"""Names."""\nfrom a.b import c\n\n__all__ = ["c"]\n')
    real = tmp_path / "real.py"
    real.write_text('"""Code."""\nfrom a.b import c\n\n\ndef f():\n    return c\n')
    three = tmp_path / "caller.py"
    three.write_text('"""Moved."""\nfrom a.moved import stand_in\n\nstand_in(__name__)\n')
    four = tmp_path / "swapper.py"
    four.write_text('import sys\n\n\ndef swap(old, new):\n    sys.modules[old] = new\n')
    assert all(_is_stand_in(p) for p in (one, two, three, four)) and not _is_stand_in(real)


#: old module paths that are now sub-packages re-exporting the old public names (no warning)
KEPT_PATHS = {
    "y9deploy.pipelines.sources": ("MAX_URL_IMAGE_BYTES", "source_roots", "url_kind", "FrameReader"),
    "y9deploy.pipelines.inspection": ("inspect", "Rule", "Thresholds", "ClassThreshold"),
    "y9deploy.pipelines.tiling": ("predict_tiled", "tile_grid", "merge_detections", "TileOptions"),
}


@pytest.mark.parametrize("old", sorted(KEPT_PATHS))
def test_an_old_path_that_is_now_a_package_keeps_its_names(old):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        module = importlib.import_module(old)
    missing = [n for n in KEPT_PATHS[old] if not hasattr(module, n)]
    assert not missing, f"{old} lost {missing}"


def test_the_version_is_stated_once_in_python_and_agrees_with_the_distribution():
    """``y9core.version`` is the one place the packages read it from; pyproject.toml states it for the installer."""
    import tomllib

    from y9core.version import __version__

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert project["version"] == __version__
    import y9deploy
    import y9train

    assert y9deploy.__version__ is __version__ and y9train.__version__ is __version__
