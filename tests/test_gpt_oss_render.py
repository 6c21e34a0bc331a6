"""gpt_oss's prompts: the variables its system message is built from, the date among them."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

import codec
from codec import jinja

TEMPLATE = Path(__file__).resolve().parents[2] / "shared/templates/families/gpt_oss/openai-gpt-oss-120b.jinja"
OSS = codec.get_format("gpt_oss")
USER = [{"role": "user", "content": "Hi"}]


def test_the_date_is_the_day_of_rendering_unless_given() -> None:
    """The template asks the clock (strftime_now); current_date stands for it, defaulting to the same day."""
    prompt = OSS.render(USER)
    assert f"Current date: {datetime.now().strftime('%Y-%m-%d')}\n" in prompt
    pinned = OSS.render(USER, current_date="2025-08-05")
    assert "Current date: 2025-08-05\n" in pinned
    assert OSS.decode(pinned).variables["current_date"] == "2025-08-05"


def test_the_template_renders_as_ours_today() -> None:
    if not TEMPLATE.is_file():
        pytest.skip("the reference template is not available (../shared is absent)")
    variables = {"reasoning_effort": "low", "model_identity": "You are a bot.", "builtin_tools": ["python"]}
    theirs = jinja.render_template(TEMPLATE.read_text(encoding="utf-8"), USER, None, **variables)
    assert OSS.render(USER, **variables) == theirs


@pytest.mark.parametrize(
    "variables",
    [
        {},
        {"reasoning_effort": "high"},
        {"model_identity": ""},
        {"builtin_tools": ["browser", "python"]},
        {"builtin_tools": ["calculator"]},
    ],
)
def test_variables_decode_back(variables: dict[str, str]) -> None:
    prompt = OSS.render([{"role": "developer", "content": "Be brief."}, *USER], current_date="2026-01-15", **variables)
    conversation = OSS.decode(prompt)
    expected = dict(variables)
    if "builtin_tools" in expected:
        expected["builtin_tools"] = [t for t in ("browser", "python") if t in variables["builtin_tools"]] or [""]
    assert conversation.variables == {"current_date": "2026-01-15", **expected}
    assert conversation.messages[0].role == "system" and conversation.messages[0].content == "Be brief."


def test_a_variable_that_is_no_text_raises_as_the_template_does() -> None:
    with pytest.raises(codec.RenderError, match="can only concatenate str"):
        OSS.render(USER, reasoning_effort=3)
