"""``glm4_7``: GLM-4.7, ``<tool_call>NAME<arg_key>K</arg_key><arg_value>V</arg_value></tool_call>``, no line breaks.

Reference template: GLM-4.7-Flash's chat template (``families/glm/GLM-4.7-Flash.jinja``). A reply,
after the generation prompt ``<|assistant|><think>``, looks like this (one line, cut here)::

    The user wants the weather.</think>Let me check.<tool_call>get_weather<arg_key>city</arg_key>
    <arg_value>São Paulo</arg_value><arg_key>days</arg_key><arg_value>3</arg_value></tool_call><|observation|>

Replies are the ``arg_pairs`` family's, as ``glm4_6``'s are (:mod:`codec.formats.glm4_6`), but
written without line breaks: this module's ``WIRE`` is glm4_6's with no ``separator`` and no
``argument_separator``. Every reply of the one reads as the other's does.

Quirks of the reference template, reproduced by the renderer (G1, G2 and G6 are glm4_6's, written
without line breaks):

* G1. ``[gMASK]<sop>``, then with tools a ``<|system|>`` turn of its own (the tools as ``tojson``
  lines, a footer showing the calls without line breaks).
* G2. Turns are ``<|system|>`` and ``<|user|>`` followed directly by their text (no line break, no
  ``/nothink``); messages of other roles are dropped.
* S1. The generation prompt opens the think block, ``<|assistant|><think>``, or with
  ``enable_thinking`` given and false writes only its closer, ``<|assistant|></think>``.
* S2. An assistant turn opens ``<|assistant|><think>R</think>`` where R is the trimmed reasoning if
  there is any and the turn comes after the last user message or ``clear_thinking`` is given and
  false, else ``<|assistant|></think>``; then the trimmed content, then each call as
  ``<tool_call>NAME`` + ``<arg_key>K</arg_key><arg_value>V</arg_value>`` per argument +
  ``</tool_call>``.
* S3. A call's arguments must have ``items()``: absent ones raise ``'dict object' has no attribute
  'arguments'``, a string ``'str object' has no attribute 'items'``.
* G6. Tool results as glm4_6's, each ``<tool_response>R</tool_response>``.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
from collections.abc import Iterator, Mapping
from typing import Any

from codec.errors import ParseError, parse_error_at
from codec.format import Format, Functions
from codec.formats._decode import assistant_message, expect
from codec.formats._render import attr, call_method, concat, defined, iterate, visible_text
from codec.formats.glm4_6 import (
    ASSISTANT,
    CALL_CLOSE,
    CALL_OPEN,
    KEY_CLOSE,
    KEY_OPEN,
    OBSERVATION,
    PREFIX,
    SYSTEM,
    THINK_CLOSE,
    THINK_OPEN,
    TOOLS_HEADER,
    USER,
    VALUE_CLOSE,
    VALUE_OPEN,
    Glm4_6,
    read_results,
    read_tools,
    results_messages,
    split_reasoning,
    thinking_off,
    tool_result,
    tools_turn,
    turns_of,
)
from codec.formats.glm4_6 import WIRE as GLM4_6_WIRE
from codec.formats.qwen3_coder import _argument
from codec.models import Conversation
from codec.wire import compile_spec
from codec.wire.arg_pairs import ArgPairs

# ---------------------------------------------------------------------------- markers

RESPONSE_OPEN = "<tool_response>"
RESPONSE_CLOSE = "</tool_response>"
TOOLS_FOOTER = (
    "</tools>\n\nFor each function call, output the function name and arguments within the following XML format:\n"
    "<tool_call>{function-name}<arg_key>{arg-key-1}</arg_key><arg_value>{arg-value-1}</arg_value>"
    "<arg_key>{arg-key-2}</arg_key><arg_value>{arg-value-2}</arg_value>...</tool_call>"
)


# ---------------------------------------------------------------------------- render


@functools.cache
def _replies() -> ArgPairs:
    """The family's renderer of this format's calls, which the prompt's assistant turns hold."""
    kit = compile_spec(WIRE)
    assert isinstance(kit, ArgPairs)
    return kit


def call_blocks(message: Any) -> str:
    """An assistant message's calls, one block after another (S2, S3)."""
    calls = attr(message, "tool_calls")
    if not calls:
        return ""
    kit, out = _replies(), []
    for call in iterate(calls):
        function = attr(call, "function")
        if defined(function) and function:
            call = function
        concat(CALL_OPEN, attr(call, "name"))  # a name that is no string fails as the template's '+' does
        pairs = call_method(attr(call, "arguments"), "items")  # S3: the template calls _args.items()
        out.append(kit.render_call({"name": attr(call, "name"), "arguments": dict(pairs)}))
    return "".join(out)


