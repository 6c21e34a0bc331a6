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

Replies are read by ``grammars/qwen3_coder.lark`` and :class:`Qwen3CoderBuilder`, which also take
what real models write instead (README, "Errors and repairs"): a leading ``<think>`` block,
pretty-printed calls (the layout of a string value is read by :class:`_Lines`), drifted tags, bare
``<function=`` blocks; prose about the tags and code fences stay text, and so do the tags a string
value holds where what follows them says they are not markup (README, "qwen3_coder": markup inside a
value; :meth:`Qwen3CoderBuilder._seam`).

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
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from codec._lark import CompiledGrammar, Token, ValueToken, compile_grammar
from codec.errors import ParseError, RenderError, parse_error_at
from codec.export import (
    EMPTY,
    NAME,
    CallSyntax,
    Expr,
    GrammarBuilder,
    JsonValues,
    Lit,
    Marker,
    alt,
    many,
    ordered_items,
    parameters_schema,
    properties,
    schema_types,
    seq,
)
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
    read_whole_reply,
    tool_responses,
    turn_end,
)
from codec.formats._decode import assistant_message, expect, expected_error, json_as_written, trailing_blocks, until
from codec.formats._render import attr, concat, defined, is_iterable, is_mapping, items, string, tojson, trim
from codec.issues import IssueKind
from codec.literals import python_literal
from codec.models import Conversation
from codec.schema import declared_types, tool_name, tool_parameters, type_text
from codec.sink import CONTENT, REASONING, CallWriter, Sink
from codec.stream import Builder, BuildError, Syntax, ToolsByName, WholeReading
from codec.watch import Delimiter, FastLexer
from codec.wire import WireSpec

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

#: Text kind of the parameter-value terminal: the builder types it, or streams it as a string.
VALUE = "value"

TEXT_ONLY = "This template is text-only and does not support image/video content."

# Schema keys written as their own elements; every other key of the object is an "extra key".
_FUNCTION_KEYS = ("type", "name", "description", "parameters")
_PARAMETERS_KEYS = ("type", "properties")
_PROPERTY_KEYS = ("name", "type", "description")


# ---------------------------------------------------------------------------- render


def content_text(content: Any) -> str:
    """A message's content as the template writes it: text, or text parts joined, then trimmed.

    A part is a string, ``{"type": "text", "text": ...}`` or any mapping with ``text`` (its value
    through ``str()``); image/video parts and other items raise, as do mapping or numeric content.
    Absent content is empty.
    """
    if isinstance(content, str):
        return content.strip()
    if content is None or (is_iterable(content) and not is_mapping(content)):
        parts: list[str] = []
        for item in content or ():
            if is_mapping(item):
                if attr(item, "type") == "text":
                    parts.append(string(attr(item, "text")))
                elif "text" in item:
                    parts.append(string(item["text"]))
                elif "image" in item or "image_url" in item or "video" in item:
                    raise RenderError(TEXT_ONLY)
                else:
                    raise RenderError("Unexpected item type in content.")
            elif isinstance(item, str):
                parts.append(item)
            else:
                raise RenderError("Unexpected non-text item in content.")
        return "".join(parts).strip()
    raise RenderError("Unexpected content type.")


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
            content, calls = _assistant_parts(message)
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


# ---------------------------------------------------------------------------- reply


def render_call(call: Any) -> str:
    """One ``<tool_call>`` block: ``call`` is an OpenAI tool call or its ``function`` object."""
    function = attr(call, "function")
    if defined(function):
        call = function
    out = [concat(CALL_OPEN + "\n<function=", attr(call, "name"), ">\n")]
    arguments = attr(call, "arguments")
    if defined(arguments):
        for key, value in items(arguments):
            out.append(concat("<parameter=", key, ">\n"))
            out.append(value if isinstance(value, str) else tojson(value))
            out.append("\n</parameter>\n")
    out.append("</function>\n" + CALL_CLOSE)
    return "".join(out)


