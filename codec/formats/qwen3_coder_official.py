"""``qwen3_coder_official``: ``qwen3_coder`` replies, prompts as the official Qwen3-Coder template writes them.

Reference template: the official Qwen3-Coder chat template (``qwen3-coder-official.jinja``, kept with
the real-world templates). Replies are ``qwen3_coder``'s XML calls, read by the same grammar,
builder and syntax (the ``xml_params`` family's, :mod:`codec.wire.xml_params`); only the prompt
differs, and the way a non-string argument is written (the spec's ``values="python_str"``)::

    <tool_call>
    <function=book>
    <parameter=guests>
    2
    </parameter>
    <parameter=options>
    {'late': True, 'note': None}
    </parameter>
    </function>
    </tool_call><|im_end|>

Quirks of the template, reproduced by the renderer:

* O1. No tools block without tools: the system turn is written only for a system message (its
  content raw, untrimmed) or for tools (then with the default text "You are Qwen, ..." when there
  is no system message). A first system message without content writes nothing and is dropped.
* O2. Non-string arguments are written with Jinja's ``string`` filter, Python ``str()``: ``True``,
  ``None``, ``1.5``, ``1e+20``, ``['x', None]``, ``{'a': 1}``. The reply builder types them by the
  schema (it reads Python literals); a decoded prompt reads such a text as the value whose
  ``str()`` it is, by the schema where one is declared.
* O3. Tool results are written in a ``user`` turn, each as ``<tool_response>\\nR\\n</tool_response>\\n``
  (``R`` through ``str()``: ``None``, a list of parts as its Python repr, untrimmed), the group
  closed by ``<|im_end|>\\n``; a tool message first in the loop gets no ``<|im_start|>user\\n``.
* O4. An assistant turn with calls is ``<|im_start|>assistant`` + (``\\n`` + trimmed content +
  ``\\n`` when the content is a string that trims to something) + ``\\n<tool_call>...`` per call:
  content and calls are one blank line apart, calls one newline apart, and a turn with calls only
  starts ``<|im_start|>assistant\\n<tool_call>``. Content that is not a string is dropped there.
* O5. Every other turn (user, system anywhere, assistant without calls, any other role) is
  ``<|im_start|>ROLE\\n`` + content + ``<|im_end|>\\n``, content raw: missing content raises
  ``'dict object' has no attribute 'content'``, a list of parts ``can only concatenate str (not
  "list") to str``. A later system message is written, not refused.
* O6. The tools block: ``You have access to the following functions:`` (no ``# Tools`` header),
  every tool's ``<description>`` (empty when absent, trimmed); per property ``<type>`` via
  ``str()``, ``<description>``, every other key but ``enum``/``required`` as ``<key>value</key>``
  (its ``-`` and blanks made ``_``, ``$`` removed; mappings as JSON, ``None`` skipped, the rest via
  ``str()``), and a ``required`` list as ``<required>[`a`, 1]</required>``; the parameters'
  ``required`` likewise, then ``<return>`` (JSON for a mapping). ``enum``, the parameters' other
  keys and the function's other keys are not written; a tool without ``parameters`` raises
  ``'dict object' has no attribute 'parameters'``.
* O7. ``reasoning_content`` and every template variable are ignored.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
from collections.abc import Iterator, Mapping
from typing import Any

from codec.errors import ParseError, parse_error_at
from codec.format import Format, Functions
from codec.formats._chatml import GENERATION_PROMPT, IM_END, IM_START, TURN_END, read_turn, read_turns, turn_end
from codec.formats._decode import assistant_message, expect, expected_error, trailing_blocks, until
from codec.formats._render import (
    Undefined,
    attr,
    concat,
    defined,
    is_iterable,
    is_mapping,
    is_sequence,
    items,
    iterate,
    lookup,
    string,
    subscript,
    tojson,
    trim,
)
from codec.formats.qwen3_coder import DEFAULT_SYSTEM, Qwen3Coder, _element, _property_head, _read_call
from codec.literals import PLAIN_JSON_DECODER, python_literal
from codec.models import Conversation
from codec.schema import declared_types, type_text
from codec.wire import compile_spec
from codec.wire.xml_params import XmlParams, python_text

# ---------------------------------------------------------------------------- markers

CALL_OPEN = "<tool_call>"
STOP = IM_END

TOOLS_HEADER = "\n\nYou have access to the following functions:\n\n<tools>"
TOOLS_FOOTER = (
    "\n</tools>\n\nIf you choose to call a function ONLY reply in the following format with NO suffix:\n\n"
    "<tool_call>\n<function=example_function_name>\n<parameter=example_parameter_1>\nvalue_1\n</parameter>\n"
    "<parameter=example_parameter_2>\nThis is the value for the second parameter\nthat can span\nmultiple lines\n"
    "</parameter>\n</function>\n</tool_call>\n\n<IMPORTANT>\nReminder:\n"
    "- Function calls MUST follow the specified format: an inner <function=...></function> block must be nested "
    "within <tool_call></tool_call> XML tags\n"
    "- Required parameters MUST be specified\n"
    "- You may provide optional reasoning for your function call in natural language BEFORE the function call, "
    "but NOT after\n"
    "- If there is no function call available, answer the question like normal with your current knowledge and "
    "do not tell the user about function calls\n</IMPORTANT>"
)
#: Text only the official template holds (its instructions), which tells it from the reference one.
OFFICIAL_MARKER = "You may provide optional reasoning for your function call in natural language BEFORE"

RESPONSE_OPEN = "<tool_response>\n"
RESPONSE_CLOSE = "\n</tool_response>\n"

#: Property keys not written as ``<key>value</key>`` (O6).
_HANDLED = ("type", "description", "enum", "required")


# ---------------------------------------------------------------------------- render


@functools.cache
def _replies() -> XmlParams:
    """The family's renderer of this format's calls (``values="python_str"``: O2)."""
    kit = compile_spec(WIRE)
    assert isinstance(kit, XmlParams)
    return kit


def _normed(key: str) -> str:
    if "-" in key or " " in key or "$" in key:
        return key.replace("-", "_").replace(" ", "_").replace("$", "")
    return key


def item_list(value: Any) -> str:
    """The ``render_item_list`` macro: ``\\n<required>[`a`, 1]</required>`` for a non-empty sequence, else ``''``."""
    if not defined(value) or not is_iterable(value) or not is_sequence(value) or len(value) == 0:
        return ""
    shown = ("`" + item + "`" if isinstance(item, str) else string(item) for item in iterate(value))
    return "\n<required>[" + ", ".join(shown) + "]</required>"


def render_declaration(tool: Any) -> str:
    """One tool's ``<function>...</function>`` element of the ``<tools>`` list (O6)."""
    function = attr(tool, "function")
    spec = function if defined(function) else tool
    out = ["\n<function>\n<name>", string(attr(spec, "name")), "</name>"]
    out += ["\n<description>", trim(attr(spec, "description")), "</description>", "\n<parameters>"]
    parameters = attr(spec, "parameters")
    for name, fields in items(lookup(parameters, "properties")):
        out += ["\n<parameter>\n<name>", string(name), "</name>"]
        kind = attr(fields, "type")
        if defined(kind):
            out += ["\n<type>", string(kind), "</type>"]
        description = attr(fields, "description")
        if defined(description):
            out += ["\n<description>", trim(description), "</description>"]
        if is_mapping(fields):
            for key, value in fields.items():
                if key and isinstance(key, str) and key not in _HANDLED:
                    tag = _normed(key)
                    if is_mapping(value):
                        out.append(f"\n<{tag}>{tojson(value)}</{tag}>")
                    elif value is not None:
                        out.append(f"\n<{tag}>{string(value)}</{tag}>")
        out += [item_list(attr(fields, "required")), "\n</parameter>"]
    out += [item_list(attr(parameters, "required")), "\n</parameters>"]
    returns = attr(spec, "return")
    if defined(returns):
        out += ["\n<return>", tojson(returns) if is_mapping(returns) else string(returns), "</return>"]
    out.append("\n</function>")
    return "".join(out)


