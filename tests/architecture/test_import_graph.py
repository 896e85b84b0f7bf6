"""Layers that point one way, checked on the import graph read from the source (tests/architecture/import_graph.py),
imports inside functions included.

y9core (errors, atomic writes, letterbox geometry) is at the bottom; y9train and y9deploy build on it; y9cli, the
command line, sits on top and nothing imports it. The runtime and the pre/post-processing packages (what a
deployment box without torch runs) import neither torch nor y9train at module level; y9train imports nothing of the
Detector runtime (``y9deploy.runtime``). Validation shares the post-processing of ``y9core.post`` with the
Detector; it sits below both. Deployment (y9deploy but the torch backend for .pt files and export) never imports
y9train, also inside functions, and torch only inside functions of the optional GPU path; y9train imports nothing
of y9deploy; no cycle between the packages, nor between ``y9deploy.engine`` and ``y9deploy.runtime`` (both use the
model-file checks of ``y9deploy.model_file`` below them). The ``y9`` package sits above y9train and y9deploy.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.architecture.import_graph import Edge, build_graph, cycles, in_package
from tests.conftest import REPO

#: the runtime: y9deploy.runtime, the host pre/post-processing modules and any pre/post-processing package
#: (y9deploy.pre*, y9deploy.post*)
RUNTIME = (
    "y9deploy.runtime",
    "y9deploy.detections",
    "y9deploy.preprocess",
    "y9deploy.postprocess",
    "y9core.post",
    "y9core.boxes",
)
#: the Detector runtime, which y9train must not import (nor may y9deploy.pre / y9deploy.post)
DETECTOR_RUNTIME = ("y9deploy.runtime",)
#: packages a runtime module must not import at module level
NOT_IN_RUNTIME = ("torch", "torchvision", "y9train")


def is_runtime(module: str) -> bool:
    parts = module.split(".")
    return in_package(module, RUNTIME) or (
        len(parts) > 1 and parts[0] == "y9deploy" and parts[1].startswith(("pre", "post"))
    )


@pytest.fixture(scope="module")
def graph():
    return build_graph(REPO)


def _listed(edges: list[Edge]) -> str:
    return "\n  ".join(str(e) for e in edges)


def test_the_graph_sees_the_whole_tree(graph):
    assert {"y9core.errors", "y9train.run.train", "y9deploy.runtime.detector", "y9cli.app"} <= set(graph.modules)
    assert any(e.source == "y9train.checkpoints.load" and e.target == "y9core.errors" for e in graph.edges)
    assert len(graph.modules) > 100 and len(graph.edges) > 1000


def test_no_cycle_among_module_level_imports(graph):
    found = cycles(graph.internal(lazy=False))
    assert not found, "import cycles: " + "; ".join(" -> ".join(c) for c in found)


def test_no_cycle_counting_lazy_imports_too(graph):
    found = cycles(graph.internal(lazy=True))
    assert not found, "import cycles (lazy imports included): " + "; ".join(" -> ".join(c) for c in found)


def test_nothing_imports_the_command_line(graph):
    bad = [e for e in graph.edges if in_package(e.target, ["y9cli"]) and not in_package(e.source, ["y9cli"])]
    assert not bad, "imports of y9cli from outside it:\n  " + _listed(bad)


def test_only_the_command_line_may_use_the_y9_namespace(graph):
    """``y9`` (``import y9``: Model and the public names) sits above the libraries: they never import it."""
    bad = [e for e in graph.edges if in_package(e.target, ["y9"]) and not in_package(e.source, ["y9", "y9cli"])]
    assert not bad, "imports of the y9 namespace from the libraries below it:\n  " + _listed(bad)


def test_runtime_imports_neither_torch_nor_y9train_at_module_level(graph):
    runtime = [m for m in graph.modules if is_runtime(m)]
    assert "y9deploy.runtime.detector" in runtime and "y9core.post.rows" in runtime
    bad = [
        e for e in graph.edges if is_runtime(e.source) and not e.lazy and in_package(e.target, NOT_IN_RUNTIME)
    ]
    assert not bad, "module-level imports of torch / y9train in the runtime:\n  " + _listed(bad)


def test_y9train_imports_nothing_of_the_runtime(graph):
    bad = [
        e for e in graph.edges if in_package(e.source, ["y9train"]) and in_package(e.target, DETECTOR_RUNTIME)
    ]
    assert not bad, "y9train imports of the runtime (lazy ones included):\n  " + _listed(bad)


def test_post_processing_stays_below_the_runtime(graph):
    bad = [e for e in graph.edges
           if in_package(e.source, ["y9deploy.post", "y9deploy.pre"]) and in_package(e.target, DETECTOR_RUNTIME)]  # fmt: skip
    assert not bad, "pre/post-processing imports of the Detector runtime:\n  " + _listed(bad)


def test_y9core_imports_no_other_y9_package(graph):
    bad = [e for e in graph.edges
           if in_package(e.source, ["y9core"]) and in_package(e.target, ["y9train", "y9deploy", "y9cli"])]  # fmt: skip
    assert not bad, "y9core must stay at the bottom:\n  " + _listed(bad)


# ------------------------------------------------------------------------------------------------ deployment
#: deployment modules that may import y9train and torch (DESIGN.md): the torch backend for .pt files and export
DEPLOY_TRAINER_DOORS = ("y9deploy.runtime.backends.torch_backend", "y9deploy.export")
#: deployment modules on the optional torch GPU path: they import torch inside functions, only when a CUDA device and
#: torch are there (the torch pipeline, its pre/post-processing, the backends' device buffers, GPU facts for the
#: doctor and the stage timer); a deployment box without torch never runs those lines (test_backends checks it)
TORCH_GPU_PATH = (
    "y9deploy.measure.doctor", "y9deploy.measure.stage_timer", "y9deploy.pre.device", "y9deploy.pre.torch_letterbox",
    "y9deploy.post.graph", "y9deploy.runtime.gpu_pipeline",
    "y9deploy.runtime.backends.onnxruntime_backend", "y9deploy.runtime.backends.tensorrt_backend",
)  # fmt: skip


def _deployment(module: str) -> bool:
    return in_package(module, ["y9deploy"]) and not in_package(module, DEPLOY_TRAINER_DOORS)


def _package_cycles(
    graph, level: int, within: tuple[str, ...], skip: tuple[tuple[str, str], ...] = ()
) -> list:
    """Cycles among the packages ``within`` once every module is collapsed to its first ``level`` name parts,
    imports inside functions included (edges in ``skip`` left out)."""
    adj: dict[str, set[str]] = {p: set() for p in within}
    for e in graph.edges:
        if (e.source, e.target) in skip or e.target not in graph.modules:
            continue
        a, b = ".".join(e.source.split(".")[:level]), ".".join(e.target.split(".")[:level])
        if a != b and a in adj and b in adj:
            adj[a].add(b)
    return cycles(adj)


def test_deployment_never_reaches_the_trainer_also_inside_functions(graph):
    """No deployment module imports y9train, at module level or inside a function, except the torch backend and
    export (the documented doors). Every deployment module is checked, so none reaches y9train through another
    either (y9core imports nothing above it)."""
    bad = [e for e in graph.edges if _deployment(e.source) and in_package(e.target, ["y9train"])]
    assert not bad, "deployment imports of the trainer:\n  " + _listed(bad)


def test_deployment_imports_torch_only_inside_functions_of_the_gpu_path(graph):
    found = [
        e for e in graph.edges if _deployment(e.source) and in_package(e.target, ["torch", "torchvision"])
    ]
    bad = [e for e in found if not e.lazy or not in_package(e.source, TORCH_GPU_PATH)]
    assert not bad, "torch imported by deployment outside the optional GPU path:\n  " + _listed(bad)


def test_no_cycle_between_trainer_and_deployment_packages(graph):
    """y9train imports nothing of y9deploy (the arrows between them point one way), and no cycle at the package
    level, imports inside functions counted."""
    up = [e for e in graph.edges if in_package(e.source, ["y9train"]) and in_package(e.target, ["y9deploy"])]
    assert not up, "y9train imports of y9deploy:\n  " + _listed(up)
    assert not _package_cycles(graph, 1, ("y9core", "y9train", "y9deploy", "y9cli"))


def test_no_cycle_between_engine_and_runtime(graph):
    found = _package_cycles(graph, 2, ("y9deploy.engine", "y9deploy.runtime"))
    assert not found, "engine <-> runtime: " + "; ".join(" -> ".join(c) for c in found)


def test_package_cycles_are_found_inside_functions_too():
    """The package-level check sees an import inside a function (the synthetic tree below, collapsed)."""
    from tests.architecture.import_graph import Edge, Graph

    g = Graph({"a.x": Path("a/x.py"), "b.y": Path("b/y.py")})
    g.edges = [Edge("a.x", "b.y", False, 1), Edge("b.y", "a.x", True, 9)]
    assert _package_cycles(g, 1, ("a", "b")) == [["a", "b", "a"]]
    assert _package_cycles(g, 1, ("a", "b"), skip=(("b.y", "a.x"),)) == []


# The graph builder itself, on a small package written here.
SYNTHETIC = {
    "pkg/__init__.py": "from pkg.a import top\n",
    "pkg/a.py": "import os\nfrom . import b\n\ndef top():\n    from .sub import c\n    return c\n",
    "pkg/b.py": "import numpy as np\nfrom pkg import a\nfrom pkg.sub.c import VALUE\n",
    "pkg/sub/__init__.py": "from . import c\n",
    "pkg/sub/c.py": (
        "from typing import TYPE_CHECKING\nimport pkg.sub\nif TYPE_CHECKING:\n    from pkg import a\n"
        "VALUE = 1\n\ndef late():\n    import pkg.b\n    import torch\n"
    ),
}


def test_graph_builder_resolves_imports_and_finds_cycles(tmp_path):
    for name, text in SYNTHETIC.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    g = build_graph(tmp_path, ["pkg"])
    assert set(g.modules) == {"pkg", "pkg.a", "pkg.b", "pkg.sub", "pkg.sub.c"}
    edges = {(e.source, e.target, e.lazy) for e in g.edges}
    assert edges == {
        ("pkg", "pkg.a", False),  # from pkg.a import top: top is a function, so the edge is to pkg.a
        ("pkg.a", "os", False),
        ("pkg.a", "pkg.b", False),  # from . import b
        ("pkg.a", "pkg.sub.c", True),  # inside a function, relative to a module's package
        ("pkg.b", "numpy", False),
        ("pkg.b", "pkg.a", False),  # from pkg import a: a is a submodule
        ("pkg.b", "pkg.sub.c", False),
        ("pkg.sub", "pkg.sub.c", False),  # relative to a package's own __init__
        ("pkg.sub.c", "typing", False),
        ("pkg.sub.c", "pkg.sub", False),
        ("pkg.sub.c", "pkg.b", True),
        ("pkg.sub.c", "torch", True),
    }  # the TYPE_CHECKING import of pkg.a is left out
    assert cycles(g.internal(lazy=False)) == [
        ["pkg.a", "pkg.b", "pkg.a"],
        ["pkg.sub", "pkg.sub.c", "pkg.sub"],
    ]
    with_lazy = cycles(g.internal(lazy=True))
    assert len(with_lazy) == 1 and with_lazy[0][0] == with_lazy[0][-1] == "pkg.a"
    assert set(with_lazy[0]) == {"pkg.a", "pkg.b"}  # a shortest cycle of the group {a, b, sub, sub.c}