def _assistant_parts(message: dict[str, Any]) -> tuple[str, str]:
    """(content, calls): the trimmed content, and the ``<tool_call>`` blocks followed by ``<|im_end|>``.

    Each block but a leading one is preceded by ``\\n``. The template writes the turn as
    ``<|im_start|>assistant`` + (``\\n`` + content when the content is not empty) + calls + ``\\n``.
    """
    content = content_text(attr(message, "content"))
    out = []
    calls = attr(message, "tool_calls")
    if is_iterable(calls) and not is_mapping(calls):
        for index, call in enumerate(calls):
            if content or index:
                out.append("\n")
            out.append(render_call(call))
    out.append(IM_END)
    return content, "".join(out)


def reply_text(message: dict[str, Any]) -> str:
    """What the model generates after the generation prompt ``<|im_start|>assistant\\n``.

    The trimmed content, the ``<tool_call>`` blocks (separated from the content and from each
    other by one ``\\n``) and ``<|im_end|>``, with no trailing newline. This is the rendered
    turn minus its ``<|im_start|>assistant`` head and the ``\\n`` that the template writes
    before non-empty content; for a turn with calls only, the template writes no newline at
    all (quirk X1), so the rendered turn is not the generation prompt + this reply.
    """
    content, calls = _assistant_parts(message)
    return content + calls


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


# ---------------------------------------------------------------------------- parse

#: Characters that must follow a token before it is committed: the grammar's lookaheads are at
#: most 77 characters long (a line break, an indented </parameter + a suffix, blanks, the next tag).
HOLDBACK = 80

#: Blanks, line breaks included: what a held line start is made of.
_BLANKS = re.compile(r"[ \t\r\n]*")


def _blanks_of(token: str) -> str:
    """The blanks after the last line break of a token that holds its own layout (INDENT, LINE,
    a closer on its own line): the indentation of its tag ("" for one that starts no line)."""
    if "\n" not in token:
        return ""
    line = token[token.rfind("\n") + 1 :]
    return line[: len(line) - len(line.lstrip(" \t"))]


def _tag_pos(token: Token) -> int:
    """Where the tag starts that a token of layout (INDENT, LINE) comes before, or that a token
    holding its own layout (a closer on its own line) holds."""
    text = str(token)
    return int(token.start_pos) + len(text) - len(text.lstrip(" \t\r\n"))


def _tag_name(head: str, start: int) -> str:
    """The name a ``<function=NAME>`` or ``<parameter=NAME>`` head gives from ``start``, past its
    ``=`` (its ``>`` may be missing)."""
    end = head.find(">", start)
    return (head[start:end] if end >= 0 else head[start:]).strip()


#: Where the name starts in a ``<function=`` and in a ``<parameter=`` head.
_FUNCTION_NAME = len("<function=")
_PARAMETER_NAME = len("<parameter=")