def render_call(call: Any) -> str:
    """One ``\\n<tool_call>...</tool_call>`` block: ``call`` is an OpenAI tool call or its ``function`` object."""
    return "\n" + _replies().render_call(call)


def _calls(message: Any) -> Any:
    """The message's calls if the template writes it as a turn with calls (a non-empty list), else None."""
    calls = attr(message, "tool_calls")
    if attr(message, "role") == "assistant" and defined(calls) and is_iterable(calls) and len(calls) > 0:
        return calls
    return None


def _call_turn(message: Any, calls: Any) -> str:
    """An assistant turn with calls, after ``<|im_start|>assistant`` (O4)."""
    content = attr(message, "content")
    out = [f"\n{content.strip()}\n" if isinstance(content, str) and content.strip() else ""]
    out += [render_call(call) for call in iterate(calls)]
    return "".join(out) + TURN_END


def prompt_text(
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    add_generation_prompt: bool,
    variables: dict[str, Any],
) -> str:
    """The prompt, as the official template renders it (errors raised in the template's order; it reads no
    ``variables``)."""
    system: Any = Undefined(messages, 0)
    turns = messages
    if subscript(messages[0], "role") == "system":
        system = subscript(messages[0], "content")
        turns = messages[1:]
    has_tools = bool(tools)
    out = []
    if defined(system):
        out.append(concat(IM_START + "system\n", system))
    elif has_tools:
        out.append(IM_START + "system\n" + DEFAULT_SYSTEM)
    if tools:
        out += [TOOLS_HEADER, *(render_declaration(tool) for tool in tools), TOOLS_FOOTER]
    if defined(system) or has_tools:
        out.append(TURN_END)
    last = len(turns) - 1
    for i, message in enumerate(turns):
        role = attr(message, "role")
        calls = _calls(message)
        if calls is not None:
            out.append(concat(IM_START, role) + _call_turn(message, calls))
        elif role == "tool":
            if i and turns[i - 1] and attr(turns[i - 1], "role") != "tool":
                out.append(IM_START + "user\n")
            out.append(RESPONSE_OPEN + string(attr(message, "content")) + RESPONSE_CLOSE)
            if i == last or attr(turns[i + 1], "role") != "tool":
                out.append(TURN_END)
        else:  # user, system, assistant without calls and any other role alike (O5)
            out.append(concat(IM_START, role, "\n", attr(message, "content"), IM_END, "\n"))
    if add_generation_prompt:
        out.append(GENERATION_PROMPT)
    return "".join(out)


