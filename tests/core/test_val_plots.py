"""The validation pictures a new user looks at first (issue 44 item 8): an 80-class confusion matrix names its
classes on both axes."""

from __future__ import annotations

from types import SimpleNamespace

import cv2
import numpy as np
import pytest

from y9core.evaluation.coco_categories import COCO_NAMES
from y9core.evaluation.plots import MATRIX_PX, plot_confusion_matrix, tick_font_size


def _matrix(nc: int) -> SimpleNamespace:
    counts = np.eye(nc + 1, dtype=np.int64) * 3
    counts[0, nc] = counts[nc, 1] = 1
    return SimpleNamespace(counts=counts, nc=nc, conf=0.25, iou=0.45,
                           normalized=lambda: counts / np.maximum(counts.sum(1, keepdims=True), 1))  # fmt: skip


@pytest.mark.parametrize("normalized", [False, True])
def test_an_80_class_confusion_matrix_names_every_class_on_both_axes(tmp_path, monkeypatch, normalized):
    pytest.importorskip("matplotlib")
    from matplotlib.axes import Axes

    seen = {}
    for axis in ("x", "y"):
        real = getattr(Axes, f"set_{axis}ticks")

        def record(self, ticks, labels=None, *, _axis=axis, _real=real, **kw):
            seen[_axis] = (list(labels) if labels is not None else None, kw.get("fontsize"))
            return _real(self, ticks, labels, **kw)

        monkeypatch.setattr(Axes, f"set_{axis}ticks", record)
    path = plot_confusion_matrix(_matrix(80), list(COCO_NAMES), tmp_path / "cm.png", normalized=normalized)
    want = [*COCO_NAMES, "background"]
    assert seen["x"][0] == want and seen["y"][0] == want
    assert seen["x"][1] == tick_font_size(81) >= 5  # readable at MATRIX_PX
    img = cv2.imread(str(path))
    assert img.shape == (MATRIX_PX[1], MATRIX_PX[0], 3)