class _Lines:
    """How one string value's lines are read: byte-exact, or without the layout of a pretty-printed call.

    A value is *laid out* when its ``<parameter=`` tag starts an indented line, the value starts on
    the line after it, and its first line that is not blank (of a value of blank lines only: its
    first line of blanks) is indented at least as deep as the tag: the layout is then the tag's
    indentation plus one step (how far the tag is indented past its ``<function=``; without a step,
    all of that line's indentation), removed from the start of every line (a blank line loses as much
    of it as it has); a line less indented keeps its text and is reported. Any other value is read
    the template's way, byte for byte. Either way the blanks of a first line that holds nothing but
    its closer are the closer's indentation.

    The blanks at the start of a line are held until the line shows what it is (its first other
    character, or the closer), so that no character sent is taken back.
    """

    __slots__ = ("_held", "_start", "holding", "layout", "notes", "step", "tag", "uneven")

    def __init__(self, tag: str, step: str | None, new_line: bool) -> None:
        self.tag = tag
        self.step = step
        self._start = -1  # where the value's text starts, once some has arrived
        #: The layout once decided ("" for a value read byte for byte); None until its first line shows.
        self.layout: str | None = None if new_line else ""
        #: Whether the text since the last line start is blanks held back.
        self.holding = new_line
        self._held: list[str] = []
        #: What the builder reports about the value: (issue kind, offset in the reply).
        self.notes: list[tuple[IssueKind, int]] = []
        self.uneven = False

    def feed(self, text: str, pos: int) -> str:
        """The value's next characters (at offset ``pos``): returns those that can be sent now."""
        out: list[str] = []
        i, n = 0, len(text)
        if self._start < 0:
            self._start = pos
        while i < n:
            if self.holding:
                j = _BLANKS.match(text, i).end()  # type: ignore[union-attr]
                self._held.append(text[i:j])
                if j == n:
                    break
                out.append(self._release(pos + j))
                self.holding = False
                i = j
            else:
                j = text.find("\n", i)
                if j < 0:
                    out.append(text[i:])
                    break
                out.append(text[i : j + 1])
                i = j + 1
                self.holding = bool(self.layout)
        return "".join(out)

    def end(self, closer: str) -> tuple[str, bool]:
        """The value's last characters before its closer (``closer``: the closer's text, empty when
        it was inserted or the value is cut short), and whether they ended in the closer's own
        indentation."""
        if not self.holding:
            return "", False
        held = "".join(self._held)
        self._held, self.holding = [], False
        if self.layout is None and closer and not closer.startswith("\n"):
            kept, _, indentation = held.rpartition("\n")  # the line break the template writes, and the closer's blanks
            return kept, bool(indentation)
        lines = held.split("\n")
        if self.layout is None:  # a value of blank lines only: its first line of blanks decides
            self.layout = self._decide(next((line for line in lines if line), ""))
            if self.layout:
                self.notes.append(("value_indentation", self._start))
        if self.layout:
            held = "\n".join(self._blank(line) for line in lines)
        return held, False

    def _release(self, at: int) -> str:
        """The held blanks, now that a character other than a blank follows them at offset ``at``."""
        held = "".join(self._held)
        self._held = []
        *blank_lines, indentation = held.split("\n")
        if self.layout is None:
            self.layout = self._decide(indentation)
            if self.layout:
                self.notes.append(("value_indentation", at - len(indentation)))
        layout = self.layout
        if not layout:
            return held
        if not indentation.startswith(layout):
            if not self.uneven:
                self.uneven = True
                self.notes.append(("uneven_indentation", at - len(indentation)))
            return "\n".join([*(self._blank(line) for line in blank_lines), indentation])
        return "\n".join([*(self._blank(line) for line in blank_lines), indentation[len(layout) :]])

    def _decide(self, indentation: str) -> str:
        """The layout of a value whose first line starts with ``indentation`` ("": none)."""
        tag = self.tag
        if not tag or not indentation.startswith(tag):
            return ""
        if self.step:
            own, step = indentation[len(tag) :], self.step
            n = 0
            while n < len(step) and n < len(own) and own[n] == step[n]:
                n += 1
            return tag + step[:n]
        return indentation

    def _blank(self, line: str) -> str:
        """A line of blanks without the layout (or what it has of it)."""
        layout = self.layout or ""
        if line.startswith(layout):
            return line[len(layout) :]
        return "" if layout.startswith(line) else line


class _Param:
    """The parameter being read: a plain string streams as it arrives; a typed value is read whole."""

    __slots__ = ("fresh", "lines", "name", "pos", "raw", "schema", "streams")

    def __init__(self, name: str, pos: int, schema: Any, streams: bool, lines: _Lines | None, fresh: bool) -> None:
        self.name = name
        self.pos = pos
        self.schema = schema
        self.streams = streams
        #: The layout reader of a value that may have one (None: its text is the value's, byte for byte).
        self.lines = lines
        #: Whether the value starts on a line of its own and nothing of it has arrived yet.
        self.fresh = fresh
        self.raw: list[str] = []  # a typed value's text so far


