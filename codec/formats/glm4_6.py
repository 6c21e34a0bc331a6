"""``glm4_6``: GLM-4.5 and GLM-4.6, ``<tool_call>NAME`` with an ``<arg_key>`` and an ``<arg_value>`` per argument.

Reference template: GLM-4.6's chat template (``families/glm/GLM-4.6.jinja``, the same as
GLM-4.5's). A reply, after the generation prompt ``<|assistant|>``, looks like::

    <think>The user wants the weather.</think>
    Let me check.
    <tool_call>get_weather
    <arg_key>city</arg_key>
    <arg_value>São Paulo</arg_value>
    <arg_key>days</arg_key>
    <arg_value>3</arg_value>
    </tool_call><|observation|>

A value is written raw between its tags: strings as they are (nothing escaped), everything else
as JSON (``tojson``); types are therefore recovered from the tool's schema, and without one a
value that reads as a JSON value other than a string is that value (:mod:`codec.wire.arg_pairs`).

Replies are the ``arg_pairs`` family's (:mod:`codec.wire.arg_pairs`, this module's ``WIRE``): read
by its grammar and builder, which also take what GLM models write instead (a value or a key
without its opener, a key glued to the name, closers written again, a stray value closer). The
family renders them too, as the template writes an assistant turn's content and calls. The stop
token is ``<|user|>``, the turn GLM writes after an answer; after calls it writes ``<|observation|>``
(the spec's ``block`` closer; both are end-of-turn tokens of GLM's tokenizer).

Quirks of the reference template, reproduced by the renderer:

* G1. Every prompt starts ``[gMASK]<sop>``. With tools, a ``<|system|>`` turn of its own comes
  first: a header, each tool as ``tojson`` on a line of its own (the whole OpenAI tool object),
  and a footer showing the call syntax; a system message is a later turn of its own.
* G2. Turns are ``<|system|>\\n``, ``<|user|>\\n`` + text; text is a string or its text parts (and
  strings) joined; other parts are dropped, and content that is neither is printed as Python's
  ``str()``. Messages of other roles are dropped silently.
* G3. With ``enable_thinking`` given and false, each user turn gets ``/nothink`` appended (unless
  its text already ends with it), and the generation prompt is ``<|assistant|>\\n<think></think>``.
* G4. An assistant turn opens ``<|assistant|>\\n<think>R</think>`` where R is the trimmed
  reasoning for a turn after the last user message, else ``<|assistant|>\\n<think></think>``;
  reasoning is ``reasoning_content`` if it is a string, else the text before ``</think>`` in the
  content (and the content what follows it). Then ``\\n`` + trimmed content if not empty, then
  ``\\n<tool_call>NAME`` + ``\\n<arg_key>K</arg_key>\\n<arg_value>V</arg_value>`` per argument +
  ``\\n</tool_call>`` per call.
* G5. Arguments that are not a mapping raise ``Invalid tool call arguments passed: ...``; absent
  or empty ones are no arguments; a call's ``function`` is used where it is truthy.
* G6. A tool message with string content opens ``<|observation|>`` unless the message before it
  is a tool message too, then ``\\n<tool_response>\\nR\\n</tool_response>``; one with a list of
  results always opens ``<|observation|>`` and writes each (its ``output``, else the item through
  ``str()``) the same way.
"""

from __future__ import annotations

import functools
import itertools
import json
from collections.abc import Iterator, Mapping
from typing import Any

from codec.errors import ParseError, RenderError, parse_error_at
from codec.format import Format, Functions
from codec.formats._decode import assistant_message, expect, expected_error, trailing_blocks
from codec.formats._render import attr, concat, defined, is_mapping, iterate, string, tojson, visible_text
from codec.formats.qwen3_coder import _argument
from codec.models import Conversation
from codec.wire import WireSpec, compile_spec
from codec.wire.arg_pairs import ArgPairs

# ---------------------------------------------------------------------------- markers

