"""``minimax_m2``: MiniMax-M2's ``<invoke name="NAME">`` calls, ``]~b]ROLE`` turns and interleaved thinking.

Reference template: ``MiniMax-M2.jinja`` (``../shared/templates/families/minimax_m2``, llama.cpp's
copy of MiniMax-M2's template). The generation prompt opens a think block, so a reply goes on in
the model's reasoning, closes it, then writes its answer and its calls::

    The user wants the weather.
    </think>

    Let me check.
    <minimax:tool_call>
    <invoke name="get_weather">
    <parameter name="city">São Paulo</parameter>
    <parameter name="days">3</parameter>
    </invoke>
    </minimax:tool_call>[e~[

A value is written inline: a string raw (nothing escaped), anything else as JSON, so types come
back from the tool's schema. Every call of a turn is an invoke of one ``<minimax:tool_call>``
wrapper. Replies are the ``invoke`` family's (:mod:`codec.wire.invoke`, this module's ``WIRE``),
which also reads what real models write instead: indented tags, drifted closers, self-closed
invokes, all arguments in one ``arguments`` parameter, the ``[TOOL_CALL] {"tool": ..., "args":
...} [/TOOL_CALL]`` form, a reply cut inside a call.

Quirks of the reference template, reproduced by the renderer and cited by ID:

* M1. The prompt opens with ``]~!b[]~b]system\\n`` and always has a system turn: the first message's
  content when it is a system message with truthy content, else "You are a helpful assistant."; a
  ``current_date`` and a ``current_location`` of that message follow on lines of their own
  (``Current date: ...``). Later system messages, and messages of other roles, are dropped.
* M2. With tools, the system turn goes on with ``# Tools``, each tool's ``function`` as JSON inside
  ``<tool>...</tool>`` (one a line, in ``<tools>``), then the call instructions; turns end ``[e~[\\n``.
* M3. Content is written as given, never trimmed: a string, or the text of its text parts (string
  items too, other parts dropped); anything else through ``str()``; absent content is empty.
* M4. An assistant turn ``]~b]ai\\n``: its reasoning (``reasoning_content``, else, where the content
  holds ``</think>``, the text before the first one, after the last ``<think>`` before it, with
  line breaks trimmed; the content is then what follows the last ``</think>``, line breaks
  trimmed) is written as ``<think>\\nR\\n</think>\\n\\n`` only after the last user message
  (interleaved thinking); then the content; then, with calls, ``\\n<minimax:tool_call>\\n``, an
  invoke per call and the closer.
* M5. Call arguments must be a mapping (``'str object' has no attribute 'items'``); a string value
  is raw, any other ``tojson``; names and keys are concatenated with ``+`` (a non-string raises).
* M6. Tool results: ``]~b]tool`` opens a run of consecutive tool messages, each
  ``\\n<response>R</response>`` (a list content gives one ``\\n<response>PART\\n</response>`` per
  part: its ``output``, else its ``text``, else the part itself), and ``[e~[\\n`` closes the run. A
  tool message before any assistant call (or after an assistant turn without calls) raises
  ``Message has tool role, but there was no previous assistant message with a tool call!``.
* M7. The generation prompt is ``]~b]ai\\n<think>\\n``: the reply starts inside reasoning.
"""

from __future__ import annotations

import functools
import itertools
import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

from codec.errors import ParseError, RenderError, parse_error_at
from codec.format import Format, Functions
from codec.formats._decode import assistant_message, expect, expected_error
from codec.formats._render import (
    attr,
    call_method,
    concat,
    defined,
    iterate,
    string,
    tojson,
    visible_text,
)
from codec.models import Conversation
from codec.wire import WireSpec, compile_spec
from codec.wire.invoke import Invoke

__all__ = ["MinimaxM2", "prompt_conversation", "prompt_text", "reply_text"]

# ---------------------------------------------------------------------------- markers