def _param_block_lexer(grammar: CompiledGrammar) -> FastLexer:
    """Fast path: a whole ``<parameter=K>\nVALUE\n</parameter>`` as one token.

    It runs the grammar's own PARAM_OPEN, VALUE, PARAM_SEAM and PARAM_CLOSE patterns, so it finds
    exactly the pieces the rules would (the seams between parameters among them: the builder
    decides each as the rules' ``seam`` does); it only takes a parameter closed by ``</parameter>``
    with enough text after it that no lookahead is still undecided, and leaves everything else to
    the rules.
    """
    opener, value, seam, closer = (
        re.compile(grammar.terminals[t].pattern.to_regexp())
        for t in ("PARAM_OPEN", "VALUE", "PARAM_SEAM", "PARAM_CLOSE")
    )

    def lex(text: str, pos: int, final: bool) -> tuple[Any, int] | None:
        head = opener.match(text, pos)
        if head is None:
            return None
        pieces: list[tuple[bool, str]] = []  # (whether it is a PARAM_SEAM, its text)
        end = head.end()
        while True:
            body = value.match(text, end)
            if body is not None:
                pieces.append((False, body.group()))
                end = body.end()
            head_next = seam.match(text, end)
            if head_next is None:
                break
            pieces.append((True, head_next.group()))
            end = head_next.end()
        tail = closer.match(text, end)
        if tail is None or (tail.end() + HOLDBACK > len(text) and not final):
            return None
        return (head.group(), pieces, tail.group()), tail.end()

    return lex


#: How a parameter closer is written the template's way (or inserted where it is missing).
_PLAIN_CLOSERS = frozenset(("\n</parameter>", "</parameter>", ""))


