"""Decoding ``qwen3_coder`` prompts: what comes back, and where text that is no rendering is refused.

``decode(render(case))`` equals :func:`qwen3_coder_normal_form` of the case: the case minus what
the reference template drops or writes alike. The format-independent contract (every rendering
renders back) is in ``test_decode.py``.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from harness import assert_renders_back, decoded_as_json, examples, linked_as_json, rendered
from hypothesis import assume, given
from hypothesis import strategies as st
from strategies import conversations, rich_conversations

import codec
from codec.formats.qwen3_coder import DEFAULT_SYSTEM
from codec.schema import declared_types, type_text

FMT = codec.get_format("qwen3_coder")
GOLDEN = Path(__file__).resolve().parent / "golden_renders" / "qwen3_coder"
CASES = st.one_of(conversations(), conversations(content_parts=True), rich_conversations())

#: Sequences the template writes between the parts of a prompt: a text holding one reads as two parts.
SEPARATORS = ("<|im_end|>\n<|im_start|>", "</tool_response>\n<tool_response>", "</parameter>\n<parameter=")


def tojson(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def written(value: Any) -> str:
    """A value as the template writes it in a call: strings raw, anything else as JSON."""
    return value if isinstance(value, str) else tojson(value)


def text_of(content: Any) -> str:
    # The template joins text parts and trims every message's text.
    if isinstance(content, list):
        content = "".join(part["text"] for part in content)
    return (content or "").strip()


def read_back(value: Any, schema: Any) -> Any:
    """The value a call's written text reads as.

    By the declared schema (as replies are parsed) when that reading is written the same; else as
    JSON when the text is exactly how a non-string value is written; else the text itself.
    """
    raw = written(value)
    if declared_types(schema):
        typed, problem = type_text(raw, schema)
        if problem is None and written(typed) == raw:
            return typed
    try:
        as_json = json.loads(raw)
    except ValueError:
        return raw
    return as_json if not isinstance(as_json, str) and written(as_json) == raw else raw


def property_normal_form(schema: Any) -> dict[str, Any]:
    if not isinstance(schema, dict):
        return {}  # a schema that is no object (``true``) is written as the property's name alone
    if "description" in schema:
        return {**schema, "description": schema["description"].strip()}  # descriptions are written trimmed
    return schema


def tool_normal_form(tool: dict[str, Any]) -> dict[str, Any]:
    function = tool.get("function", tool)  # a bare function object is written as the wrapped one
    out: dict[str, Any] = {"name": function["name"]}
    if "description" in function:
        out["description"] = function["description"].strip()
    parameters = function.get("parameters") or {}
    properties = {name: property_normal_form(schema) for name, schema in parameters.get("properties", {}).items()}
    # The parameters' "type" is not written: it comes back as "object"; no parameters are no properties.
    out["parameters"] = {"type": "object", "properties": properties}
    out["parameters"].update({k: v for k, v in parameters.items() if k not in ("type", "properties")})
    out.update({k: v for k, v in function.items() if k not in ("name", "description", "parameters")})
    return {"type": "function", "function": out}


def assistant_normal_form(
    message: dict[str, Any], schemas: dict[str, Any], ids: itertools.count[int]
) -> dict[str, Any]:
    out: dict[str, Any] = {"role": "assistant", "content": text_of(message.get("content")) or None}
    calls = message.get("tool_calls") or []
    if calls:
        out["tool_calls"] = []
    for call in calls:
        name, arguments = call["function"]["name"], call["function"]["arguments"]
        properties = (schemas.get(name) or {}).get("properties", {})
        arguments = {key: read_back(value, properties.get(key)) for key, value in arguments.items()}
        # Ids are not in the prompt: call_0, call_1... across the conversation.
        out["tool_calls"].append(
            {"id": f"call_{next(ids)}", "type": "function", "function": {"name": name, "arguments": arguments}}
        )
    return out


def qwen3_coder_normal_form(case: dict[str, Any]) -> dict[str, Any]:
    """What ``decode(render(case))`` gives back."""
    tools = [tool_normal_form(tool) for tool in case["tools"]] if case["tools"] else None  # [] renders as none
    schemas = {tool["function"]["name"]: tool["function"]["parameters"] for tool in tools or ()}
    ids = itertools.count()
    messages: list[dict[str, Any]] = []
    for message in case["messages"]:
        if message["role"] == "assistant":
            messages.append(assistant_normal_form(message, schemas, ids))
        else:  # reasoning, tool_call_id and name are not in the prompt
            messages.append({"role": message["role"], "content": text_of(message.get("content"))})
    if tools and messages[0]["role"] == "system" and messages[0]["content"] in ("", DEFAULT_SYSTEM):
        # With tools, an empty system text is written as the default one: both read as no system
        # message, unless it is the only message (then it reads as the default text).
        messages = messages[1:] or [{"role": "system", "content": DEFAULT_SYSTEM}]
    return {
        "messages": messages,
        "tools": tools,
        "add_generation_prompt": case["add_generation_prompt"],
        "variables": {},  # the template reads no variable
    }


def texts(case: dict[str, Any]) -> list[str]:
    out = [text_of(m.get("content")) for m in case["messages"]]
    for message in case["messages"]:
        for call in message.get("tool_calls") or []:
            out += [v for v in call["function"]["arguments"].values() if isinstance(v, str)]
    return out


# --------------------------------------------------------------------------- what comes back


@examples(300)
@given(case=CASES)
def test_decode_gives_back_the_normal_form(case: dict[str, Any]) -> None:
    text = rendered(FMT, case)
    assume(text is not None and not any(sep in t for t in texts(case) for sep in SEPARATORS))
    assert text is not None
    assert decoded_as_json(FMT.decode(text)) == linked_as_json(qwen3_coder_normal_form(case))


@pytest.mark.parametrize("path", sorted(GOLDEN.glob("*.txt")), ids=lambda p: p.stem)
def test_golden_renders_decode_to_their_normal_form(path: Path) -> None:
    case = json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))
    conversation = assert_renders_back(FMT, path.read_text(encoding="utf-8"))
    assert decoded_as_json(conversation) == linked_as_json(qwen3_coder_normal_form(case))


SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}, "s": {"type": "string"}}}
TOOL = {"type": "function", "function": {"name": "f", "parameters": SCHEMA}}


@pytest.mark.parametrize(
    ("tools", "arguments", "expected"),
    [
        ([TOOL], {"n": 7, "s": "7"}, {"n": 7, "s": "7"}),  # typed by the schema
        (None, {"n": 7, "s": "7"}, {"n": 7, "s": 7}),  # without one, JSON-looking text reads as JSON
        ([TOOL], {"n": "7.50"}, {"n": "7.50"}),  # a reading that would be written otherwise is not taken
        (None, {"s": 'say "hi"', "o": {"k": [1]}}, {"s": 'say "hi"', "o": {"k": [1]}}),
    ],
)
def test_call_values_read_as_written(
    tools: list[dict[str, Any]] | None, arguments: dict[str, Any], expected: dict[str, Any]
) -> None:
    call = {"id": "c", "type": "function", "function": {"name": "f", "arguments": arguments}}
    messages = [{"role": "user", "content": "go"}, {"role": "assistant", "tool_calls": [call]}]
    (_, assistant) = assert_renders_back(FMT, FMT.render(messages, tools)).messages
    assert assistant.tool_calls is not None
    assert assistant.tool_calls[0].function.arguments == expected


# --------------------------------------------------------------------------- refused text


PROMPT = FMT.render(
    [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}],
    [{"type": "function", "function": {"name": "f", "description": "d", "parameters": SCHEMA}}],
)
CALL = FMT.render(
    [{"role": "user", "content": "hi"}, {"role": "assistant", "tool_calls": [{"function": TOOL["function"]}]}]
)


def damaged(text: str, old: str, new: str) -> tuple[str, int]:
    """``text`` with its last ``old`` replaced, and the offset of the replacement."""
    at = text.rindex(old)
    return text[:at] + new + text[at + len(old) :], at


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("<|im_start|>bot\nhi<|im_end|>\n", len("<|im_start|>")),  # a role the template never writes
        ("<|im_start|>user\nhi<|im_end|>\n<|im_start|>system\nx", len("<|im_start|>user\nhi<|im_end|>\n<|im_start|>")),
        ("<|im_start|>user\n hi<|im_end|>\n", len("<|im_start|>user\n")),  # user text is written trimmed
        ("<|im_start|>user\nhi <|im_end|>\n", len("<|im_start|>user\nhi")),
        ("<|im_start|>assistant\n<|im_end|>\n", len("<|im_start|>assistant")),  # no newline before no content
        ("", 0),
        ("<|im_start|>s", len("<|im_start|>s")),  # cut inside the system turn's opener
        ("\n<tool_resp", len("\n<tool_resp")),  # cut inside a first tool result's opener
    ],
    ids=[
        "unknown role",
        "late system",
        "leading space",
        "trailing space",
        "empty content",
        "empty prompt",
        "cut system opener",
        "cut first result",
    ],
)
def test_parse_error_position(text: str, where: int) -> None:
    with pytest.raises(codec.ParseError) as info:
        FMT.decode(text)
    assert info.value.pos == where


@pytest.mark.parametrize(("opener", "closer"), [("\n<description>", "</description>"), ("\n<type>", "</type>")])
def test_an_unclosed_declaration_element_fails_where_it_opens(opener: str, closer: str) -> None:
    text, at = damaged(PROMPT, closer, closer[:-2] + ">")
    with pytest.raises(codec.ParseError) as info:
        FMT.decode(text)
    assert info.value.pos == text.rindex(opener, 0, at)


def test_a_wrong_declaration_element_fails_where_it_departs() -> None:
    text, at = damaged(PROMPT, "\n<parameters>", "\n<params>")
    with pytest.raises(codec.ParseError) as info:
        FMT.decode(text)
    assert info.value.pos == at + len("\n<param")


def test_a_broken_call_with_no_content_fails_where_it_breaks() -> None:
    text, at = damaged(CALL, "</function>", "</func>")
    with pytest.raises(codec.ParseError) as info:
        FMT.decode(text)
    assert info.value.pos == at + len("</func")
