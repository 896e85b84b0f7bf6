"""YOLO tools' keywords, read once for ``y9.Model``: what each means in y9 (``train_options``, the callbacks'
events), and the sentence for one that y9 lacks (``lacking``: the reason, then the names y9 accepts).

``draw_options``: the drawing options of ``Result.plot`` / ``save`` under YOLO tools' names.
The predict / track keywords are ``y9.options.PredictOptions``' fields (YOLO tools' names among them); val's are the
validator's plus those ``y9.val.validate`` maps; export's are ``y9.model_export``'s.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from typing import Any

#: keywords of YOLO tools that y9 does not have, with the reason (or the y9 way) in a few words
LACKS = {
    "show": "y9 opens no windows; cv2.imshow(name, r.plot()) shows a result",
    "augment": "y9 has no test-time augmentation",
    "visualize": "y9 does not draw feature maps",
    "retina_masks": "y9 detects boxes, not masks",
    "embed": "y9 returns no feature embeddings",
    "save_frames": "y9 writes annotated videos; r.save() writes one frame",
    "rect": "y9 letterboxes every image to the model's size",
    "dnn": "y9 runs ONNX models through ONNX Runtime",
    "fraction": "y9 trains on the whole split; a data.yaml naming a smaller list trains on part",
    "time": "y9 trains for epochs; stop early with patience or a callback raising y9train.loop.hooks.StopTraining",
    "save_period": "y9 keeps last.pt and best.pt",
    "freeze": "y9 trains every layer",
    "single_cls": "y9 trains the classes of the data.yaml; a data.yaml with one class trains one",
    "dropout": "y9's detection networks have no dropout",
    "pretrained": "start from a checkpoint: y9.Model('best.pt').train(...)",
    "overlap_mask": "y9 detects boxes, not masks",
    "mask_ratio": "y9 detects boxes, not masks",
    "pose": "y9 detects boxes, not keypoints",
    "kobj": "y9 detects boxes, not keypoints",
    "profile": "y9 times every run (timing.json); TrainConfig.profile times each step's phases",
    "keras": "y9 exports ONNX and TensorRT engines",
    "optimize": "y9 exports ONNX and TensorRT engines",
    "task": "y9 detects boxes",
    "mode": "call predict, track, val, export or train",
}

#: YOLO tools' optimizer names -> y9's
OPTIMIZERS = {"sgd": "sgd", "adamw": "adamw", "auto": "auto"}

#: YOLO tools' callback events -> y9's trainer events (``y9train.loop.hooks.EVENTS``)
EVENTS = {"on_pretrain_routine_start": "on_pretrain_routine_start", "on_train_start": "on_train_start",
          "on_train_epoch_start": "on_epoch_start", "on_train_epoch_end": "on_epoch_end",
          "on_fit_epoch_end": "on_epoch_end", "on_train_batch_end": "on_step_end",
          "on_before_optimizer_step": "on_before_optimizer_step", "on_train_end": "on_train_end",
          "on_epoch_start": "on_epoch_start", "on_epoch_end": "on_epoch_end", "on_step_end": "on_step_end"}  # fmt: skip


#: attributes of YOLO tools' objects that y9's lack, with the y9 way (``missing_attribute``)
ATTRIBUTES = {
    "Model": {"tune": "y9 has no hyperparameter tuner; train with overrides, e.g. model.train(data=..., lr0=0.02)",
              "trainer": "model.train() returns the TrainResult (save_dir, best, last, metrics)",
              "predictor": "model.predict() runs a y9.Detector; y9.Detector(path) is the runtime alone",
              "overrides": "y9 keeps no option state: give the options to each call",
              "ckpt": "the checkpoint is the file model.path", "ckpt_path": "the checkpoint is the file model.path",
              "save": "the checkpoint is the file model.path (shutil.copy it)",
              "load": "y9.Model('weights.pt') opens a checkpoint", "reset_weights": "y9.Model('gelan-s') is a fresh one",
              "val_data": "give data= to val()", "export_format": "export(format='onnx' or 'engine')"},
    "Result": {"save_crop": "predict(..., save=True, save_crop=True) writes the crops",
               "to_df": "pandas.DataFrame(r.summary())", "to_csv": "predict(..., save=True) writes predictions.csv",
               "to_xml": "r.summary() or r.to_coco()", "to_sql": "r.summary()", "tojson": "r.to_json()",
               "new": "y9.Result(...) with the fields you want", "update": "y9.Result(...) with the fields you want"},
}  # fmt: skip


def missing_attribute(owner: str, name: str, has: Iterable[str]) -> AttributeError:
    """The sentence for an attribute a y9 object lacks: the y9 way when YOLO tools have it, else what it has."""
    if name in ATTRIBUTES.get(owner, {}):
        return AttributeError(f"{owner} has no attribute {name!r}: {ATTRIBUTES[owner][name]} (docs/from-ultralytics.md).")
    shown = ", ".join(sorted(n for n in set(has) if not n.startswith("_")))
    return AttributeError(f"{owner} has no attribute {name!r}; it has: {shown} (docs/from-ultralytics.md).")


def lacking(action: str, name: str, allowed: Iterable[str]) -> TypeError:
    """The sentence for a keyword ``action`` does not take: the reason when y9 lacks it, a close name otherwise,
    and the names it takes."""
    allowed = sorted(set(allowed))
    if name in LACKS:
        return TypeError(f"{action}() has no option {name!r}: {LACKS[name]}. It takes: {', '.join(allowed)}.")
    close = difflib.get_close_matches(name, allowed, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return TypeError(f"{action}() has no option {name!r}{hint}; expected one of: {', '.join(allowed)}.")


def check_bool(action: str, name: str, value: Any) -> bool:
    """``value`` when it is True or False (numpy's too); else one sentence (``save='no'`` is not a yes)."""
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        return bool(value)
    raise TypeError(f"{action}({name}={value!r}); expected True or False.")


def check_int(action: str, name: str, value: Any, low: int = 1) -> int:
    """``value`` when it is a whole number >= ``low`` (an integral float too); else one sentence."""
    whole = isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    if isinstance(value, bool) or not whole or int(value) < low:
        raise TypeError(f"{action}({name}={value!r}); expected a whole number of at least {low}.")
    return int(value)


def _train_fields() -> tuple[set[str], set[str]]:
    import dataclasses

    from y9train.optimisation.hyp import Hyp, TrainConfig

    return {f.name for f in dataclasses.fields(TrainConfig)} - {"hyp"}, {f.name for f in dataclasses.fields(Hyp)}


def train_options(options: Mapping[str, Any], checkpoint: str | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """``Model.train``'s keywords -> (``y9train.run.train.train``'s options, hyperparameter overrides).

    YOLO tools' names: the hyperparameters (``lr0``, ``momentum``, ``optimizer`` ('SGD', 'AdamW', 'auto'),
    ``patience``, ``mosaic``, ``hsv_h`` ...) become overrides; ``cos_lr=True`` is ``schedule='cosine'``;
    ``cache=True`` is 'ram'; ``amp`` True / False is 'auto' / 'off'; ``resume=True`` resumes ``checkpoint``.
    A keyword y9 lacks, or a value of the wrong type, is one sentence."""
    action = "Model.train"
    config, hyp = _train_fields()
    run: dict[str, Any] = {}
    over: dict[str, Any] = {}
    for name, value in options.items():
        if name in ("batch", "epochs", "workers", "seed"):
            value = check_int(action, name, value, low=0 if name in ("workers", "seed") else 1)
        elif name in ("exist_ok", "deterministic", "plots", "val", "save", "verbose", "cos_lr", "multi_scale"):
            value = check_bool(action, name, value)
        if name == "imgsz":
            from y9.imgsz_rule import check_imgsz

            run[name] = check_imgsz(action, value, square=True)
        elif name == "optimizer":
            key = str(value).lower()
            if key not in OPTIMIZERS:
                raise ValueError(f"{action}(optimizer={value!r}); y9 has {', '.join(OPTIMIZERS)} (SGD is Nesterov "
                                 "SGD; auto picks by the schedule's length).")  # fmt: skip
            over["optimizer"] = OPTIMIZERS[key]
        elif name == "cos_lr":
            if value:
                over["schedule"] = "cosine"
        elif name == "cache":
            run[name] = {True: "ram", False: None}.get(value, value) if isinstance(value, bool) else value
        elif name == "amp":
            run[name] = ("auto" if value else "off") if isinstance(value, bool) else value
        elif name == "resume":
            if value is True:
                if checkpoint is None:
                    raise ValueError(f"{action}(resume=True) needs a checkpoint: y9.Model('runs/train/exp/weights/"
                                     "last.pt').train(resume=True).")  # fmt: skip
                run[name] = checkpoint
            elif value not in (False, None):
                run[name] = value
        elif name in hyp:
            over[name] = value
        elif name in config or name in ("overrides", "hyp_file", "hooks", "callbacks"):
            run[name] = value
        else:
            raise lacking(action, name, config | hyp | {"cos_lr", "resume", "overrides", "hyp_file"})
    return run, over


# ---- drawing: Result.plot / save under YOLO tools' names, mapped once onto y9deploy.draw.draw_detections's
#: YOLO tools' name -> draw_detections' name (None: handled by Result.plot itself)
PLOT_ALIASES = {"line_width": "thickness", "font_size": "font_scale", "labels": "show_labels", "conf": "show_scores",
           "show_conf": "show_scores", "boxes": None}  # fmt: skip
PLOT_OWN = ("thickness", "font_scale", "show_labels", "show_scores")
PLOT_REFUSED = {"img": "draw on r.orig_img's copy: r.plot() returns it", "im_gpu": "y9's results are on the host",
           "kpt_radius": "y9 detects boxes, not keypoints", "kpt_line": "y9 detects boxes, not keypoints",
           "masks": "y9 detects boxes, not masks", "probs": "y9 detects boxes, not classes of whole images",
           "pil": "r.plot() returns a BGR ndarray; PIL.Image.fromarray(r.plot()[..., ::-1]) makes one",
           "color_mode": "y9 colours by class", "txt_color": "y9 draws white text on the class colour"}  # fmt: skip


def draw_options(options: dict[str, Any]) -> dict[str, Any]:
    """``options`` with YOLO tools' names replaced by draw_detections' (``boxes`` kept for the caller)."""
    out: dict[str, Any] = {}
    for name, value in options.items():
        if name in PLOT_OWN:
            out[name] = value
        elif name in PLOT_ALIASES:
            key = PLOT_ALIASES[name] or name
            if key == "font_scale" and value is not None:
                value = float(value) / 30.0  # a font size in pixels -> OpenCV's scale (its font is about 30 px)
            out[key] = value
        elif name in PLOT_REFUSED:
            raise TypeError(f"plot() option {name!r} is not one of y9's: {PLOT_REFUSED[name]}.")
        else:
            known = ", ".join(sorted(set(PLOT_OWN) | set(PLOT_ALIASES)))
            raise TypeError(f"plot() has no option {name!r}; expected one of: {known}.")
    if out.get("thickness") is not None and (isinstance(out["thickness"], bool) or int(out["thickness"]) < 1):
        raise ValueError(f"line_width={out['thickness']!r}; expected a whole number of pixels, at least 1.")
    return out
