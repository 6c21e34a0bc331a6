"""What is particular to ``mistral_nemo``: render parity on conversations the template accepts
(ids of nine characters, alternating roles, ``eos_token``), and the official ``mistral-common``
library as a second judge of its prompts and replies (skipped without the ``mistral`` extra)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from harness import assert_renders_back, examples
from hypothesis import given
from hypothesis import strategies as st

import codec
from codec import testing
from codec.testing import conversations

NEMO = codec.get_format("mistral_nemo")
TEMPLATE = (Path(__file__).resolve().parents[2] / "shared" / "seeds" / NEMO.reference_template).resolve()
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        },
    }
]


def nine(text: Any) -> str:
    """An id of nine letters and digits standing for ``text`` (the same one wherever it is used)."""
    return hashlib.sha256(str(text).encode()).hexdigest()[:9]


def fitted(case: dict[str, Any], alternate: bool) -> dict[str, Any]:
    """``case`` as the template accepts it more often: ids of nine characters, ``eos_token``
    given, and (``alternate``) the messages that break the alternation of roles left out."""
    messages = []
    expected_user = True
    for message in case["messages"]:
        message = dict(message)
        if message.get("tool_calls"):
            message["tool_calls"] = [
                {**call, "id": nine(call.get("id"))} if isinstance(call, dict) else call
                for call in message["tool_calls"]
            ]
        if "tool_call_id" in message:
            message["tool_call_id"] = nine(message["tool_call_id"])
        counted = message.get("role") not in ("tool", "system") and not message.get("tool_calls")
        if alternate and counted and (message.get("role") == "user") != expected_user:
            continue
        expected_user ^= counted
        messages.append(message)
    variables = {"eos_token": "</s>", **case.get("variables", {})}
    return {**case, "messages": messages or case["messages"], "variables": variables}


def _template() -> str:
    if not TEMPLATE.is_file():
        pytest.skip(f"reference template {TEMPLATE} is not available (../shared is absent)")
    return TEMPLATE.read_text(encoding="utf-8")


@examples(300)
@given(case=conversations(), alternate=st.booleans())
def test_renders_like_the_template_on_conversations_it_accepts(case: dict[str, Any], alternate: bool) -> None:
    testing.assert_renders_like(_template(), NEMO, fitted(case, alternate))


def test_ids_not_nine_long_raise_the_templates_error() -> None:
    call = {"id": "call_0", "type": "function", "function": {"name": "f", "arguments": {}}}
    with pytest.raises(codec.RenderError, match="alphanumeric strings with length 9"):
        NEMO.render([{"role": "user", "content": "x"}, {"role": "assistant", "tool_calls": [call]}], eos_token="</s>")


def test_the_system_message_goes_into_the_last_user_turn_only() -> None:
    system, user = {"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}
    assert NEMO.render([system, user], bos_token="<s>") == "<s>[INST]Be brief.\n\nHi[/INST]"
    answered = [system, user, {"role": "assistant", "content": "Hello"}]
    with pytest.warns(codec.RenderWarning, match="left it out"):
        assert NEMO.render(answered, bos_token="<s>", eos_token="</s>") == "<s>[INST]Hi[/INST]Hello</s>"
    decoded = assert_renders_back(NEMO, "<s>[INST]Be brief.\n\nHi[/INST]")
    assert [m.role for m in decoded.messages] == ["user"]


def test_the_reply_writes_one_list_and_reads_back() -> None:
    calls = [
        {"id": "a1B2c3D4e", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}},
        {"id": "Zx9Yw8Vu7", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Rome"}}},
    ]
    reply = NEMO.render_reply({"role": "assistant", "content": None, "tool_calls": calls})
    assert reply == (
        '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}, "id": "a1B2c3D4e"}, '
        '{"name": "get_weather", "arguments": {"city": "Rome"}, "id": "Zx9Yw8Vu7"}]</s>'
    )
    result = NEMO.parse(reply, tools=TOOLS)
    assert [(c.function.name, c.function.arguments) for c in result.tool_calls] == [
        ("get_weather", {"city": "Paris"}),
        ("get_weather", {"city": "Rome"}),
    ]
    assert result.issues == []


# --------------------------------------------------------------------------- mistral-common


def _mistral() -> Any:
    common = pytest.importorskip("mistral_common", reason="mistral-common is not installed (the 'mistral' extra)")
    from mistral_common.tokens.tokenizers.mistral import MistralTokenizer

    del common
    return MistralTokenizer.v3(is_tekken=True)


REQUEST = {
    "messages": [
        {"role": "system", "content": "Answer briefly."},
        {"role": "user", "content": "Weather in Paris and Rome?"},
        {
            "role": "assistant",
            "tool_calls": [
                {"id": "a1B2c3D4e", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}},
                {"id": "Zx9Yw8Vu7", "function": {"name": "get_weather", "arguments": {"city": "Roma é"}}},
            ],
        },
        {"role": "tool", "tool_call_id": "a1B2c3D4e", "content": '{"sky": "sunny"}'},
        {"role": "tool", "tool_call_id": "Zx9Yw8Vu7", "content": '{"sky": "rain"}'},
        {"role": "assistant", "content": "Sunny in Paris, rain in Rome."},
        {"role": "user", "content": "Thanks. And tomorrow?"},
    ],
    "tools": TOOLS,
}


def test_mistral_common_writes_the_same_prompt() -> None:
    tokenizer = _mistral()  # first: it skips the test where mistral-common is not installed
    from mistral_common.protocol.instruct.request import ChatCompletionRequest
    from mistral_common.tokens.tokenizers.base import SpecialTokenPolicy

    tokens = tokenizer.encode_chat_completion(ChatCompletionRequest.model_validate(REQUEST)).tokens
    theirs = tokenizer.instruct_tokenizer.tokenizer.decode(tokens, special_token_policy=SpecialTokenPolicy.KEEP)
    ours = NEMO.render(REQUEST["messages"], REQUEST["tools"], bos_token="<s>", eos_token="</s>")
    assert ours == theirs


def test_mistral_common_reads_the_reply_as_codec_does() -> None:
    tokenizer = _mistral()  # first: it skips the test where mistral-common is not installed
    from mistral_common.experimental.tools import _decode_tool_calls, _split_content_and_tool_calls

    inner = tokenizer.instruct_tokenizer.tokenizer
    reply = NEMO.render_reply(REQUEST["messages"][2])
    # [TOOL_CALLS] is a special token, which encoding the text would spell as text: given as the token.
    opener = inner.get_special_token("[TOOL_CALLS]")
    body = inner.encode(reply.removeprefix("[TOOL_CALLS]").removesuffix("</s>"), bos=False, eos=False)
    content, calls = _split_content_and_tool_calls([opener, *body], opener)
    theirs = _decode_tool_calls(calls, inner)
    ours = NEMO.parse(reply, tools=TOOLS).tool_calls
    assert content == []
    assert [(c.function.name, json.loads(c.function.arguments)) for c in theirs] == [
        (c.function.name, c.function.arguments) for c in ours
    ]