class Qwen3CoderBuilder(Builder):
    """Builds calls from the qwen3_coder grammar, typing each value by the tool's schema, and reads
    the layout of pretty-printed calls (see :class:`_Lines`)."""

    def __init__(self, sink: Sink) -> None:
        super().__init__(sink)
        self._call: CallWriter | None = None
        self._param: _Param | None = None
        self._function_indent = ""  # the blanks before the current call's <function= line
        self._laid_out = False  # the current call's indented markup is reported

    # ---- the call's head and end

    def function_head(self, *children: Token) -> None:
        self._start(children[-1], children[0] if len(children) == 2 else None)

    def function_head_unterminated(self, *children: Token) -> None:
        token = children[-1]
        self._start(token, children[0] if len(children) == 2 else None)
        message = f"{str(token)!r} without '>' read as a function head"
        self.sink.issue("function_head_unterminated", message, token.start_pos)

    def bare_head(self, token: Token) -> None:
        self._bare(token, None)

    def line_head(self, line: Token, token: Token) -> None:
        self._bare(token, line)

    def _name(self, head: str, start: int, pos: int) -> str:
        """The name of a ``<function=`` or ``<parameter=`` head; one written between quotes is reported."""
        end = head.find(">", start)
        name = (head[start:end] if end >= 0 else head[start:]).strip()
        if name and name[0] in "\"'" and len(name) > 2 and name[0] == name[-1]:
            name = name[1:-1]
            self.sink.issue("quoted_name", f"name {name!r} written between quotes", pos)
        return name

    def _bare(self, token: Token, line: Token | None) -> None:
        name = _tag_name(token, _FUNCTION_NAME).strip("\"'")
        if self.sink.undeclared(name):
            raise BuildError(f"<function={name}> without <tool_call> names no declared tool", token.start_pos)
        self.sink.issue("bare_function", f"<function={name}> without <tool_call> accepted", token.start_pos)
        self._start(token, line if line is not None and _blanks_of(line) else None)

    def _start(self, token: Token, indent: Token | None) -> None:
        self._laid_out = False
        self._function_indent = ""
        if indent is not None:
            self._function_indent = _blanks_of(indent)
            self._indented(_tag_pos(indent))
        self._call = self.sink.call(self._name(str(token), _FUNCTION_NAME, token.start_pos), token.start_pos)

    def function(self, *children: Any) -> None:
        call, self._call = self._call, None
        assert call is not None
        closer = children[-1]
        if len(children) > 2 and isinstance(children[-2], Token):  # the INDENT of its own line
            self._indented(_tag_pos(children[-2]))
        if closer.type == "FUNCTION_CLOSE_UNTERMINATED":
            message = "'</function' without '>' read as '</function>'"
            self.sink.issue("function_closer_unterminated", message, closer.start_pos)
        call.end()

    def first_bare(self, *children: Any) -> None:
        self.function(*children)

    def line_bare(self, *children: Any) -> None:
        self.function(*children)

    def call(self, *children: Token) -> None:
        if len(children) == 4:  # an INDENT before </tool_call>
            self._indented(_tag_pos(children[2]))

    def fenced_call(self, *children: Token) -> None:
        self.sink.issue("fenced_call", "a tool call inside a code fence, read as a call", children[0].start_pos)
        self.call(*children)

    def orphan_close(self, token: Token) -> None:
        self.sink.issue("orphan_closer", "</tool_call> without <tool_call>, ignored", _tag_pos(token), CALL_CLOSE)

    def _indented(self, pos: int) -> None:
        """A tag of the current call starts an indented line: the call is pretty-printed (reported once)."""
        if not self._laid_out:
            self._laid_out = True
            self.sink.issue("indented_markup", "indented tags read as layout", pos)

    # ---- parameters

    def param_head(self, *children: Token) -> None:
        token = children[-1]
        self._begin_param(str(token), token.start_pos, children[0] if len(children) == 2 else None)

    def param_head_unterminated(self, *children: Token) -> None:
        token = children[-1]
        self._begin_param(str(token), token.start_pos, children[0] if len(children) == 2 else None)
        message = f"{str(token).strip()!r} without '>' read as a parameter head"
        self.sink.issue("parameter_head_unterminated", message, token.start_pos)

    def param_block(self, *children: Any) -> None:
        """A whole parameter taken by the fast path: the same steps as the grammar's rules."""
        token: ValueToken = children[-1]
        opener, pieces, closer = token.decoded
        at = token.start_pos
        self._begin_param(opener, at, children[0] if len(children) == 2 else None)
        at += len(opener)
        for is_seam, text in pieces:
            if is_seam:
                self._seam(text, at)
            else:
                self._value(text, at)
            at += len(text)
        self._end_param("PARAM_CLOSE", closer, at)

    def _begin_param(self, head: str, pos: int, indent: Token | None) -> None:
        call = self._call
        assert call is not None
        name = self._name(head, _PARAMETER_NAME, pos)
        new_line = head.endswith("\n")
        lines = None
        if indent is not None:
            self._indented(_tag_pos(indent))
            if new_line:  # a value written on its tag's line is read as it is
                tag, function = _blanks_of(indent), self._function_indent
                step = tag[len(function) :] if tag.startswith(function) and len(tag) > len(function) else None
                lines = _Lines(tag, step, True)
        schema = self._schema(call, name)
        types = declared_types(schema)
        streams = not types or types == ["string"]
        self._param = _Param(name, pos, schema, streams, lines, new_line)
        if streams:
            call.string_start(name, pos)

    def on_text(self, kind: str, text: str, pos: int) -> None:
        if kind != VALUE:
            super().on_text(kind, text, pos)
            return
        self._value(text, pos)

    def _value(self, text: str, pos: int) -> None:
        """The next characters of the parameter's value, at offset ``pos``."""
        param, call = self._param, self._call
        assert param is not None and call is not None
        lines = param.lines
        if param.fresh:
            param.fresh = False
            if lines is None and text[0] in " \t\r\n":  # its first line may hold nothing but the closer
                lines = param.lines = _Lines("", None, True)
        if lines is not None:
            text = lines.feed(text, pos)
        if not param.streams:
            param.raw.append(text)
            return
        if text:
            call.string_more(text)
        if lines is not None and lines.notes:
            self._report(param, lines)

    def seam(self, token: Token) -> None:
        self._seam(str(token), token.start_pos)

    def _seam(self, text: str, pos: int) -> None:
        """A ``<parameter=NAME>`` head where the value stopped for it (PARAM_SEAM), after the value's
        ``</parameter>`` or without one: text of a string value when NAME cannot start the next
        parameter (:meth:`_names_text`), else the value's end (a missing closer, reported) and the
        next parameter's start. The grammar lexed it whole, with what follows it: the choice is
        made once, before any of its text is sent."""
        param, call = self._param, self._call
        assert param is not None and call is not None
        at = text.rfind(_PARAMETER_START)
        head = text[at:]
        if param.streams and self._names_text(call, param, _tag_name(head, _PARAMETER_NAME).strip("\"'")):
            self._value(text, pos)
            return
        before = text[:at]
        close = before.find("</parameter>")
        close = close + len("</parameter>") if close >= 0 else 0
        line = before.rfind("\n", close)  # the line break before an indented head: its INDENT
        indent = None
        if line >= 0 and line + 1 < at:
            indent = Token("INDENT", before[line:], start_pos=pos + line)
        if close > 0:
            self._end_param("PARAM_CLOSE", before[:close], pos)
        else:  # as the stream inserts a missing closer before a head it refuses
            where = pos + line if indent is not None else pos + at
            self.sink.issue("missing_closer", "missing '</parameter>' inserted", where)
            self._end_param("PARAM_CLOSE", "", where)
        self._begin_param(head, pos + at, indent)

    def _names_text(self, call: CallWriter, param: _Param, name: str) -> bool:
        """Whether a head naming ``name`` inside a string value is text of it: ``name`` is this
        parameter or one the call already gave, or (with tools) the tool declares some parameters
        and no others (``properties``, without ``additionalProperties``) and ``name`` is none of
        them (README, "qwen3_coder": markup inside a value)."""
        if name == param.name or name in call.arguments:
            return True
        params = self.sink.tool_schema(call.name or "")
        if params is None:
            return False
        props, others = params.get("properties"), params.get("additionalProperties")
        if not props or not isinstance(props, dict) or others is True or isinstance(others, dict):
            return False
        return name not in props

    def param(self, *children: Any) -> None:
        closer = children[-1]
        self._end_param(closer.type, str(closer), closer.start_pos)

    def _end_param(self, kind: str, closer: str, pos: int) -> None:
        param, call = self._param, self._call
        assert param is not None and call is not None
        self._param = None
        if closer not in _PLAIN_CLOSERS:
            self._closer(kind, closer, pos)
        lines = param.lines
        rest = ""
        if lines is not None:
            rest, indented = lines.end(closer)
            if indented:
                self._indented(pos)
        if param.streams:
            if rest:
                call.string_more(rest)
            if lines is not None and lines.notes:
                self._report(param, lines)
            call.string_end()
            return
        text = "".join(param.raw) + rest
        value, problem = type_text(text, param.schema)  # a value that fits no type is reported at the end
        if value is None and problem is not None:
            self.sink.issue("null_value", f"parameter {param.name!r}: {problem}", param.pos)
        if isinstance(value, str) and lines is not None and lines.notes:
            self._report(param, lines)
        call.argument(param.name, value, param.pos)

    def _closer(self, kind: str, closer: str, pos: int) -> None:
        """A parameter closer written otherwise than ``\\n</parameter>``: on its own indented line, drifted."""
        at = pos + len(closer) - len(closer.lstrip(" \t\n"))
        if _blanks_of(closer):
            self._indented(at)
        spelled = closer[at - pos :]
        if kind == "PARAM_CLOSE_SUFFIX":
            self.sink.issue("parameter_closer_suffix", f"{spelled!r} read as '</parameter>'", at, spelled)
        elif kind == "PARAM_CLOSE_UNTERMINATED":
            self.sink.issue("parameter_closer_unterminated", "'</parameter' without '>' read as '</parameter>'", at)

    def _report(self, param: _Param, lines: _Lines) -> None:
        """What reading the value's layout did, reported once it happened."""
        for kind, pos in lines.notes:
            if kind == "value_indentation":
                what = f"layout indentation ({len(lines.layout or '')} characters) removed from its lines"
            else:
                what = "a line less indented than the layout, kept as written"
            self.sink.issue(kind, f"parameter {param.name!r}: {what}", pos)
        lines.notes.clear()

    def _schema(self, call: CallWriter, parameter: str) -> Any:
        properties = _properties(self.sink.tool_schema(call.name or ""))
        return properties.get(parameter) if properties is not None else None

    def recover(self, raw: str, pos: int, error: str) -> int | None:
        call, param = self._call, self._param
        self._call, self._param = None, None
        if call is None:
            return None
        if param is not None and param.streams and param.lines is not None:  # what was held of its last line
            rest, _ = param.lines.end("")
            if rest:
                call.string_more(rest)
        call.cut(raw, error, pos)  # a string value being read keeps what was already sent of it
        return len(raw)


