"""Hand-checked rendering of ``gemma3_tool_code``: what has no reference template (``render_reply``,
the corrected variant) and the seed quirks worth spelling out. Parity with the reference templates
is in test_render.py."""

from __future__ import annotations

from typing import Any

import pytest

from codec.errors import RenderError
from codec.formats.gemma3_tool_code import Gemma3ToolCode

GEMMA3 = Gemma3ToolCode()
CORRECTED = Gemma3ToolCode(corrected=True)


def _call(name: str, arguments: Any, id_: str = "c1") -> dict[str, Any]:
    return {"id": id_, "type": "function", "function": {"name": name, "arguments": arguments}}


USER = {"role": "user", "content": "Hi"}


# ---------------------------------------------------------------------------- parity


def test_gemma3_seed_quirks() -> None:
    messages = [
        {"role": "system", "content": "Sys."},
        USER,
        {"role": "assistant", "content": "dropped", "tool_calls": [_call("f", {"a": 1, "b": "x"}), _call("g", {})]},
        {"role": "tool", "content": "  ok  "},
    ]
    assert GEMMA3.render(messages, add_generation_prompt=True) == (
        "<start_of_turn>user\nSys.\n\nHi<end_of_turn>\n"
        '<start_of_turn>model\n```tool_code\n[f(a=1b="x"),g()]\n```<end_of_turn>\n'
        "<start_of_turn>user\n```tool_response\nok\n```<end_of_turn>\n"
        "<start_of_turn>model\\n"
    )


def test_gemma3_corrected_separates_arguments_and_ends_the_prompt_with_a_newline() -> None:
    messages = [
        USER,
        {"role": "assistant", "tool_calls": [_call("f", {"a": 1, "b": "x", "c": None}), _call("g", {"k": [1]})]},
        {"role": "tool", "content": "ok"},
    ]
    assert CORRECTED.render(messages, add_generation_prompt=True) == (
        "<start_of_turn>user\nHi<end_of_turn>\n"
        '<start_of_turn>model\n```tool_code\n[f(a=1, b="x", c=null),g(k=[1])]\n```<end_of_turn>\n'
        "<start_of_turn>user\n```tool_response\nok\n```<end_of_turn>\n"
        "<start_of_turn>model\n"
    )


def test_gemma3_corrected_changes_nothing_else() -> None:
    """Without keyword arguments or a generation prompt, corrected and seed renders are identical."""
    messages = [
        {"role": "system", "content": "Sys."},
        USER,
        {"role": "assistant", "tool_calls": [_call("f", {"a": 1}), _call("g", '{"x"')]},
        {"role": "tool", "content": {"t": 1}},
        {"role": "assistant", "content": "Done."},
    ]
    tools = [{"type": "function", "function": {"name": "f"}}]
    assert CORRECTED.render(messages, tools) == GEMMA3.render(messages, tools)
    assert 'g("{", "\\"", "x", "\\"")' in CORRECTED.render(messages, tools)


def test_gemma3_corrected_raises_like_the_seed() -> None:
    messages = [USER, {"role": "assistant", "tool_calls": [_call("f", {})]}, {"role": "tool", "content": "a"}]
    for fmt in (GEMMA3, CORRECTED):
        with pytest.raises(RenderError, match=r"^Tool message must be followed by assistant or user$"):
            fmt.render([*messages, {"role": "tool", "content": "b"}])


def test_gemma3_render_reply() -> None:
    calls = {
        "role": "assistant",
        "content": "dropped",
        "tool_calls": [_call("f", {"a": 1, "b": "é\n"}), _call("g", {})],
    }
    assert GEMMA3.render_reply(calls) == '```tool_code\n[f(a=1b="é\\n"),g()]\n```<end_of_turn>'
    assert CORRECTED.render_reply(calls) == '```tool_code\n[f(a=1, b="é\\n"),g()]\n```<end_of_turn>'
    assert GEMMA3.render_reply({"role": "assistant", "content": "  Hello!  "}) == "Hello!<end_of_turn>"
    empty = {"role": "assistant", "content": " Hi ", "tool_calls": []}
    assert GEMMA3.render_reply(empty) == "Hi<end_of_turn>"


@pytest.mark.parametrize("fmt", [GEMMA3, CORRECTED], ids=["seed", "corrected"])
def test_gemma3_reply_is_the_rendered_model_turn(fmt: Gemma3ToolCode) -> None:
    reply = {"role": "assistant", "tool_calls": [_call("f", {"a": 1, "b": [True]})]}
    history = fmt.render([USER, reply, {"role": "tool", "content": "x"}])
    assert "<start_of_turn>model\n" + fmt.render_reply(reply) + "\n" in history
    answer = {"role": "assistant", "content": [{"type": "text", "text": " A "}, {"type": "text", "text": "B"}]}
    assert fmt.render([USER, answer]).endswith("<start_of_turn>model\n" + fmt.render_reply(answer) + "\n")


def test_gemma3_corrected_is_an_instance_option() -> None:
    assert GEMMA3.corrected is False and CORRECTED.corrected is True
    assert repr(CORRECTED) == "<codec format 'gemma3_tool_code' (corrected)>"
