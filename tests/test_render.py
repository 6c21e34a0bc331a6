"""Render parity: every format's renderer against its reference template.

Two sources of truth: the reference templates in ``../shared/seeds`` rendered by ``codec.jinja``
(itself checked against transformers in test_jinja.py) on generated conversations, and the
golden renders committed under ``tests/golden_renders/<format>/`` so that parity is also checked
where ``../shared`` is absent.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from harness import examples
from hypothesis import given
from hypothesis import strategies as st

import codec
from codec import testing
from codec.errors import RenderError
from codec.testing import conversations, rich_conversations

SEEDS = Path(__file__).resolve().parents[1].parent / "shared" / "seeds"
#: Real-world templates of prompt variants (``qwen3``...), beside the seeds.
TEMPLATES = SEEDS.parent / "templates"
GOLDEN = Path(__file__).resolve().parent / "golden_renders"
FORMATS = [codec.get_format(name) for name in codec.formats()]


def render_both(fmt: codec.Format, template: str, case: dict[str, Any]) -> tuple[str, str]:
    """(ours, reference): the prompts, or ``RenderError: <reason>`` where rendering raised.

    Ours must raise nothing but RenderError, and with the reference template's reason
    (:func:`codec.testing.render_outcomes`).
    """
    reference, ours = testing.render_outcomes(template, fmt, case)
    return ours, reference


def _seed(fmt: codec.Format) -> str:
    path = SEEDS / fmt.reference_template
    if not path.is_file():
        path = TEMPLATES / fmt.reference_template
    if not path.is_file():
        pytest.skip(f"reference template {path} is not available (../shared is absent)")
    return path.read_text(encoding="utf-8")


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.name)
@examples(300)
@given(case=st.one_of(conversations(), conversations(content_parts=True), rich_conversations()))
def test_render_matches_reference(fmt: codec.Format, case: dict[str, Any]) -> None:
    testing.assert_renders_like(_seed(fmt), fmt, case)


def golden_cases() -> list[tuple[codec.Format, Path]]:
    return [(fmt, path) for fmt in FORMATS for path in sorted((GOLDEN / fmt.name).glob("*.json"))]


@pytest.mark.parametrize(("fmt", "path"), golden_cases(), ids=lambda v: getattr(v, "stem", getattr(v, "name", "")))
def test_golden_render(fmt: codec.Format, path: Path) -> None:
    case = json.loads(path.read_text(encoding="utf-8"))
    expected_path = path.with_suffix(".txt")
    kwargs = {"add_generation_prompt": case["add_generation_prompt"], **case["variables"]}
    if not expected_path.exists():  # the reference template raises on this conversation
        with pytest.raises(RenderError, match=re.escape(case["error"])):
            fmt.render(case["messages"], case["tools"], **kwargs)
        return
    assert fmt.render(case["messages"], case["tools"], **kwargs) == expected_path.read_text(encoding="utf-8")
