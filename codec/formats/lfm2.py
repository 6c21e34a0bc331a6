"""``lfm2``: Liquid AI's LFM2 / LFM2.5 ChatML turns with Python-list calls between tool-call tokens.

Reference template: ``LFM2.5-8B-A1B.jinja`` (llama.cpp's copy of the model's own). A reply after the
generation prompt ``<|im_start|>assistant\\n`` looks like::

    <think>Weather.</think>Checking.<|tool_call_start|>[get_weather(city='Paris')]<|tool_call_end|><|im_end|>

Strings are ``'`` + value + ``'`` with **nothing escaped**; a mapping is JSON (``tojson``); every other
value goes through Jinja's ``string`` filter, Python's ``str()``: ``True``, ``None``, ``1e+20``,
``['a', 1]``. Keyword arguments and calls are separated by ``", "``.

Quirks of the reference template, reproduced by the renderer:

* L1. The prompt opens with ``bos_token``. Only ``messages[0]`` may be the system message, its content
  (text parts joined, L3) written where it is truthy; a later system message is an ordinary turn.
* L2. With tools, the system text gets ``\\n`` (where it has text) + ``List of tools: [`` + each tool's
  JSON, ``", "`` apart, + ``]``; the system turn is written only where that text is not empty.
* L3. A content list gives its ``text`` parts, ``<image>`` for an ``image`` part and any other part as
  its JSON, joined; a non-assistant message's content is written only where it is truthy, an
  assistant's wherever it is present.
* L4. Reasoning (``thinking``, which ``reasoning_content`` stands for) is written ``<think>`` +
  reasoning + ``</think>``, with no line break, only for assistant messages after the last user
  message, or for every one with ``preserve_thinking``; the content of the others, where it holds
  ``</think>``, is cut after its last ``</think>`` and trimmed.
* L5. Calls follow the content: ``<|tool_call_start|>[f(a='x', n=1), g()]<|tool_call_end|>``, values as
  above; ``tool_calls: []`` writes ``<|tool_call_start|>[]<|tool_call_end|>``; ``arguments`` that are
  not a mapping raise (``'str object' has no attribute 'items'``).
* L6. Content beside calls that ends with ``CONTINUE_FINAL_MESSAGE_TAG `` has that tag moved after the
  calls.
* L7. Every turn is ``<|im_start|>ROLE\\n...<|im_end|>\\n``; the generation prompt is
  ``<|im_start|>assistant\\n``.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from typing import Any

from codec.errors import parse_error_at
from codec.format import Format, Functions
from codec.formats._chatml import GENERATION_PROMPT, IM_END, IM_START, TURN_END, ChatMLTurn, turn_end
from codec.formats._decode import bos_token, rendering
from codec.formats._pythonic import CallListSyntax, decoded_call, decoded_tool, json_readings, read_call_list
from codec.formats._reading import Readings, find_all
from codec.formats._render import (
    attr,
    call_method,
    concat,
    contains,
    defined,
    iterate,
    string,
    subscript,
    tojson,
)
from codec.literals import python_literal
from codec.models import Conversation, Message
from codec.wire import WireSpec
from codec.wire._call_list_python import render_python

# ---------------------------------------------------------------------------- markers

CALLS_OPEN = "<|tool_call_start|>"
CALLS_CLOSE = "<|tool_call_end|>"
THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"
IMAGE = "<image>"
TOOLS_HEAD = "List of tools: ["
#: What content beside calls may end with, moved after the calls (L6).
CFM_TAG = "CONTINUE_FINAL_MESSAGE_TAG "
SYSTEM_OPEN = IM_START + "system\n"


# ---------------------------------------------------------------------------- render


def parse_content(content: Any) -> str:
    """A content as the template's ``parse_content`` writes it: a string as is, else each part's text,
    ``<image>`` or JSON, joined (L3)."""
    if isinstance(content, str):
        return content
    result = ""
    for item in iterate(content):
        kind = subscript(item, "type")
        if kind == "image":
            result = concat(result, IMAGE)
        elif kind == "text":
            result = concat(result, subscript(item, "text"))
        else:
            result = concat(result, tojson(item))
    return result


def render_call(call: Any) -> str:
    """``NAME(key=value, ...)`` for an OpenAI tool call (L5)."""
    function = subscript(call, "function")
    name, arguments = subscript(function, "name"), subscript(function, "arguments")
    pairs = [concat(key, "=", render_python(value, "python")) for key, value in call_method(arguments, "items")]
    return concat(name, "(", ", ".join(pairs), ")")


def render_calls(calls: Any) -> str:
    """``<|tool_call_start|>[call, call]<|tool_call_end|>`` (L5)."""
    return CALLS_OPEN + "[" + ", ".join(render_call(call) for call in iterate(calls)) + "]" + CALLS_CLOSE


def system_text(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> tuple[str, list[dict[str, Any]]]:
    """The system turn's text (L1, L2) and the messages after the system message."""
    text = ""
    if subscript(messages[0], "role") == "system":
        content = call_method(messages[0], "get", "content")
        if content:
            text = parse_content(subscript(messages[0], "content"))
        messages = messages[1:]
    if tools:
        listed = [tool if isinstance(tool, str) else tojson(tool) for tool in tools]
        text = concat(text, "\n" if text else "", TOOLS_HEAD, ", ".join(listed), "]")
    return text, messages


