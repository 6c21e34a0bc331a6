"""``qwen3_coder``: Qwen3-Coder XML tool calls, ``<function=NAME>`` with one ``<parameter=KEY>`` per argument.

Reference template: a modified Qwen3-Coder template (``qwen3-coder-xml.jinja``). A reply looks like::

    Let me check.
    <tool_call>
    <function=get_weather>
    <parameter=city>
    São Paulo
    </parameter>
    <parameter=days>
    3
    </parameter>
    </function>
    </tool_call><|im_end|>

A value is written raw between a newline after ``<parameter=KEY>`` and a newline before
``</parameter>``: strings as they are (nothing escaped), everything else as JSON (``true``,
``null``, ``1e+20``, ``{"k": [1]}``). Types are therefore recovered from the tool's schema.
Parallel calls are consecutive blocks separated by a newline; a call without arguments is
``<function=f>\\n</function>``.

Replies are the ``xml_params`` family's (:mod:`codec.wire.xml_params`, this module's ``WIRE``):
read by its grammar and builder, which also take what real models write instead (README, "Errors
and repairs"): a leading ``<think>`` block, pretty-printed calls, drifted tags, bare ``<function=``
blocks; prose about the tags and code fences stay text, and so do the tags a string value holds
where what follows them says they are not markup (README, "qwen3_coder": markup inside a value).
The family renders them too, as the template writes an assistant turn's content and calls.

Quirks of the reference template, reproduced by the renderer (FORMATS.md §4.4):

* X1. An assistant turn opens ``<|im_start|>assistant`` and adds ``\\n`` + content only when the
  trimmed content is not empty, so a turn with only calls is ``<|im_start|>assistant<tool_call>``
  (no newline) while the generation prompt is ``<|im_start|>assistant\\n``. Content and the first
  call are separated by one ``\\n`` (no blank line).
* X2. String values are emitted raw, even one containing ``\\n</parameter>\\n``; an empty string is
  ``<parameter=k>\\n\\n</parameter>``.
* X3. Tool results are grouped as ``<|im_start|>user`` + ``\\n<tool_response>\\nR\\n</tool_response>``
  per result + ``<|im_end|>\\n``; a tool message that is the first of the conversation (after
  the system message) gets no ``<|im_start|>user`` opener.
* X4. Errors: a system message that is not first (``System message must be at the beginning.``),
  roles other than system/user/assistant/tool (``Unexpected message role.``), mapping or numeric
  content (``Unexpected content type.``), image/video content parts (``This template is
  text-only and does not support image/video content.``), string ``arguments`` (``Can only get
  item pairs from a mapping.``), a call without a name.
* X5. With tools, the system turn holds the system text (or, without one, "You are Qwen, ...")
  and an XML declaration of every tool: ``<type>`` via Python ``str()`` (a list type becomes
  ``['integer', 'null']``), descriptions trimmed and omitted when absent, every other schema key
  as ``<key>value</key>`` (strings raw, anything else JSON).
* X6. ``reasoning_content`` is ignored; ``<think>`` in content is kept verbatim. User, system,
  assistant and tool content is trimmed; lists of text parts are joined.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from codec.errors import ParseError, RenderError, parse_error_at
from codec.format import Format, Functions
from codec.formats._chatml import (
    GENERATION_PROMPT,
    IM_END,
    IM_START,
    RESPONSE_CLOSE,
    RESPONSE_OPEN,
    TURN_END,
    ChatMLTurn,
    read_turn,
    read_turns,
    tool_responses,
    turn_end,
)
from codec.formats._decode import assistant_message, expect, expected_error, json_as_written, trailing_blocks, until
from codec.formats._render import attr, defined, is_mapping, string, tojson, trim
from codec.literals import python_literal
from codec.models import Conversation
from codec.schema import declared_types, type_text
from codec.wire import WireSpec, compile_spec
from codec.wire.xml_params import XmlParams, content_text

# ---------------------------------------------------------------------------- markers

CALL_OPEN = "<tool_call>"
CALL_CLOSE = "</tool_call>"
THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"
STOP = IM_END

DEFAULT_SYSTEM = "You are Qwen, a helpful AI assistant that can interact with a computer to solve tasks."
TOOLS_HEADER = "# Tools\n\nYou have access to the following functions:\n\n<tools>"
TOOLS_FOOTER = (
    "\n</tools>\n\nIf you choose to call a function ONLY reply in the following format with NO suffix:\n\n"
    "<tool_call>\n<function=example_function_name>\n<parameter=example_parameter_1>\nvalue_1\n</parameter>\n"
    "<parameter=example_parameter_2>\nThis is the value for the second parameter\nthat can span\nmultiple lines\n"
    "</parameter>\n</function>\n</tool_call>\n\n<IMPORTANT>\nReminder:\n"
    "- Function calls MUST follow the specified format: an inner <function=...></function> block must be nested "
    "within <tool_call></tool_call> XML tags\n"
    "- Required parameters MUST be specified\n"
    "- Do not add any text after a function call\n"
    "- If there is no function call available, answer the question normally using your current knowledge and do "
    "not mention function calling\n</IMPORTANT>"
)

# Schema keys written as their own elements; every other key of the object is an "extra key".
_FUNCTION_KEYS = ("type", "name", "description", "parameters")
_PARAMETERS_KEYS = ("type", "properties")
_PROPERTY_KEYS = ("name", "type", "description")


# ---------------------------------------------------------------------------- render


@functools.cache
def _replies() -> XmlParams:
    """The family's renderer of this format's replies, which the prompt's assistant turns hold."""
    kit = compile_spec(WIRE)
    assert isinstance(kit, XmlParams)
    return kit


