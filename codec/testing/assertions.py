"""Assertions for a test suite that checks a chat template, a format's parser and its grammar agree.

Each raises :class:`AssertionError` with the first difference spelled out (the offset, line and
column of the first differing character, with both texts around it; or the first field of a
result that differs), so that a failing property says what went wrong without a debugger.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from codec import jinja
from codec._compare import render_outcomes, text_difference
from codec._whole_reply import default_call_id
from codec.format import Format
from codec.models import (
    Event,
    ParseResult,
    ReasoningDelta,
    TextDelta,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    dump_arguments,
)

__all__ = [
    "assert_append_only",
    "assert_events_rebuild",
    "assert_renders_like",
    "assert_round_trip",
    "assert_stream_matches_parse",
    "client_view",
    "events_to_message",
    "expected_message",
    "render_outcomes",
    "split",
    "summary",
    "text_difference",
]


# --------------------------------------------------------------------------- differences


def _value_difference(expected: Any, actual: Any, path: str = "") -> str:
    """The first place (a key path) where two JSON-like values differ, and both values there."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        for key in [*expected, *(k for k in actual if k not in expected)]:
            if key not in actual or key not in expected or expected[key] != actual[key]:
                if key not in actual:
                    return f"{path}.{key}: missing (expected {expected[key]!r})"
                if key not in expected:
                    return f"{path}.{key}: unexpected {actual[key]!r}"
                return _value_difference(expected[key], actual[key], f"{path}.{key}")
    if isinstance(expected, list) and isinstance(actual, list):
        for index, (x, y) in enumerate(zip(expected, actual, strict=False)):
            if x != y or _typed(x) != _typed(y):
                return _value_difference(x, y, f"{path}[{index}]")
        if len(expected) != len(actual):
            return f"{path}: {len(expected)} items expected, {len(actual)} given"
    if isinstance(expected, str) and isinstance(actual, str):
        return f"{path or 'the value'}: " + text_difference(expected, actual)
    return f"{path or 'the value'}: expected {expected!r}, got {actual!r}"


