"""``codec.convert``: records converted one by one (``convert_record``) and as a JSON-lines stream
(``convert_lines``), what each kind of bad record raises or is rejected with. The command that
drives them (``codec convert``) is tested in test_cli_convert.py."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

import codec
from codec.convert import (
    MAX_JSON_DEPTH,
    Converted,
    MissingSource,
    NotJSON,
    RecordError,
    Rejected,
    convert_lines,
    convert_record,
    read_json,
)

HERMES = codec.get_format("hermes")
GEMMA4 = codec.get_format("gemma4")
GEMMA3 = codec.get_format("gemma3_tool_code")
DEEPSEEK = codec.get_format("deepseek_pythonic")

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather for a city.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        },
    }
]
MESSAGES = [
    {"role": "system", "content": "You help with the weather."},
    {"role": "user", "content": "Weather in Lisboa?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "call_0", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Lisboa"}}}
        ],
    },
    {"role": "tool", "tool_call_id": "call_0", "content": "Sunny, 24 °C"},
    {"role": "assistant", "content": "It is sunny in Lisboa."},
]
RECORD: dict[str, Any] = {"id": 7, "messages": MESSAGES, "tools": TOOLS, "meta": {"split": "train"}}


def text_of(fmt: codec.Format, conversation: codec.Conversation) -> str:
    return fmt.render(
        conversation.messages,
        conversation.tools,
        add_generation_prompt=conversation.add_generation_prompt,
        **conversation.variables,
    )


# --------------------------------------------------------------------------- convert_record


def test_a_messages_record_is_rendered_and_keeps_its_other_keys() -> None:
    assert convert_record(RECORD, to=GEMMA4) == {
        "id": 7,
        "meta": {"split": "train"},
        "text": GEMMA4.render(MESSAGES, TOOLS),
    }


def test_a_text_record_is_decoded_with_the_source_and_rendered_with_the_target() -> None:
    record = {"id": 1, "text": HERMES.render(MESSAGES, TOOLS)}
    expected = text_of(DEEPSEEK, HERMES.decode(record["text"]))
    assert convert_record(record, source=HERMES, to=DEEPSEEK) == {"id": 1, "text": expected}
    assert convert_record(record, source=HERMES, to=HERMES) == record  # a rendering converts to itself


def test_output_messages_writes_the_conversation_as_a_messages_record() -> None:
    record = {"id": 2, "text": GEMMA4.render(MESSAGES, TOOLS, add_generation_prompt=True)}
    out = convert_record(record, source=GEMMA4, output="messages")
    assert out["id"] == 2 and "text" not in out
    assert out["add_generation_prompt"] is True
    again = GEMMA4.render(out["messages"], out["tools"], add_generation_prompt=True, **out["variables"])
    assert again == record["text"]
    assert json.loads(json.dumps(out)) == out  # plain JSON: a line of a dataset


def test_variables_override_the_records_own() -> None:
    record = {**RECORD, "add_generation_prompt": True, "variables": {"enable_thinking": False}}
    out = convert_record(record, to=DEEPSEEK, variables={"enable_thinking": True})
    assert out["text"] == DEEPSEEK.render(MESSAGES, TOOLS, add_generation_prompt=True, enable_thinking=True)
    assert convert_record(record, to=DEEPSEEK)["text"].endswith("<|Assistant|></think>")


def test_a_text_record_without_a_source_format() -> None:
    with pytest.raises(MissingSource, match="needs a source format") as exc:
        convert_record({"text": HERMES.render(MESSAGES)}, to=GEMMA4)
    assert isinstance(exc.value, RecordError) and isinstance(exc.value, codec.CodecError)


def test_text_that_is_not_a_rendering_of_the_source() -> None:
    prompt = HERMES.render(MESSAGES, TOOLS)
    with pytest.raises(RecordError) as exc:
        convert_record({"text": prompt[: len(prompt) // 2]}, source=HERMES, to=GEMMA4)
    cause = exc.value.__cause__
    assert isinstance(cause, codec.ParseError)
    assert str(exc.value) == f"text: {cause.message} at line {cause.line}, column {cause.column} (offset {cause.pos})"
    with pytest.raises(RecordError, match=r"^text: .* at line 1, column 1 \(offset 0\)$"):
        convert_record({"text": "Hello, world"}, source=HERMES, to=GEMMA4)


def test_a_conversation_the_target_refuses_raises_its_render_error() -> None:
    two_users = {"messages": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]}
    with pytest.raises(codec.RenderError, match="User message must be followed by assistant"):
        convert_record(two_users, to=GEMMA3)


@pytest.mark.parametrize(
    ("record", "reason"),
    [
        ([1, 2], 'a record must be a JSON object with "text" or "messages", not a list'),
        ({"id": 3}, 'a record must have a "text" or a "messages" key'),
        ({"text": "x", "messages": []}, 'a record holds either "text" or "messages", not both'),
        ({"text": 42}, '"text" must be a string, not a number'),
        ({"messages": [{"content": "no role"}]}, "record: messages[0].role: Field required"),
        ({"messages": MESSAGES, "tools": {"a": 1}}, "record: tools must be a JSON list, not an object"),
        (
            {"messages": MESSAGES, "add_generation_prompt": "yes"},
            "record: add_generation_prompt must be true or false, not a string",
        ),
        ({"messages": MESSAGES, "variables": {"tools": []}}, "record: variable name 'tools' is reserved"),
    ],
)
def test_records_that_are_no_conversation(record: Any, reason: str) -> None:
    with pytest.raises(RecordError) as exc:
        convert_record(record, to=HERMES, source=HERMES)
    assert str(exc.value).startswith(reason)


def test_options_that_convert_nothing() -> None:
    with pytest.raises(ValueError, match="to= is required"):
        convert_record(RECORD)
    with pytest.raises(ValueError, match="to= is not used"):
        convert_record(RECORD, to=HERMES, output="messages")
    with pytest.raises(ValueError, match="output must be"):
        convert_record(RECORD, to=HERMES, output="json")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- convert_lines


def test_lines_in_order_numbered_with_blank_lines_skipped() -> None:
    good = json.dumps(RECORD)
    lines = [good + "\n", "\n", "not json\n", "   \n", good.encode("utf-8") + b"\r\n", b'{"text": "\xff"}\n']
    results = list(convert_lines(lines, to=HERMES))
    assert [type(r) for r in results] == [Converted, Rejected, Converted, Rejected]
    assert [r.line for r in results] == [1, 3, 5, 6]
    first, bad_json, again, bad_bytes = results
    assert isinstance(first, Converted) and first.record == convert_record(RECORD, to=HERMES)
    assert isinstance(again, Converted) and again.record == first.record
    assert isinstance(bad_json, Rejected) and bad_json.input == "not json"
    assert bad_json.reason.startswith("invalid JSON: Expecting value")
    assert isinstance(bad_bytes, Rejected) and bad_bytes.input == '{"text": "\ufffd"}'
    assert bad_bytes.reason == "not valid UTF-8 (invalid start byte at byte 10)"


def test_lines_are_read_as_they_are_needed() -> None:
    read: list[int] = []

    def lines() -> Any:
        for i in range(3):
            read.append(i)
            yield json.dumps({"id": i, **RECORD})

    results = convert_lines(lines(), to=HERMES, start=10)
    first = next(results)
    assert read == [0] and isinstance(first, Converted) and first.line == 10
    assert [r.line for r in results] == [11, 12]


def test_rejected_lines_say_why() -> None:
    prompt = HERMES.render(MESSAGES, TOOLS)
    two_users = {"messages": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]}
    lines = [json.dumps({"text": prompt[:40]}), json.dumps(two_users)]
    (no_source, _) = convert_lines(lines, to=GEMMA3)
    assert isinstance(no_source, Rejected) and isinstance(no_source.error, MissingSource)
    assert no_source.reason == 'a "text" record needs a source format to decode it with'
    cut, refused = convert_lines(lines, source=HERMES, to=GEMMA3)
    assert isinstance(cut, Rejected) and isinstance(cut.error, RecordError)
    assert cut.reason.startswith("text: ") and ", column " in cut.reason
    assert isinstance(refused, Rejected) and isinstance(refused.error, codec.RenderError)
    assert refused.reason == "User message must be followed by assistant"


def _buggy_prompt_text(messages: Any, tools: Any, add_generation_prompt: bool, variables: Any) -> str:
    raise KeyError("role")


class _Broken(codec.Format):
    """A format whose renderer has a bug."""

    name = "broken"
    functions = dataclasses.replace(HERMES.functions, prompt_text=_buggy_prompt_text)


def test_a_bug_rejects_the_line_and_the_next_lines_still_convert() -> None:
    lines = [json.dumps(RECORD)] * 2
    results = list(convert_lines(lines, to=_Broken()))
    assert all(isinstance(r, Rejected) and isinstance(r.error, KeyError) for r in results)
    assert isinstance(results[0], Rejected)
    assert results[0].reason == "internal error: KeyError: 'role' (please report this)"


def test_bad_options_raise_before_any_line_is_read() -> None:
    def lines() -> Any:
        raise AssertionError("read")
        yield ""

    with pytest.raises(ValueError, match="to= is required"):
        convert_lines(lines())


# --------------------------------------------------------------------------- read_json


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize(
    ("text", "error", "message"),
    [
        ("[1,", NotJSON, "f.json: invalid JSON: Expecting value: line 1 column 4 (char 3)"),
        ("NaN", NotJSON, "f.json: invalid JSON: NaN is not JSON"),
        ('{"a": -1e400}', NotJSON, "f.json: invalid JSON: number out of range: -1e400"),
        ("1" * 5000, NotJSON, "f.json: invalid JSON: Exceeds the limit (4300 digits) for integer string conversion: "),
        (nested(MAX_JSON_DEPTH + 1), RecordError, "f.json: JSON nested more than 128 levels deep"),
        (nested(100_000), RecordError, "f.json: JSON nested more than 128 levels deep"),
        ("[" * 100_000, RecordError, "f.json: JSON nested more than 128 levels deep"),
        ('[{"a": "\\ud800"}]', RecordError, "f.json: a string at [0].a holds a lone surrogate (\\ud800), "),
        ('{"a": {"\\udfff": 0}}', RecordError, "f.json: a key at a holds a lone surrogate (\\udfff), "),
        ('"\\ude00\\ud83d"', RecordError, "f.json: a string holds a lone surrogate (\\ude00)"),
    ],
)
def test_read_json_refuses_what_codec_cannot_work_with(text: str, error: type[Exception], message: str) -> None:
    with pytest.raises(error) as exc:
        read_json(text, "f.json")
    assert type(exc.value) is error and str(exc.value).startswith(message)
    assert "\n" not in str(exc.value)


def test_read_json_takes_what_it_can() -> None:
    assert read_json(nested(MAX_JSON_DEPTH)) == json.loads(nested(MAX_JSON_DEPTH))
    # Surrogate pairs are characters; a backslash before "ud800" is a backslash.
    assert read_json('["\\ud83d\\ude00", "\\\\ud800", 1e308, -0.0]') == ["\U0001f600", "\\ud800", 1e308, -0.0]


def test_lines_that_cannot_be_read_are_rejected_with_the_reason() -> None:
    lines = [json.dumps(RECORD), '{"id": NaN}', nested(200), '{"text": "\\ud800"}', json.dumps(RECORD)]
    results = list(convert_lines(lines, to=HERMES))
    assert [type(r) for r in results] == [Converted, Rejected, Rejected, Rejected, Converted]
    assert [r.reason for r in results if isinstance(r, Rejected)] == [
        "invalid JSON: NaN is not JSON",
        "JSON nested more than 128 levels deep",
        "a string at text holds a lone surrogate (\\ud800), which is no text UTF-8 can write",
    ]