def _extra_keys(fields: Any, handled: tuple[str, ...]) -> str:
    """``\\n<key>value</key>`` for each key of a schema mapping not written otherwise (non-strings as JSON)."""
    if not is_mapping(fields):
        return ""
    out = []
    for key, value in fields.items():
        if key not in handled:
            text = value if isinstance(value, str) else tojson(value)
            out.append(f"\n<{key}>{text}</{key}>")
    return "".join(out)


def render_declaration(tool: dict[str, Any]) -> str:
    """One tool's ``<function>...</function>`` element of the system turn's ``<tools>`` list."""
    function = attr(tool, "function")
    spec = function if defined(function) else tool
    out = ["\n<function>\n<name>", string(attr(spec, "name")), "</name>"]
    description = attr(spec, "description")
    if defined(description):
        out += ["\n<description>", trim(description), "</description>"]
    out.append("\n<parameters>")
    parameters = attr(spec, "parameters")
    properties = attr(parameters, "properties")
    if is_mapping(parameters) and is_mapping(properties):
        for name, fields in properties.items():
            out += ["\n<parameter>\n<name>", string(name), "</name>"]
            kind = attr(fields, "type")
            if defined(kind):
                out += ["\n<type>", string(kind), "</type>"]
            description = attr(fields, "description")
            if defined(description):
                out += ["\n<description>", trim(description), "</description>"]
            out += [_extra_keys(fields, _PROPERTY_KEYS), "\n</parameter>"]
    out += [_extra_keys(parameters, _PARAMETERS_KEYS), "\n</parameters>"]
    out += [_extra_keys(spec, _FUNCTION_KEYS), "\n</function>"]
    return "".join(out)


def render_system(system: str | None, tools: list[dict[str, Any]] | None) -> str:
    """The system turn: the tool declarations (with the system text or the default one), or the system text alone."""
    if tools:
        head = f"{system}\n\n" if system else f"{DEFAULT_SYSTEM}\n\n"
        declarations = "".join(render_declaration(tool) for tool in tools)
        return f"{IM_START}system\n{head}{TOOLS_HEADER}{declarations}{TOOLS_FOOTER}{TURN_END}"
    if system is not None:
        return f"{IM_START}system\n{system}{TURN_END}"
    return ""


def prompt_text(
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    add_generation_prompt: bool,
    variables: dict[str, Any],
) -> str:
    """The prompt, as the reference template renders it (errors raised in the template's order; it reads no
    ``variables``)."""
    system: str | None = None
    turns = messages
    if attr(messages[0], "role") == "system":
        system = content_text(attr(messages[0], "content"))
        turns = messages[1:]
    out = [render_system(system, tools)]
    last = len(turns) - 1
    for i, message in enumerate(turns):
        role = attr(message, "role")
        if role == "user":
            out.append(f"{IM_START}user\n{content_text(attr(message, 'content'))}{TURN_END}")
        elif role == "assistant":
            content, calls = _replies().reply_parts(message)
            out.append(f"{GENERATION_PROMPT}{content}{calls}\n" if content else f"{IM_START}assistant{calls}\n")
        elif role == "tool":
            content = content_text(attr(message, "content"))
            if i and attr(turns[i - 1], "role") != "tool":
                out.append(IM_START + "user")
            out.append(RESPONSE_OPEN + content + RESPONSE_CLOSE)
            if i == last or attr(turns[i + 1], "role") != "tool":
                out.append(TURN_END)
        elif role == "system":
            raise RenderError("System message must be at the beginning.")
        else:
            raise RenderError("Unexpected message role.")
    if add_generation_prompt:
        out.append(GENERATION_PROMPT)
    return "".join(out)


