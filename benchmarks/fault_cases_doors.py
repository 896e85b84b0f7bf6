"""Issue 57 items 1 to 3, for ``bench_faults.py`` (outcomes as in ``fault_cases``): files y9 keeps for itself (locks,
run-folder logs) planted as links to a user's file, official weights served by a hostile local server (endless,
dripping, cut short, too long, a web page; a bad cached file, a dead download's ``.part``, a file-size limit), and
``.txt`` lists (circles, URL lines, a byte-order mark). A planted case is ``loss`` when the user's file changed or its
text was printed."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from fault_cases import PHOTOS, Context, Outcome, judge, photos, trained_run

from tests.deploy.hostile_server import serve
from tests.reliability.bounded_run import Run

SECRET = "chapter 1 of my thesis, the only copy\n"
SHARED = Path(os.environ.get("Y9_SHARED") or Path(__file__).resolve().parents[2] / "shared")
WEIGHTS = SHARED / "fixtures" / "official" / "gelan-t-converted-official-format.pt"


def _thesis(d: Path) -> Path:
    home = d / "home"
    home.mkdir(exist_ok=True)
    (home / "thesis.txt").write_text(SECRET)
    return home / "thesis.txt"


def _kept(thesis: Path, run: Run) -> bool:
    return thesis.read_text() == SECRET and SECRET.strip() not in run.stdout + run.stderr


def _small_pt(ctx: Context, d: Path) -> Path:
    return trained_run(ctx, d / "ref") / "weights" / "last.pt"


def lock_link_export(ctx: Context, d: Path) -> Outcome:
    thesis, out = _thesis(d), d / "x" / "lk.onnx"
    out.parent.mkdir()
    (out.parent / ".lk.onnx.y9.lock").symlink_to(thesis)
    run = ctx.y9(["export", str(_small_pt(ctx, d)), "-o", str(out), "--imgsz", "64", "--no-check"], d)
    return judge("export beside a lock file linked to ~/thesis.txt", run, [".lk.onnx.y9.lock", "symbolic link"],
                 expect="error", intact=_kept(thesis, run))  # fmt: skip


def lock_link_reparam(ctx: Context, d: Path) -> Outcome:
    thesis = _thesis(d)
    (d / ".r.pt.y9.lock").symlink_to(thesis)
    run = ctx.y9(["reparam", str(_small_pt(ctx, d)), str(d / "r.pt")], d)
    return judge("reparam beside a lock file linked to ~/thesis.txt", run, [".r.pt.y9.lock", "symbolic link"],
                 expect="error", intact=_kept(thesis, run))  # fmt: skip


def lock_link_resume(ctx: Context, d: Path) -> Outcome:
    thesis, run_dir = _thesis(d), d / "run"
    shutil.copytree(trained_run(ctx, d / "ref"), run_dir)
    (run_dir / ".y9.lock").unlink(missing_ok=True)
    (run_dir / ".y9.lock").symlink_to(thesis)
    run = ctx.y9(["train", "--resume", str(run_dir / "weights" / "last.pt"), "--epochs", "2"], d, address_space=None)
    return judge("train --resume, the run folder's lock linked to ~/thesis.txt", run, [".y9.lock", "symbolic link"],
                 expect="error", intact=_kept(thesis, run))  # fmt: skip


def log_link(command: str):
    def case(ctx: Context, d: Path) -> Outcome:
        thesis, src = _thesis(d), photos(d / "src", 1)
        if command == "predict":
            args, log = ["predict", str(src), "-m", str(ctx.onnx), "--project", str(d), "--name", "o"], "predictions.jsonl"
        else:
            rules = d / "rules.yaml"
            rules.write_text("rules:\n  - {name: few, max: 1000}\n")
            args, log = ["inspect", str(src), "-m", str(ctx.onnx), "-r", str(rules), "--project", str(d), "--name",
                         "o"], "audit.jsonl"  # fmt: skip
        first = ctx.y9(args, d)
        if first.returncode not in (0, 1):
            raise RuntimeError(f"the first {command} failed: {first.stderr[-1500:]}")
        (d / "o" / log).unlink()
        (d / "o" / log).symlink_to(thesis)
        run = ctx.y9([*args, "--exist-ok"], d)
        return judge(f"{command} --exist-ok, {log} linked to ~/thesis.txt", run, [log, "symbolic link"],
                     expect="error", intact=_kept(thesis, run))  # fmt: skip

    return case


# ------------------------------------------------------------------------------------------------ downloads (57.2)
def download(mode: str, what: str, words: list[str], *, env: dict[str, str] | None = None, file_size: int | None = None,
             command: str = "predict", planted: bytes | None = None, stale_part: bool = False):  # fmt: skip
    def case(ctx: Context, d: Path) -> Outcome:
        srv = serve(WEIGHTS.read_bytes(), mode, drip_s=0.5)
        cache = d / "cache"
        cache.mkdir()
        if planted is not None:
            (cache / "gelan-c.pt").write_bytes(planted)
        if stale_part:
            gone = subprocess.Popen([sys.executable, "-c", "pass"])
            gone.wait()
            (cache / f".gelan-c.pt.{gone.pid}.part").write_bytes(b"x" * 4096)
        (d / "rules.yaml").write_text("rules:\n  - {name: few, max: 1000}\n")
        url = f"http://127.0.0.1:{srv.server_port}/" if mode != "offline" else "http://127.0.0.1:9/"
        args = {"predict": ["predict", str(PHOTOS[0]), "-m", "gelan-c.pt", "--no-save"],
                "reparam": ["reparam", "gelan-c.pt", str(d / "r.pt")],
                "inspect": ["inspect", str(PHOTOS[0]), "-m", "gelan-c.pt", "-r", str(d / "rules.yaml")]}[command]  # fmt: skip
        try:
            run = ctx.y9(args, d, env={"Y9_WEIGHTS_URL": url, "Y9_WEIGHTS_DIR": str(cache), **(env or {})},
                         file_size=file_size, timeout=120)  # fmt: skip
        finally:
            srv.shutdown()
            srv.server_close()
        left = sorted(p.name for p in cache.iterdir())
        published = (cache / "gelan-c.pt").is_file() and planted is None and mode != "whole"
        if stale_part:  # a .part left behind for ever: silent
            gone = not [n for n in left if n.endswith(".part")]
            return judge(f"download: {what}", run, words if gone else [".part removed"], expect="report")
        return judge(f"download: {what}", run, words, expect="error", intact=not published)

    return case


# ------------------------------------------------------------------------------------------------ lists (57.3)
def list_file(kind: str):
    def case(ctx: Context, d: Path) -> Outcome:
        shutil.copy(PHOTOS[0], d / "a.jpg")
        out = ["-m", str(ctx.onnx), "--project", str(d), "--name", "o"]
        if kind == "self":
            (d / "l.txt").write_text("a.jpg\nl.txt\n")
            run = ctx.y9(["predict", str(d / "l.txt"), *out], d)
            return judge("predict: a .txt list that names itself", run, ["l.txt", "names itself"], expect="error")
        if kind == "pair":
            (d / "l.txt").write_text("m.txt\n")
            (d / "m.txt").write_text("a.jpg\nl.txt\n")
            run = ctx.y9(["predict", str(d / "l.txt"), *out], d)
            return judge("predict: two .txt lists that name each other", run, ["m.txt", "names itself"],
                         expect="error")  # fmt: skip
        if kind == "url":  # the URL named whole (not "http:/127..."), skipped or refused
            (d / "l.txt").write_text("a.jpg\nhttp://127.0.0.1:9/b.jpg\n")
            run = ctx.y9(["predict", str(d / "l.txt"), *out], d)
            return judge("predict: a URL line in a .txt list", run, ["http://127.0.0.1:9/b.jpg"],
                         expect="error" if run.returncode == 2 else "report")  # fmt: skip
        (d / "l.txt").write_bytes(b"\xef\xbb\xbfa.jpg\n")
        run = ctx.y9(["predict", str(d / "l.txt"), *out], d)
        jsonl = d / "o" / "predictions.jsonl"
        done = jsonl.is_file() and len(jsonl.read_text().splitlines()) == 1
        return judge("predict: a .txt list with a UTF-8 BOM", run, [] if done else ["the listed image predicted"],
                     expect="report")  # fmt: skip

    return case


DOOR_CASES = [
    ("export: lock file linked to the user's file", lock_link_export),
    ("reparam: lock file linked to the user's file", lock_link_reparam),
    ("train --resume: run lock linked to the user's file", lock_link_resume),
    ("predict --exist-ok: predictions.jsonl linked", log_link("predict")),
    ("inspect --exist-ok: audit.jsonl linked", log_link("inspect")),
]
DOWNLOAD_CASES = [
    ("download: endless body", download("endless", "an endless body", ["past 67108864 bytes"],
                                        env={"Y9_WEIGHTS_MAX_MB": "64"})),
    ("download: a byte every 0.5 s", download("drip", "a byte every 0.5 s", ["allowed for the whole file"],
                                             env={"Y9_WEIGHTS_DEADLINE_S": "5"})),
    ("download: body shorter than its Content-Length", download("short", "half the announced body",
                                                               ["stopped at", "gelan-c.pt"])),
    ("download: body cut short, no Content-Length", download("cut", "half the body, no Content-Length",
                                                             ["is not a checkpoint", "gelan-c.pt"])),
    ("download: body longer than its Content-Length", download("long", "a body longer than announced",
                                                               ["is not a checkpoint", "gelan-c.pt"])),
    ("download: a web page", download("html", "a sign-in page", ["is not a checkpoint", "gelan-c.pt"])),
    ("download: cached HTML page", download("whole", "the cached file is an HTML page",
                                            ["cached download", "moved aside"], planted=b"<html>login</html>")),
    ("download: cached random bytes", download("whole", "the cached file is random bytes",
                                               ["cached download", "moved aside"], planted=os.urandom(4096))),
    ("download: .part of a dead process", download("whole", "a dead download's .part", [], stale_part=True)),
    ("download: file-size limit", download("whole", "under ulimit -f 1 MB", ["file-size limit", ".gelan-c.pt."],
                                           file_size=1 << 20)),
    ("reparam: official name offline", download("offline", "reparam yolov9 by name, offline", ["put it at"],
                                                command="reparam")),
    ("inspect: official name offline", download("offline", "inspect -m gelan-c.pt, offline", ["put it at"],
                                                command="inspect")),
]  # fmt: skip
LIST_CASES = [
    ("list names itself", list_file("self")),
    ("two lists name each other", list_file("pair")),
    ("URL line in a list", list_file("url")),
    ("list with a UTF-8 BOM", list_file("bom")),
]