def assistant_text(message: dict[str, Any], shows_thinking: bool) -> str:
    """An assistant turn's text (L4-L6)."""
    out = []
    thinking = attr(message, "thinking")
    if defined(thinking) and shows_thinking:
        out.append(concat(THINK_OPEN, thinking, THINK_CLOSE))
    cfm = False
    calls = attr(message, "tool_calls")
    if defined(attr(message, "content")):
        content = parse_content(attr(message, "content"))
        if not shows_thinking and contains(content, THINK_CLOSE):
            content = content.split(THINK_CLOSE)[-1].strip()
        if defined(calls) and content.endswith(CFM_TAG):
            cfm = True
            content = content[: len(content) - len(CFM_TAG)]
        out.append(content)
    if defined(calls):
        out.append(render_calls(calls))
    if cfm:
        out.append(CFM_TAG)
    return "".join(out)


def prompt_text(
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    add_generation_prompt: bool,
    variables: dict[str, Any],
) -> str:
    """The prompt, as the reference template renders it."""
    preserve = variables.get("preserve_thinking", False)  # `preserve_thinking | default(false)`
    out = [string(variables.get("bos_token", ""))]
    system, messages = system_text(messages, tools)
    if system:
        out.append(SYSTEM_OPEN + system + TURN_END)
    last_user = -1
    for index, message in enumerate(messages):
        if attr(message, "role") == "user":
            last_user = index
    for index, message in enumerate(messages):
        role = attr(message, "role")
        out.append(concat(IM_START, role, "\n"))
        if role == "assistant":
            out.append(assistant_text(message, bool(preserve) or index > last_user))
        elif call_method(message, "get", "content"):
            out.append(parse_content(subscript(message, "content")))
        out.append(TURN_END)
    if add_generation_prompt:
        out.append(GENERATION_PROMPT)
    return "".join(out)


# ---------------------------------------------------------------------------- reply


def reply_text(message: dict[str, Any]) -> str:
    """The assistant turn as the model writes it after ``<|im_start|>assistant\\n``: the turn as the
    template writes the last message (``<think>REASONING</think>`` first where it has reasoning,
    L4), then ``<|im_end|>``."""
    return assistant_text(message, True) + IM_END


# ---------------------------------------------------------------------------- decode
#
# The turns are ChatML's. A value's text can end in several places (strings are unescaped), so the
# call list is read by trying each, and the reading that renders the prompt again is kept.

_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:e[-+][0-9]+)?")
_KEYWORD = re.compile(r"True|False|None")


def _python_readings(text: str, pos: int) -> Readings[Any]:
    """A value ``str()`` wrote at ``pos``: a number, ``True``/``False``/``None``, or a list, each
    ending where the call goes on (``, `` or ``)``) and reading back as the same text."""
    if text.startswith("[", pos):
        for end in find_all(text, pos + 1, ("]",)):
            if not text.startswith((", ", ")"), end + 1):
                continue
            try:
                value = python_literal(text[pos : end + 1])
            except ValueError:
                continue
            if isinstance(value, list) and str(value) == text[pos : end + 1]:
                yield value, end + 1
        return
    for pattern in (_NUMBER, _KEYWORD):
        match = pattern.match(text, pos)
        if match is not None:
            value = python_literal(match.group())
            if str(value) == match.group():
                yield value, match.end()
            return