# ---------------------------------------------------------------------------- decode

#: How the turns after the system turn begin: an assistant turn with calls only has no newline.
_TURN_OPENERS = (
    IM_START + "user\n",
    GENERATION_PROMPT,
    IM_START + "assistant" + CALL_OPEN,
    IM_START + "assistant" + IM_END,
)
_SYSTEM_TURN = IM_START + "system\n"
_TOOLS_INTRO = "\n\n" + TOOLS_HEADER
_CALL_START = CALL_OPEN + "\n<function="
_CALL_END = "</function>\n" + CALL_CLOSE
_PARAMETER_START = "<parameter="
_PARAMETER_END = "\n</parameter>\n"


def prompt_conversation(prompt: str) -> Conversation:
    """The conversation ``prompt`` is a rendering of (what comes back: README, "Decoding prompts")."""
    messages: list[dict[str, Any]] = []
    tools: list[dict[str, Any]] | None = None
    default_system = False  # the tools turn shows the template's default system text
    pos = 0
    starts = (_SYSTEM_TURN, RESPONSE_OPEN, *_TURN_OPENERS)  # what a prompt may start with
    if prompt and not prompt.startswith(starts):  # said here, so that a cut opener fails at its end
        raise expected_error(prompt, 0, starts, "a system, user or assistant turn, or tool results")
    if prompt.startswith(_SYSTEM_TURN):
        turn = read_turn(prompt, 0, (_SYSTEM_TURN,), (*_TURN_OPENERS, RESPONSE_OPEN))
        system, tools = _system_turn(prompt, turn)
        default_system = system is None and tools is not None
        messages += [] if system is None else [{"role": "system", "content": system}]
        pos = turn.after
    first = len(messages)  # where the template's loop over the other messages starts
    if prompt.startswith(RESPONSE_OPEN, pos):  # a first tool result gets no <|im_start|>user (quirk X3)
        end = turn_end(prompt, pos, _TURN_OPENERS)
        results = _tool_results(prompt, pos, end)
        if results is None:
            raise parse_error_at(prompt, pos, "expected the first tool results: <tool_response> blocks")
        messages += results
        pos = end + len(TURN_END)
    turns, generation_prompt = read_turns(prompt, pos, _TURN_OPENERS)
    ids = itertools.count()
    for turn in turns:
        if turn.role == "user":
            results = _tool_results(prompt, turn.body, turn.end) if len(messages) > first else None
            user = {"role": "user", "content": _trimmed(prompt, turn.body + 1, turn.end)}
            messages += results if results is not None else [user]
        else:
            messages.append(_assistant_message(prompt, turn, tools, ids))
    if default_system and not messages:  # a lone system message with the default text (or none)
        messages.append({"role": "system", "content": DEFAULT_SYSTEM})
    if not messages:
        raise parse_error_at(prompt, 0, "a prompt holds at least one message", expected=(_SYSTEM_TURN, *_TURN_OPENERS))
    return Conversation.model_validate(
        {"messages": messages, "tools": tools, "add_generation_prompt": generation_prompt}
    )


def _trimmed(text: str, start: int, end: int) -> str:
    """``text[start:end]``, which the template writes trimmed: a ParseError at surrounding whitespace."""
    value = text[start:end]
    if value != value.lstrip():
        raise parse_error_at(text, start, "whitespace where the template trims the text")
    if value != value.rstrip():
        raise parse_error_at(text, start + len(value.rstrip()), "whitespace where the template trims the text")
    return value


def _system_turn(text: str, turn: ChatMLTurn) -> tuple[str | None, list[dict[str, Any]] | None]:
    """The system text (None for the template's default) and the tools (None without) of the system turn."""
    body = turn.body + 1
    if not text.endswith(TOOLS_FOOTER, body, turn.end):
        return _trimmed(text, body, turn.end), None
    footer = turn.end - len(TOOLS_FOOTER)
    head = text.find(_TOOLS_INTRO, body, footer)
    if head < 0:
        raise parse_error_at(text, footer, "the tools instructions are not preceded by their header")
    system = _trimmed(text, body, head)
    if not system:
        raise parse_error_at(text, body, "expected the system text before the tools")
    pos = head + len(_TOOLS_INTRO)
    tools: list[dict[str, Any]] = []
    while pos < footer:
        tool, pos = _declaration(text, pos, footer)
        tools.append(tool)
    if not tools:
        raise parse_error_at(text, pos, "the tools block declares no tool")
    return (None if system == DEFAULT_SYSTEM else system), tools