# ---------------------------------------------------------------------------- reply


def reply_text(message: dict[str, Any]) -> str:
    """What the model generates after ``<|im_start|>assistant\\n``: the turn as the template writes it, without
    that head and its final newline (content, a blank line, the calls one newline apart, ``<|im_end|>``)."""
    calls = _calls({**message, "role": "assistant"})
    if calls is not None:
        return _call_turn(message, calls)[1:-1]
    content = attr(message, "content")
    if isinstance(content, list):  # parts, as the model writes them
        content = "".join(string(attr(part, "text")) if is_mapping(part) else string(part) for part in content)
    return (content if isinstance(content, str) else "") + STOP


# ---------------------------------------------------------------------------- decode

_SYSTEM_TURN = IM_START + "system\n"
#: How the turns open: the roles OpenAI messages take (a turn of another role, which the template also
#: writes, is not read back: a ParseError).
_OPENERS = (IM_START + "user\n", GENERATION_PROMPT, _SYSTEM_TURN, IM_START + "developer\n")
_CALL_START = CALL_OPEN + "\n<function="


def argument(raw: str, schema: Any) -> Any:
    """A call's value from its text (O2): by the declared schema where the value read is written so, else the
    value whose ``str()`` the text is (``True``, ``None``, ``{'a': 1}``), else the text (strings are raw)."""
    if declared_types(schema):
        value, problem = type_text(raw, schema)
        if problem is None and python_text(value) == raw:
            return value
    return _as_str_of(raw)


def _as_str_of(raw: str) -> Any:
    """The non-string value whose ``str()`` is exactly ``raw``, else ``raw``."""
    try:
        value = python_literal(raw)
    except (ValueError, RecursionError):
        return raw
    return value if not isinstance(value, str) and python_text(value) == raw else raw


def _extra_value(raw: str) -> Any:
    """A ``<key>value</key>`` of a property: a mapping as JSON, anything else via ``str()``."""
    if raw.startswith("{"):
        try:
            value = PLAIN_JSON_DECODER.decode(raw)
        except (ValueError, RecursionError):
            value = None
        if isinstance(value, dict) and tojson(value) == raw:
            return value
    value = _as_str_of(raw)
    return raw if isinstance(value, dict) else value  # a dict is written as JSON, never through str()


