"""One IoU per array kind: ``y9core.boxes`` (numpy), ``y9core.box_iou_torch`` (torch) and the Triton kernel of
``y9core.post.triton_nms``. Nothing else in the y9 packages computes an intersection over union: the source
is read with ``ast`` and these signs of an IoU written out are looked for outside those three modules:

- a name (variable, argument or attribute) called ``union``, ``unions``, ``union_area``...;
- a division ``x / (... - x ...)``: the numerator subtracted inside the denominator, as in
  ``inter / (area_a + area_b - inter)`` (also ``np.divide``, ``torch.div``, ``.div_``, ``/=``);
- a function whose name says IoU (``def my_iou``, ``giou``...; not ``match_at_iou``) that calls none of the
  core IoU functions.
"""

from __future__ import annotations

import ast

from tests.architecture.import_graph import PACKAGES
from tests.conftest import REPO

#: the three implementations
IMPLEMENTATIONS = ("y9core/boxes.py", "y9core/box_iou_torch.py", "y9core/post/triton_nms.py")
#: what a function may call to compute an IoU
CORE_IOU = {"box_iou", "box_iou_matrix", "box_iou_torch", "box_iou_matrix_torch"}
DIVISIONS = {"div", "div_", "divide", "true_divide"}


def _name(node: ast.AST) -> str | None:
    """The identifier a node names: ``x`` for ``x``, ``attr`` for ``obj.attr``, else None."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _subtracted(expr: ast.AST) -> set[str]:
    """The source of every right operand of a subtraction inside ``expr``."""
    return {
        ast.unparse(n.right) for n in ast.walk(expr) if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Sub)
    }


def _divisions(node: ast.AST) -> list[tuple[ast.AST, ast.AST]]:
    """``(numerator, denominator)`` of a division: ``x / y``, ``x /= y``, ``np.divide(x, y)``, ``x.div_(y)``..."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        return [(node.left, node.right)]
    if isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Div):
        return [(node.target, node.value)]
    if isinstance(node, ast.Call) and _name(node.func) in DIVISIONS:
        if _name(node.func) == "div_" and isinstance(node.func, ast.Attribute) and node.args:
            return [(node.func.value, node.args[0])]
        if len(node.args) >= 2:
            return [(node.args[0], node.args[1])]
    return []


def _differences(scope: ast.AST) -> set[tuple[str, str]]:
    """``(name, source of x)`` for every ``name = ... - x ...`` and ``name -= x`` in ``scope``: the names that
    hold something minus ``x`` (a union held in a variable of any name)."""
    found = set()
    for node in ast.walk(scope):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            found |= {(node.targets[0].id, r) for r in _subtracted(node.value)}
        if (
            isinstance(node, ast.AugAssign)
            and isinstance(node.op, ast.Sub)
            and isinstance(node.target, ast.Name)
        ):
            found.add((node.target.id, ast.unparse(node.value)))
    return found


def _names_an_iou(function: str) -> bool:
    """A function name that says it computes an IoU (``box_iou``, ``giou``), not one that uses a threshold of
    one (``match_at_iou``)."""
    return "iou" in function.lower() and "at_iou" not in function.lower()


def iou_sites(source: str) -> list[tuple[int, str]]:
    """``(line, what)`` for every sign of an IoU written out in ``source`` (module docstring)."""
    tree = ast.parse(source)
    found: list[tuple[int, str]] = []
    scopes = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))] + [tree]
    for scope in scopes:
        held = None  # _differences(scope), walked only for a scope that divides by a name (most never do)
        body = scope.body if scope is tree else [scope]
        nodes = [n for part in body for n in ast.walk(part)]
        if scope is tree:  # module level: leave out what the functions' own pass sees
            nodes = [n for part in body if not isinstance(part, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                     for n in ast.walk(part)]  # fmt: skip
        for node in nodes:
            for num, den in _divisions(node):
                if isinstance(den, ast.Name) and held is None:
                    held = _differences(scope)
                if ast.unparse(num) in _subtracted(den) or (
                    isinstance(den, ast.Name) and (den.id, ast.unparse(num)) in held
                ):
                    found.append((node.lineno, f"the division {ast.unparse(num)} / ({ast.unparse(den)})"))
    for node in ast.walk(tree):
        named = node.arg if isinstance(node, ast.arg) else None
        if isinstance(node, (ast.Name, ast.Attribute)) and isinstance(node.ctx, ast.Store):
            named = _name(node)
        if named and "union" in named.lower():
            found.append((node.lineno, f"a name '{named}'"))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _names_an_iou(node.name):
            calls = {_name(c.func) for c in ast.walk(node) if isinstance(c, ast.Call)}
            if not calls & CORE_IOU:
                found.append((node.lineno, f"the function {node.name}, which calls no core IoU"))
    return sorted(set(found))


def sources() -> dict[str, str]:
    """Repository-relative path -> text of every module of the y9 packages."""
    return {
        p.relative_to(REPO).as_posix(): p.read_text()
        for pkg in PACKAGES
        for p in sorted((REPO / pkg).rglob("*.py"))
    }


def test_no_iou_outside_the_three_implementations():
    files = sources()
    assert len(files) > 100
    bad = [f"{path}:{line}: {what}" for path, text in files.items() if path not in IMPLEMENTATIONS
           for line, what in iou_sites(text)]  # fmt: skip
    assert not bad, (
        "IoU written outside y9core.boxes / y9core.box_iou_torch / triton_nms:\n  " + "\n  ".join(bad)
    )


def test_the_implementations_are_seen_by_the_search():
    """The search finds the IoU in each of the three (so it would find a copy of any of them elsewhere)."""
    for path in IMPLEMENTATIONS:
        assert iou_sites((REPO / path).read_text()), path


COPIES = {
    "numpy, in place": (
        "def overlap(a, b):\n    w = np.minimum(a[:, None, 2], b[None, :, 2])\n    i = np.multiply(w, h, out=w)\n"
        "    u = np.add(area_a[:, None], area_b[None, :])\n    u -= i\n    return np.divide(i, u, out=i)\n"
    ),
    "held in a variable": "def f(a, b):\n    s = a1 + a2 - i\n    return i / s\n",
    "at module level": "i = w * h\niou = i / (a1 + a2 - i)\n",
    "a union": "def f(a, b):\n    union = a + b\n    return i / union\n",
    "a union attribute": "def f(self):\n    self.union_area = 3\n",
    "torch": "def f(a, b):\n    return (a * b).div_(area_a + area_b - a * b + 1e-7)\n",
    "an expression": "def overlap(p, q):\n    return iw * ih / (ap + aq - iw * ih)\n",
    "in place division": "def f():\n    inter /= a1 + a2 - inter\n",
    "a function named iou": "def giou(a, b):\n    return enclose(a, b) - 1\n",
}
NOT_COPIES = {
    "intersection over area": "def ioa(box, boxes):\n    return iw * ih / (area + 1e-9)\n",
    "a wrapper": "def box_iou(a, b, eps=1e-7):\n    return box_iou_torch(a, b, eps=eps)\n",
    "a matching by IoU": "def match_at_iou(d, g):\n    return core.box_iou_matrix(d, g) > 0.5\n",
    "a difference over a sum": "def f(a, b):\n    return (a - b) / (a + b)\n",
}


def test_the_search_finds_copies_and_only_copies():
    for what, text in COPIES.items():
        assert iou_sites(text), what
    for what, text in NOT_COPIES.items():
        assert not iou_sites(text), what