def _element(text: str, pos: int, opener: str, end: int) -> tuple[str, int]:
    """The raw text of the element ``opener...</tag>`` at ``pos``, and the offset after it."""
    start = expect(text, pos, opener)
    closer = "</" + opener.rsplit("<", 1)[1][:-1] + ">"
    stop = until(text, start, closer, end, pos)
    return text[start:stop], stop + len(closer)


def _read_extra_keys(text: str, pos: int, end: int, closer: str) -> tuple[dict[str, Any], int]:
    """The ``\\n<key>value</key>`` elements before ``closer`` (values as written: raw strings, else JSON)."""
    extras: dict[str, Any] = {}
    while not text.startswith(closer, pos):
        start = pos + 2
        if not text.startswith("\n<", pos) or text.startswith("/", start):
            raise expected_error(text, pos, (closer, "\n<"))
        key = text[start : until(text, start, ">", end, pos)]
        raw, pos = _element(text, pos, f"\n<{key}>", end)
        extras[key] = json_as_written(raw)
    return extras, pos


def _declared_type(raw: str) -> Any:
    """A ``<type>`` as written: a list of types is shown as its Python ``str()`` (``['integer', 'null']``)."""
    if raw.startswith("["):
        try:
            value = python_literal(raw)
        except ValueError:
            return raw
        return value if isinstance(value, list) and str(value) == raw else raw
    return raw


def _property_head(text: str, pos: int, end: int) -> tuple[str, dict[str, Any], int]:
    """The start of a ``<parameter>`` of a declaration, as both Qwen3-Coder templates write it: its
    name, its schema so far (``type``, ``description``) and the offset after them."""
    name, pos = _element(text, pos + len("\n<parameter>"), "\n<name>", end)
    schema: dict[str, Any] = {}
    if text.startswith("\n<type>", pos):
        raw, pos = _element(text, pos, "\n<type>", end)
        schema["type"] = _declared_type(raw)
    if text.startswith("\n<description>", pos):
        schema["description"], pos = _element(text, pos, "\n<description>", end)
    return name, schema, pos


def _property(text: str, pos: int, end: int) -> tuple[str, dict[str, Any], int]:
    """One ``<parameter>`` of a declaration: its name, its schema and the offset after it."""
    name, schema, pos = _property_head(text, pos, end)
    extras, pos = _read_extra_keys(text, pos, end, "\n</parameter>")
    return name, {**schema, **extras}, pos + len("\n</parameter>")


def _declaration(text: str, pos: int, end: int) -> tuple[dict[str, Any], int]:
    """One ``<function>`` of the tools block as an OpenAI tool, and the offset after it."""
    name, pos = _element(text, expect(text, pos, "\n<function>"), "\n<name>", end)
    function: dict[str, Any] = {"name": name}
    if text.startswith("\n<description>", pos):
        function["description"], pos = _element(text, pos, "\n<description>", end)
    pos = expect(text, pos, "\n<parameters>")
    properties: dict[str, Any] = {}
    while text.startswith("\n<parameter>\n", pos):
        key, schema, pos = _property(text, pos, end)
        properties[key] = schema
    extras, pos = _read_extra_keys(text, pos, end, "\n</parameters>")
    # The template does not show the parameters' "type": an object, as OpenAI requires.
    function["parameters"] = {"type": "object", "properties": properties, **extras}
    extras, pos = _read_extra_keys(text, pos + len("\n</parameters>"), end, "\n</function>")
    function.update(extras)
    return {"type": "function", "function": function}, pos + len("\n</function>")


def _tool_results(text: str, start: int, end: int) -> list[dict[str, Any]] | None:
    """The tool messages of a ``<tool_response>`` group, or None if it is none (each result is trimmed)."""
    results = tool_responses(text, start, end)
    if results is None or any(result != result.strip() for result in results):
        return None
    return [{"role": "tool", "content": result} for result in results]


