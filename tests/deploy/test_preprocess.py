"""letterbox against the official fixture; prepare against letterbox + numpy; scale_boxes against pixels."""

from __future__ import annotations

import hashlib
import json
import re

import cv2
import numpy as np
import pytest

from tests.conftest import shared_path
from y9core.letterbox import LetterboxInfo, letterbox_info, scale_boxes, unletterbox
from y9deploy.pre.host import check_frame, prepare
from y9deploy.preprocess import letterbox

SIZES = [(480, 640), (1080, 1920), (333, 517), (100, 90), (1500, 400), (640, 640), (7, 13)]


def reference_blob(img: np.ndarray, imgsz=640, **kw) -> np.ndarray:
    """letterbox, then the obvious numpy conversion: BGR->RGB, HWC->CHW, / 255 (float32)."""
    out, _, _ = letterbox(img, imgsz, **kw)
    return out[..., ::-1].transpose(2, 0, 1).astype(np.float32) / 255


def test_letterbox_matches_official_fixture():
    path = shared_path("fixtures", "official", "official_letterbox.json")
    data = json.loads(path.read_text())
    cases = data["cases"]
    assert len(cases) == 28
    fixture_cv = re.search(r"cv2 ([\d.]+)", data["note"]).group(1)
    rng = np.random.Generator(np.random.PCG64(7))
    images: dict[tuple[int, int], np.ndarray] = {}
    md5_compared = 0
    for case in cases:
        hw = tuple(case["in_hw"])
        if hw not in images:
            images[hw] = rng.integers(0, 256, (hw[0], hw[1], 3), np.uint8)
        out, ratio, pad = letterbox(images[hw], 640, auto=case["auto"], scaleup=case["scaleup"])
        label = f"{hw} auto={case['auto']} scaleup={case['scaleup']}"
        assert list(out.shape[:2]) == case["out_hw"], label
        assert list(ratio) == pytest.approx(case["ratio"], rel=1e-12), label
        assert list(pad) == case["pad_wh"], label
        assert abs(float(out.mean()) - case["mean"]) < 0.05, label
        # The geometry helpers agree with the pixels.
        info = letterbox_info(hw, 640, auto=case["auto"], scaleup=case["scaleup"])
        assert info.out_hw == out.shape[:2] and info.ratio == ratio and info.pad == pad, label
        # md5 depends on the OpenCV build: exact when our OpenCV is the fixture's version.
        if cv2.__version__ == fixture_cv:
            assert hashlib.md5(out.tobytes()).hexdigest() == case["md5"], label
            md5_compared += 1
    if cv2.__version__ == fixture_cv:
        assert md5_compared == 28


@pytest.mark.parametrize("hw", SIZES)
@pytest.mark.parametrize("auto,scaleup", [(False, True), (False, False), (True, True)])
def test_prepare_equals_letterbox_then_numpy(hw, auto, scaleup):
    img = np.random.default_rng(hash(hw) % 1000).integers(0, 256, (*hw, 3), np.uint8)
    ref = reference_blob(img, 320, auto=auto, scaleup=scaleup)
    blob, infos = prepare(img, 320, auto=auto, scaleup=scaleup)
    assert blob.dtype == np.float32 and blob.shape == (1, *ref.shape)
    np.testing.assert_array_equal(blob[0], ref)
    assert infos[0] == letterbox_info(hw, 320, auto=auto, scaleup=scaleup)
    blob16, _ = prepare([img], 320, dtype=np.float16, auto=auto, scaleup=scaleup)
    assert blob16.dtype == np.float16
    np.testing.assert_array_equal(blob16[0], ref.astype(np.float16))


def test_prepare_batch_of_mixed_sizes_rect_shape_colour_and_out_buffer():
    rng = np.random.default_rng(3)
    frames = [rng.integers(0, 256, (*hw, 3), np.uint8) for hw in [(360, 640), (200, 90), (256, 384)]]
    out = np.full((3, 3, 256, 384), -1, np.float32)
    blob, infos = prepare(frames, (256, 384), color=(10, 20, 30), out=out)
    assert blob is out
    for k, frame in enumerate(frames):
        np.testing.assert_array_equal(blob[k], reference_blob(frame, (256, 384), color=(10, 20, 30)))
        assert infos[k].in_hw == frame.shape[:2] and infos[k].out_hw == (256, 384)
    # The padding really is (b, g, r) = (10, 20, 30), i.e. RGB planes 30, 20, 10.
    left = infos[1].offset[0]
    assert left > 0
    np.testing.assert_array_equal(blob[1, :, 0, 0], np.float32([30, 20, 10]) / 255)
    # A 4-D batch array behaves like the list.
    stacked = np.stack([frames[2], frames[2]])
    blob2, _ = prepare(stacked, (256, 384))
    np.testing.assert_array_equal(blob2[1], reference_blob(frames[2], (256, 384)))


def test_prepare_does_not_modify_frames():
    img = np.random.default_rng(0).integers(0, 256, (300, 500, 3), np.uint8)
    before = img.copy()
    prepare([img, img], 320)
    np.testing.assert_array_equal(img, before)


