"""gemma4 prompts decoded back: what comes back exactly, what the template drops, where errors point.

:func:`expected_decode` is the whole list of what the reference template drops or writes the same
way (FORMATS.md §2.9): ``decode(render(case))`` must equal it (:func:`normal_form`, which the gemma4
profile hands to ``test_decode.py``, checked there on generated conversations and golden renders).
Texts that hold the format's own markers (``<turn|>``, ``<|"|>``...) can read several ways that render
the same; for those only the render-back contract of tests/test_decode.py applies, plus the hand-picked
readings below.
"""

from __future__ import annotations

from typing import Any

import pytest
from harness import assert_renders_back, examples, rendered
from hypothesis import given
from hypothesis import strategies as st
from strategies import conversations

import codec
from codec import jinja
from codec.format import link_tool_results
from codec.formats._render import attr, is_mapping, upper
from codec.formats.gemma4 import (
    GENERATION_PROMPT,
    _response_name,
    _system_text,
    _thought,
    _tool_content,
    content_text,
)
from codec.formats.gemma4_decode import _PromptReader

FMT = codec.get_format("gemma4")
#: Markers a text may hold that make the prompt read several ways (the media tokens do not: they
#: only occur in user text here, which reads the same either way).
MARKERS = (
    '<|"|>',
    "<|turn>",
    "<turn|>",
    "<|tool_call>",
    "<tool_call|>",
    "<|tool_response>",
    "<tool_response|>",
    "<|tool>",
    "<tool|>",
    "<|channel>",
    "<channel|>",
    "<|think|>",
)
_STANDARD_KEYS = ("description", "type", "properties", "required", "nullable")


# --------------------------------------------------------------------------- the normalization


def _type(kind: Any) -> Any:
    """A schema type as the declaration keeps it: upper-cased, so it comes back lower-cased."""
    if isinstance(kind, list):
        return [upper(item).lower() for item in kind]
    return upper(kind).lower()


def _items(schema: dict[str, Any]) -> dict[str, Any]:
    """An array's ``items``: every non-null key is written; ``type`` upper-cased, ``properties`` as schemas."""
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if value is None:
            continue
        if key == "properties":
            out[key] = {name: _property(prop) for name, prop in value.items()} if is_mapping(value) else {}
        elif key == "type":
            out[key] = _type(value)
        else:
            out[key] = value
    return out


def _property(schema: Any) -> dict[str, Any]:
    """A property schema as far as its declaration shows it (Q12)."""
    if not is_mapping(schema):
        return {}  # a value in an object schema's place (read as a property): no field of it shows
    kind = upper(attr(schema, "type"))
    out: dict[str, Any] = {}
    if schema.get("description"):  # an empty description is not written
        out["description"] = schema["description"]
    if kind == "STRING" and schema.get("enum"):  # enum is kept only for strings
        out["enum"] = schema["enum"]
    if kind == "ARRAY" and is_mapping(schema.get("items")) and schema["items"]:
        out["items"] = _items(schema["items"])
    if schema.get("nullable"):
        out["nullable"] = True
    if kind == "OBJECT":
        properties = schema.get("properties")
        if not is_mapping(properties):  # an object without properties lists its other keys as properties
            properties = {key: value for key, value in schema.items() if key not in _STANDARD_KEYS}
        if properties:
            out["properties"] = {name: _property(prop) for name, prop in properties.items()}
        if schema.get("required"):
            out["required"] = schema["required"]
    if kind:  # anyOf and other untyped schemas write an empty type
        out["type"] = _type(schema["type"])
    return out


