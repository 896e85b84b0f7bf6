"""The backends behind the runtime protocol: ONNX Runtime and PyTorch on the CPU, on the embedded model's
exports (trained weights, at IMGSZ) and the tiny test net; import without torch; the pure helpers they share."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import cv2
import numpy as np
import pytest

from tests.conftest import REPO, TEST_DATA
from tests.deploy.embedded import ANCHORS, IMGSZ
from tests.deploy.runtime_support import export_tiny_onnx
from y9core.device_spec import parse_device
from y9deploy.runtime.backends.backend import Backend, parse_metadata
from y9deploy.runtime.pipeline import batch_chunks

IMAGES = [TEST_DATA / "000000000036.jpg", TEST_DATA / "000000000042.jpg"]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    return export_tiny_onnx(
        tmp_path_factory.mktemp("tiny") / "tiny.onnx", imgsz=(96, 128), dynamic_batch=True
    )


@pytest.fixture(scope="module")
def gelan_t(embedded_pt, embedded_export):
    """The embedded default model (trained: well-conditioned outputs) and its ONNX exports at IMGSZ."""
    return {
        "pt": embedded_pt,
        "onnx": embedded_export(dynamic_batch=True),
        # the run's dynamic-batch end-to-end export (test_detector_parity's and test_export_models'), conf 0.25 baked
        # in: results below it prove the Detector feeds its own
        "e2e": embedded_export(dynamic_batch=True, end2end=True),
        "fp16": embedded_export(half=True),
    }


def test_runtime_imports_and_runs_without_torch(tiny):
    """A deployment box has numpy, OpenCV and onnxruntime, not torch: import every runtime module and predict."""
    code = textwrap.dedent(f"""
        import sys
        class BlockTorch:
            def find_spec(self, name, path=None, target=None):
                if name == "torch" or name.startswith("torch."):
                    raise ImportError("torch is blocked in this test")
        sys.meta_path.insert(0, BlockTorch())
        import cv2
        import y9deploy.runtime, y9deploy.measure.bench, y9deploy.measure.doctor, y9deploy.detections, y9deploy.preprocess
        import y9deploy.postprocess, y9core.boxes, y9core.post.nms, y9core.post.rows, y9core.post.choice
        import y9deploy.runtime.backends.onnxruntime_backend, y9deploy.runtime.backends.torch_backend
        import y9deploy.runtime.backends.tensorrt_backend, y9deploy.runtime.backends.cuda, y9deploy.runtime.gpu_pipeline
        import y9core.post.torch_batched, y9deploy.post.graph, y9deploy.post.runner, y9deploy.pre.device
        import y9deploy.pre.torch_letterbox, y9deploy.pipelines.predict.run, y9deploy.pipelines.sources.frame_reader
        import y9deploy.pipelines.tiling, y9deploy.pipelines.tiling.recall, y9deploy.pipelines.predict.results
        import y9deploy.tracking.source_tracking, y9deploy.pipelines.inspection.run
        from y9deploy import Detector
        with Detector({str(tiny)!r}, conf=0.5) as det:
            dets = det.predict(cv2.imread({str(IMAGES[0])!r}))
        assert len(dets) > 0
        from y9deploy.measure.doctor import diagnose
        assert diagnose().torch is None
        assert "torch" not in sys.modules
        print("ok", len(dets))
    """)
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.startswith("ok")


def test_onnxruntime_backend_describes_and_runs(tiny, tmp_path):
    import onnxruntime as ort

    from y9deploy.runtime.backends.onnxruntime_backend import OnnxRuntimeBackend

    b = OnnxRuntimeBackend(tiny, "cpu")
    assert isinstance(b, Backend)
    assert (b.name, b.device, b.input_name, b.input_hw) == ("onnxruntime", "cpu", "images", (96, 128))
    assert b.input_dtype == np.float32 and b.batch_range[0] == 1 and b.batch_range[1] >= 64
    assert not b.end2end and b.extras == ()
    assert b.metadata["names"] == ["c0", "c1", "c2"] and b.metadata["strides"] == [8, 16, 32]
    assert b.info.names == ("c0", "c1", "c2") and b.metadata["dynamic_batch"] is True
    x = np.random.default_rng(0).random((3, 3, 96, 128), dtype=np.float32)
    ref = ort.InferenceSession(str(tiny), providers=["CPUExecutionProvider"]).run(None, {"images": x})[0]
    np.testing.assert_array_equal(b.infer(x)["output0"], ref)
    b.close()
    static = OnnxRuntimeBackend(export_tiny_onnx(tmp_path / "b2.onnx", imgsz=(64, 64), batch=2), "cpu")
    assert static.batch_range == (2, 2) and static.input_hw == (64, 64)


@pytest.mark.parametrize(("omp", "given", "want"),
                         [("1", None, 1), ("3", None, 3), (None, None, 0), ("1", 2, 2), ("x", None, 0), ("0", None, 0)])
def test_onnxruntime_threads_follow_omp_num_threads(tiny, monkeypatch, omp, given, want):
    """ONNX Runtime ignores OMP_NUM_THREADS: the backend passes it on (0: ONNX Runtime's own default, a thread per
    core); ``threads`` given wins; a value that is not a positive integer is ignored."""
    from y9deploy.runtime.backends.onnxruntime_backend import OnnxRuntimeBackend

    if omp is None:
        monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    else:
        monkeypatch.setenv("OMP_NUM_THREADS", omp)
    b = OnnxRuntimeBackend(tiny, "cpu", threads=given)
    assert b.session.get_session_options().intra_op_num_threads == want
    b.close()


def test_fp16_onnx_runs_and_agrees_with_fp32(gelan_t):
    """An FP16 export (float16 input and output): the Detector feeds float16 and gets the fp32 model's boxes."""
    from y9deploy import Detector

    frame = cv2.imread(str(IMAGES[0]))
    with Detector(gelan_t["fp16"]) as d16, Detector(gelan_t["onnx"]) as d32:
        assert (
            d16.backend.input_dtype == np.float16 and d16.info.half and d32.backend.input_dtype == np.float32
        )
        blob32 = np.zeros((1, 3, *d32.imgsz), d32.backend.input_dtype)
        blob16 = np.zeros((1, 3, *d16.imgsz), d16.backend.input_dtype)
        from y9deploy.pre.host import prepare

        prepare([frame], IMGSZ, out=blob32)
        prepare([frame], IMGSZ, dtype=np.float16, out=blob16)
        a = d16.backend.infer(blob16)["output0"]
        b = d32.backend.infer(blob32)["output0"]
        assert a.dtype == np.float16
        assert np.abs(a[:, :4].astype(np.float32) - b[:, :4]).max() < 2.0  # px, fp16 rounding
        conf = float(np.sort(b[0, 4:].max(0))[-30])
        x, y = d16.predict(frame, conf=conf), d32.predict(frame, conf=conf)
    assert len(x) > 0 and abs(len(x) - len(y)) <= max(2, len(y) // 5)
    dist = np.abs(x.xyxy[:, None, :] - y.xyxy[None]).max(2).min(1)
    assert np.median(dist) < 1.0


def test_torch_and_onnxruntime_backends_agree(gelan_t):
    """The same y9 model through TorchBackend (.pt) and OnnxRuntimeBackend (its export): raw outputs and
    detections."""
    import torch

    from y9deploy import Detector
    from y9deploy.pre.host import prepare

    frames = [cv2.imread(str(p)) for p in IMAGES]
    with Detector(gelan_t["pt"], imgsz=IMGSZ, device="cpu") as dp, Detector(gelan_t["onnx"]) as do:
        assert dp.backend.name == "torch" and dp.device == "cpu" and dp.backend.input_dtype == np.float32
        convs = [m.weight for m in dp.backend.model.modules() if isinstance(m, torch.nn.Conv2d) and m.kernel_size != (1, 1)]
        assert convs and all(w.is_contiguous(memory_format=torch.channels_last) for w in convs)  # the CPU's fast layout
        assert dp.names == do.names and len(dp.names) == 80 and dp.imgsz == do.imgsz == (IMGSZ, IMGSZ)
        assert do.backend.batch_range[1] > 1  # exported with a dynamic batch
        blob, _ = prepare(frames, IMGSZ)
        a, b = dp.backend.infer(blob)["output0"], do.backend.infer(blob)["output0"]
        assert a.shape == b.shape == (2, 84, ANCHORS)
        # trained weights: the backends differ by float32 rounding only (input pixels, score units)
        assert np.abs(a[:, :4] - b[:, :4]).max() < 0.05 and np.abs(a[:, 4:] - b[:, 4:]).max() < 1e-4
        conf = float(min(np.sort(a[i, 4:].max(0))[-30] for i in range(2)))  # tens of candidates per image
        for x, y in zip(dp.predict(frames, conf=conf), do.predict(frames, conf=conf)):
            assert len(x) == len(y) > 0
            np.testing.assert_allclose(x.xyxy, y.xyxy, atol=0.1)
            np.testing.assert_array_equal(x.class_id, y.class_id)


def test_end2end_model_runs_transparently(gelan_t):
    """End-to-end ONNX (NMS in the graph, thresholds as inputs): the same detections as the raw model, also
    with a conf below the one baked into the graph (the Detector feeds its thresholds)."""
    from y9deploy import Detector

    frames = [cv2.imread(str(p)) for p in IMAGES]
    with Detector(gelan_t["e2e"]) as de, Detector(gelan_t["onnx"]) as do:
        assert de.end2end and set(de.backend.extras) >= {"score_threshold", "iou_threshold"}
        counts, low = {}, 0
        for conf, max_det in ((0.95, 300), (0.5, 300), (0.25, 300), (0.01, 3)):
            got, want = (
                de.predict(frames, conf=conf, max_det=max_det),
                do.predict(frames, conf=conf, max_det=max_det),
            )
            for x, y in zip(got, want):
                assert len(x) == len(y)
                np.testing.assert_allclose(x.xyxy, y.xyxy, atol=1e-3)
                np.testing.assert_array_equal(x.class_id, y.class_id)
            counts[(conf, max_det)] = sum(len(x) for x in got)
            low += sum(int((x.confidence < 0.25).sum()) for x in got)
        assert low > 0  # detections below the baked-in 0.25: the Detector's thresholds reached the graph
        assert counts[(0.01, 3)] == 6
        with pytest.raises(ValueError, match="agnostic"):
            de.predict(frames[0], agnostic=True)


def test_torch_backend_options(gelan_t):
    from y9deploy.runtime.backends.torch_backend import TorchBackend

    with pytest.raises(ValueError, match="multiples"):
        TorchBackend(gelan_t["pt"], "cpu", imgsz=100)
    with pytest.raises(ValueError, match="half=True needs a CUDA"):
        TorchBackend(gelan_t["pt"], "cpu", half=True)
    b = TorchBackend(gelan_t["pt"], "cpu", imgsz=(96, 160))
    assert b.input_hw == (96, 160) and not b.cuda_graph and b.metadata["precision"] == "fp32"
    out = b.infer(np.zeros((1, 3, 96, 160), np.float32))["output0"]
    assert out.shape == (1, 84, 12 * 20 + 6 * 10 + 3 * 5)
    with pytest.raises(ValueError, match="expected"):
        b.infer(np.zeros((1, 3, 160, 160), np.float32))


def test_parse_device():
    assert parse_device(None) == ("auto", 0)
    assert parse_device("cpu") == ("cpu", 0)
    assert (
        parse_device("cuda") == ("cuda", 0)
        and parse_device("cuda:3") == ("cuda", 3)
        and parse_device(1) == ("cuda", 1)
    )
    assert parse_device(" GPU ") == ("cuda", 0) and parse_device("gpu:2") == ("cuda", 2) and parse_device("") == ("auto", 0)
    for bad in ("tpu", "cuda:x", True, -1, "0,1", 1.5):
        with pytest.raises(ValueError, match="device"):
            parse_device(bad)


def test_every_device_option_reads_one_grammar(tmp_path):
    """``--device gpu`` means the same to the trainer and checkpoint validation as to the deployed backends: the
    trainer's reading refuses no spelling the backends take (here, without a GPU: the refusal says there is none)."""
    from y9core.errors import BackendUnavailableError
    from y9train.setup.device_model import resolve_device

    assert resolve_device("cpu").type == "cpu" and resolve_device("auto").type in ("cpu", "cuda")
    for spec in ("gpu", "cuda", "cuda:0", "0", 0):
        try:
            assert resolve_device(spec).type == "cuda"
        except BackendUnavailableError as exc:
            assert "sees no CUDA device" in str(exc)
    with pytest.raises(ValueError, match="names several devices"):
        resolve_device("0,1")


def test_batch_chunks():
    assert batch_chunks(5, (1, 256)) == [(0, 5, 5)]
    assert batch_chunks(5, (1, 2)) == [(0, 2, 2), (2, 4, 2), (4, 5, 1)]
    assert batch_chunks(3, (2, 2)) == [(0, 2, 2), (2, 3, 2)]  # static batch 2: the last call padded
    assert batch_chunks(1, (4, 8)) == [(0, 1, 4)]
    assert batch_chunks(0, (1, 8)) == []


def test_parse_metadata():
    props = {"names": json.dumps({"1": "b", "0": "a"}), "imgsz": "[64, 96]", "stride": "[8, 16, 32]",
             "end2end": "1", "half": "1", "model": "m", "letterbox": json.dumps({"color": 0})}  # fmt: skip
    info = parse_metadata(props, where="x.onnx", nc=2)
    assert info.names == ("a", "b") and info.imgsz == (64, 96) and info.end2end and info.half
    assert info.letterbox.to_dict() == {"auto": False, "scaleup": True, "color": 0, "stride": 32}
    assert parse_metadata({}, where="x.onnx", imgsz=(32, 32), nc=3).names == ("class0", "class1", "class2")
    with pytest.raises(ValueError, match="3 class names but the model outputs 2"):
        parse_metadata({"names": '["a", "b", "c"]'}, where="x.onnx", imgsz=(32, 32), nc=2)
    with pytest.raises(ValueError, match="not valid JSON"):
        parse_metadata({"names": "[a"}, where="x.onnx", imgsz=(32, 32))
    with pytest.raises(ValueError, match="input size"):
        parse_metadata({}, where="x.onnx")