def _assistant_message(
    text: str, turn: ChatMLTurn, tools: list[dict[str, Any]] | None, ids: Iterator[int]
) -> dict[str, Any]:
    """An assistant turn: ``<|im_end|>`` alone, calls alone, or ``\\n`` + trimmed content + calls."""
    schemas = {tool["function"]["name"]: tool["function"]["parameters"] for tool in tools or ()}

    def read(text: str, pos: int, end: int) -> tuple[tuple[str, dict[str, Any]], int] | None:
        try:
            got = _read_call(text, pos, end, schemas)
        except ParseError:
            return None
        return got if got[1] <= end else None

    body, end = turn.body, turn.end
    content, calls = "", []
    if text.startswith(CALL_OPEN, body):  # calls only, after no newline (quirk X1)
        while True:
            call, body = _read_call(text, body, end, schemas)
            calls.append(call)
            if body == end:
                break
            body = expect(text, body, "\n")
    elif body < end:
        start = body + 1

        def content_may_end(pos: int) -> bool:
            content = text[start : pos - 1]
            return pos - start >= 2 and text[pos - 1] == "\n" and content == content.strip()

        cut, calls = trailing_blocks(text, start, end, _CALL_START, read, content_may_end)
        content = _trimmed(text, start, cut - 1 if calls else end)
        if not content:
            raise parse_error_at(text, body, "the template writes no newline before empty content")
    return assistant_message(content, calls, ids)


def _read_call(
    text: str, pos: int, end: int, schemas: Mapping[str, Any], argument: Callable[[str, Any], Any] | None = None
) -> tuple[tuple[str, dict[str, Any]], int]:
    """The ``<tool_call>`` block at ``pos``: (name, arguments) and the offset after it; ParseError if it is none.

    ``argument(raw, schema)`` reads a value from its text (by default as this template writes it)."""
    argument = argument or _argument
    start = expect(text, pos, _CALL_START)
    name_end = until(text, start, ">\n", end, pos)
    name = text[start:name_end]
    parameters = schemas.get(name)
    properties = parameters.get("properties") if isinstance(parameters, Mapping) else None
    arguments: dict[str, Any] = {}
    pos = name_end + 2
    while not text.startswith(_CALL_END, pos):
        key_start = pos + len(_PARAMETER_START)
        if not text.startswith(_PARAMETER_START, pos):
            raise expected_error(text, pos, (_PARAMETER_START, _CALL_END))
        key_end = until(text, key_start, ">\n", end, pos)
        key = text[key_start:key_end]
        if key in arguments:
            raise parse_error_at(text, pos, f"parameter {key!r} repeated in one call")
        value_end = _value_end(text, key_end + 2, end, pos)
        schema = properties.get(key) if isinstance(properties, Mapping) else None
        arguments[key] = argument(text[key_end + 2 : value_end], schema)
        pos = value_end + len(_PARAMETER_END)
    return (name, arguments), pos + len(_CALL_END)


def _value_end(text: str, pos: int, end: int, opened_at: int) -> int:
    """Where the raw value at ``pos`` ends: at a ``\\n</parameter>\\n`` the next parameter or the call's end follows."""
    while True:
        stop = until(text, pos, _PARAMETER_END, end, opened_at)
        if text.startswith((_PARAMETER_START, _CALL_END), stop + len(_PARAMETER_END)):
            return stop
        pos = stop + 1


def _argument(raw: str, schema: Any) -> Any:
    """A parameter's value from its text: by the declared schema if the value it reads as is written so, else as JSON
    if the text is exactly how ``tojson`` writes a non-string value, else the text (strings are written raw)."""
    if declared_types(schema):
        value, problem = type_text(raw, schema)
        if problem is None and (value if isinstance(value, str) else tojson(value)) == raw:
            return value
    return json_as_written(raw)


# ---------------------------------------------------------------------------- wire
# The xml_params family (codec/wire/xml_params.py) reads, renders and exports these replies.

WIRE = WireSpec(
    "xml_params",
    call=(CALL_OPEN, CALL_CLOSE),
    stop=STOP,
    reasoning=(THINK_OPEN, THINK_CLOSE),
    name=("<function=", ">"),
    arguments="tagged",
    parameter=("<parameter=", ">", "</parameter>"),
    values="text",
    value_lines=True,
    separator="\n",
)


# ---------------------------------------------------------------------------- format


class Qwen3Coder(Format):
    """Qwen3-Coder XML tool calls (reference: a modified Qwen3-Coder template)."""

    name = "qwen3_coder"
    aliases = ("qwen3-coder", "qwen3_xml", "qwen_xml")
    summary = "Qwen3-Coder XML calls: <tool_call>\\n<function=NAME>\\n<parameter=KEY>\\nVALUE\\n</parameter>\\n..."
    stop_token = STOP
    reference_template = "qwen3-coder-xml.jinja"
    template_markers = (IM_START, CALL_OPEN, "<function=", "<parameter=")

    functions = Functions(prompt_text, prompt_conversation)
    wire = WIRE