@pytest.mark.parametrize(
    "frames,exc,words",
    [
        (None, TypeError, "frames is None"),
        ([None], TypeError, "frame 0 is None"),
        ([np.zeros((4, 4, 3), np.uint8), None], TypeError, "frame 1 is None"),
        (np.zeros((48, 64), np.uint8), ValueError, "grayscale"),
        (np.zeros((48, 64, 1), np.uint8), ValueError, "grayscale"),
        (np.zeros((48, 64, 4), np.uint8), ValueError, "BGRA"),
        (np.zeros((48, 64, 3), np.float64), TypeError, "dtype float64"),
        (np.zeros((0, 0, 3), np.uint8), ValueError, "empty"),
        ([], ValueError, "empty list"),
        (np.zeros((0, 8, 8, 3), np.uint8), ValueError, "empty batch"),
        ("frame.jpg", TypeError, "str"),
        ([[1, 2, 3]], TypeError, "frame 0 is a list"),
        (np.zeros((1, 4000, 3), np.uint8), ValueError, "too thin"),
    ],
)
def test_prepare_rejects_bad_frames_with_one_sentence(frames, exc, words):
    with pytest.raises(exc) as info:
        prepare(frames, 320)
    msg = str(info.value)
    assert words in msg
    assert msg.endswith(".") and "\n" not in msg and ". " not in msg  # one sentence


def test_prepare_rejects_bad_options():
    img = np.zeros((100, 120, 3), np.uint8)
    with pytest.raises(TypeError, match="dtype"):
        prepare(img, 320, dtype=np.int32)
    with pytest.raises(ValueError, match="out has shape"):
        prepare(img, 320, out=np.zeros((1, 3, 320, 321), np.float32))
    with pytest.raises(ValueError, match="different input shapes"):
        prepare([np.zeros((100, 300, 3), np.uint8), np.zeros((300, 100, 3), np.uint8)], 320, auto=True)
    with pytest.raises(ValueError, match="color"):
        prepare(img, 320, color=(1, 2))
    assert check_frame(img) is img


def _bright_box(mask: np.ndarray) -> tuple[int, int, int, int]:
    """Edges (x1, y1, x2, y2) of the True pixels of a 2-D mask, as continuous pixel edges."""
    ys, xs = np.nonzero(mask)
    return xs.min(), ys.min(), xs.max() + 1, ys.max() + 1


@pytest.mark.parametrize(
    "hw,imgsz,scaleup",
    [((1080, 1920), 640, True), ((333, 517), 640, False), ((333, 517), 640, True), ((1500, 400), 320, True)],
)
def test_scale_boxes_maps_a_drawn_rectangle_back_to_its_frame_position(hw, imgsz, scaleup):
    frame = np.zeros((*hw, 3), np.uint8)
    x1, y1, x2, y2 = hw[1] // 5, hw[0] // 3, hw[1] // 5 * 3, hw[0] // 4 * 3
    frame[y1:y2, x1:x2] = 255
    blob, (info,) = prepare(frame, imgsz, scaleup=scaleup)
    found = np.array([_bright_box(blob[0, 0] > 0.5)], np.float32)  # in input pixels
    back = scale_boxes(found, info)[0]
    tol = 1.0 / min(info.ratio) + 1.0  # one input pixel of quantisation, in frame pixels
    np.testing.assert_allclose(back, [x1, y1, x2, y2], atol=tol)


def test_scale_boxes_inverts_the_forward_map_clips_and_keeps_extra_columns():
    info = letterbox_info((333, 517), 640, scaleup=False)  # odd padding: pad 61.5 / 153.5, offset 61 / 153
    assert info.pad == (61.5, 153.5) and info.offset == (61, 153)
    rng = np.random.default_rng(1)
    pts = rng.uniform(0, [517, 333, 517, 333], (50, 4)).astype(np.float32)
    sx, sy = info.scale_xy
    fwd = pts * np.float32([sx, sy, sx, sy]) + np.float32([*info.offset, *info.offset])
    rows = np.concatenate([fwd, rng.random((50, 2), dtype=np.float32)], 1)
    keep = rows.copy()
    back = unletterbox(rows, info)
    np.testing.assert_array_equal(rows, keep)  # input untouched
    np.testing.assert_allclose(back[:, :4], pts, atol=1e-3)
    np.testing.assert_array_equal(back[:, 4:], rows[:, 4:])
    outside = np.float32([[-50, -50, 700, 700], [600, 10, 640, 20]])
    clipped = scale_boxes(outside, info)
    assert clipped[:, [0, 2]].min() >= 0 and clipped[:, [0, 2]].max() <= 517
    assert clipped[:, [1, 3]].min() >= 0 and clipped[:, [1, 3]].max() <= 333
    assert clipped[0].tolist() == [0, 0, 517, 333]
    assert scale_boxes(outside, info, clip=False)[0, 0] < 0
    with pytest.raises(ValueError, match="boxes has shape"):
        scale_boxes(np.zeros((3, 3)), info)


def test_letterbox_info_is_a_frozen_dataclass():
    info = letterbox_info((1080, 1920), 640)
    assert isinstance(info, LetterboxInfo)
    assert info.resized_wh == (640, 360) and info.offset == (0, 140) and info.scale_xy == (1 / 3, 1 / 3)
    with pytest.raises(AttributeError):
        info.offset = (1, 1)
