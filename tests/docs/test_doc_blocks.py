"""The extraction of shell commands from Markdown (tests/docs/doc_blocks.py), on crafted pages."""

from __future__ import annotations

import pytest

from tests.docs.doc_blocks import parse_markdown, unlabelled_command_blocks

PAGE = """# A guide

<!-- y9-docs: skip (needs a GPU) -->
```bash
y9 predict big.mp4 -m model.engine
```

```bash
# a comment line is not a command
y9 export best.pt -o m.onnx \\
    --dynamic-batch            # continued
y9 info m.onnx
```

```python
print("not shell")
```

```
y9 hidden --in-a-plain-block
```
"""


def _write(tmp_path, text):
    path = tmp_path / "guide.md"
    path.write_text(text, encoding="utf-8")
    return path


def test_blocks_commands_markers_and_lines(tmp_path):
    blocks = parse_markdown(_write(tmp_path, PAGE), tmp_path)
    assert [b.skip for b in blocks] == ["needs a GPU", None]  # the marker covers its own block only
    assert [c.text for c in blocks[0].commands] == ["y9 predict big.mp4 -m model.engine"]
    second = blocks[1].commands
    assert [c.text for c in second] == [
        "y9 export best.pt -o m.onnx --dynamic-batch            # continued",
        "y9 info m.onnx",
    ]
    assert [c.line for c in second] == [10, 12] and second[0].where() == "guide.md:10"
    assert unlabelled_command_blocks(tmp_path / "guide.md", tmp_path) == ["guide.md:19"]


@pytest.mark.parametrize(
    "text, message",
    [
        ("<!-- y9-docs: skp (typo) -->\n```bash\ntrue\n```\n", r"unknown y9-docs marker 'skp \(typo\)'"),
        ("<!-- y9-docs: skip -->\n```bash\ntrue\n```\n", "unknown y9-docs marker 'skip'"),  # no reason
        ("```bash\ny9 info m.onnx \\\n```\n", "ends in a line continuation"),
        ("```bash\ntrue\n", "never closed"),
    ],
)
def test_mistakes_are_refused(tmp_path, text, message):
    with pytest.raises(ValueError, match=message):
        parse_markdown(_write(tmp_path, text), tmp_path)