PREFIX = "[gMASK]<sop>"
SYSTEM = "<|system|>"
USER = "<|user|>"
ASSISTANT = "<|assistant|>"
OBSERVATION = "<|observation|>"
CALL_OPEN = "<tool_call>"
CALL_CLOSE = "</tool_call>"
THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"
KEY_OPEN, KEY_CLOSE = "<arg_key>", "</arg_key>"
VALUE_OPEN, VALUE_CLOSE = "<arg_value>", "</arg_value>"
RESPONSE_OPEN = "\n<tool_response>\n"
RESPONSE_CLOSE = "\n</tool_response>"
NOTHINK = "/nothink"
EMPTY_THOUGHT = THINK_OPEN + THINK_CLOSE

TOOLS_HEADER = (
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n"
)
TOOLS_FOOTER = (
    "</tools>\n\nFor each function call, output the function name and arguments within the following XML format:\n"
    "<tool_call>{function-name}\n<arg_key>{arg-key-1}</arg_key>\n<arg_value>{arg-value-1}</arg_value>\n"
    "<arg_key>{arg-key-2}</arg_key>\n<arg_value>{arg-value-2}</arg_value>\n...\n</tool_call>"
)
ROLES = (SYSTEM, USER, ASSISTANT, OBSERVATION)


# ---------------------------------------------------------------------------- render


@functools.cache
def _replies() -> ArgPairs:
    """The family's renderer of this format's calls, which the prompt's assistant turns hold."""
    kit = compile_spec(WIRE)
    assert isinstance(kit, ArgPairs)
    return kit


def thinking_off(variables: Mapping[str, Any]) -> bool:
    """``enable_thinking is defined and not enable_thinking`` (G3)."""
    return "enable_thinking" in variables and not variables["enable_thinking"]


def split_reasoning(message: Any) -> tuple[str, str]:
    """(reasoning, content) of an assistant message, as the template reads them (G4)."""
    content = visible_text(attr(message, "content"))
    reasoning = attr(message, "reasoning_content")
    if isinstance(reasoning, str):
        return reasoning, content
    if THINK_CLOSE in content:
        reasoning = content.split(THINK_CLOSE)[0].rstrip("\n").split(THINK_OPEN)[-1].lstrip("\n")
        return reasoning, content.split(THINK_CLOSE)[-1].lstrip("\n")
    return "", content


def call_blocks(message: Any, before: str) -> str:
    """An assistant message's calls, each ``before`` + its block (G4, G5)."""
    calls = attr(message, "tool_calls")
    if not calls:
        return ""
    kit, out = _replies(), []
    for call in iterate(calls):
        function = attr(call, "function")
        if defined(function) and function:
            call = function
        arguments = attr(call, "arguments")
        if not defined(arguments) or not arguments:
            arguments = {}
        if not is_mapping(arguments):
            raise RenderError(concat("Invalid tool call arguments passed: ", string(arguments)))
        concat(CALL_OPEN, attr(call, "name"))  # a name that is no string fails as the template's '+' does
        out.append(before + kit.render_call({"name": attr(call, "name"), "arguments": arguments}))
    return "".join(out)


def tool_result(
    messages: list[dict[str, Any]], index: int, opener: str = RESPONSE_OPEN, closer: str = RESPONSE_CLOSE
) -> str:
    """A tool message's ``<|observation|>`` (where it opens one) and its results, each between
    ``opener`` and ``closer`` (G6)."""
    content = attr(messages[index], "content")
    if isinstance(content, str):
        opens = index == 0 or attr(messages[index - 1], "role") != "tool"
        return (OBSERVATION if opens else "") + opener + content + closer
    out = [OBSERVATION]
    for result in iterate(content):
        output = attr(result, "output")
        out.append(opener + string(output if defined(output) else result) + closer)
    return "".join(out)