def prompt_text(
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    add_generation_prompt: bool,
    variables: dict[str, Any],
) -> str:
    """The prompt, as the reference template renders it (it reads ``enable_thinking`` and ``clear_thinking``)."""
    keep = "clear_thinking" in variables and not variables["clear_thinking"]
    out = [PREFIX, tools_turn(tools, TOOLS_FOOTER)]
    last_user = max((i for i, m in enumerate(messages) if attr(m, "role") == "user"), default=-1)
    for i, message in enumerate(messages):
        role = attr(message, "role")
        if role == "user":
            out.append(USER + visible_text(attr(message, "content")))
        elif role == "assistant":
            reasoning, content = split_reasoning(message)
            shown = (keep or i > last_user) and reasoning
            out.append(ASSISTANT + (THINK_OPEN + reasoning.strip() + THINK_CLOSE if shown else THINK_CLOSE))
            out.append(content.strip())
            out.append(call_blocks(message))
        elif role == "tool":
            out.append(tool_result(messages, i, RESPONSE_OPEN, RESPONSE_CLOSE))
        elif role == "system":
            out.append(SYSTEM + visible_text(attr(message, "content")))
    if add_generation_prompt:
        out.append(ASSISTANT + (THINK_CLOSE if thinking_off(variables) else THINK_OPEN))
    return "".join(out)


# ---------------------------------------------------------------------------- decode


def _read_call(text: str, pos: int, end: int, schemas: Mapping[str, Any]) -> tuple[tuple[str, dict[str, Any]], int]:
    """The call block at ``pos``, ``<tool_call>NAME`` to ``</tool_call>``: (name, arguments), the offset after it."""
    start = expect(text, pos, CALL_OPEN)
    ends = [at for at in (text.find(KEY_OPEN, start, end), text.find(CALL_CLOSE, start, end)) if at >= 0]
    if not ends:
        raise parse_error_at(text, start, "this call is never closed", expected=(CALL_CLOSE,))
    name_end = min(ends)
    name = text[start:name_end]
    parameters = schemas.get(name)
    properties = parameters.get("properties") if isinstance(parameters, Mapping) else None
    arguments: dict[str, Any] = {}
    pos = name_end
    while not text.startswith(CALL_CLOSE, pos):
        key_start = expect(text, pos, KEY_OPEN)
        key_end = text.find(KEY_CLOSE, key_start, end)
        if key_end < 0:
            raise parse_error_at(text, key_start, "this key is never closed", expected=(KEY_CLOSE,))
        key = text[key_start:key_end]
        if key in arguments:
            raise parse_error_at(text, pos, f"argument {key!r} repeated in one call")
        value_start = expect(text, key_end, KEY_CLOSE + VALUE_OPEN)
        value_end = text.find(VALUE_CLOSE, value_start, end)
        while value_end >= 0 and not text.startswith((KEY_OPEN, CALL_CLOSE), value_end + len(VALUE_CLOSE)):
            value_end = text.find(VALUE_CLOSE, value_end + 1, end)
        if value_end < 0:
            raise parse_error_at(text, value_start, "this value is never closed", expected=(VALUE_CLOSE,))
        schema = properties.get(key) if isinstance(properties, Mapping) else None
        arguments[key] = _argument(text[value_start:value_end], schema)
        pos = value_end + len(VALUE_CLOSE)
    return (name, arguments), pos + len(CALL_CLOSE)


def _calls_to_end(text: str, pos: int, end: int, schemas: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]] | None:
    """The call blocks that run from ``pos`` to ``end`` one after another, or None where they do not."""
    calls = []
    while pos < end:
        try:
            call, pos = _read_call(text, pos, end, schemas)
        except ParseError:
            return None
        calls.append(call)
    return calls if pos == end else None