def _parameters(schema: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if schema.get("properties"):
        out["properties"] = {name: _property(prop) for name, prop in schema["properties"].items()}
    if schema.get("required"):
        out["required"] = schema["required"]
    if schema.get("type"):
        out["type"] = _type(schema["type"])
    return out or {"properties": {}}  # parameters that write nothing still open a parameters block


def _tool(tool: dict[str, Any]) -> dict[str, Any]:
    function = tool["function"]
    out: dict[str, Any] = {"name": function["name"]}
    if function.get("description"):  # a missing description is written as an empty one
        out["description"] = function["description"]
    if function.get("parameters"):
        out["parameters"] = _parameters(function["parameters"])
    if "response" in function:  # only its description and an OBJECT type are written
        response = function["response"]
        out["response"] = {"description": response["description"]} if response.get("description") else {}
        if upper(response.get("type")) == "OBJECT":
            out["response"]["type"] = "object"
    return {"type": "function", "function": out}


def _system_content(content: Any) -> Any:
    """The first system message's text; text parts come back as one part (empty parts for extra spaces)."""
    text = _system_text(content)
    if text == text.strip():
        return text
    middle = text.strip(" ")
    lead, trail = len(text) - len(text.lstrip(" ")), len(text) - len(text.rstrip(" "))
    parts = [""] * lead + ([middle] + [""] * (trail - 1) if middle else [])
    return [{"type": "text", "text": part} for part in parts]


def _assistant(message: dict[str, Any], after_last_user: bool, ids: list[int]) -> dict[str, Any]:
    calls = message.get("tool_calls") or []
    text = content_text(message.get("content"), "model")[0]  # <|channel>...<channel|> stripped, trimmed (Q9)
    out: dict[str, Any] = {"role": "assistant"}
    if text or not calls:  # empty content beside calls comes back as none, alone as ""
        out["content"] = text
    thought = _thought(message)
    if thought and after_last_user and calls:  # reasoning is written only for calls after the last user (Q9)
        out["reasoning_content"] = thought
    if calls:  # ids are not written: call_0, call_1... across the conversation
        out["tool_calls"] = []
        for call in calls:
            # a JSON string is pasted raw and comes back raw (Q10): it never reads as key:value pairs
            function = {"name": call["function"]["name"], "arguments": call["function"]["arguments"]}
            out["tool_calls"].append({"id": f"call_{len(ids)}", "type": "function", "function": function})
            ids.append(len(ids))
    return out


def _tool_results(message: dict[str, Any], results: list[dict[str, Any]], calls: list[dict[str, Any]]) -> list[Any]:
    """Tool messages as the prompt shows them: the resolved name (Q13) and the text; linked by name."""
    out = []
    answered: set[int] = set()
    for result in results:
        name = _response_name(message, result)
        back: dict[str, Any] = {"role": "tool", "name": name}
        content = _tool_content(result.get("content"))
        if content is not None:
            back["content"] = content
        for index, call in enumerate(calls):  # the first call of that name not answered yet
            if index not in answered and call["function"]["name"] == name:
                answered.add(index)
                back["tool_call_id"] = call["id"]
                break
        out.append(back)
    return out


def _turn_messages(turns: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages after the system turn; tool messages not right after calls are dropped (Q6)."""
    roles = [message["role"] for message in turns]
    last_user = max((i for i, role in enumerate(roles) if role == "user"), default=-1)
    out: list[dict[str, Any]] = []
    ids: list[int] = []
    for i, message in enumerate(turns):
        if roles[i] == "tool":
            continue
        if roles[i] != "assistant":  # user and later system/developer turns: their text, trimmed
            out.append({"role": roles[i], "content": content_text(message.get("content"), roles[i])[0]})
            continue
        back = _assistant(message, i > last_user, ids)
        out.append(back)
        if back.get("tool_calls"):
            results = []
            for follower in turns[i + 1 :]:
                if follower["role"] != "tool":
                    break
                results.append(follower)
            out.extend(_tool_results(message, results, back["tool_calls"]))
            if results and back.get("content"):  # written after the results (Q3): the model's next message
                out.append({"role": "assistant", "content": back.pop("content")})
    return out


def expected_decode(case: dict[str, Any], text: str) -> dict[str, Any]:
    """What ``decode(render(case))`` gives: ``case`` less what the template drops or writes the same way."""
    messages = jinja.prepare_messages(case["messages"])  # reasoning under any key is reasoning_content
    variables = case["variables"]
    thinking = bool(variables.get("enable_thinking"))
    tools = case["tools"] or None  # no tools and [] write nothing
    first_is_system = messages[0]["role"] in ("system", "developer")
    turns = _turn_messages(messages[1:] if first_is_system else messages)
    out: list[dict[str, Any]] = []
    first_merges = not turns or turns[0]["role"] in ("system", "developer")
    if thinking or tools or first_is_system:  # developer is written as system
        system = _system_content(messages[0].get("content")) if first_is_system else ""
        if system or not (thinking or tools) or first_merges:  # an empty system prompt shows only where needed
            out.append({"role": "system", "content": system})
    elif first_merges:  # nothing before: a tool message the template drops stands first
        out.append({"role": "tool", "content": ""})
    decoded: dict[str, Any] = {
        "messages": out + turns,
        # add_generation_prompt writes nothing after calls or their results (Q4, Q5)
        "add_generation_prompt": text.endswith(GENERATION_PROMPT),
        # bos_token "" and enable_thinking False write nothing; other variables are not used
        "variables": {
            **({"bos_token": variables["bos_token"]} if variables.get("bos_token") else {}),
            **({"enable_thinking": True} if thinking else {}),
        },
    }
    if tools:
        decoded["tools"] = [_tool(tool) for tool in tools]
    return decoded


def _holds_markers(value: Any) -> bool:
    if isinstance(value, str):
        return any(marker in value for marker in MARKERS)
    if isinstance(value, dict):
        return any(_holds_markers(key) or _holds_markers(item) for key, item in value.items())
    if isinstance(value, list):
        return any(_holds_markers(item) for item in value)
    return False


def normal_form(case: dict[str, Any], text: str) -> dict[str, Any] | None:
    """What ``decode(text)`` gives for ``text``, the rendering of ``case`` (``formats/gemma4.py`` hands it to
    ``test_decode.py``); None where the texts hold markers, so that the prompt reads several ways."""
    if any("tool_responses" in message for message in case["messages"]):
        return None  # legacy results stay on their message: see test_tool_results_link_to_calls_by_name...
    expected = expected_decode(case, text)
    if _holds_markers(expected) or _dropped_messages_before_a_system_turn(expected):
        return None
    return {"tools": None, **_linked_where_it_renders_the_same(expected, text)}


def _dropped_messages_before_a_system_turn(expected: dict[str, Any]) -> bool:
    """Messages the template drops, then a system turn: the prompt starts with that turn, which reads as the
    system prompt too (decode reads it so); the two readings render the same."""
    messages = expected["messages"]
    return len(messages) > 1 and messages[0] == {"role": "tool", "content": ""} and messages[1]["role"] == "system"


def _linked_where_it_renders_the_same(expected: dict[str, Any], text: str) -> dict[str, Any]:
    """``expected`` with its tool results linked to their calls, as decode links them where that renders the same."""
    linked = codec.Conversation.model_validate(expected)
    link_tool_results(linked.messages)
    again = FMT.render(
        linked.messages, linked.tools, add_generation_prompt=linked.add_generation_prompt, **linked.variables
    )
    return linked.model_dump(mode="python") if again == text else expected


# --------------------------------------------------------------------------- (a) round trips


@pytest.mark.parametrize("text", ["", "<bos>", "<bos><|turn>model\n"])
def test_a_prompt_without_messages_reads_as_a_dropped_tool_message(text: str) -> None:
    conversation = assert_renders_back(FMT, text)
    assert [message.role for message in conversation.messages] == ["tool"]
    assert conversation.add_generation_prompt == text.endswith(GENERATION_PROMPT)


@examples(50)
@given(before=st.sampled_from(("x", "a", "A")), after=st.sampled_from(("b", "y")), tail=st.sampled_from(("z", "")))
def test_a_string_holding_the_quote_token_reads_at_its_first_possible_close(before: str, after: str, tail: str) -> None:
    """Q1: ``{a:<|"|>x<|"|>,b:<|"|>z<|"|>}`` is both ``a='x', b='z'`` and ``a='x<|"|>,b:<|"|>z'``."""
    value = f'{before}<|"|>,{after}:<|"|>{tail}'
    text = FMT.render([{"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": {"a": value}}}]}])
    (message,) = assert_renders_back(FMT, text).messages
    assert message.tool_calls is not None
    assert message.tool_calls[0].function.arguments == {"a": before, after: tail}


@pytest.mark.parametrize("raw", ['{"city": "Paris"}', "{}", "a:1,"])
def test_string_arguments_that_read_as_no_mapping_come_back_raw(raw: str) -> None:
    call = {"id": "x", "function": {"name": "f", "arguments": raw}}
    text = FMT.render([{"role": "user", "content": "q"}, {"role": "assistant", "tool_calls": [call]}])
    message = assert_renders_back(FMT, text).messages[1]
    assert message.tool_calls is not None
    assert message.model_dump(mode="python")["tool_calls"][0]["function"]["arguments"] == raw


def test_a_turn_text_holding_a_turn_end_reads_as_two_turns() -> None:
    text = FMT.render([{"role": "user", "content": "a<turn|>\n<|turn>model\nb"}])
    messages = assert_renders_back(FMT, text).messages
    assert [(m.role, m.content) for m in messages] == [("user", "a"), ("assistant", "b")]


def test_tool_results_link_to_calls_by_name_and_legacy_results_stay_on_the_message() -> None:
    calls = [{"id": f"id{n}", "function": {"name": name, "arguments": {}}} for n, name in enumerate("fgf")]
    results = [{"role": "tool", "tool_call_id": f"id{n}", "content": str(n)} for n in (2, 1, 0)]
    legacy = {"role": "assistant", "tool_calls": calls[:1], "tool_responses": [{"name": "f", "response": {"ok": 1}}]}
    text = FMT.render([{"role": "assistant", "tool_calls": calls}, *results, legacy])
    messages = assert_renders_back(FMT, text).messages
    links = [(m.name, m.tool_call_id, m.content) for m in messages if m.role == "tool"]
    assert links == [("f", "call_0", "2"), ("g", "call_1", "1"), ("f", "call_2", "0")]
    assert messages[-1].model_dump()["tool_responses"] == [{"name": "f", "response": {"ok": 1}}]


def test_a_declaration_that_does_not_read_is_system_text() -> None:
    """The system text is free: a malformed declaration in it is a system prompt that renders the same."""
    text = '<|turn>system\n<|tool>declaration:f{description:<|"|>d<|"|>,parameters:{type:OBJECT}}<tool|><turn|>\n'
    conversation = assert_renders_back(FMT, text)
    assert conversation.tools is None
    assert conversation.messages[0].content == text[len("<|turn>system\n") : -len("<turn|>\n")]


def test_declarations_come_back_as_json_schemas() -> None:
    tool = {
        "type": "function",
        "function": {
            "name": "book",
            "description": "Book.",
            "parameters": {
                "type": "object",
                "properties": {
                    "size": {"type": ["integer", "null"], "description": "n"},
                    "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}},
                    "where": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
                },
                "required": ["size"],
            },
            "response": {"type": "object", "description": "Done."},
        },
    }
    conversation = assert_renders_back(FMT, FMT.render([{"role": "user", "content": "q"}], [tool]))
    assert conversation.tools is not None
    assert conversation.tools[0] == tool


# --------------------------------------------------------------------------- (b) errors


def _error(text: str) -> codec.ParseError:
    with pytest.raises(codec.ParseError) as info:
        FMT.decode(text)
    return info.value


@pytest.mark.parametrize(
    ("text", "pos", "expected"),
    [
        ("<|turn>user\nHello", 12, "<turn|>\n"),  # a turn never closed: where its text starts
        ("<|turn>user\nhi<turn|>\nX", 22, "<|turn>"),  # junk between turns
        ("<|turn>assistant\nhi<turn|>\n", 7, "model"),  # the template writes assistant as model
        ("<|turn>tool\nhi<turn|>\n", 7, "user"),  # tool messages have no turn of their own
        ('<|turn>model\n<|tool_call>call:f{a:<|"|>Par', 39, '<|"|>'),  # a string cut short
        ("<|turn>model\n<|channel>thought\nhm\n<channel|>ok<turn|>\n", 31, "\n<channel|><|tool_call>"),  # Q9
        # a tools block cut short: in a description, then after a whole declaration
        ('<|turn>system\n<|tool>declaration:f{description:<|"|>d', 52, '<|"|>'),
        ('<|turn>system\nHi.<|tool>declaration:f{description:<|"|>d<|"|>}<tool|>', 69, "<|tool>declaration:"),
    ],
)
def test_text_that_reads_no_way_fails_where_the_farthest_reading_stopped(text: str, pos: int, expected: str) -> None:
    error = _error(text)
    assert (error.pos, expected in error.expected) == (pos, True)


@pytest.mark.parametrize(
    ("text", "pos"),
    [
        # a generation prompt after unanswered calls is never written (Q5)
        ("<|turn>model\n<|tool_call>call:f{}<tool_call|><|tool_response><|turn>model\n", 61),
        # a system text that starts with a space is one only text parts write, and they end with one
        ("<|turn>system\n hi<turn|>\n", 17),
    ],
)
def test_text_that_reads_but_renders_otherwise_fails_where_the_rendering_departs(text: str, pos: int) -> None:
    assert _error(text).pos == pos


@examples(100)
@given(case=conversations(), data=st.data())
def test_a_truncated_prompt_fails_or_is_itself_a_rendering(case: dict[str, Any], data: st.DataObject) -> None:
    text = rendered(FMT, case)
    if not text:
        return
    cut = data.draw(st.integers(0, len(text) - 1))
    try:
        assert_renders_back(FMT, text[:cut])
    except codec.ParseError as exc:
        assert 0 <= exc.pos <= cut


def test_dictsort_order_is_what_decides_a_mapping() -> None:
    """Keys out of :func:`dictsort` order cannot be a mapping the template wrote: the braces are raw text."""
    text = "<|turn>model\n<|tool_call>call:f{b:1,a:2}<tool_call|><|tool_response>"
    (message,) = assert_renders_back(FMT, text).messages
    assert message.model_dump(mode="python")["tool_calls"][0]["function"]["arguments"] == "b:1,a:2"


# --------------------------------------------------------------------------- (c) linear work

#: Characters the reader may examine per prompt character: each literal's occurrences are found in
#: one pass, then each look takes in a few. A damaged prompt may take up to ``steps_per_char``
#: steps per character before the search gives up, each as many looks.
WORK_PER_CHAR = 16
LOOKUP_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "lookup",
            "description": "Looks it up.",
            "parameters": {
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "what"},
                    "limit": {"type": "integer"},
                    "tags": {"type": "array", "items": {"type": "string"}},
                },
                "required": ["query"],
            },
        },
    }
]


def long_conversation(turns: int) -> list[dict[str, Any]]:
    """``turns`` messages of every kind in turn: text, calls with nested arguments, results, reasoning, media."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": "Be brief."}]
    index = 0
    while len(messages) < turns:
        messages.append({"role": "user", "content": f"question {index}, with, commas: and {{braces}}"})
        if index % 4 == 0:
            messages.append({"role": "assistant", "content": f"answer {index}"})
        elif index % 4 in (1, 2):
            arguments = {"query": f"q{index}", "limit": index, "tags": ["a", f"b{index}"]}
            call = {"id": f"c{index}", "type": "function", "function": {"name": "lookup", "arguments": arguments}}
            reasoning = {"reasoning_content": f"thinking {index}"} if index % 4 == 1 else {}
            messages.append({"role": "assistant", "content": None, "tool_calls": [call], **reasoning})
            messages.append({"role": "tool", "tool_call_id": f"c{index}", "content": f"result {index}"})
            messages.append({"role": "assistant", "content": f"so {index}"})
        else:
            messages.append(
                {"role": "assistant", "content": [{"type": "text", "text": f"look {index}"}, {"type": "image"}]}
            )
        index += 1
    return messages


def examined_per_char(text: str) -> float:
    """The characters the reader examines per character of ``text``: for its first reading, or every one it tries."""
    reader = _PromptReader(text)
    try:
        for conversation in reader.conversations():
            if (
                FMT.render(
                    conversation.messages,
                    conversation.tools,
                    add_generation_prompt=conversation.add_generation_prompt,
                    **conversation.variables,
                )
                == text
            ):
                break
    except codec.ParseError:
        pass
    return reader.examined / len(text)


@pytest.mark.parametrize("cut", [0, 30], ids=["whole", "cut_short"])
def test_reading_a_prompt_is_linear_in_its_length(cut: int) -> None:
    """Ten times the turns, the same work per character: no search starts over, or runs to the end, turn after turn.

    Whole, the prompt reads its first way; cut short, it reads no way, and the search tries all it may.
    """
    small, big = (FMT.render(long_conversation(turns), LOOKUP_TOOLS, enable_thinking=True) for turns in (500, 5000))
    small_work, big_work = examined_per_char(small[: len(small) - cut]), examined_per_char(big[: len(big) - cut])
    budget = WORK_PER_CHAR * (_PromptReader.steps_per_char if cut else 1)
    assert big_work <= small_work * 1.1
    assert big_work <= budget
