"""Validation: detections scaled back from letterboxed rect batches to source pixels give exactly the metrics of
``evaluate`` on boxes computed independently in source pixels; ``y9 val`` checks the class count.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest
import torch
from torch import nn

from tests.train.data_fixtures import COCO_36, COCO_42, add_image, write_yaml
from tests.train.trainer_fixtures import one_thread  # noqa: F401
from y9core.errors import BackendUnavailableError, DataError
from y9core.evaluation.metrics import evaluate
from y9core.evaluation.result import METRIC_KEYS, require_metrics_backend
from y9train.checkpoints.load import save_checkpoint
from y9train.data import YoloDataset, build_dataloader
from y9train.models import build_model
from y9train.reports.validate import run_validation, val_checkpoint

IMGSZ = 160
SHIFT = (3.0, -2.0)  # input pixels


def _two_image_val(root):
    lab36 = (COCO_36.with_suffix(".txt")).read_text()
    lab42 = (COCO_42.with_suffix(".txt")).read_text()
    add_image(root, "train", "a.jpg", COCO_36, lab36)
    add_image(root, "val", "a.jpg", COCO_36, lab36)  # 481 x 640 (portrait)
    add_image(root, "val", "b.jpg", COCO_42, lab42)  # 640 x 478 (landscape)
    return write_yaml(root)


class Oracle(nn.Module):
    """Returns pre-computed raw outputs ``[B, 4 + nc, A]`` in order (the validation pipeline around it is under test)."""

    def __init__(self, outputs: list[torch.Tensor]):
        super().__init__()
        self.outputs = list(outputs)
        self.anchor = nn.Parameter(torch.zeros(1))

    def forward(self, x):
        out = self.outputs.pop(0)
        assert out.shape[0] == x.shape[0]
        return out


def _encode(labels: torch.Tensor, batch_size: int, nc: int, shift) -> torch.Tensor:
    """Ground truth (input pixels) -> raw output: one anchor per box (shifted), score 0.9; 8 empty anchors more."""
    per_image = [labels[labels[:, 0] == i] for i in range(batch_size)]
    a = max(len(p) for p in per_image) + 8
    out = torch.zeros(batch_size, 4 + nc, a)
    for i, rows in enumerate(per_image):
        for j, (_, c, x1, y1, x2, y2) in enumerate(rows.tolist()):
            out[i, :4, j] = torch.tensor(
                [(x1 + x2) / 2 + shift[0], (y1 + y2) / 2 + shift[1], x2 - x1, y2 - y1]
            )
            out[i, 4 + int(c), j] = 0.9
    return out


def test_validation_scales_back_to_source_pixels_exactly(tmp_path):
    data = _two_image_val(tmp_path)
    ds = YoloDataset.from_yaml(data, "val", imgsz=IMGSZ, label_cache=False)
    loader = build_dataloader(ds, 2, workers=0)
    batches = list(loader)
    offsets = [pad for _, pad in batches[0]["ratio_pad"]]
    assert len(batches) == 1 and all(
        max(pad) > 0 for pad in offsets
    )  # both images padded (x for one, y for other)
    outputs = [_encode(b["labels"], len(b["paths"]), 80, SHIFT) for b in batches]
    res = run_validation(Oracle(outputs), loader, device=torch.device("cpu"), nc=80)

    # independently: ground truth from the label files in source pixels, predictions shifted by SHIFT / ratio
    preds, targets = [], []
    for path in ds.files:
        h0, w0 = ds.shapes[ds.files.index(path)]
        r = IMGSZ / max(h0, w0)
        rw, rh = round(w0 * r) / w0, round(h0 * r) / h0
        lab = np.loadtxt(path.parent.parent.parent / "labels" / "val" / (path.stem + ".txt"), ndmin=2)
        xyxy = np.c_[lab[:, 1] - lab[:, 3] / 2, lab[:, 2] - lab[:, 4] / 2, lab[:, 1] + lab[:, 3] / 2,
                     lab[:, 2] + lab[:, 4] / 2] * [w0, h0, w0, h0]  # fmt: skip
        targets.append(np.c_[lab[:, 0], xyxy])
        moved = xyxy + [SHIFT[0] / rw, SHIFT[1] / rh] * 2
        moved = np.clip(moved, 0, [w0, h0, w0, h0])
        preds.append(np.c_[moved, np.full(len(lab), 0.9), lab[:, 0]])
    ref = evaluate(preds, targets, nc=80)
    assert 0.0 < ref["map50_95"] < 1.0  # the shift makes it imperfect, so a wrong scale-back would show
    for k in METRIC_KEYS:
        assert res.metrics[k] == pytest.approx(ref[k], abs=1e-6, nan_ok=True), k
    assert res.images == 2 and res.targets == sum(len(t) for t in targets) and res.detections == res.targets


def test_perfect_predictions_score_one(tmp_path):
    data = _two_image_val(tmp_path)
    ds = YoloDataset.from_yaml(data, "val", imgsz=IMGSZ, label_cache=False)
    loader = build_dataloader(ds, 1, workers=0)
    outputs = [_encode(b["labels"], 1, 80, (0.0, 0.0)) for b in loader]
    res = run_validation(Oracle(outputs), loader, device=torch.device("cpu"), nc=80)
    assert res.metrics["map50"] == pytest.approx(1.0) and res.metrics["map50_95"] == pytest.approx(1.0)


class FlagSpy(Oracle):
    """An Oracle that records cuDNN's autotuning flag at each forward."""

    def __init__(self, outputs):
        super().__init__(outputs)
        self.seen: list[bool] = []

    def forward(self, x):
        self.seen.append(torch.backends.cudnn.benchmark)
        return super().forward(x)