def _typed(value: Any) -> str:
    """``value`` as JSON with sorted keys: equal only if the types agree too (1 / 1.0 / True, -0.0, big ints)."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


# --------------------------------------------------------------------------- render parity


def assert_renders_like(template: str, fmt: Format, conversation: Mapping[str, Any]) -> None:
    """``fmt`` renders ``conversation`` exactly as ``template`` does, byte for byte, or both raise
    with the same message (codec's :class:`~codec.errors.RenderError` carries the message the
    template raises). The failure message shows the first differing character."""
    theirs, ours = render_outcomes(template, fmt, conversation)
    if theirs == ours:
        return
    shown = text_difference(theirs, ours, expected_name="template", actual_name=fmt.name)
    raise AssertionError(f"{fmt.name} does not render like the template: {shown}")


# --------------------------------------------------------------------------- the round trip


def summary(result: ParseResult) -> dict[str, Any]:
    """A parse result as plain data: content, reasoning, calls (name and arguments; ids left out)
    and the kinds of its issues."""
    return {
        "content": result.content,
        "reasoning": result.reasoning,
        "tool_calls": [{"name": c.function.name, "arguments": c.function.arguments} for c in result.tool_calls],
        "issues": [issue.kind for issue in result.issues],
    }


def expected_message(
    expected: Mapping[str, Any], ids: Sequence[str] | None = None, made: Callable[[int], str] = default_call_id
) -> dict[str, Any]:
    """The OpenAI message (``to_message().model_dump(mode="json")``) of a parse that gives ``expected``
    (content, reasoning and tool_calls as :func:`summary` gives them), with ids ``call_0``, ``call_1``...
    (those ``made`` makes: a format's :meth:`~codec.format.Format.default_call_id`), or ``ids``, where
    the reply writes them."""
    message: dict[str, Any] = {"role": "assistant", "content": None}  # (null when none, as OpenAI writes it)
    content, calls = expected["content"], expected["tool_calls"]
    if content and not (calls and not content.strip()):
        message["content"] = content
    if expected["reasoning"]:
        message["reasoning_content"] = expected["reasoning"]
    if calls:
        message["tool_calls"] = [
            {
                "id": made(index) if ids is None else ids[index],
                "type": "function",
                "function": {"name": call["name"], "arguments": dump_arguments(call["arguments"])},
            }
            for index, call in enumerate(calls)
        ]
    return message


def _message_expectation(message: Mapping[str, Any]) -> dict[str, Any]:
    """What a reply written for ``message`` must parse to: its content, reasoning and calls as given."""
    (prepared,) = jinja.prepare_messages([message])
    content = prepared.get("content")
    calls = []
    for call in prepared.get("tool_calls") or []:
        function = call.get("function", call)
        arguments = function.get("arguments")
        if isinstance(arguments, str):  # the JSON text OpenAI sends: the value it stands for
            arguments = json.loads(arguments) if arguments.strip() else {}
        calls.append({"name": function.get("name"), "arguments": arguments if arguments is not None else {}})
    return {
        "content": content if isinstance(content, str) else "",
        "reasoning": prepared.get("reasoning_content") or "",
        "tool_calls": calls,
    }


def _arguments_decoded(message: dict[str, Any]) -> dict[str, Any]:
    """An OpenAI message with each call's ``arguments`` string decoded (so that key order does not count)."""
    calls = [
        {**call, "function": {**call["function"], "arguments": json.loads(call["function"]["arguments"])}}
        for call in message.get("tool_calls") or []
    ]
    return {**message, "tool_calls": calls} if calls else message


def assert_round_trip(
    fmt: Format,
    message: Mapping[str, Any],
    tools: Sequence[Mapping[str, Any]] | None = None,
    *,
    expected: Mapping[str, Any] | None = None,
    keeps_key_order: bool = True,
    chunk_sizes: int | Sequence[int] | random.Random = (1, 3, 7),
    char_by_char: bool = True,
) -> ParseResult:
    """``fmt.parse(fmt.render_reply(message), tools=tools)`` gives the message back, with no issue,
    and so does the reply streamed (:func:`assert_stream_matches_parse`); returns the parse.

    ``expected`` is what the parse must give (``{"content", "reasoning", "tool_calls": [{"name",
    "arguments"}]}``), by default the message's own content, reasoning and calls (arguments given
    as JSON text stand for the value they encode): give it where the format keeps less (a template
    that trims content) or types values its own way. Arguments must agree in their JSON types
    (``1`` / ``1.0`` / ``True``), and with ``keeps_key_order`` in their
    key order too; the calls get the format's default ids (``call_0``...), or those the reply writes,
    where its syntax writes ids (``Family.reply_ids``). ``chunk_sizes`` and ``char_by_char``
    say how the reply is streamed.

    Without a prompt, a reasoning closer before any call means the prompt opened reasoning
    (``reasoning_without_opener``); a reply whose content holds one is then parsed as the
    continuation of a prompt that opened nothing (``prompt=""``), as a server that has the prompt
    would.
    """
    reply = fmt.render_reply(message)
    tool_list = list(tools) if tools is not None else None
    result, prompt = fmt.parse(reply, tools=tool_list), None
    if any(issue.kind == "reasoning_without_opener" for issue in result.issues):
        close = fmt.syntax().reasoning_close
        content = message.get("content")
        if close is None or not isinstance(content, str) or close not in content:
            raise AssertionError(f"{fmt.name} reads reasoning the prompt did not open in {reply!r}")
        result, prompt = fmt.parse(reply, tools=tool_list, prompt=""), ""
    want = dict(expected) if expected is not None else _message_expectation(message)
    got = summary(result)
    if got != {**want, "issues": []}:
        raise AssertionError(
            f"{fmt.name} reads its reply back differently: {_value_difference({**want, 'issues': []}, got)}"
            f"\nreply: {reply!r}"
        )
    ids = [call.id for call in result.tool_calls]
    (prepared,) = jinja.prepare_messages([message])
    written = fmt.reply_ids(prepared)  # where the reply writes its calls' ids, those
    wanted_ids = written if written is not None else [fmt.default_call_id(i) for i in range(len(ids))]
    if ids != wanted_ids:
        raise AssertionError(f"{fmt.name}: call ids {ids} are not {wanted_ids}")
    for index, (call, wanted) in enumerate(zip(result.tool_calls, want["tool_calls"], strict=True)):
        if _typed(call.function.arguments) != _typed(wanted["arguments"]):
            difference = _value_difference(wanted["arguments"], call.function.arguments, f"tool_calls[{index}]")
            raise AssertionError(f"{fmt.name}: argument types differ: {difference}\nreply: {reply!r}")
        if keeps_key_order and dump_arguments(call.function.arguments) != dump_arguments(wanted["arguments"]):
            raise AssertionError(
                f"{fmt.name}: call {index}'s arguments come back in another key order: "
                + text_difference(dump_arguments(wanted["arguments"]), dump_arguments(call.function.arguments))
            )
    dumped = result.to_message().model_dump(mode="json")
    wanted_message = expected_message(want, written, fmt.default_call_id)
    if not keeps_key_order:  # the arguments strings, as JSON values
        dumped, wanted_message = _arguments_decoded(dumped), _arguments_decoded(wanted_message)
    if dumped != wanted_message:
        raise AssertionError(f"{fmt.name}: the OpenAI message differs: {_value_difference(wanted_message, dumped)}")
    assert_stream_matches_parse(
        fmt, reply, tools=tool_list, prompt=prompt, chunk_sizes=chunk_sizes, char_by_char=char_by_char
    )
    return result


# --------------------------------------------------------------------------- streaming


def split(text: str, sizes: int | Sequence[int] | random.Random, *, max_size: int = 12) -> list[str]:
    """Cut ``text`` into chunks.

    ``sizes`` is a fixed chunk size, a sequence of sizes used in turn (cycled), or a
    ``random.Random`` drawing each size in ``1..max_size`` (a size of 0 is allowed in a sequence
    and gives an empty chunk, which a stream must accept).
    """
    if isinstance(sizes, int):
        if sizes < 1:
            raise ValueError("chunk size must be positive")
        return [text[i : i + sizes] for i in range(0, len(text), sizes)]
    chunks = []
    i = 0
    k = 0
    while i < len(text):
        if isinstance(sizes, random.Random):
            size = sizes.randint(1, max_size)
        else:
            if not sizes or not any(sizes):
                raise ValueError("sizes must contain a positive size")
            size = sizes[k % len(sizes)]
            k += 1
        chunks.append(text[i : i + size])
        i += size
    return chunks


def events_to_message(events: Iterable[Event]) -> dict[str, Any]:
    """The assistant message an OpenAI client assembles from the events' ``to_openai()`` deltas.

    Content and ``reasoning_content`` are concatenated; tool calls are accumulated per ``index``
    (the first delta of an index carries ``id``, ``type`` and ``function.name``, every delta may
    carry an ``arguments`` fragment that is appended). Fields that never arrived are left out,
    as ``model_dump`` leaves out ``None`` fields.
    """
    content: list[str] | None = None
    reasoning: list[str] | None = None
    calls: dict[int, dict[str, Any]] = {}
    for event in events:
        delta = event.to_openai()
        if delta is None:
            continue
        if "content" in delta:
            content = (content or []) + [delta["content"]]
        if "reasoning_content" in delta:
            reasoning = (reasoning or []) + [delta["reasoning_content"]]
        for piece in delta.get("tool_calls", []):
            call = calls.setdefault(piece["index"], {"function": {"arguments": ""}})
            for key in ("id", "type"):
                if key in piece:
                    call[key] = piece[key]
            function = piece.get("function", {})
            if "name" in function:
                call["function"]["name"] = call["function"].get("name", "") + function["name"]
            call["function"]["arguments"] += function.get("arguments", "")
    message: dict[str, Any] = {"role": "assistant"}
    if content is not None:
        message["content"] = "".join(content)
    if reasoning is not None:
        message["reasoning_content"] = "".join(reasoning)
    if calls:
        message["tool_calls"] = [
            {
                "id": c.get("id"),
                "type": c.get("type"),
                "function": {"name": c["function"].get("name"), "arguments": c["function"]["arguments"]},
            }
            for _, c in sorted(calls.items())
        ]
    return message


def client_view(message: dict[str, Any]) -> dict[str, Any]:
    """Apply ``ParseResult.to_message``'s documented rules to a client-assembled message.

    ``to_message`` makes empty content null, and whitespace-only content beside tool calls; a
    client sees that whitespace in the stream. Messages are compared after this normalisation.
    """
    out = dict(message)
    content = out.get("content")
    if content is not None and (not content or (out.get("tool_calls") and not content.strip())):
        content = None
    if out.get("role", "assistant") == "assistant":
        out["content"] = content
    if out.get("reasoning_content") == "":
        del out["reasoning_content"]
    return out


def assert_events_rebuild(events: Sequence[Event], result: ParseResult) -> None:
    """The message rebuilt from the events is ``result.to_message().model_dump(mode="json")``."""
    rebuilt = client_view(events_to_message(events))
    expected = result.to_message().model_dump(mode="json")
    if rebuilt != expected:
        raise AssertionError(f"the events rebuild another message: {_value_difference(expected, rebuilt)}")


def assert_append_only(events: Sequence[Event], result: ParseResult) -> None:
    """The stream's tool-call events are well ordered and append-only.

    Every call of ``result`` has exactly one Start (with its id and name), then its deltas, then
    exactly one End carrying the final call; indices start in order 0, 1, 2...; no event of a call
    comes after its End; the deltas of a call concatenate to exactly its ``arguments`` string in
    ``result.to_message().model_dump(mode="json")``; text and reasoning deltas are never empty.
    """
    dumped = result.to_message().model_dump(mode="json").get("tool_calls") or []
    started: dict[int, ToolCallStart] = {}
    ended: dict[int, ToolCallEnd] = {}
    fragments: dict[int, list[str]] = {}
    for n, event in enumerate(events):
        if isinstance(event, (TextDelta, ReasoningDelta)):
            _require(bool(event.text), f"event {n}: empty {type(event).__name__}")
        elif isinstance(event, ToolCallStart):
            _require(event.index not in started, f"event {n}: call {event.index} started twice")
            _require(event.index == len(started), f"event {n}: call {event.index} started out of order")
            started[event.index] = event
            fragments[event.index] = []
        elif isinstance(event, ToolCallDelta):
            _require(event.index in started, f"event {n}: delta of call {event.index} before its start")
            _require(event.index not in ended, f"event {n}: delta of call {event.index} after its end")
            _require(bool(event.arguments), f"event {n}: empty arguments delta")
            fragments[event.index].append(event.arguments)
        elif isinstance(event, ToolCallEnd):
            _require(event.index in started, f"event {n}: end of call {event.index} before its start")
            _require(event.index not in ended, f"event {n}: call {event.index} ended twice")
            ended[event.index] = event
        else:  # pragma: no cover - a new event type must be added here
            raise AssertionError(f"event {n}: unknown event {event!r}")
    _require(sorted(started) == list(range(len(result.tool_calls))), "every call of the result is started once")
    _require(sorted(ended) == sorted(started), "every started call is ended")
    for index, call in enumerate(result.tool_calls):
        start, end = started[index], ended[index]
        _require((start.id, start.name) == (call.id, call.function.name), f"call {index}: start differs from result")
        _require(end.call == call, f"call {index}: end differs from result")
        arguments = "".join(fragments[index])
        _require(
            arguments == dumped[index]["function"]["arguments"],
            f"call {index}: deltas {fragments[index]!r} do not concatenate to the arguments string: "
            + text_difference(dumped[index]["function"]["arguments"], arguments),
        )


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise AssertionError(message)


def assert_stream_matches_parse(
    fmt: Format,
    reply: str,
    *,
    tools: Sequence[Mapping[str, Any]] | None = None,
    prompt: str | None = None,
    chunk_sizes: int | Sequence[int] | random.Random = (1, 3, 7),
    char_by_char: bool = True,
) -> ParseResult:
    """``reply`` streamed gives exactly ``fmt.parse(reply)``, with append-only events that rebuild
    its message; returns the parse.

    The reply is streamed in one piece, cut by ``chunk_sizes`` (a size, sizes used in turn, or a
    ``random.Random``: see :func:`split`), and with ``char_by_char`` one character at a time.
    """
    tool_list = list(tools) if tools is not None else None
    whole = fmt.parse(reply, tools=tool_list, prompt=prompt)
    ways = [("whole", [reply]), ("chunked", split(reply, chunk_sizes))]
    if char_by_char:
        ways.append(("char by char", list(reply)))
    for name, chunks in ways:
        stream = fmt.stream(tools=tool_list, prompt=prompt)
        events: list[Event] = []
        for chunk in chunks:
            events.extend(stream.feed(chunk))
        events.extend(stream.close())
        if stream.result != whole:
            difference = _value_difference(whole.model_dump(mode="json"), stream.result.model_dump(mode="json"))
            raise AssertionError(f"{fmt.name}: the reply streamed {name} parses differently: {difference}")
        assert_append_only(events, stream.result)
        assert_events_rebuild(events, stream.result)
    return whole
