"""One door per choice: the post-processing and the frame pipeline are each chosen by one named function
(``y9core.post.choice.choose_post``, ``y9deploy.runtime.frame_pipeline.choose_pipeline``), and the implementations
are reached only through the module that runs that choice. Read from the source with ``ast`` (nothing imported):
every import of an implementation's entry name and every ``x.name`` use in the y9 packages is a use of it.

Also: the facade modules are gone (``y9deploy.nms``), and the two public paths that DESIGN.md's contracts name
(``y9deploy.postprocess.postprocess``, ``y9deploy.preprocess.letterbox``) hold one name each and are imported by
no y9 module: y9's own code imports each name from its one home.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.architecture.import_graph import PACKAGES, module_files
from tests.conftest import REPO

#: entry name of an implementation -> the modules allowed to reach it (besides the module that defines it)
DOORS = {
    # post-processing: the door for raw predictions, and the Detector's runner (graph and end-to-end rows)
    "decode_nms": {"y9core.post.rows", "y9core.post.torch_batched"},  # the latter: an image beyond its budget
    "batched_postprocess_torch": {"y9core.post.rows"},
    "rows_with": {"y9core.post.rows", "y9deploy.post.runner"},
    "GraphPost": {"y9deploy.post.runner"},
    "end2end_rows": {"y9deploy.post.runner"},
    # the frame pipeline: built by build_pipeline only; its parts by the torch pipeline
    "HostPipeline": {"y9deploy.runtime.frame_pipeline"},
    "GpuPipeline": {"y9deploy.runtime.frame_pipeline"},
    "DevicePre": {"y9deploy.runtime.gpu_pipeline"},
    "StreamRunner": {"y9deploy.runtime.gpu_pipeline"},
    # the runner of the Detector's post-processing: its pipelines and the Triton client
    "PostRunner": {"y9deploy.runtime.host_pipeline", "y9deploy.runtime.gpu_pipeline", "y9deploy.serving.triton_client"},
    "build_pipeline": {"y9deploy.runtime.detector"},
}  # fmt: skip
#: the chooser of each door, called by whoever states the facts
CHOOSERS = {"choose_post": "y9core.post.choice", "choose_pipeline": "y9deploy.runtime.frame_pipeline"}
PUBLIC_PATHS = {"y9deploy.postprocess": {"postprocess"}, "y9deploy.preprocess": {"letterbox"}}


def _uses(tree: ast.Module) -> list[tuple[str, str, int]]:
    """(name, how, line) for every import of a name and every attribute access ``x.name`` in ``tree``."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            out += [(a.name, f"from {node.module} import", node.lineno) for a in node.names]
        elif isinstance(node, ast.Attribute):
            out.append((node.attr, "attribute", node.lineno))
    return out


def _defines(tree: ast.Module, name: str) -> bool:
    return any(isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name == name for n in tree.body)


@pytest.fixture(scope="module")
def modules() -> dict[str, ast.Module]:
    return {m: ast.parse(p.read_text(), str(p)) for m, p in module_files(REPO, PACKAGES).items()}


def test_each_door_and_chooser_is_defined_once(modules):
    for name in [*DOORS, *CHOOSERS]:
        homes = [m for m, tree in modules.items() if _defines(tree, name)]
        assert len(homes) == 1, (name, homes)
    for name, home in CHOOSERS.items():
        assert _defines(modules[home], name), (name, home)


def test_implementations_are_reached_only_through_their_door(modules):
    bad = []
    for module, tree in modules.items():
        for name, how, line in _uses(tree):
            if name in DOORS and module not in DOORS[name] and not _defines(tree, name):
                bad.append(f"{module}:{line}: {how} {name} (allowed: {sorted(DOORS[name])})")
    assert not bad, "implementations reached around their chooser:\n  " + "\n  ".join(bad)


def test_the_doors_use_their_chooser(modules):
    """The runner and the raw-prediction door ask choose_post; build_pipeline asks choose_pipeline."""
    calls = {m: {n for n, _, _ in _uses(t)} | {c.func.id for c in ast.walk(t)
                                                 if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)}
             for m, t in modules.items()}  # fmt: skip
    assert "choose_post" in calls["y9deploy.post.runner"] and "choose_post" in calls["y9core.post.rows"]
    assert "choose_pipeline" in calls["y9deploy.runtime.frame_pipeline"]
    assert (
        "rows_with" in calls["y9deploy.post.runner"]
        and "build_pipeline" in calls["y9deploy.runtime.detector"]
    )


def test_no_facade_module_gives_a_second_import_path(modules):
    assert "y9deploy.nms" not in modules
    for path, names in PUBLIC_PATHS.items():
        tree = modules[path]
        exported = {a.asname or a.name for n in tree.body if isinstance(n, ast.ImportFrom) for a in n.names}
        assert exported - {"annotations"} == names, (path, exported)
        defined = [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))]
        assert not defined, (path, defined)
    importers = [
        f"{m}:{n.lineno}" for m, tree in modules.items() for n in ast.walk(tree)
        if (isinstance(n, ast.ImportFrom) and n.module in PUBLIC_PATHS)
        or (isinstance(n, ast.Import) and any(a.name in PUBLIC_PATHS for a in n.names))
    ]  # fmt: skip
    assert not importers, f"y9 modules importing a public path instead of the name's home: {importers}"


def test_the_public_paths_still_work():
    """DESIGN.md's contracts: ``y9deploy.postprocess.postprocess`` and ``y9deploy.preprocess.letterbox``."""
    import numpy as np

    from y9core.letterbox import letterbox as home_letterbox
    from y9core.post.rows import postprocess as home_postprocess
    from y9deploy.postprocess import postprocess
    from y9deploy.preprocess import letterbox

    assert postprocess is home_postprocess and letterbox is home_letterbox
    assert Path(REPO / "y9deploy" / "nms.py").exists() is False
    rows = postprocess(np.zeros((2, 6, 8), np.float32))
    assert [r.shape for r in rows] == [(0, 6), (0, 6)]