@pytest.mark.parametrize("autotune", [True, False])
def test_validation_autotune_switch_holds_in_the_loop_and_is_put_back(tmp_path, autotune):
    data = _two_image_val(tmp_path)
    ds = YoloDataset.from_yaml(data, "val", imgsz=IMGSZ, label_cache=False)
    loader = build_dataloader(ds, 1, workers=0)
    spy = FlagSpy([_encode(b["labels"], 1, 80, (0.0, 0.0)) for b in loader])
    before = torch.backends.cudnn.benchmark
    torch.backends.cudnn.benchmark = True  # training's setting
    try:
        run_validation(spy, loader, device=torch.device("cpu"), nc=80, autotune=autotune)
        assert spy.seen == [autotune, autotune]
        assert torch.backends.cudnn.benchmark is True
    finally:
        torch.backends.cudnn.benchmark = before


def test_val_checkpoint_checks_classes_and_runs(tmp_path):
    data = _two_image_val(tmp_path / "d")
    ckpt = tmp_path / "m.pt"
    save_checkpoint(build_model("gelan-t", nc=80), ckpt)
    res = val_checkpoint(data, ckpt, imgsz=IMGSZ, batch=2, workers=0, device="cpu")
    assert res.images == 2 and set(METRIC_KEYS) <= set(res.metrics)
    save_checkpoint(build_model("gelan-t", nc=3), ckpt)
    with pytest.raises(DataError, match=r"predicts 3 classes but data.yaml .* has nc=80"):
        val_checkpoint(data, ckpt, imgsz=IMGSZ, workers=0, device="cpu")


def test_missing_metrics_package_is_named(monkeypatch):
    monkeypatch.setitem(sys.modules, "faster_coco_eval", None)
    with pytest.raises(BackendUnavailableError, match="pip install faster-coco-eval"):
        require_metrics_backend()


def test_an_fp16_model_validates_under_fp16_autocast(tmp_path):
    """The fp16 EMA (``ema_fp16``) is validated under fp16 autocast: the head decodes in float32 with autocast off,
    so the DFL's fp16 weights meet float32 inputs; its expectation equals the float32 DFL's (weights 0..15 are exact
    in fp16), and a whole validation runs with the model left in fp16."""
    from y9train.models.head import DFL

    x = torch.randn(2, 64, 50, dtype=torch.float32)
    dfl32, dfl16 = DFL(16), DFL(16).half()
    assert torch.equal(dfl16(x), dfl32(x)) and dfl16(x).dtype == torch.float32
    assert dfl16(x.half()).dtype == torch.float16  # same dtypes: the plain conv

    cfg = _two_image_val(tmp_path)
    from y9train.data import load_data_yaml

    data = load_data_yaml(str(cfg), require=("val",))
    dataset = YoloDataset.from_yaml(data, "val", augment=False, imgsz=160, workers=1)
    loader = build_dataloader(dataset, 2, workers=0)
    model = build_model("yolov9-t", nc=data.nc).eval().half()
    res = run_validation(model, loader, device=torch.device("cpu"), nc=data.nc, names=data.names,
                         amp_dtype=torch.float16)  # fmt: skip
    assert res.images == 2 and res.detections > 0 and np.isfinite(res.metrics["map50_95"])
    assert next(model.parameters()).dtype == torch.float16
