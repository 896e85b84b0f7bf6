"""Layers that point one way, checked on the import graph read from the source (tests/architecture/import_graph.py).

y9core (errors, atomic writes, letterbox geometry) is at the bottom; y9train and y9deploy build on it; y9cli, the
command line, sits on top and nothing imports it. The runtime and the pre/post-processing packages (what a
deployment box without torch runs) import neither torch nor y9train at module level; y9train imports nothing of the
Detector runtime (``y9deploy.runtime``). Validation shares the batched torch post-processing of ``y9deploy.post``,
which sits below the runtime and imports none of it.
"""

from __future__ import annotations

import pytest

from tests.architecture.import_graph import Edge, build_graph, cycles, in_package
from tests.conftest import REPO

#: the runtime: y9deploy.runtime, the host pre/post-processing modules and any pre/post-processing package
#: (y9deploy.pre*, y9deploy.post*)
RUNTIME = ("y9deploy.runtime", "y9deploy.detections", "y9deploy.preprocess", "y9deploy.postprocess", "y9deploy.nms")
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
    assert {"y9core.errors", "y9train.train", "y9deploy.runtime.detector", "y9cli.app"} <= set(graph.modules)
    assert any(e.source == "y9train.checkpoint" and e.target == "y9core.errors" for e in graph.edges)
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
    assert "y9deploy.runtime.detector" in runtime and "y9deploy.nms" in runtime
    bad = [e for e in graph.edges if is_runtime(e.source) and not e.lazy and in_package(e.target, NOT_IN_RUNTIME)]
    assert not bad, "module-level imports of torch / y9train in the runtime:\n  " + _listed(bad)


def test_y9train_imports_nothing_of_the_runtime(graph):
    bad = [e for e in graph.edges if in_package(e.source, ["y9train"]) and in_package(e.target, DETECTOR_RUNTIME)]
    assert not bad, "y9train imports of the runtime (lazy ones included):\n  " + _listed(bad)


def test_post_processing_stays_below_the_runtime(graph):
    bad = [e for e in graph.edges
           if in_package(e.source, ["y9deploy.post", "y9deploy.pre"]) and in_package(e.target, DETECTOR_RUNTIME)]  # fmt: skip
    assert not bad, "pre/post-processing imports of the Detector runtime:\n  " + _listed(bad)


def test_y9core_imports_no_other_y9_package(graph):
    bad = [e for e in graph.edges
           if in_package(e.source, ["y9core"]) and in_package(e.target, ["y9train", "y9deploy", "y9cli"])]  # fmt: skip
    assert not bad, "y9core must stay at the bottom:\n  " + _listed(bad)


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
    assert cycles(g.internal(lazy=False)) == [["pkg.a", "pkg.b", "pkg.a"], ["pkg.sub", "pkg.sub.c", "pkg.sub"]]
    with_lazy = cycles(g.internal(lazy=True))
    assert len(with_lazy) == 1 and with_lazy[0][0] == with_lazy[0][-1] == "pkg.a"
    assert set(with_lazy[0]) == {"pkg.a", "pkg.b"}  # a shortest cycle of the group {a, b, sub, sub.c}