def _value_readings(text: str, pos: int) -> Readings[Any]:
    """A value as L5 writes it: ``'`` + string + ``'`` (each closing quote the call goes on after, the
    nearest first), a mapping as JSON, anything else through ``str()``."""
    if text.startswith("'", pos):
        for close in find_all(text, pos + 1, ("'",)):
            if text.startswith((", ", ")"), close + 1):
                yield text[pos + 1 : close], close + 1
        return
    if text.startswith("{", pos):
        yield from ((value, end) for value, end in json_readings(text, pos) if isinstance(value, dict))
        return
    yield from _python_readings(text, pos)


CALL_SYNTAX = CallListSyntax(call_separator=", ", argument_separator=", ", read_value=_value_readings)


def read_tools(text: str) -> list[dict[str, Any]] | None:
    """The tools of ``text``, exactly ``[TOOL, TOOL...]`` as L2 writes them (the ``[`` at its start), or None."""
    tools: list[dict[str, Any]] = []
    pos = 1
    while True:
        reading = next((r for r in json_readings(text, pos) if isinstance(r[0], dict)), None)
        if reading is None:
            return None
        tools.append(decoded_tool(reading[0], text, pos))
        pos = reading[1]
        if pos == len(text) - 1 and text.endswith("]"):
            return tools
        if not text.startswith(", ", pos):
            return None
        pos += 2


def read_system(text: str) -> tuple[str | None, list[dict[str, Any]] | None]:
    """The system text and the tools of the system turn's text (L2): the first ``List of tools: [``
    at the start or after a line break that the tools read to the end from."""
    for start in find_all(text, 0, (TOOLS_HEAD,)):
        if start and text[start - 1] != "\n":
            continue
        tools = read_tools(text[start + len(TOOLS_HEAD) - 1 :])
        if tools:
            return (text[: start - 1] if start else None), tools
    return text, None


def split_calls(text: str) -> tuple[str, list[tuple[str, Any]] | None]:
    """An assistant turn's text after its reasoning: the content, and the calls that end it (L5)."""
    if not text.endswith(CALLS_CLOSE):
        return text, None
    end = len(text) - len(CALLS_CLOSE)
    for start in find_all(text, 0, (CALLS_OPEN,), end):
        calls = read_call_list(text[start + len(CALLS_OPEN) : end], CALL_SYNTAX)
        if calls is not None:
            return text[:start], calls
    return text, None


def decode_assistant(text: str, ids: Iterator[int], *, shows_thinking: bool) -> Message:
    """The assistant message written as ``text`` (L4-L6)."""
    reasoning = None
    if shows_thinking and text.startswith(THINK_OPEN):
        close = text.find(THINK_CLOSE, len(THINK_OPEN))
        if close >= 0:
            reasoning, text = text[len(THINK_OPEN) : close], text[close + len(THINK_CLOSE) :]
    tag = text.endswith(CALLS_CLOSE + CFM_TAG)
    content, read = split_calls(text[: len(text) - len(CFM_TAG)] if tag else text)
    if read is None:
        content = text
    elif tag:
        content += CFM_TAG
    calls = None if read is None else [decoded_call(name, args, next(ids)) for name, args in read]
    return Message(
        role="assistant",
        content=content or (None if calls is not None else ""),
        reasoning_content=reasoning,
        tool_calls=calls,
    )


