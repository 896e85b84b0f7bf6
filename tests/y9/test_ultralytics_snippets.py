"""Code a YOLO user already has runs on y9 (issue 52): the snippets of ``tests/y9/ultralytics_snippets.py``,
written from Ultralytics' documented usage (``tests/y9/ultralytics_reference.py`` runs the same list under
Ultralytics 8.4), with ``from y9 import Model as YOLO`` and the embedded model, on coco8 and a short video; each
snippet's checks (and y9's trained-model checks) hold."""

from __future__ import annotations

import shutil
import warnings

import pytest

from tests.checkpoint_reads import read_each_checkpoint_once
from tests.conftest import TEST_DATA
from tests.y9.ultralytics_snippets import MODES, SNIPPETS, make_workspace, run_snippet

HEADER = "from y9 import Model as YOLO"


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    from y9deploy import default_model_path

    folder = make_workspace(tmp_path_factory.mktemp("ul"), sorted(TEST_DATA.glob("*.jpg")))
    shutil.copy(default_model_path(), folder / "model.pt")  # the model path: a copy the snippets may export beside
    with pytest.MonkeyPatch.context() as patch:
        read_each_checkpoint_once(patch)  # each snippet's YOLO(MODEL) still makes its own Model and Detector
        yield folder


def test_the_snippets_cover_every_mode_and_are_forty_or_more():
    assert len(SNIPPETS) >= 40 and {s.mode for s in SNIPPETS} == set(MODES)
    assert len({s.name for s in SNIPPETS}) == len(SNIPPETS)


@pytest.mark.parametrize("snippet", SNIPPETS, ids=[s.name for s in SNIPPETS])
def test_snippet_runs_on_y9(snippet, workspace):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # e.g. the trainer's notes on a CPU run
        run_snippet(snippet, HEADER, "model.pt", workspace, y9=True)