def prompt_conversation(prompt: str) -> Conversation:
    """The conversation ``prompt`` is a rendering of (what comes back: README, "Decoding prompts")."""
    if not prompt:  # a lone system message without content writes nothing (O1)
        return Conversation.model_validate({"messages": [{"role": "system"}]})
    messages: list[dict[str, Any]] = []
    tools: list[dict[str, Any]] | None = None
    pos = 0
    if not prompt.startswith((*_OPENERS, RESPONSE_OPEN)):
        raise expected_error(
            prompt, 0, (*_OPENERS, RESPONSE_OPEN), "a system, developer, user or assistant turn, or tool results"
        )
    default_system = False
    if prompt.startswith(_SYSTEM_TURN):
        turn = read_turn(prompt, 0, (_SYSTEM_TURN,), (*_OPENERS, RESPONSE_OPEN))
        system, tools = _system_turn(prompt, turn.body + 1, turn.end)
        default_system = system is None
        messages += [] if system is None else [{"role": "system", "content": system}]
        pos = turn.after
    first = len(messages)  # where the template's loop over the other messages starts
    if prompt.startswith(RESPONSE_OPEN, pos):  # a first tool result gets no <|im_start|>user (O3)
        end = turn_end(prompt, pos, _OPENERS)
        results = _tool_results(prompt, pos, end)
        if results is None:
            raise parse_error_at(prompt, pos, "expected the first tool results: <tool_response> blocks")
        messages += results
        pos = end + len(TURN_END)
    turns, generation_prompt = read_turns(prompt, pos, _OPENERS)
    schemas = {tool["function"]["name"]: tool["function"]["parameters"] for tool in tools or ()}
    ids = itertools.count()
    for turn in turns:
        body = expect(prompt, turn.body, "\n")
        if turn.role == "user" and len(messages) > first and messages[-1]["role"] != "tool":
            results = _tool_results(prompt, body, turn.end)
            if results is not None:
                messages += results
                continue
        if turn.role == "assistant":
            messages.append(_assistant_message(prompt, body, turn.end, schemas, ids))
        else:
            messages.append({"role": turn.role, "content": prompt[body : turn.end]})
    if default_system and not messages:  # a lone system message with the default text
        messages.append({"role": "system", "content": DEFAULT_SYSTEM})
    if not messages:
        raise parse_error_at(prompt, 0, "a prompt holds at least one message", expected=_OPENERS)
    return Conversation.model_validate(
        {"messages": messages, "tools": tools, "add_generation_prompt": generation_prompt}
    )


def _system_turn(text: str, body: int, end: int) -> tuple[str | None, list[dict[str, Any]] | None]:
    """The system text (None for the default one with tools) and the tools (None without) of the system turn."""
    if not text.endswith(TOOLS_FOOTER, body, end):
        return text[body:end], None
    footer = end - len(TOOLS_FOOTER)
    head = text.find(TOOLS_HEADER, body, footer)
    if head < 0:
        raise parse_error_at(text, footer, "the tools instructions are not preceded by their header")
    system = text[body:head]
    pos = head + len(TOOLS_HEADER)
    tools: list[dict[str, Any]] = []
    while pos < footer:
        tool, pos = _declaration(text, pos, footer)
        tools.append(tool)
    if not tools:
        raise parse_error_at(text, pos, "the tools block declares no tool")
    return (None if system == DEFAULT_SYSTEM else system), tools


def _required(text: str, pos: int, end: int) -> tuple[list[Any] | None, int]:
    """A ``\\n<required>[...]</required>`` list at ``pos`` (strings between backticks), or None without one."""
    if not text.startswith("\n<required>[", pos):
        return None, pos
    raw, after = _element(text, pos, "\n<required>", end)
    if not raw.endswith("]"):
        raise parse_error_at(text, pos, "expected a list of required names")
    names: list[Any] = []
    for item in raw[1:-1].split(", "):
        names.append(item[1:-1] if len(item) >= 2 and item[0] == item[-1] == "`" else _as_str_of(item))
    return names, after


