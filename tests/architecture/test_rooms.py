"""The layer rule over the rooms (sub-packages) of y9train, y9core and y9deploy: inside a package, a room imports only
rooms of a lower layer (any kind of import: module level, inside functions, under ``if TYPE_CHECKING:``).
docs/architecture.md draws these layers, one paragraph a room; a new room must be placed here before it can import or
be imported by another. Modules directly in a package (``y9train.reparam``, ``y9deploy.detections``) are not rooms;
the packages' own order (y9cli -> y9 -> y9deploy / y9train -> y9core) is tests/architecture/test_import_graph.py's.
"""

from __future__ import annotations

import pytest

from tests.architecture.import_graph import Edge, Graph, build_graph
from tests.conftest import REPO

#: top layer first; a room may import the rooms of the layers below its own, never its own layer's or above
LAYERS: dict[str, list[list[str]]] = {
    "y9train": [
        ["run"],  # train(), its command line, several processes
        ["loop"],  # the training loop and what it keeps between epochs
        ["reports", "optimisation"],  # validation and a run's files | optimiser, EMA, settings
        ["setup"],  # what a run decides before its first step
        ["checkpoints", "loss", "timing", "data"],
        ["models"],
    ],
    "y9core": [
        ["data", "evaluation", "post"],
        ["images"],
        ["files"],
    ],
    "y9deploy": [
        ["int8"],  # the QDQ INT8 export: exports the FP32 twin, calibrates, gates on the deployed file's score
        ["serving", "measure", "pipelines.predict", "pipelines.inspection", "export"],
        ["pipelines.sources", "pipelines.tiling"],
        ["runtime"],
        ["runtime.backends", "tracking"],
        ["engine", "pre", "post"],
        ["model_file"],
    ],
}


def room_of(graph: Graph, module: str) -> str | None:
    """The room (sub-package, dotted below its top package) a module belongs to; None for a top package's own
    modules and the top packages themselves."""
    parts = module.split(".")
    owner = parts if graph.modules[module].name == "__init__.py" else parts[:-1]
    return ".".join(owner[1:]) or None


def layer_breaks(graph: Graph, layers: dict[str, list[list[str]]]) -> list[str]:
    """Imports between two rooms of one package that do not point to a lower layer, and rooms not placed."""
    rank = {(top, room): i for top, rows in layers.items() for i, row in enumerate(rows) for room in row}
    found = set()
    for e in graph.edges:
        if e.target not in graph.modules:
            continue
        top, target_top = e.source.split(".")[0], e.target.split(".")[0]
        a, b = room_of(graph, e.source), room_of(graph, e.target)
        if top != target_top or top not in layers or a is None or b is None or a == b:
            continue
        if b.startswith(a + ".") and (top, b) not in rank:
            continue  # a room's own sub-folders (pipelines -> pipelines.sources) when not placed themselves
        for room in (a, b):
            if (top, room) not in rank:
                found.add(f"{top}.{room} is not placed in LAYERS ({e})")
        if (top, a) in rank and (top, b) in rank and rank[top, a] >= rank[top, b]:
            found.add(f"{top}.{a} (layer {rank[top, a]}) imports {top}.{b} (layer {rank[top, b]}): {e}")
    return sorted(found)


@pytest.fixture(scope="module")
def graph():
    return build_graph(REPO, typing=True)


def test_every_room_imports_only_rooms_below_it(graph):
    found = layer_breaks(graph, LAYERS)
    assert not found, "\n".join(found)


def test_every_room_is_placed(graph):
    rooms = {(m.split(".")[0], room_of(graph, m)) for m in graph.modules}
    unplaced = sorted(f"{top}.{room}" for top, room in rooms
                      if top in LAYERS and room and room != "pipelines"
                      and room not in {r for row in LAYERS[top] for r in row})  # fmt: skip
    assert not unplaced, f"rooms missing from LAYERS: {unplaced}"


def test_the_rule_sees_an_import_going_up():
    from pathlib import Path

    mods = {"p": "p/__init__.py", "p.low": "p/low/__init__.py", "p.low.a": "p/low/a.py", "p.high": "p/high/__init__.py",
            "p.high.b": "p/high/b.py", "p.top": "p/top.py"}  # fmt: skip
    g = Graph({m: Path(f) for m, f in mods.items()})
    g.edges = [Edge("p.high.b", "p.low.a", False, 1), Edge("p.top", "p.high.b", False, 1)]
    layers = {"p": [["high"], ["low"]]}
    assert layer_breaks(g, layers) == []
    g.edges.append(Edge("p.low.a", "p.high.b", True, 2))
    assert layer_breaks(g, layers) == ["p.low (layer 1) imports p.high (layer 0): p.low.a -> p.high.b (line 2, lazy)"]
    g.edges.pop()
    assert layer_breaks(g, {"p": [["high"]]}) == ["p.low is not placed in LAYERS (p.high.b -> p.low.a (line 1))"]
