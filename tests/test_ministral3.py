"""What is particular to ``ministral3``: render parity on conversations the template accepts more
often (roles that alternate, no later system message, assistant turns that write something), the
``thinking`` parts the template writes as ``[THINK]...[/THINK]``, the reasoning a reply writes
first, and where decoding splits an answer from the calls after it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from harness import assert_renders_back, examples
from hypothesis import given
from hypothesis import strategies as st

import codec
from codec import testing
from codec.testing import conversations, rich_conversations

FMT = codec.get_format("ministral3")
TEMPLATE = (Path(__file__).resolve().parents[2] / "shared" / "seeds" / FMT.reference_template).resolve()


def _template() -> str:
    if not TEMPLATE.is_file():
        pytest.skip(f"reference template {TEMPLATE} is not available (../shared is absent)")
    return TEMPLATE.read_text(encoding="utf-8")


def fitted(case: dict[str, Any], alternate: bool) -> dict[str, Any]:
    """``case`` as the template accepts it more often: no system or developer message after the
    first, an empty answer given a text, and (``alternate``) the messages that break the
    alternation of roles left out."""
    messages = []
    expected_user = True
    for index, message in enumerate(case["messages"]):
        role = message.get("role")
        if role == "developer" or (role == "system" and index > 0):
            continue
        message = dict(message)
        if role == "assistant" and not message.get("tool_calls") and not message.get("content"):
            message["content"] = "ok"
        counted = role == "user" or (role == "assistant" and not message.get("tool_calls"))
        if alternate and counted and (role == "user") != expected_user:
            continue
        expected_user ^= counted
        messages.append(message)
    return {**case, "messages": messages or case["messages"]}


@examples(300)
@given(
    case=st.one_of(conversations(), conversations(content_parts=True), rich_conversations()),
    alternate=st.booleans(),
)
def test_renders_like_the_template_on_conversations_it_accepts(case: dict[str, Any], alternate: bool) -> None:
    testing.assert_renders_like(_template(), FMT, fitted(case, alternate))


USER = {"role": "user", "content": "Weather in Paris?"}
CALL = {"id": "x", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}


def test_thinking_parts_are_written_where_they_stand_and_decode_as_parts() -> None:
    answer = {
        "role": "assistant",
        "content": [{"type": "thinking", "thinking": "Paris, today."}, {"type": "text", "text": "Let me look."}],
        "tool_calls": [CALL],
    }
    prompt = FMT.render([USER, answer, {"role": "tool", "content": "sunny"}], bos_token="<s>")
    assert prompt.endswith(
        "[INST]Weather in Paris?[/INST][THINK]Paris, today.[/THINK]Let me look."
        '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}</s>[TOOL_RESULTS]sunny[/TOOL_RESULTS]'
    )
    testing.assert_renders_like(_template(), FMT, {"messages": [USER, answer], "variables": {"bos_token": "<s>"}})
    decoded = assert_renders_back(FMT, prompt)
    assert decoded.messages[1].content == answer["content"]
    assert decoded.messages[1].tool_calls is not None and decoded.messages[1].tool_calls[0].id == "call00000"
    assert decoded.messages[2].tool_call_id == "call00000"


def test_the_reply_writes_reasoning_first_and_reads_it_back() -> None:
    message = {"role": "assistant", "reasoning_content": "Paris, today.", "content": "", "tool_calls": [CALL]}
    reply = FMT.render_reply(message)
    assert reply == '[THINK]Paris, today.[/THINK][TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}</s>'
    result = FMT.parse(reply)
    assert (result.reasoning, result.content, result.issues) == ("Paris, today.", "", [])
    assert [(c.function.name, c.function.arguments) for c in result.tool_calls] == [("get_weather", {"city": "Paris"})]


@pytest.mark.parametrize(
    ("messages", "error"),
    [
        ([USER, {"role": "system", "content": "late"}], "tool roles are supported, got system"),
        ([USER, USER], "conversation roles must alternate user and assistant roles"),
        ([USER, {"role": "assistant", "content": ""}], "Assistant message must have a string or a list of chunks"),
        ([{"role": "user", "content": []}], "User message must have a string or a list of chunks in content"),
    ],
)
def test_the_templates_refusals_are_its_errors(messages: list[dict[str, Any]], error: str) -> None:
    with pytest.raises(codec.RenderError, match=error):
        FMT.render(messages)
    assert testing.render_outcomes(_template(), FMT, {"messages": messages})[0].startswith("RenderError: ")


def test_an_answer_before_calls_is_its_own_message_where_the_roles_need_one() -> None:
    messages = [
        USER,
        {"role": "assistant", "content": "Let me look."},
        {"role": "assistant", "tool_calls": [CALL]},
        {"role": "tool", "content": "sunny"},
        {"role": "user", "content": "Thanks"},
    ]
    prompt = FMT.render(messages)
    decoded = assert_renders_back(FMT, prompt)
    assert [(m.role, m.content, bool(m.tool_calls)) for m in decoded.messages] == [
        ("user", "Weather in Paris?", False),
        ("assistant", "Let me look.", False),
        ("assistant", None, True),
        ("tool", "sunny", False),
        ("user", "Thanks", False),
    ]
    # Without a user message after them, one message of content and calls reads the same.
    single = assert_renders_back(FMT, FMT.render(messages[:4]))
    second = single.messages[1]
    assert (second.content, bool(second.tool_calls)) == ("Let me look.</s>", True)


def test_calls_without_ids_get_nine_character_ids_other_mistral_templates_take() -> None:
    calls = '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}[TOOL_CALLS]get_weather[ARGS]{"city": "Rome"}</s>'
    result = FMT.parse(calls)
    assert [c.id for c in result.tool_calls] == ["call00000", "call00001"]
    small = codec.get_format("mistral_small3_2")
    prompt = small.render([USER, result.to_message(), {"role": "tool", "tool_call_id": "call00000", "content": "x"}])
    assert "[CALL_ID]call00001[ARGS]" in prompt