_WHOLE_HEAD = re.compile(r"<tool_call>\n<function=([A-Za-z_][\w.\-]*)>\n")
_WHOLE_PARAMETER = re.compile(r"<parameter=([A-Za-z_][\w.\-]*)>\n([^<\n]*)\n</parameter>\n")
_WHOLE_END = "</function>\n" + CALL_CLOSE


def whole_reply(text: str, tools: ToolsByName | None) -> WholeReading | None:
    """A whole reply in the template's shape, read at once (see ``Syntax.whole``): in ChatML's
    frame, blocks of one function each whose parameters are one line each, holding no ``<`` and
    no blank at either end, typed as their schema types them (:func:`~codec.schema.type_text`)
    with nothing to report; anything else is the grammar's (indented markup, multi-line values,
    markup inside values, a repeated or, with tools, undeclared parameter)."""

    def read_block(text: str, pos: int) -> tuple[tuple[str, dict[str, Any]], int] | None:
        head = _WHOLE_HEAD.match(text, pos)
        if head is None:
            return None
        name = head.group(1)
        properties = _properties(tool_parameters(tools[name]) if tools is not None and name in tools else None)
        arguments: dict[str, Any] = {}
        pos = head.end()
        while not text.startswith(_WHOLE_END, pos):
            parameter = _WHOLE_PARAMETER.match(text, pos)
            if parameter is None:
                return None
            key, raw = parameter.groups()
            if key in arguments or not raw or raw[0].isspace() or raw[-1].isspace():
                return None
            if tools is not None and (properties is None or key not in properties):
                return None  # an undeclared parameter's head is text of the value before it
            value, problem = type_text(raw, properties.get(key) if properties is not None else None)
            if problem is not None:
                return None
            arguments[key] = value
            pos = parameter.end()
        return (name, arguments), pos + len(_WHOLE_END)

    return read_whole_reply(text, CALL_OPEN, read_block)