def _assistant(
    prompt: str, body: int, end: int, tools: list[dict[str, Any]] | None, ids: Iterator[int]
) -> dict[str, Any]:
    """An assistant turn: ``</think>`` or ``<think>R</think>``, the trimmed content, then calls (S2)."""
    schemas = {
        tool["function"]["name"]: tool["function"].get("parameters")
        for tool in tools or ()
        if isinstance(tool.get("function"), dict) and isinstance(tool["function"].get("name"), str)
    }
    reasoning = None
    if prompt.startswith(THINK_OPEN, body):
        close = prompt.find(THINK_CLOSE, body, end)
        if close < 0:
            raise parse_error_at(prompt, body, "the reasoning is never closed", expected=(THINK_CLOSE,))
        reasoning = prompt[body + len(THINK_OPEN) : close]
        pos = close + len(THINK_CLOSE)
    else:
        pos = expect(prompt, body, THINK_CLOSE)
    # The content runs to the first call opener from which calls run to the turn's end, where the
    # content before it is written trimmed.
    cut, calls = end, []
    at = prompt.find(CALL_OPEN, pos, end)
    while at >= 0:
        content = prompt[pos:at]
        found = _calls_to_end(prompt, at, end, schemas) if content == content.strip() else None
        if found is not None:
            cut, calls = at, found
            break
        at = prompt.find(CALL_OPEN, at + 1, end)
    content = prompt[pos:cut]
    if content != content.strip():
        raise parse_error_at(prompt, pos, "whitespace where the template trims the content")
    message = assistant_message(content, calls, ids)
    if reasoning is not None:
        # A think block shown empty: reasoning of blanks only, which the template trims to nothing.
        message["reasoning_content"] = reasoning or " "
    elif THINK_CLOSE in content:  # content holding </think> is split unless reasoning is given
        message["reasoning_content"] = ""
    return message


def prompt_conversation(prompt: str) -> Conversation:
    """The conversation ``prompt`` is a rendering of (what comes back: README, "Decoding prompts")."""
    pos = expect(prompt, 0, PREFIX)
    tools = None
    if prompt.startswith(SYSTEM + "\n" + TOOLS_HEADER, pos):
        tools, pos = read_tools(prompt, pos + len(SYSTEM + "\n" + TOOLS_HEADER), TOOLS_FOOTER)
    messages: list[dict[str, Any]] = []
    variables: dict[str, Any] = {}
    ids = itertools.count()
    generation_prompt = False
    turns = list(turns_of(prompt, pos))
    for index, (role, body, end) in enumerate(turns):
        last = index == len(turns) - 1
        if role == ASSISTANT and last and prompt[body:end] in (THINK_OPEN, THINK_CLOSE):
            generation_prompt = True  # S1: the think block opened, or closed with thinking off
            if prompt[body:end] == THINK_CLOSE:
                variables["enable_thinking"] = False
        elif role == OBSERVATION:
            messages += results_messages(messages, read_results(prompt, body, end, RESPONSE_OPEN, RESPONSE_CLOSE))
        elif role == ASSISTANT:
            messages.append(_assistant(prompt, body, end, tools, ids))
        else:
            messages.append({"role": "system" if role == SYSTEM else "user", "content": prompt[body:end]})
    last_user = max((i for i, m in enumerate(messages) if m["role"] == "user"), default=-1)
    if any("reasoning_content" in m for m in messages[:last_user]):
        variables["clear_thinking"] = False  # S2: reasoning shown before the last user message
    if not messages:  # G2: messages of other roles render as nothing; one stands for them
        messages.append({"role": "developer", "content": ""})
    return Conversation.model_validate(
        {"messages": messages, "tools": tools, "add_generation_prompt": generation_prompt, "variables": variables}
    )


# ---------------------------------------------------------------------------- wire
# glm4_6's replies without the line breaks (codec/wire/arg_pairs.py reads, renders and exports them).

WIRE = dataclasses.replace(GLM4_6_WIRE, separator="", argument_separator="")


# ---------------------------------------------------------------------------- format


class Glm4_7(Format):
    """GLM-4.7 calls (reference: GLM-4.7-Flash's chat template)."""

    name = "glm4_7"
    aliases = ("glm4.7", "glm-4.7", "glm47", "glm4_7_flash", "glm-4.7-flash")
    summary = "GLM-4.7 calls: <tool_call>NAME<arg_key>KEY</arg_key><arg_value>VALUE</arg_value></tool_call>"
    stop_token = USER
    reference_template = "../templates/families/glm/GLM-4.7-Flash.jinja"
    # glm4_6's, and the tags written with nothing between them.
    template_markers = (*Glm4_6.template_markers, KEY_CLOSE + VALUE_OPEN)

    functions = Functions(prompt_text, prompt_conversation)
    wire = WIRE