def tools_turn(tools: list[dict[str, Any]] | None, footer: str = TOOLS_FOOTER) -> str:
    """The system turn declaring the tools, ending with ``footer``, or nothing without tools (G1)."""
    if not tools:
        return ""
    return SYSTEM + "\n" + TOOLS_HEADER + "".join(tojson(tool) + "\n" for tool in tools) + footer


def prompt_text(
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    add_generation_prompt: bool,
    variables: dict[str, Any],
) -> str:
    """The prompt, as the reference template renders it (it reads ``enable_thinking``)."""
    off = thinking_off(variables)
    out = [PREFIX, tools_turn(tools)]
    last_user = max((i for i, m in enumerate(messages) if attr(m, "role") == "user"), default=-1)
    for i, message in enumerate(messages):
        role = attr(message, "role")
        if role == "user":
            text = visible_text(attr(message, "content"))
            out.append(USER + "\n" + text + (NOTHINK if off and not text.endswith(NOTHINK) else ""))
        elif role == "assistant":
            reasoning, content = split_reasoning(message)
            thought = reasoning.strip() if i > last_user and reasoning else ""
            out.append(f"{ASSISTANT}\n{THINK_OPEN}{thought}{THINK_CLOSE}")
            if content.strip():
                out.append("\n" + content.strip())
            out.append(call_blocks(message, "\n"))
        elif role == "tool":
            out.append(tool_result(messages, i))
        elif role == "system":
            out.append(SYSTEM + "\n" + visible_text(attr(message, "content")))
    if add_generation_prompt:
        out.append(ASSISTANT + ("\n" + EMPTY_THOUGHT if off else ""))
    return "".join(out)


# ---------------------------------------------------------------------------- decode


def turns_of(prompt: str, pos: int) -> Iterator[tuple[str, int, int]]:
    """The turns from ``pos``: (role marker, where its body starts, where it ends), split at every role marker."""
    while pos < len(prompt):
        role = next((r for r in ROLES if prompt.startswith(r, pos)), None)
        if role is None:
            raise expected_error(prompt, pos, ROLES, "a turn")
        body = pos + len(role)
        ends = [at for at in (prompt.find(r, body) for r in ROLES) if at >= 0]
        end = min(ends, default=len(prompt))
        yield role, body, end
        pos = end


def read_tools(prompt: str, pos: int, footer: str = TOOLS_FOOTER) -> tuple[list[dict[str, Any]], int]:
    """The tools of the tools turn whose header ends at ``pos``, and the offset after its ``footer``."""
    tools: list[dict[str, Any]] = []
    while not prompt.startswith(footer, pos):
        line_end = prompt.find("\n", pos)
        if line_end < 0:
            raise expected_error(prompt, pos, (footer,))
        try:
            tool = json.loads(prompt[pos:line_end])
        except ValueError:
            raise parse_error_at(prompt, pos, "expected a tool as JSON on a line of its own") from None
        if not isinstance(tool, dict) or tojson(tool) != prompt[pos:line_end]:
            raise parse_error_at(prompt, pos, "expected a tool as the template writes it")
        tools.append(tool)
        pos = line_end + 1
    if not tools:
        raise parse_error_at(prompt, pos, "the tools turn declares no tool")
    return tools, pos + len(footer)


