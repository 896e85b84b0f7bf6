"""Ultralytics-style ``key=value`` arguments: ``y9 train data=coco8.yaml epochs=10 imgsz=640 batch=16 device=cpu``.

``as_options(command, args)`` rewrites every ``key=value`` argument whose key names an option of the command into
that option (``epochs=10`` -> ``--epochs 10``; ``exist_ok=true`` -> ``--exist-ok``; a false flag is dropped or
becomes its ``--no-...`` form), and a few keys that name the command's main argument (``source=`` for predict,
``model=`` for export, whose checkpoint is an argument). ``y9cli.app.main`` applies it to train, val, predict and
export before the command line is parsed; the options themselves stay the one definition.

Other ``key=value`` arguments are left to the command: ``y9 train`` takes hyperparameters that way (``lr0=0.02``, or
as YOLO users write them, ``--lr0 0.02``);
for the other commands an unknown key is one sentence with a did-you-mean.
"""

from __future__ import annotations

import re
from pathlib import Path

from y9core.wording import did_you_mean

COMMANDS = ("train", "val", "predict", "export")
#: keys that name a command's argument (a positional parameter), not an option
ARGUMENT_KEYS = {"predict": {"source": "source"}, "export": {"model": "source", "source": "source"}}
#: YOLO tools' keys -> this command's option (None: nothing to do in y9, e.g. save=true: y9 predict saves)
YOLO_KEYS = {
    "predict": {"verbose": None},
    "val": {"verbose": None},
    "export": {"dynamic": "dynamic_batch", "nms": "end2end", "format": None},
}
#: YOLO tools' key=value pairs y9 refuses, with the y9 way
YOLO_REFUSED = {
    ("export", "format"): "y9 export writes ONNX; 'y9 build-engine model.onnx' builds a TensorRT engine from it",
}
_KEY_VALUE = re.compile(r"^([A-Za-z_][A-Za-z0-9_-]*)=(.*)$", re.S)
_TRUE, _FALSE = ("1", "true", "yes", "on", ""), ("0", "false", "no", "off", "none")


def as_options(group, args: list[str]) -> list[str]:
    """``args`` of ``y9 ARGS`` with the ``key=value`` arguments of train / val / predict / export turned into
    options (module docstring); other commands' arguments are returned unchanged.

    Raises:
        ValueError: a key that is no option of the command (one sentence, with a did-you-mean), for commands that
        take no ``key=value`` arguments of their own, or a flag given a value that is not true/false.
    """
    at = next((i for i, a in enumerate(args) if not a.startswith("-")), None)
    if at is None or args[at] not in COMMANDS:
        return list(args)
    name = args[at]
    command = group.commands[name]
    options = {o.lstrip("-").replace("-", "_"): p for p in command.params for o in p.opts if o.startswith("--")}
    takes_key_values = any(p.param_type_name == "argument" and p.metavar == "KEY=VALUE" for p in command.params)
    takes_value = {o for p in command.params if p.param_type_name == "option" and not getattr(p, "is_flag", False)
                   for o in p.opts}  # fmt: skip
    out, moved = list(args[: at + 1]), []
    rest = _override_options(args[at + 1 :], options) if takes_key_values else args[at + 1 :]
    for arg in rest:
        match = _KEY_VALUE.match(arg)
        value_of_option = out[-1] in takes_value and len(out) > at + 1  # e.g. --class-conf person=0.5
        if match is None or value_of_option or Path(arg).exists():  # a file whose name holds '=' stays a file
            out.append(arg)
            continue
        key, value = match.group(1).replace("-", "_"), match.group(2)
        if name == "predict" and key == "save":  # y9 predict saves unless --no-save
            out += [] if value.strip().lower() in _TRUE else ["--no-save"]
            continue
        if key in YOLO_KEYS.get(name, {}):
            if key == "format" and value.strip().lower() not in ("onnx", ".onnx"):
                raise ValueError(f"y9 {name}: format={value!r}; {YOLO_REFUSED[(name, key)]}.")
            if YOLO_KEYS[name][key] is None:
                continue
            key = YOLO_KEYS[name][key]
        if key in ARGUMENT_KEYS.get(name, {}):
            moved.append(value)
        elif key in options:
            out += _option_tokens(options[key], key, value, name)
        elif takes_key_values:
            out.append(arg)  # y9 train: a hyperparameter override
        else:
            known = list(options) + list(ARGUMENT_KEYS.get(name, {}))
            raise ValueError(
                f"y9 {name}: {arg!r} names no option of this command{did_you_mean(key, known)}; expected "
                f"key=value with an option's name, e.g. imgsz=640 (see 'y9 {name} --help')."
            )
    return out + moved


def _override_options(args: list[str], options: dict) -> list[str]:
    """``--lr0 0.01`` / ``--lr0=0.01`` / ``--cos-lr`` (no option of the command) -> ``lr0=0.01`` / ``cos_lr=true``:
    ``y9 train``'s overrides written as options, as YOLO users type them; the trainer checks the keys."""
    out: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        key = arg[2:].split("=", 1)[0].replace("-", "_") if arg.startswith("--") and len(arg) > 2 else None
        if key is None or key in options or key.startswith("no_") and key[3:] in options:
            out.append(arg)
        elif "=" in arg:
            out.append(f"{key}={arg.split('=', 1)[1]}")
        elif i + 1 < len(args) and not args[i + 1].startswith("--"):
            out.append(f"{key}={args[i + 1]}")
            i += 1
        else:
            out.append(f"{key}=true")
        i += 1
    return out


def _option_tokens(param, key: str, value: str, command: str) -> list[str]:
    long = next(o for o in param.opts if o.startswith("--"))
    if not getattr(param, "is_flag", False):
        return [long, value]
    text = value.strip().lower()
    if text in _TRUE:
        return [long]
    if text in _FALSE:
        off = [o for o in getattr(param, "secondary_opts", []) if o.startswith("--")]
        return off[:1]
    raise ValueError(
        f"y9 {command}: {key}={value!r} is a switch; expected {key}=true or {key}=false (or {long} alone)."
    )