BEGIN = "]~!b["
ROLE = "]~b]"
END = "[e~["
TURN_END = END + "\n"
CALL_OPEN = "<minimax:tool_call>"
CALL_CLOSE = "</minimax:tool_call>"
THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"
#: ``add_generation_prompt`` (M7).
GENERATION_PROMPT = ROLE + "ai\n" + THINK_OPEN + "\n"

DEFAULT_SYSTEM = "You are a helpful assistant."
TOOLS_HEADER = (
    "\n\n# Tools\nYou may call one or more tools to assist with the user query.\n"
    "Here are the tools available in JSONSchema format:\n\n<tools>\n"
)
TOOLS_FOOTER = (
    "</tools>\n\nWhen making tool calls, use XML format to invoke tools and pass parameters:\n\n"
    '<minimax:tool_call>\n<invoke name="tool-name-1">\n<parameter name="param-key-1">param-value-1</parameter>\n'
    '<parameter name="param-key-2">param-value-2</parameter>\n...\n</invoke>\n</minimax:tool_call>'
)
NO_CALL = "Message has tool role, but there was no previous assistant message with a tool call!"

# ---------------------------------------------------------------------------- render


@functools.cache
def _replies() -> Invoke:
    """The family's renderer of this format's calls, which the prompt's assistant turns hold."""
    kit = compile_spec(WIRE)
    assert isinstance(kit, Invoke)
    return kit


def _system_turn(system: Any, tools: list[dict[str, Any]] | None) -> str:
    """The system turn (M1, M2): ``system`` is the first message if it is a system message, else None."""
    content = attr(system, "content") if system is not None else None
    out = [BEGIN, ROLE, "system\n", visible_text(content) if content else DEFAULT_SYSTEM]
    for key, label in (("current_date", "Current date: "), ("current_location", "Current location: ")):
        value = attr(system, key) if system is not None else None
        if value:
            out.append("\n" + concat(label, value))
    if tools:
        out.append(TOOLS_HEADER)
        out += [f"<tool>{tojson(attr(tool, 'function'))}</tool>\n" for tool in tools]
        out.append(TOOLS_FOOTER)
    out.append(TURN_END)
    return "".join(out)


def split_reasoning(message: Any) -> tuple[str, str]:
    """(reasoning, content) of an assistant message as the template reads them (M4)."""
    content = visible_text(attr(message, "content"))
    reasoning = attr(message, "reasoning_content")
    if isinstance(reasoning, str):
        return reasoning, content
    if THINK_CLOSE in content:
        reasoning = content.split(THINK_CLOSE)[0].strip("\n").split(THINK_OPEN)[-1].strip("\n")
        return reasoning, content.split(THINK_CLOSE)[-1].strip("\n")
    return "", content


def _calls(calls: Any) -> str:
    """The call wrapper of an assistant turn (M4, M5)."""
    tags = _replies().tags
    out = [f"\n{tags.call_open}\n"]
    for call in iterate(calls):
        function = attr(call, "function")
        if function:
            call = function
        out.append(concat(tags.invoke, attr(call, "name"), f"{tags.name_end}\n"))
        for key, value in call_method(attr(call, "arguments"), "items"):
            text = value if isinstance(value, str) else tojson(value)
            out.append(concat(tags.parameter, key, tags.key_end) + text + tags.parameter_close + "\n")
        out.append(tags.invoke_close + "\n")
    out.append(tags.call_close)
    return "".join(out)


