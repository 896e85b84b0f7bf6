"""The house kept small and one-way (docs/architecture.md is its map): no import cycle of any kind inside or
between y9, y9core, y9train, y9deploy and y9cli, no file over 400 lines, no folder of ``y9deploy.pipelines`` of
more than 10 modules, and the old flat ``y9deploy.pipelines`` paths still working.

"Any kind" of cycle: module-level imports, imports inside functions and imports under ``if TYPE_CHECKING:`` (which
never run, but still tie two modules together for a reader), between modules, and between the packages they
collapse into at every depth (``y9deploy.pipelines.predict`` -> ``y9deploy.pipelines.sources`` and back would
be a cycle of sub-packages even with no cycle of modules).
"""

from __future__ import annotations

import importlib
import sys
import warnings

import pytest

from tests.architecture.import_graph import PACKAGES, build_graph, cycles, module_files
from tests.conftest import REPO

MAX_LINES = 400
MAX_MODULES_PER_FOLDER = 10


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


def test_no_folder_of_the_pipelines_holds_more_than_ten_modules():
    root = REPO / "y9deploy" / "pipelines"
    crowded = {}
    for folder in [root, *(p for p in root.rglob("*") if p.is_dir() and (p / "__init__.py").is_file())]:
        n = len([p for p in folder.glob("*.py") if p.name != "__init__.py"])
        if n > MAX_MODULES_PER_FOLDER:
            crowded[str(folder.relative_to(REPO))] = n
    assert not crowded, crowded


# The public paths of the flat package that docs, samples and users import: moved ones warn and give the new module.
MOVED_PATHS = {
    "y9deploy.pipelines.sources.frame_reader": ("FrameReader", "y9deploy.pipelines.sources.frame_reader"),
    "y9deploy.tracking": ("make_tracker", "y9deploy.tracking"),
    "y9deploy.tracking.counting": ("CountLine", "y9deploy.tracking.counting"),
    "y9deploy.tracking.source_tracking": ("SourceTracking", "y9deploy.tracking.source_tracking"),
    "y9deploy.pipelines.inspection.rules_file": ("load_rules", "y9deploy.pipelines.inspection.rules_file"),
    "y9deploy.pipelines.inspection.run": ("run_inspection", "y9deploy.pipelines.inspection.run"),
    "y9deploy.pipelines.predict.results": ("read_jsonl", "y9deploy.pipelines.predict.results"),
    "y9deploy.pipelines.predict.run": ("predict_source", "y9deploy.pipelines.predict.run"),
}
#: old module paths that are now sub-packages re-exporting the old public names (no warning)
KEPT_PATHS = {
    "y9deploy.pipelines.sources": ("MAX_URL_IMAGE_BYTES", "source_roots", "url_kind", "FrameReader"),
    "y9deploy.pipelines.inspection": ("inspect", "Rule", "Thresholds", "ClassThreshold"),
    "y9deploy.pipelines.tiling": ("predict_tiled", "tile_grid", "merge_detections", "TileOptions"),
}


@pytest.mark.parametrize("old", sorted(MOVED_PATHS))
def test_a_moved_path_warns_and_gives_the_new_module(old):
    name, new = MOVED_PATHS[old]
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=new.replace(".", r"\.")):
        module = importlib.import_module(old)
    assert module is importlib.import_module(new) and hasattr(module, name)
    sys.modules.pop(old, None)


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