def _messages(
    prompt: str, turns: list[ChatMLTurn], preserve: bool
) -> tuple[list[Message], list[dict[str, Any]] | None]:
    """The messages and tools the turns read as, with ``preserve_thinking`` or without."""
    messages: list[Message] = []
    tools = None
    if turns and turns[0].role == "system":
        system, tools = read_system(prompt[turns[0].body + 1 : turns[0].end])
        messages.append(Message(role="system", content=system))
        turns = turns[1:]
    last_user = max((i for i, turn in enumerate(turns) if turn.role == "user"), default=-1)
    ids = itertools.count()
    for index, turn in enumerate(turns):
        body = prompt[turn.body + 1 : turn.end]
        if turn.role == "assistant":
            messages.append(decode_assistant(body, ids, shows_thinking=preserve or index > last_user))
        else:
            messages.append(Message(role=turn.role, content=body))
    return messages, tools


_ROLE_LINE = re.compile(r"([A-Za-z_]+)\n")


def read_turns(prompt: str, pos: int) -> tuple[list[ChatMLTurn], bool]:
    """The turns from ``pos`` to the end (L7), and whether the prompt ends with the generation prompt."""
    turns: list[ChatMLTurn] = []
    while pos < len(prompt):
        if len(prompt) - pos == len(GENERATION_PROMPT) and prompt.startswith(GENERATION_PROMPT, pos):
            return turns, True
        role = _ROLE_LINE.match(prompt, pos + len(IM_START)) if prompt.startswith(IM_START, pos) else None
        if role is None:
            raise parse_error_at(
                prompt, pos, "expected a turn: <|im_start|>, a role and a line break", expected=[IM_START]
            )
        end = turn_end(prompt, role.end(), (IM_START,))
        turns.append(ChatMLTurn(role[1], pos, role.end(1), end))
        pos = end + len(TURN_END)
    return turns, False


def prompt_conversation(prompt: str) -> Conversation:
    """The conversation ``prompt`` renders; where the template writes several alike, one fixed reading.

    A first system turn is the system message (None where it holds nothing but the tools) and the
    tools, read from its last line from ``List of tools: [``; every other turn is a message of its
    role, its text the content. An assistant turn's ``<think>...</think>`` is its reasoning where
    the template writes one (after the last user message, or before it with ``preserve_thinking``,
    read where no other reading renders the prompt), and its calls the list between the tool-call
    tokens that ends it. Call ids are ``call_0``, ``call_1``... across the conversation.
    """
    first = prompt.find(IM_START)
    if first < 0:
        raise parse_error_at(prompt, len(prompt), "no turn", expected=[IM_START])
    bos = bos_token(prompt, first, IM_START)
    turns, generation = read_turns(prompt, first)
    variables: dict[str, Any] = {"bos_token": bos} if bos else {}
    fallback = None
    for preserve in (False, True):
        messages, tools = _messages(prompt, turns, preserve)
        conversation = Conversation(
            messages=messages or [Message(role="system", content="")],
            tools=tools,
            add_generation_prompt=generation,
            variables={**variables, "preserve_thinking": True} if preserve else variables,
        )
        if rendering(conversation, prompt_text) == prompt:
            return conversation
        fallback = fallback or conversation
    assert fallback is not None
    return fallback


# ---------------------------------------------------------------------------- wire

WIRE = WireSpec(
    "call_list",
    block=(CALLS_OPEN, CALLS_CLOSE),
    stop=IM_END,
    reasoning=(THINK_OPEN, THINK_CLOSE),
    arguments="python",
    values="python",
    separator=", ",
    argument_separator=", ",
    recover=("json_calls",),
)


# ---------------------------------------------------------------------------- format


class Lfm2(Format):
    """Liquid AI LFM2 / LFM2.5 (reference: ``LFM2.5-8B-A1B.jinja``, llama.cpp's copy)."""

    name = "lfm2"
    aliases = ("lfm2.5", "lfm2_5", "lfm-2", "lfm-2.5")
    summary = "Liquid AI LFM2 / LFM2.5: <|tool_call_start|>[get_weather(city='Paris')]<|tool_call_end|>"
    stop_token = IM_END
    #: Relative to ``../shared/seeds``: the template is one of ``../shared/templates/families``.
    reference_template = "../templates/families/lfm2/LFM2.5-8B-A1B.jinja"
    template_markers = (CALLS_OPEN, CALLS_CLOSE, TOOLS_HEAD, "<|im_start|>")

    functions = Functions(prompt_text, prompt_conversation, reply_text)
    wire = WIRE