def prompt_text(
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    add_generation_prompt: bool,
    variables: dict[str, Any],
) -> str:
    """The prompt, as the reference template renders it (it reads no ``variables``)."""
    system = messages[0] if attr(messages[0], "role") == "system" else None
    turns = messages[1:] if system is not None else messages
    last_user = max((i for i, m in enumerate(turns) if attr(m, "role") == "user"), default=-1)
    out = [_system_turn(system, tools)]
    last_call: Any = None  # the name of the last call of the last assistant turn (M6)
    for i, message in enumerate(turns):
        role = attr(message, "role")
        if role == "assistant":
            reasoning, content = split_reasoning(message)
            out.append(ROLE + "ai\n")
            if reasoning and i > last_user:
                out.append(f"{THINK_OPEN}\n{reasoning}\n{THINK_CLOSE}\n\n")
            out.append(content)
            calls = attr(message, "tool_calls")
            if calls:
                out.append(_calls(calls))
                last_call = attr(attr(calls[-1], "function"), "name")
            else:
                last_call = None
            out.append(TURN_END)
        elif role == "tool":
            if last_call is None or not defined(last_call):
                raise RenderError(NO_CALL)
            if i == 0 or attr(turns[i - 1], "role") != "tool":
                out.append(ROLE + "tool")
            content = attr(message, "content")
            if isinstance(content, str):
                out.append(f"\n<response>{content}</response>")
            else:
                for part in iterate(content):
                    output = attr(part, "output")
                    if not defined(output):
                        text = attr(part, "text")
                        output = text if attr(part, "type") == "text" and defined(text) else part
                    out.append(f"\n<response>{string(output)}\n</response>")
            if i == len(turns) - 1 or attr(turns[i + 1], "role") != "tool":
                out.append(TURN_END)
        elif role == "user":
            out.append(f"{ROLE}user\n{visible_text(attr(message, 'content'))}{TURN_END}")
    if add_generation_prompt:
        out.append(GENERATION_PROMPT)
    return "".join(out)


# ---------------------------------------------------------------------------- reply


def reply_text(message: dict[str, Any]) -> str:
    """What the model writes for ``message``: its reasoning's think block (where it has reasoning:
    ``<think>\\nR\\n</think>\\n\\n``, as the template shows the turns it thinks in), then the content
    and the call wrapper as the template writes them, then the stop token."""
    reasoning, content = split_reasoning(message)
    content, calls = _replies().reply_parts({**message, "content": content})
    think = f"{THINK_OPEN}\n{reasoning}\n{THINK_CLOSE}\n\n" if reasoning else ""
    return think + content + calls


# ---------------------------------------------------------------------------- decode

_SYSTEM = BEGIN + ROLE + "system\n"
#: What a turn after the system turn opens with.
_OPENERS = (ROLE + "user\n", ROLE + "ai\n", ROLE + "tool\n<response>", ROLE + "tool" + TURN_END)
#: A turn's end: ``[e~[\\n`` that the next turn (or the end of the prompt) follows.
_TURN_END = re.compile(f"{re.escape(TURN_END)}(?={'|'.join(re.escape(o) for o in _OPENERS)}|\\Z)")
_TOOL_LINE = re.compile(r"<tool>(.*)</tool>\n")
_CALLS_START = f"\n{CALL_OPEN}\n"
_INVOKE = '<invoke name="'
_PARAMETER = '<parameter name="'
_PARAMETER_END = "</parameter>\n"
_INVOKE_END = "</invoke>\n"


