"""postprocess against the official NMS fixture and a slow reference written with Python loops."""

from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import pytest

from tests.conftest import REPO, shared_path
from tests.deploy.test_nms import ref_nms
from y9core.letterbox import letterbox_info, scale_boxes
from y9deploy.detections import Detections
from y9deploy.post.host import to_detections
from y9deploy.postprocess import postprocess

F32 = np.float32


def ref_postprocess(pred, conf=0.25, iou=0.45, agnostic=False, multi_label=False, max_det=300, classes=None):
    """The semantics spelled out step by step, one anchor and one class at a time."""
    pred = np.asarray(pred, np.float32)
    nc = pred.shape[1] - 4
    confs = [F32(c) for c in np.broadcast_to(np.asarray(conf, np.float32), (nc,))]
    results = []
    for p in pred:
        cands = []  # (box, score, class) in anchor order, then class order
        for a in range(p.shape[1]):
            cx, cy, w, h = (F32(v) for v in p[:4, a])
            box = [cx - w / F32(2), cy - h / F32(2), cx + w / F32(2), cy + h / F32(2)]
            s = [F32(v) for v in p[4:, a]]
            if multi_label and nc > 1:
                pairs = [(s[c], c) for c in range(nc) if s[c] > confs[c]]
            else:
                best = max(range(nc), key=lambda c: (s[c], -c))  # first class among equal maxima
                pairs = [(s[best], best)] if s[best] > confs[best] else []
            for score, c in pairs:
                if classes is None or c in classes:
                    cands.append((box, score, c))
        cands = sorted(cands, key=lambda t: -float(t[1]))[:30000]  # stable
        shifted = [[v + F32(0 if agnostic else c * 7680) for v in box] for box, _, c in cands]
        keep = ref_nms(shifted, [t[1] for t in cands], iou, max_det)  # already sorted: ties stay in order
        rows = [[*cands[k][0], cands[k][1], cands[k][2]] for k in keep]
        results.append(np.array(rows, np.float32).reshape(-1, 6))
    return results


def random_prediction(rng, batch, nc, anchors, *, ties=False):
    """Boxes clustered around a few objects and scores spread over (0, 1)."""
    centres = rng.uniform(0, 320, (20, 2))
    c = centres[rng.integers(20, size=anchors)] + rng.normal(0, 6, (anchors, 2))
    wh = rng.uniform(8, 60, (anchors, 2))
    boxes = np.concatenate([c, wh], 1).T
    pred = np.empty((batch, 4 + nc, anchors), np.float32)
    for b in range(batch):
        scores = rng.beta(0.6, 2.0, (nc, anchors))
        if ties:
            scores = np.round(scores * 8) / 8
        pred[b, :4] = boxes + rng.normal(0, 1, boxes.shape)
        pred[b, 4:] = scores
    return pred


FIXTURE_KEY = re.compile(r"conf([\d.]+)_iou([\d.]+)_agn(\d)_ml(\d)_b(\d)")


def test_postprocess_reproduces_every_official_nms_setting():
    data = np.load(shared_path("fixtures", "official", "official_nms.npz"))
    pred = data["pred"]
    assert pred.shape == (2, 7, 3000)
    keys = [k for k in data.files if k != "pred"]
    assert len(keys) == 8
    for key in keys:
        c, i, a, m, b = FIXTURE_KEY.fullmatch(key).groups()
        got = postprocess(pred, conf=float(c), iou=float(i), agnostic=a == "1", multi_label=m == "1")
        assert len(got) == 2
        want = data[key]
        assert got[int(b)].dtype == np.float32
        assert got[int(b)].shape == want.shape, key
        np.testing.assert_array_equal(got[int(b)], want, err_msg=key)


@pytest.mark.parametrize("seed", range(10))
def test_postprocess_equals_slow_reference_on_random_predictions(seed):
    rng = np.random.default_rng(seed)
    nc = int(rng.choice([1, 3, 7]))
    pred = random_prediction(rng, 2, nc, int(rng.integers(50, 250)), ties=seed % 3 == 0)
    kw = {
        "conf": float(rng.choice([0.001, 0.1, 0.25, 0.5])),
        "iou": float(rng.choice([0.3, 0.45, 0.7])),
        "agnostic": bool(seed % 2),
        "multi_label": seed % 4 in (1, 2),
        "max_det": int(rng.choice([5, 40, 300])),
        "classes": [0, nc - 1] if seed % 5 == 4 else None,
    }
    got, want = postprocess(pred, **kw), ref_postprocess(pred, **kw)
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape, kw
        np.testing.assert_array_equal(g, w, err_msg=str(kw))


@pytest.mark.parametrize("multi_label", [False, True])
def test_per_class_confidence_thresholds(multi_label):
    rng = np.random.default_rng(7)
    pred = random_prediction(rng, 2, 4, 200)
    conf = np.array([0.2, 0.6, 0.05, 0.9])
    got = postprocess(pred, conf=conf, multi_label=multi_label)
    want = ref_postprocess(pred, conf=conf, multi_label=multi_label)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)
        for c in range(4):
            assert np.all(g[g[:, 5] == c, 4] > conf[c])
    # All thresholds equal == the scalar threshold.
    same = postprocess(pred, conf=[0.3] * 4, multi_label=multi_label)
    for a, b in zip(same, postprocess(pred, conf=0.3, multi_label=multi_label), strict=True):
        np.testing.assert_array_equal(a, b)