def _read_call(text: str, pos: int, end: int, schemas: Mapping[str, Any]) -> tuple[tuple[str, dict[str, Any]], int]:
    """The call block at ``pos``, ``<tool_call>NAME`` to ``\\n</tool_call>``: (name, arguments), the offset after it."""
    start = expect(text, pos, CALL_OPEN)
    name_end = text.find("\n", start, end)
    if name_end < 0:
        raise parse_error_at(text, start, "expected the call's name on a line of its own")
    name = text[start:name_end]
    parameters = schemas.get(name)
    properties = parameters.get("properties") if isinstance(parameters, Mapping) else None
    arguments: dict[str, Any] = {}
    pos = name_end
    after = (f"\n{KEY_OPEN}", f"\n{CALL_CLOSE}")
    while not text.startswith(after[1], pos):
        key_start = expect(text, pos, after[0])
        key_end = text.find(KEY_CLOSE, key_start, end)
        if key_end < 0:
            raise parse_error_at(text, key_start, "this key is never closed", expected=(KEY_CLOSE,))
        key = text[key_start:key_end]
        if key in arguments:
            raise parse_error_at(text, pos, f"argument {key!r} repeated in one call")
        value_start = expect(text, key_end, f"{KEY_CLOSE}\n{VALUE_OPEN}")
        value_end = text.find(VALUE_CLOSE, value_start, end)
        while value_end >= 0 and not text.startswith(after, value_end + len(VALUE_CLOSE)):
            value_end = text.find(VALUE_CLOSE, value_end + 1, end)
        if value_end < 0:
            raise parse_error_at(text, value_start, "this value is never closed", expected=(VALUE_CLOSE,))
        schema = properties.get(key) if isinstance(properties, Mapping) else None
        arguments[key] = _argument(text[value_start:value_end], schema)
        pos = value_end + len(VALUE_CLOSE)
    return (name, arguments), pos + len(after[1])


def _assistant(
    prompt: str, body: int, end: int, tools: list[dict[str, Any]] | None, ids: Iterator[int]
) -> dict[str, Any]:
    """An assistant turn: ``\\n<think>R</think>``, then ``\\n`` + trimmed content, then calls (G4)."""
    schemas = {tool["function"]["name"]: tool["function"].get("parameters") for tool in tools or () if _named(tool)}
    pos = expect(prompt, body, "\n" + THINK_OPEN)
    close = prompt.find(THINK_CLOSE, pos, end)
    if close < 0:
        raise parse_error_at(prompt, pos, "the reasoning is never closed", expected=(THINK_CLOSE,))
    reasoning = prompt[pos:close]
    pos = close + len(THINK_CLOSE)

    def read(text: str, at: int, stop: int) -> tuple[tuple[str, dict[str, Any]], int] | None:
        try:
            return _read_call(text, at, stop, schemas)
        except ParseError:
            return None

    content: str = ""
    calls: list[tuple[str, dict[str, Any]]] = []
    if pos < end:
        start = expect(prompt, pos, "\n")

        def content_may_end(at: int) -> bool:
            text = prompt[start : at - 1]
            return at == start or (at - start >= 2 and prompt[at - 1] == "\n" and text == text.strip())

        cut, calls = trailing_blocks(prompt, start, end, CALL_OPEN, read, content_may_end)
        content = (prompt[start : cut - 1] if cut > start else "") if calls else prompt[start:end]
        if content != content.strip() or not (content or calls):
            raise parse_error_at(prompt, start, "whitespace where the template trims the content")
    message = assistant_message(content, calls, ids)
    if reasoning or THINK_CLOSE in content:  # (G4: content holding </think> is split unless reasoning is given)
        message["reasoning_content"] = reasoning
    return message


def _named(tool: Any) -> bool:
    function = tool.get("function") if isinstance(tool, dict) else None
    return isinstance(function, dict) and isinstance(function.get("name"), str)


def read_results(
    prompt: str, body: int, end: int, opener: str = RESPONSE_OPEN, closer: str = RESPONSE_CLOSE
) -> list[str]:
    """The results of an ``<|observation|>`` turn, each between ``opener`` and ``closer`` (G6)."""
    results, pos = [], body
    while pos < end:
        start = expect(prompt, pos, opener)
        # Each result runs to the first closer that the next result or the turn's end follows.
        stop = prompt.find(closer, start, end)
        while stop >= 0 and not (stop + len(closer) == end or prompt.startswith(opener, stop + len(closer))):
            stop = prompt.find(closer, stop + 1, end)
        if stop < 0:
            raise parse_error_at(prompt, start, "this tool result is never closed", expected=(closer,))
        results.append(prompt[start:stop])
        pos = stop + len(closer)
    return results