def _property(text: str, pos: int, end: int) -> tuple[str, dict[str, Any], int]:
    """One ``<parameter>`` of a declaration: its name, its schema and the offset after it."""
    name, schema, pos = _property_head(text, pos, end)
    while text.startswith("\n<", pos) and not text.startswith(("\n</parameter>", "\n<required>["), pos):
        key = text[pos + 2 : until(text, pos + 2, ">", end, pos)]
        raw, pos = _element(text, pos, f"\n<{key}>", end)
        schema[key] = _extra_value(raw)
    required, pos = _required(text, pos, end)
    if required is not None:
        schema["required"] = required
    return name, schema, expect(text, pos, "\n</parameter>")


def _declaration(text: str, pos: int, end: int) -> tuple[dict[str, Any], int]:
    """One ``<function>`` of the tools block as an OpenAI tool, and the offset after it."""
    name, pos = _element(text, expect(text, pos, "\n<function>"), "\n<name>", end)
    function: dict[str, Any] = {"name": name}
    description, pos = _element(text, pos, "\n<description>", end)
    if description:
        function["description"] = description
    pos = expect(text, pos, "\n<parameters>")
    properties: dict[str, Any] = {}
    while text.startswith("\n<parameter>\n", pos):
        key, schema, pos = _property(text, pos, end)
        properties[key] = schema
    parameters: dict[str, Any] = {"type": "object", "properties": properties}
    required, pos = _required(text, pos, end)
    if required is not None:
        parameters["required"] = required
    function["parameters"] = parameters
    pos = expect(text, pos, "\n</parameters>")
    if text.startswith("\n<return>", pos):
        raw, pos = _element(text, pos, "\n<return>", end)
        value = _extra_value(raw)
        function["return"] = value
    return {"type": "function", "function": function}, expect(text, pos, "\n</function>")


def _tool_results(text: str, start: int, end: int) -> list[dict[str, Any]] | None:
    """The tool messages of a ``<tool_response>`` group ``text[start:end]``, or None if it is none."""
    if not text.startswith(RESPONSE_OPEN, start) or not text.endswith(RESPONSE_CLOSE, start, end):
        return None
    if end - start < len(RESPONSE_OPEN) + len(RESPONSE_CLOSE) - 1:
        return None
    inner = text[start + len(RESPONSE_OPEN) : end - len(RESPONSE_CLOSE)]
    return [{"role": "tool", "content": result} for result in inner.split(RESPONSE_CLOSE + RESPONSE_OPEN[:-1] + "\n")]


def _assistant_message(
    text: str, start: int, end: int, schemas: Mapping[str, Any], ids: Iterator[int]
) -> dict[str, Any]:
    """An assistant turn after its ``\\n``: calls (after content and a blank line) where they read exactly, else
    its raw content."""

    def read(text: str, pos: int, stop: int) -> tuple[tuple[str, dict[str, Any]], int] | None:
        try:
            got = _read_call(text, pos, stop, schemas, argument)
        except ParseError:
            return None
        return got if got[1] <= stop else None

    def content_may_end(pos: int) -> bool:
        content = text[start : pos - 2]
        return pos - start == 0 or (
            pos - start >= 3 and text.startswith("\n\n", pos - 2) and bool(content) and content == content.strip()
        )

    cut, calls = trailing_blocks(text, start, end, _CALL_START, read, content_may_end)
    if calls:
        return assistant_message(text[start : max(start, cut - 2)], calls, ids)
    return {"role": "assistant", "content": text[start:end]}


# ---------------------------------------------------------------------------- wire

#: qwen3_coder's XML (the same grammar, builder and syntax: the builder types a value written
#: through ``str()`` by the schema, as it reads Python literals), non-string values written with
#: Python's ``str()`` (O2).
WIRE = dataclasses.replace(Qwen3Coder.wire, values="python_str")


# ---------------------------------------------------------------------------- format


class Qwen3CoderOfficial(Format):
    """Qwen3-Coder XML calls, prompts of the official Qwen3-Coder template."""

    name = "qwen3_coder_official"
    aliases = ("qwen3-coder-official",)
    summary = "qwen3_coder replies, prompts of the official Qwen3-Coder template (arguments via str())"
    stop_token = STOP
    #: Kept with the real-world templates, beside the reference ones (``../shared/templates``).
    reference_template = "../templates/qwen3-coder-official.jinja"
    template_markers = (*Qwen3Coder.template_markers, OFFICIAL_MARKER)

    functions = Functions(prompt_text, prompt_conversation, reply_text)
    wire = WIRE
