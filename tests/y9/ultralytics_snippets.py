"""Code a YOLO user already has, written from the facts of Ultralytics' documented API (predict, track, val, export
and train modes; the Results and Boxes reference) in this project's own words: one list, run by
``tests/y9/test_ultralytics_snippets.py`` under y9 (``from y9 import Model as YOLO``, the embedded model) and by
``tests/y9/ultralytics_reference.py`` under Ultralytics 8.4 (``from ultralytics import YOLO``, a model it builds
from ``yolov8n.yaml``), which shows that each is the library's real usage. Only the import line and the model path
differ (``MODEL``); the data files are made by ``make_workspace`` (coco8 images, a short video, a data.yaml).

Each snippet's ``check`` holds under both libraries; ``y9_check`` adds what y9's trained model must also show
(Ultralytics' fresh network finds nothing worth a box).
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

MODES = ("predict", "track", "val", "export", "train")
IMAGE = "image.jpg"
VIDEO_FRAMES = 4


@dataclass(frozen=True)
class Snippet:
    name: str
    mode: str
    code: str  # uses YOLO and MODEL (a path string)
    check: str = ""  # asserts on the snippet's variables, true under both libraries
    y9_check: str = ""  # asserts only y9's trained model can meet


S = Snippet
SNIPPETS = [
    # ---- predict: calling the model, the results list ----
    S("call", "predict", 'model = YOLO(MODEL)\nresults = model("image.jpg")', "assert len(results) == 1",
      "assert len(results[0].boxes) > 0"),
    S("predict-thresholds", "predict", 'model = YOLO(MODEL)\nresults = model.predict(source="image.jpg", conf=0.5, '
      'iou=0.6)', "assert all(float(c) >= 0.5 for c in results[0].boxes.conf)"),
    S("boxes-arrays", "predict", 'model = YOLO(MODEL)\nfor r in model("image.jpg"):\n    xyxy = r.boxes.xyxy.cpu()'
      '.numpy()\n    conf = r.boxes.conf.cpu().numpy()\n    cls = r.boxes.cls.cpu().numpy()',
      "assert xyxy.shape == (len(conf), 4) and cls.shape == conf.shape"),
    S("box-loop", "predict", 'model = YOLO(MODEL)\nr = model("image.jpg")[0]\nrows = []\nfor box in r.boxes:\n'
      '    x1, y1, x2, y2 = box.xyxy[0].tolist()\n    c = int(box.cls)\n    rows.append((r.names[c], float(box.conf),'
      ' x2 - x1, y2 - y1))', "assert len(rows) == len(r.boxes) and all(w >= 0 and h >= 0 for _, _, w, h in rows)",
      "assert all(isinstance(n, str) and 0 < s <= 1 for n, s, _, _ in rows)"),
    S("box-formats", "predict", 'model = YOLO(MODEL)\nb = model("image.jpg")[0].boxes\nxywh, xyxyn, xywhn = b.xywh, '
      "b.xyxyn, b.xywhn", "assert xywh.shape == xyxyn.shape == xywhn.shape == b.xyxy.shape\n"
      "assert (xyxyn.cpu().numpy() >= 0).all() and (xyxyn.cpu().numpy() <= 1).all()"),
    S("box-data", "predict", 'model = YOLO(MODEL)\nb = model("image.jpg")[0].boxes\ndata = b.data.cpu().numpy()',
      "assert data.shape == (len(b), 6)"),
    S("box-index", "predict", 'model = YOLO(MODEL)\nb = model("image.jpg")[0].boxes\nfirst = b[0] if len(b) else b\n'
      "top = b[:2]", "assert len(top) == min(2, len(b))", "assert len(first) == 1"),
    S("plot-imwrite", "predict", 'import cv2\nmodel = YOLO(MODEL)\nr = model("image.jpg")[0]\nim = r.plot()\n'
      'cv2.imwrite("annotated.jpg", im)', "assert im.shape == r.orig_img.shape and cv2.imread('annotated.jpg') is "
      "not None"),
    S("plot-options", "predict", 'model = YOLO(MODEL)\nr = model("image.jpg")[0]\nim = r.plot(conf=False, '
      "line_width=2, labels=True)", "assert im.shape == r.orig_img.shape"),
    S("save-named", "predict", 'model = YOLO(MODEL)\nr = model("image.jpg")[0]\nr.save(filename="result.jpg")',
      "import os\nassert os.path.getsize('result.jpg') > 0"),
    S("orig-shape", "predict", 'model = YOLO(MODEL)\nr = model("image.jpg")[0]\nh, w = r.orig_shape',
      "assert (h, w) == r.orig_img.shape[:2]"),
    S("speed", "predict", 'model = YOLO(MODEL)\nr = model("image.jpg")[0]\nspeed = r.speed',
      "assert {'preprocess', 'inference', 'postprocess'} <= set(speed) and speed['inference'] > 0"),
    S("path", "predict", 'model = YOLO(MODEL)\nr = model("image.jpg")[0]', "assert str(r.path).endswith('image.jpg')"),
    S("names", "predict", 'model = YOLO(MODEL)\nr = model("image.jpg")[0]\nnames = model.names',
      "assert isinstance(names, dict) and names == r.names and isinstance(names[0], str)"),
    S("classes", "predict", 'model = YOLO(MODEL)\nr = model.predict("image.jpg", classes=[0, 2], conf=0.01)[0]',
      "assert set(int(c) for c in r.boxes.cls) <= {0, 2}"),
    S("max-det", "predict", 'model = YOLO(MODEL)\nr = model.predict("image.jpg", max_det=3, conf=0.01)[0]',
      "assert len(r.boxes) <= 3"),
    S("imgsz", "predict", 'model = YOLO(MODEL)\nr = model.predict("image.jpg", imgsz=320)[0]',
      "assert r.orig_shape == r.orig_img.shape[:2]"),
    S("numpy-input", "predict", 'import cv2\nmodel = YOLO(MODEL)\nframe = cv2.imread("image.jpg")\nr = model(frame)[0]',
      "assert r.orig_shape == frame.shape[:2]", "assert len(r.boxes) > 0"),
    S("pil-input", "predict", 'from PIL import Image\nmodel = YOLO(MODEL)\nr = model(Image.open("image.jpg"))[0]',
      "assert r.orig_img.shape[2] == 3", "assert len(r.boxes) > 0"),
    S("list-input", "predict", 'model = YOLO(MODEL)\nresults = model(["coco8/000000000009.jpg", '
      '"coco8/000000000025.jpg"])', "assert len(results) == 2"),
    S("folder", "predict", 'model = YOLO(MODEL)\nresults = model.predict("coco8/")', "assert len(results) == 8"),
    S("glob", "predict", 'model = YOLO(MODEL)\nresults = model.predict("coco8/*.jpg")', "assert len(results) == 8"),
    S("stream-video", "predict", 'model = YOLO(MODEL)\nn = 0\nfor r in model.predict("video.mp4", stream=True):\n'
      "    n += 1", f"assert n == {VIDEO_FRAMES}"),
    S("vid-stride", "predict", 'model = YOLO(MODEL)\nresults = model.predict("video.mp4", vid_stride=2)',
      f"assert len(results) == {VIDEO_FRAMES // 2}"),
    S("save-run-folder", "predict", 'from pathlib import Path\nmodel = YOLO(MODEL)\nresults = model.predict('
      '"image.jpg", save=True, project="out", name="pred", exist_ok=True)\nfolder = Path(results[0].save_dir)',
      "assert (folder.parent.name, folder.name) == ('out', 'pred') and any(folder.glob('*.jpg'))",
      "assert folder.resolve() == Path('out/pred').resolve()"),
    S("save-txt", "predict", 'from pathlib import Path\nmodel = YOLO(MODEL)\nresults = model.predict("image.jpg", '
      'save=True, save_txt=True, save_conf=True, project="out", name="txt")',
      "assert (Path(results[0].save_dir) / 'labels').is_dir()",
      "assert len((Path(results[0].save_dir) / 'labels' / 'image.txt').read_text().split()) % 6 == 0"),
    S("save-crop", "predict", 'from pathlib import Path\nmodel = YOLO(MODEL)\nresults = model.predict("image.jpg", '
      'save=True, save_crop=True, project="out", name="crop")', "assert Path(results[0].save_dir).is_dir()",
      "assert any(Path(results[0].save_dir, 'crops').rglob('*.jpg'))"),
    S("runtime-options", "predict", 'model = YOLO(MODEL)\nresults = model.predict("image.jpg", agnostic_nms=True, '
      'half=False, device="cpu", verbose=False)', "assert len(results) == 1"),
    S("draw-options", "predict", 'model = YOLO(MODEL)\nresults = model.predict("image.jpg", save=True, line_width=1, '
      'show_labels=False, show_conf=False, project="out", name="draw")', "assert len(results) == 1"),
    S("summary", "predict", 'model = YOLO(MODEL)\nrows = model("image.jpg")[0].summary()',
      "assert all({'name', 'class', 'confidence', 'box'} <= set(r) for r in rows)", "assert rows"),
    S("to-json", "predict", 'import json\nmodel = YOLO(MODEL)\ntext = model("image.jpg")[0].to_json()\n'
      "data = json.loads(text)", "assert isinstance(text, str)"),
    S("tolist", "predict", 'model = YOLO(MODEL)\nb = model("image.jpg")[0].boxes\nboxes = b.xyxy.tolist()\n'
      "scores = b.conf.tolist()", "assert len(boxes) == len(scores) and all(len(x) == 4 for x in boxes)"),
    S("save-txt-file", "predict", 'model = YOLO(MODEL)\nr = model("image.jpg")[0]\nr.save_txt("labels.txt", '
      "save_conf=True)", "import os\nassert os.path.exists('labels.txt') or len(r.boxes) == 0"),
    S("verbose-line", "predict", 'model = YOLO(MODEL)\nline = model("image.jpg")[0].verbose()',
      "assert isinstance(line, str) and line"),
    S("device-fuse-info", "predict", 'model = YOLO(MODEL)\nmodel.to("cpu")\nmodel.fuse()\nmodel.info()\n'
      'r = model("image.jpg")[0]', "assert 'cpu' in str(model.device)"),
    S("other-tasks-none", "predict", 'model = YOLO(MODEL)\nr = model("image.jpg")[0]',
      "assert r.masks is None and r.keypoints is None and r.probs is None"),
    # ---- track ----
    S("track-video", "track", 'model = YOLO(MODEL)\nresults = model.track("video.mp4", persist=True)\n'
      "ids = [r.boxes.id for r in results]", f"assert len(results) == {VIDEO_FRAMES}",
      "assert any(i is not None and len(i) for i in ids)"),
    S("track-options", "track", 'model = YOLO(MODEL)\nresults = model.track("video.mp4", tracker="bytetrack.yaml", '
      "conf=0.3, iou=0.5)", f"assert len(results) == {VIDEO_FRAMES}"),
    S("track-loop", "track", 'import cv2\nmodel = YOLO(MODEL)\ncap = cv2.VideoCapture("video.mp4")\nseen = set()\n'
      "while cap.isOpened():\n    ok, frame = cap.read()\n    if not ok:\n        break\n"
      "    results = model.track(frame, persist=True)\n    boxes = results[0].boxes.xywh.cpu()\n"
      "    if results[0].boxes.id is not None:\n        seen |= set(results[0].boxes.id.int().cpu().tolist())\n"
      "cap.release()", "assert all(isinstance(i, int) for i in seen)", "assert seen"),
    S("track-stream", "track", 'model = YOLO(MODEL)\nn = 0\nfor r in model.track("video.mp4", stream=True, '
      "persist=True):\n    n += 1", f"assert n == {VIDEO_FRAMES}"),
    S("track-botsort", "track", 'model = YOLO(MODEL)\nresults = model.track("video.mp4", tracker="botsort.yaml")',
      f"assert len(results) == {VIDEO_FRAMES}"),
    # ---- val ----
    S("val-metrics", "val", 'model = YOLO(MODEL)\nmetrics = model.val(data="data.yaml")\n'
      "figures = (metrics.box.map, metrics.box.map50, metrics.box.map75)\nper_class = metrics.box.maps",
      "assert all(0 <= f <= 1 for f in figures) and len(per_class) == 80", "assert metrics.box.map50 > 0.3"),
    S("val-options", "val", 'from pathlib import Path\nmodel = YOLO(MODEL)\nmetrics = model.val(data="data.yaml", '
      'imgsz=320, batch=4, conf=0.001, iou=0.6, device="cpu", split="val", plots=False)\n'
      "results = metrics.results_dict", "assert 'metrics/mAP50-95(B)' in results and Path(metrics.save_dir).is_dir()"),
    # ---- export ----
    S("export-onnx", "export", 'model = YOLO(MODEL)\npath = model.export(format="onnx", imgsz=320)\n'
      "onnx_model = YOLO(path)\nresults = onnx_model(\"image.jpg\")", "assert str(path).endswith('.onnx') and "
      "len(results) == 1", "assert len(results[0].boxes) > 0"),
    # ---- train ----
    S("train", "train", 'model = YOLO(MODEL)\nepochs = []\nmodel.add_callback("on_train_epoch_end", lambda trainer: '
      'epochs.append(trainer.epoch))\nresults = model.train(data="data.yaml", epochs=1, imgsz=64, batch=8, '
      'workers=0, device="cpu", lr0=0.01, optimizer="SGD", patience=5, cos_lr=True, close_mosaic=0, mosaic=0.5, '
      'seed=0, plots=False, project="runs_train", name="t", exist_ok=True)', "assert len(epochs) == 1"),
]


def make_workspace(folder: Path, images: list[Path]) -> Path:
    """``folder`` with ``image.jpg``, ``coco8/`` (the eight coco8 images and their labels), ``video.mp4``
    (``VIDEO_FRAMES`` frames of them at 320x240, each shown three times) and ``data.yaml`` (``coco8.yaml`` beside
    the images, with an absolute path). Returns ``folder``."""
    import cv2

    folder = Path(folder)
    (folder / "coco8").mkdir(parents=True, exist_ok=True)
    for p in images:
        shutil.copy(p, folder / "coco8" / p.name)
        if p.with_suffix(".txt").exists():
            shutil.copy(p.with_suffix(".txt"), folder / "coco8" / p.with_suffix(".txt").name)
    shutil.copy(images[2], folder / IMAGE)
    writer = cv2.VideoWriter(str(folder / "video.mp4"), cv2.VideoWriter_fourcc(*"mp4v"), 10, (320, 240))
    for i in range(VIDEO_FRAMES):
        frame = cv2.resize(cv2.imread(str(images[(i // 3) % len(images)])), (320, 240))
        writer.write(frame)
    writer.release()
    yaml = images[0].with_name("coco8.yaml").read_text()  # the 80 COCO names; the images' folder as the path
    lines = [f"path: {(folder / 'coco8').resolve()}" if x.startswith("path:") else x for x in yaml.splitlines()]
    (folder / "data.yaml").write_text("\n".join(lines) + "\n")
    return folder


def run_snippet(snippet: Snippet, header: str, model: str, folder: Path, *, y9: bool) -> dict:
    """Run ``snippet`` in ``folder`` after ``header`` (the import line) with ``MODEL = model``; then its checks.
    Returns the snippet's namespace. Raises what the code or a check raises."""
    namespace: dict = {"MODEL": model}
    here = os.getcwd()
    os.chdir(folder)
    try:
        exec(compile(header + "\n" + snippet.code, f"<snippet {snippet.name}>", "exec"), namespace)  # noqa: S102
        if snippet.check:
            exec(compile(snippet.check, f"<check {snippet.name}>", "exec"), namespace)  # noqa: S102
        if y9 and snippet.y9_check:
            exec(compile(snippet.y9_check, f"<y9 check {snippet.name}>", "exec"), namespace)  # noqa: S102
    finally:
        os.chdir(here)
    return namespace