def test_postprocess_caps_candidates_at_max_nms_by_score():
    rng = np.random.default_rng(3)
    pred = random_prediction(rng, 1, 2, 150)
    got = postprocess(pred, conf=0.01, max_nms=20)[0]
    want = postprocess(pred[:, :, np.argsort(-pred[0, 4:].max(0), kind="stable")[:20]], conf=0.01)[0]
    np.testing.assert_array_equal(got, want)


def test_postprocess_input_types_and_empty_results():
    rng = np.random.default_rng(0)
    pred = random_prediction(rng, 3, 5, 100)
    out = postprocess(pred, conf=0.999)
    assert len(out) == 3 and all(o.shape == (0, 6) and o.dtype == np.float32 for o in out)
    half = postprocess(pred.astype(np.float16))
    ref = postprocess(pred.astype(np.float16).astype(np.float32))
    for a, b in zip(half, ref, strict=True):
        np.testing.assert_array_equal(a, b)
    rows = postprocess(pred)[0]
    assert np.all(np.diff(rows[:, 4]) <= 0)  # by descending score


@pytest.mark.parametrize(
    "pred,kw,exc,words",
    [
        ([[1.0]], {}, TypeError, "numpy.ndarray"),
        (np.zeros((84, 100), np.float32), {}, ValueError, "shape (84, 100)"),
        (np.zeros((1, 4, 100), np.float32), {}, ValueError, "at least one class"),
        (np.zeros((1, 7, 10), np.float32), {"conf": 1.5}, ValueError, "conf"),
        (np.zeros((1, 7, 10), np.float32), {"conf": [0.1, 0.2]}, ValueError, "one per class (3)"),
        (np.zeros((1, 7, 10), np.float32), {"iou": -0.1}, ValueError, "iou"),
        (np.zeros((1, 7, 10), np.float32), {"max_det": 0}, ValueError, "max_det"),
        (np.zeros((1, 7, 10), np.float32), {"classes": [3]}, ValueError, "[0, 2]"),
    ],
)
def test_postprocess_rejects_bad_arguments(pred, kw, exc, words):
    with pytest.raises(exc) as info:
        postprocess(pred, **kw)
    assert words in str(info.value)


def test_to_detections_scales_back_to_the_frame():
    info = letterbox_info((1080, 1920), 640)
    rows = np.float32([[320, 300, 400, 340, 0.9, 2], [0, 100, 10, 150, 0.5, 0]])
    dets = to_detections(rows, info, ["a", "b", "c"])
    assert isinstance(dets, Detections) and len(dets) == 2
    np.testing.assert_allclose(dets.xyxy, scale_boxes(rows, info)[:, :4])
    np.testing.assert_allclose(dets.xyxy[0], [960, 480, 1200, 600], atol=1e-3)
    assert dets.class_id.tolist() == [2, 0] and dets.class_names == ["c", "a"]
    assert len(to_detections(np.zeros((0, 6)), None, ["a"])) == 0


def test_host_modules_import_without_torch():
    code = (
        "import sys; sys.modules['torch'] = None\n"
        "import y9deploy.preprocess, y9core.boxes, y9core.post.nms, y9deploy.postprocess, y9deploy.detections\n"
        "import y9deploy.draw\n"
        "import y9deploy.pre.torch_letterbox, y9core.post.torch_batched, y9deploy.post.graph\n"
        "import numpy as np\n"
        "out = y9deploy.postprocess.postprocess(np.zeros((1, 6, 8), np.float32))\n"
        "assert out[0].shape == (0, 6)\n"
        "print('ok')\n"
    )
    res = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "ok"


def test_batch_to_detections_equals_per_frame():
    """The vectorised batch conversion (GPU path) equals to_detections of each frame bit for bit, for frames
    of different sizes (different scales and paddings), with and without clipping, and frames without rows."""
    from y9core.letterbox import letterbox_info
    from y9deploy.post.host import batch_to_detections, to_detections

    rng = np.random.default_rng(5)
    shapes = [(1080, 1920), (480, 640), (333, 517), (640, 640), (720, 405)]
    infos = [letterbox_info(hw, (384, 640)) for hw in shapes]
    block = np.zeros((5, 50, 6), np.float32)
    block[..., :2] = rng.uniform(-20, 600, (5, 50, 2))
    block[..., 2:4] = block[..., :2] + rng.uniform(1, 300, (5, 50, 2))
    block[..., 4] = rng.random((5, 50))
    block[..., 5] = rng.integers(0, 3, (5, 50))
    kept = np.array([50, 0, 17, 1, 33])
    names = ["a", "b", "c"]
    for clip in (True, False):
        got = batch_to_detections(block, kept, infos, names, clip=clip)
        for i, d in enumerate(got):
            want = to_detections(block[i, : kept[i]], infos[i], names, clip=clip)
            assert len(d) == kept[i] and d.names == want.names
            for name in ("xyxy", "confidence", "class_id"):
                a, b = getattr(d, name), getattr(want, name)
                assert a.dtype == b.dtype and a.flags.c_contiguous
                np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="expected \\[B, M, 6\\] and \\[B\\]"):
        batch_to_detections(block[:, :, :5], kept, infos, names)
    with pytest.raises(ValueError, match="expected counts in \\[0, 50\\]"):
        batch_to_detections(block, kept + 1, infos, names)