def _properties(parameters: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A tool's parameter schemas by name, from its parameters schema, as calls are typed (None:
    no tool, or no ``properties``)."""
    properties = parameters.get("properties") if parameters is not None else None
    return properties if isinstance(properties, dict) else None


@functools.cache
def reply_syntax() -> Syntax:
    """The reply syntax: the grammar, the builder and how the stream reads them (built once)."""
    grammar = compile_grammar("qwen3_coder")
    return Syntax(
        grammar=grammar,
        builder=Qwen3CoderBuilder,
        text_terminals={
            "TEXT": CONTENT,
            "TEXT_FIRST": CONTENT,
            "FENCE_OPEN": CONTENT,
            "FENCED": CONTENT,
            "FENCE_CLOSE": CONTENT,
            "THOUGHT": REASONING,
            "VALUE": VALUE,
            # A call written inside a value is text of it (grammar: literal).
            "LITERAL_OPEN": VALUE,
            "LITERAL_TEXT": VALUE,
            "LITERAL_CLOSE": VALUE,
        },
        blocks={"CALL_OPEN": "CALL_CLOSE", "FUNCTION_OPEN": "FUNCTION_CLOSE", "LINE": "FUNCTION_CLOSE"},
        autoclose={
            "LITERAL_CLOSE": "</function>",
            "PARAM_CLOSE": "</parameter>",
            "FUNCTION_CLOSE": "</function>",
            "CALL_CLOSE": CALL_CLOSE,
            "THINK_CLOSE": THINK_CLOSE,
        },
        autoclose_before=frozenset(
            {
                "PARAM_OPEN",
                "PARAM_OPEN_UNTERMINATED",
                "FUNCTION_CLOSE",
                "FUNCTION_CLOSE_UNTERMINATED",
                "CALL_OPEN",
                "CALL_CLOSE",
                "INDENT",
                "STOP",
            }
        ),
        resync_after=(CALL_CLOSE, "</function>"),
        resync_before=(CALL_OPEN, STOP),
        # A reply cut inside the next parameter keeps the finished ones, and one cut after
        # '<function=f>' keeps the call.
        settle_rejected_blocks=True,
        delimiters=(Delimiter("<function=", ">"), Delimiter("<parameter=", ">")),
        holdback=HOLDBACK,
        # A fence opens at the start of the reply: a backtick there may still become one.
        marker_starts="<\n`",
        fast_terminals={"PARAM_BLOCK": _param_block_lexer(grammar)},
        reasoning_open="THINK_OPEN",
        preempt_starts=" \t\r\n<",
        prompt_opens_reasoning=lambda prompt: prompt.rstrip().endswith(THINK_OPEN),
        # Without a prompt, "...</think>" before any call or stop token: the prompt opened it.
        reasoning_close=THINK_CLOSE,
        reasoning_not_opened=(THINK_OPEN, CALL_OPEN, "<function=", STOP),
        whole=whole_reply,
    )


# ---------------------------------------------------------------------------- export (constrained decoding)

_PARAM_CLOSE = "\n</parameter>"


@dataclass(frozen=True)
class ValueStyle:
    """How a template writes non-string values: this one as JSON, qwen3_coder_official through ``str()``."""

    #: ``write(value)``: an enum member's (or a nullable's ``null``) text.
    write: Callable[[Any], str]
    #: ``typed(builder, values, schema, kind)``: a value of JSON type ``kind``, then ``\\n</parameter>``.
    typed: Callable[[GrammarBuilder, JsonValues, Any, str], Expr]


#: This template's values: JSON (``tojson``).
JSON_STYLE = ValueStyle(
    write=tojson, typed=lambda builder, values, schema, kind: seq(values.typed(schema, kind), _PARAM_CLOSE)
)


def _param_value(builder: GrammarBuilder, values: JsonValues, schema: Any, style: ValueStyle = JSON_STYLE) -> Expr:
    """A parameter's value as the template writes it, then ``\\n</parameter>``: raw text for a string,
    anything else as ``style`` writes it (JSON), typed by the parameter's schema."""
    text = builder.head(builder.text((_PARAM_CLOSE,)), _PARAM_CLOSE)
    if not isinstance(schema, Mapping):
        return text
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return alt(*(Lit((v if isinstance(v, str) else style.write(v)) + _PARAM_CLOSE) for v in schema["enum"]))
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list) and schema[key]:
            null = [Lit(style.write(None) + _PARAM_CLOSE)] if schema.get("nullable") is True else []
            return alt(*(_param_value(builder, values, option, style) for option in schema[key]), *null)
    types = schema_types(schema)
    if not types:
        return text
    return alt(*(text if kind == "string" else style.typed(builder, values, schema, kind) for kind in types))