def prompt_conversation(prompt: str) -> Conversation:
    """The conversation ``prompt`` is a rendering of (README, "Decoding prompts").

    The system turn gives the system text (the default one reads as no system message) and the
    tools (M1, M2); each turn after it reads as its role writes it (M4, M6): an assistant turn's
    think block as its reasoning, its trailing call wrapper as its calls, tool results as text.
    """
    pos = expect(prompt, 0, _SYSTEM)
    ends = [m.start() for m in _TURN_END.finditer(prompt, pos)]
    generation = prompt.endswith(GENERATION_PROMPT)
    if not ends:
        raise parse_error_at(prompt, pos, "the system turn is never closed by '[e~['", expected=(TURN_END,))
    system, tools = _read_system(prompt, pos, ends[0])
    messages: list[dict[str, Any]] = []
    if system is not None:  # an empty text is a content that is truthy but writes nothing: a part (M1, M3)
        messages.append({"role": "system", "content": system or [{"type": "text", "text": ""}]})
    schemas = {tool["function"]["name"]: tool["function"].get("parameters") for tool in tools or ()}
    ids = itertools.count()
    pos = ends[0] + len(TURN_END)
    stop = len(prompt) - len(GENERATION_PROMPT) if generation else len(prompt)
    for end in ends[1:]:
        if not prompt.startswith(_OPENERS, pos):
            raise expected_error(prompt, pos, _OPENERS, "a user, assistant or tool turn")
        if prompt.startswith(ROLE + "user\n", pos):
            messages.append({"role": "user", "content": prompt[pos + len(ROLE + "user\n") : end]})
        elif prompt.startswith(ROLE + "ai\n", pos):
            messages.append(_read_assistant(prompt, pos + len(ROLE + "ai\n"), end, schemas, ids))
        else:
            if messages and messages[-1]["role"] == "tool":  # two runs: apart by a message not written (M1)
                messages.append({"role": "system", "content": ""})
            messages += _read_results(prompt, pos + len(ROLE + "tool"), end)
        pos = end + len(TURN_END)
    if pos != stop:
        raise parse_error_at(prompt, pos, "expected a turn or the generation prompt", expected=_OPENERS)
    if not messages:
        messages.append({"role": "system", "content": DEFAULT_SYSTEM})
    return Conversation.model_validate({"messages": messages, "tools": tools, "add_generation_prompt": generation})


def _read_system(text: str, pos: int, end: int) -> tuple[str | None, list[dict[str, Any]] | None]:
    """The system text (None for the default one) and the tools (None without) of the system turn."""
    tools: list[dict[str, Any]] | None = None
    body_end = end
    if text.endswith(TOOLS_FOOTER, pos, end):
        head = text.rfind(TOOLS_HEADER, pos, end)
        if head < 0:
            raise parse_error_at(text, pos, "the call instructions are not preceded by the tools header")
        tools = []
        at = head + len(TOOLS_HEADER)
        footer = end - len(TOOLS_FOOTER)
        while at < footer:
            line = _TOOL_LINE.match(text, at, footer)
            function = _json_object(line.group(1)) if line is not None else None
            if line is None or function is None or tojson(function) != line.group(1):
                raise expected_error(text, at, ("<tool>",), "a tool declaration: <tool>{...}</tool>")
            tools.append({"type": "function", "function": function})
            at = line.end()
        if not tools:
            raise parse_error_at(text, at, "the tools block declares no tool")
        body_end = head
    system = text[pos:body_end]
    return (None if system == DEFAULT_SYSTEM else system), tools


