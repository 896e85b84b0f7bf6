"""Shared test helpers.

Tests that need ../shared (datasets, official fixtures) call ``shared_path(...)``:
- Y9_SHARED unset (a user's fresh clone): the test is skipped;
- Y9_SHARED set (CI sets ../shared) and the file missing: the test FAILS, it never skips.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
TEST_DATA = REPO / "tests" / "data"


def shared_path(*parts: str) -> Path:
    root = os.environ.get("Y9_SHARED")
    if not root:
        pytest.skip("Y9_SHARED is not set: this test needs ../shared (datasets, official fixtures)")
    base = Path(root)
    if not base.is_absolute():
        base = (REPO / base).resolve()
    path = base.joinpath(*parts)
    if not path.exists():
        pytest.fail(f"{path} is missing although Y9_SHARED={root} is set")
    return path


@pytest.fixture
def shared():
    """``shared("fixtures", "official", "official_nms.npz") -> Path`` (skip/fail rules above)."""
    return shared_path