def grammar_calls(builder: GrammarBuilder, tools: list[dict[str, Any]], style: ValueStyle = JSON_STYLE) -> CallSyntax:
    """Calls as the template writes them: ``<tool_call>\\n<function=NAME>\\n<parameter=KEY>\\nVALUE...``.

    A string value is any text without ``\\n</parameter>``; other values are JSON of their type.
    Parameters come in schema order; parallel calls are separate blocks, one line apart.
    """
    values = JsonValues(builder)
    bodies = []
    for tool in tools:
        declared = properties(parameters_schema(tool))
        if declared is None:  # free-form parameters: any names, text values
            free = seq("<parameter=", NAME, ">\n", _param_value(builder, values, None, style), "\n")
            params = many(free)
        else:
            props, required = declared
            items = [
                (seq(f"<parameter={key}>\n", _param_value(builder, values, schema, style), "\n"), key in required)
                for key, schema in props.items()
            ]
            params = ordered_items(items, EMPTY)
        bodies.append(seq(f"\n<function={tool_name(tool)}>\n", params, "</function>\n" + CALL_CLOSE))
    call = builder.rule("call", alt(*bodies)) if bodies else EMPTY
    return CallSyntax(
        triggers=((CALL_OPEN, call),),
        more=seq("\n", Marker(CALL_OPEN), call),
        text_forbid_markers=(CALL_OPEN, CALL_CLOSE, "<function=", STOP),
        stops=(STOP,),
    )


# ---------------------------------------------------------------------------- wire (the reply syntax)

WIRE = WireSpec(
    "xml_params",
    call=(CALL_OPEN, CALL_CLOSE),
    stop=STOP,
    reasoning=(THINK_OPEN, THINK_CLOSE),
    name=("<function=", ">"),
    arguments="tagged",
    parameter=("<parameter=", ">", "</parameter>"),
    values="text",
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

    functions = Functions(prompt_text, prompt_conversation, reply_text)
    wire = WIRE