def _json_object(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _read_results(text: str, pos: int, end: int) -> list[dict[str, Any]]:
    """The tool messages of a ``]~b]tool`` run (M6): ``\\n<response>R</response>`` each; a run of none
    is a result with no parts."""
    if pos == end:
        return [{"role": "tool", "content": []}]
    results = []
    while pos < end:
        pos = expect(text, pos, "\n<response>")
        close = text.find("</response>", pos, end)
        while close >= 0 and not text.startswith(("\n<response>",), close + len("</response>")) and close + 11 != end:
            close = text.find("</response>", close + 1, end)
        if close < 0:
            raise parse_error_at(text, pos, "this result is never closed by '</response>'", expected=("</response>",))
        results.append({"role": "tool", "content": text[pos:close]})
        pos = close + len("</response>")
    return results


def _read_assistant(text: str, pos: int, end: int, schemas: Mapping[str, Any], ids: Iterator[int]) -> dict[str, Any]:
    """An assistant turn (M4): a think block, the content, and a call wrapper that ends the turn."""
    reasoning = None
    if text.startswith(THINK_OPEN + "\n", pos):
        close = text.find(f"\n{THINK_CLOSE}\n\n", pos, end)
        if close >= 0:
            reasoning = text[pos + len(THINK_OPEN) + 1 : close]
            pos = close + len(THINK_CLOSE) + 3
    calls: list[tuple[str, dict[str, Any]]] = []
    content_end = end
    if text.endswith(CALL_CLOSE, pos, end):
        start = text.find(_CALLS_START, pos, end)
        while start >= 0:
            try:
                calls = _read_calls(text, start + len(_CALLS_START), end - len(CALL_CLOSE), schemas)
            except ParseError:
                start = text.find(_CALLS_START, start + 1, end)
                continue
            content_end = start
            break
    message = assistant_message(text[pos:content_end], calls, ids)
    if reasoning is not None:
        message["reasoning_content"] = reasoning
    return message


def _read_calls(text: str, pos: int, end: int, schemas: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The invokes from ``pos`` to ``end`` exactly: (name, arguments) each."""
    from codec.formats.qwen3_coder import _argument

    calls = []
    while pos < end:
        start = expect(text, pos, _INVOKE)
        name_end = text.find('">\n', start, end)
        if name_end < 0:
            raise parse_error_at(text, pos, "this invoke head is never closed", expected=('">',))
        name = text[start:name_end]
        parameters = schemas.get(name)
        properties = parameters.get("properties") if isinstance(parameters, Mapping) else None
        arguments: dict[str, Any] = {}
        pos = name_end + 3
        while not text.startswith(_INVOKE_END, pos):
            key_start = expect(text, pos, _PARAMETER)
            key_end = text.find('">', key_start, end)
            if key_end < 0:
                raise parse_error_at(text, pos, "this parameter head is never closed", expected=('">',))
            key = text[key_start:key_end]
            value_end = text.find(_PARAMETER_END, key_end, end)
            while value_end >= 0 and not text.startswith((_PARAMETER, _INVOKE_END), value_end + len(_PARAMETER_END)):
                value_end = text.find(_PARAMETER_END, value_end + 1, end)
            if value_end < 0 or key in arguments:
                raise parse_error_at(text, pos, "a parameter read no way", expected=(_PARAMETER_END,))
            schema = properties.get(key) if isinstance(properties, Mapping) else None
            arguments[key] = _argument(text[key_end + 2 : value_end], schema)
            pos = value_end + len(_PARAMETER_END)
        pos += len(_INVOKE_END)
        calls.append((name, arguments))
    if pos != end:
        raise parse_error_at(text, pos, "expected the call wrapper's end", expected=(CALL_CLOSE,))
    return calls


# ---------------------------------------------------------------------------- wire
# The invoke family (codec/wire/invoke.py) reads, renders and exports these replies.

WIRE = WireSpec(
    "invoke",
    call=(CALL_OPEN, CALL_CLOSE),
    stop=END,
    reasoning=(THINK_OPEN, THINK_CLOSE),
    name=('<invoke name="', '">'),
    arguments="tagged",
    parameter=('<parameter name="', '">', "</parameter>"),
    values="text",
    separator="\n",
    recover=("bracket_calls",),
)


# ---------------------------------------------------------------------------- format


class MinimaxM2(Format):
    """MiniMax-M2 prompts and ``<invoke>`` calls, with interleaved thinking (reference: MiniMax-M2's template)."""

    name = "minimax_m2"
    aliases = ("minimax", "minimax-m2", "minimax_m2_5")
    summary = 'MiniMax-M2: <minimax:tool_call>\\n<invoke name="NAME">\\n<parameter name="KEY">VALUE</parameter>...'
    stop_token = END
    #: Relative to ``../shared/seeds``: the template is one of ``../shared/templates/families``.
    reference_template = "../templates/families/minimax_m2/MiniMax-M2.jinja"
    template_markers = ("]~b]", "<minimax:tool_call>", '<invoke name="', "[e~[")

    functions = Functions(prompt_text, prompt_conversation, reply_text)
    wire = WIRE