def results_messages(messages: list[dict[str, Any]], results: list[str]) -> list[dict[str, Any]]:
    """The tool messages of an observation turn's results: one each, or (after another tool turn, or
    with none: only a list of results opens one there, G6) one message of them all as ``output`` parts."""
    if not results or (messages and messages[-1]["role"] == "tool"):
        return [{"role": "tool", "content": [{"output": result} for result in results]}]
    return [{"role": "tool", "content": result} for result in results]


def prompt_conversation(prompt: str) -> Conversation:
    """The conversation ``prompt`` is a rendering of (what comes back: README, "Decoding prompts")."""
    pos = expect(prompt, 0, PREFIX)
    tools = None
    if prompt.startswith(SYSTEM + "\n" + TOOLS_HEADER, pos):
        tools, pos = read_tools(prompt, pos + len(SYSTEM + "\n" + TOOLS_HEADER))
    messages: list[dict[str, Any]] = []
    ids = itertools.count()
    generation_prompt = False
    turns = list(turns_of(prompt, pos))
    for index, (role, body, end) in enumerate(turns):
        last = index == len(turns) - 1
        if role == ASSISTANT and last and body == end:
            generation_prompt = True
        elif role == OBSERVATION:
            messages += results_messages(messages, read_results(prompt, body, end))
        elif role == ASSISTANT:
            messages.append(_assistant(prompt, body, end, tools, ids))
        else:
            text = prompt[expect(prompt, body, "\n") : end]
            messages.append({"role": "system" if role == SYSTEM else "user", "content": text})
    users = [m for m in messages if m["role"] == "user"]
    variables: dict[str, Any] = {}
    if users and all(m["content"].endswith(NOTHINK) for m in users):  # G3: thinking turned off
        variables["enable_thinking"] = False
        for message in users:
            message["content"] = message["content"][: -len(NOTHINK)]
        if not generation_prompt and empty_answer(messages[-1]):
            messages.pop()  # the generation prompt of G3, not an empty answer
            generation_prompt = True
    if not messages:  # G2: messages of other roles render as nothing; one stands for them
        messages.append({"role": "developer", "content": ""})
    return Conversation.model_validate(
        {"messages": messages, "tools": tools, "add_generation_prompt": generation_prompt, "variables": variables}
    )


def empty_answer(message: dict[str, Any]) -> bool:
    """Whether a decoded message is an assistant turn that shows nothing."""
    return message["role"] == "assistant" and not any(
        message.get(key) for key in ("content", "tool_calls", "reasoning_content")
    )


# ---------------------------------------------------------------------------- wire
# The arg_pairs family (codec/wire/arg_pairs.py) reads, renders and exports these replies.

WIRE = WireSpec(
    "arg_pairs",
    call=(CALL_OPEN, CALL_CLOSE),
    block=("", OBSERVATION),
    stop=USER,
    reasoning=(THINK_OPEN, THINK_CLOSE),
    arguments="tagged",
    parameter=(KEY_OPEN, KEY_CLOSE, VALUE_CLOSE),
    values="text",
    separator="\n",
    argument_separator="\n",
)


# ---------------------------------------------------------------------------- format


class Glm4_6(Format):
    """GLM-4.5 and GLM-4.6 calls (reference: GLM-4.6's chat template)."""

    name = "glm4_6"
    aliases = ("glm4.6", "glm-4.6", "glm4_5", "glm4.5", "glm-4.5", "glm45", "glm46")
    summary = "GLM-4.5/4.6 calls: <tool_call>NAME\\n<arg_key>KEY</arg_key>\\n<arg_value>VALUE</arg_value>\\n..."
    stop_token = USER
    reference_template = "../templates/families/glm/GLM-4.6.jinja"
    template_markers = (PREFIX, ASSISTANT, OBSERVATION, KEY_OPEN, VALUE_OPEN)

    functions = Functions(prompt_text, prompt_conversation)
    wire = WIRE
