"""``hermes``: Hermes / Qwen2.5-style JSON tool calls inside ``<tool_call>`` tags.

Reference template: the Portuguese Hermes template of the Tucano2 models
(``hermes-json-pt.jinja``). A reply looks like::

    Some text
    <tool_call>
    {"name": "get_weather", "arguments": {"city": "Paris"}}
    </tool_call><|im_end|>

Argument values are JSON and keep their JSON types; with ``tools`` they are checked against the
tool's schema, never coerced. Tolerated (each reported as an Issue): a missing
``</tool_call>`` (or ``}``) before the end of the reply or before the next block; ``parameters``
for ``arguments``; ``arguments`` given as a JSON string; Python-literal or single-quoted objects
(``True``, ``None``); raw control characters in strings; two JSON objects in one block, or a JSON
list of them; a code fence around a block's JSON; text after ``<|im_end|>``. A leading
``<think>...</think>`` block (Qwen3-style models) is reasoning.

Other Hermes-style models (Hermes 2 Pro, Qwen 2.5) write calls without ``<tool_call>``: in a
code fence (```` ```json ````), in other tags (``<tool>``, ``<response>``, ``<function_call>``...),
as ``<function=NAME>{arguments}</function>``, or as the bare call objects that make the whole
reply. Those shapes are read too (each reported), and only where they hold nothing but calls:
a JSON example in a fence or a paragraph stays content.
"""

from __future__ import annotations

import functools
import itertools
import json
import re
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar, cast

from codec import jinja
from codec._lark import Token, ValueToken, compile_grammar
from codec.errors import RenderError, parse_error_at
from codec.export import EMPTY, CallSyntax, GrammarBuilder, JsonValues, Marker, Reasoning, alt, parameters_schema, seq
from codec.format import Format, Functions
from codec.formats._calls import LiteralHandlers
from codec.formats._chatml import (
    GENERATION_PROMPT,
    IM_END,
    IM_START,
    RESPONSE_CLOSE,
    RESPONSE_OPEN,
    TURN_END,
    ChatMLTurn,
    read_turns,
    read_whole_reply,
    tool_responses,
)
from codec.formats._decode import assistant_message, json_object_as_written, trailing_blocks
from codec.formats._render import concat, required
from codec.issues import IssueKind
from codec.literals import (
    JSON_DECODER,
    PLAIN_JSON_DECODER,
    json_text,
    json_value,
    nesting,
    python_literal,
)
from codec.models import Conversation
from codec.schema import tool_name
from codec.sink import CONTENT, LAST, REASONING, CallWriter, Sink
from codec.stream import MAX_DEPTH, Builder, BuildError, Syntax, ToolsByName, WholeReading
from codec.watch import Delimiter, FastLexer, JsonScan, Watch
from codec.wire import WireSpec

# ---------------------------------------------------------------------------- markers

SYSTEM_TOOLS_HEADER = (
    "# Tools / Ferramentas\n\nVocê pode chamar uma ou mais funções para auxiliar na consulta do usuário.\n\n"
    "Você recebe assinaturas de funções dentro de tags XML <tools></tools>:\n<tools>"
)
SYSTEM_TOOLS_FOOTER = (
    "\n</tools>\n\nPara cada chamada de função, retorne um objeto json com o nome da função e os "
    "argumentos dentro das tags XML <tool_call></tool_call>:\n<tool_call>\n"
    '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'
) + TURN_END
CALL_OPEN = "<tool_call>"
CALL_CLOSE = "</tool_call>"
STOP = IM_END


# ---------------------------------------------------------------------------- render


def prompt_text(
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    add_generation_prompt: bool,
    variables: dict[str, Any],
) -> str:
    """The prompt, as the reference template renders it (it reads no ``variables``)."""
    first = messages[0]
    first_is_system = required(first, "role") == "system"
    out: list[str] = []
    if tools:
        out.append(IM_START + "system\n")
        if first_is_system:
            out.append(concat(required(first, "content"), "\n\n"))
        out.append(SYSTEM_TOOLS_HEADER)
        for tool in tools:
            out.append("\n" + jinja.tojson(tool))
        out.append(SYSTEM_TOOLS_FOOTER)
    elif first_is_system:
        out.append(concat(IM_START + "system\n", required(first, "content"), TURN_END))
    for i, message in enumerate(messages):
        role = required(message, "role")
        content = message.get("content")
        content = content if isinstance(content, str) else ""
        if role == "user" or (role == "system" and i):
            out.append(concat(IM_START, role, "\n", content, TURN_END))
        elif role == "assistant":
            out.append(GENERATION_PROMPT + reply_text(message) + "\n")
        elif role == "tool":
            if i == 0 or messages[i - 1].get("role") != "tool":
                out.append(IM_START + "user")
            out.append(RESPONSE_OPEN + content + RESPONSE_CLOSE)
            if i == len(messages) - 1 or messages[i + 1].get("role") != "tool":
                out.append(TURN_END)
    if add_generation_prompt:
        out.append(GENERATION_PROMPT)
    return "".join(out)


# ---------------------------------------------------------------------------- reply


def _render_call(call: Any) -> str:
    """One ``<tool_call>`` block for an OpenAI tool call (or its bare ``function`` object)."""
    if not isinstance(call, dict):
        raise RenderError("tool_calls entries must be objects")
    function = call.get("function") or call
    name = function.get("name", "") if isinstance(function, dict) else ""
    arguments = function.get("arguments") if isinstance(function, dict) else None
    args = arguments if isinstance(arguments, str) else jinja.tojson(arguments)
    return f'{CALL_OPEN}\n{{"name": "{"" if name is None else name}", "arguments": {args}}}\n{CALL_CLOSE}'


def reply_text(message: dict[str, Any]) -> str:
    """What the model writes for ``message``: what follows ``<|im_start|>assistant\\n``, ``<|im_end|>`` included."""
    content = message.get("content")
    content = content if isinstance(content, str) else ""
    out = [content]
    calls = message.get("tool_calls") or []
    for i, call in enumerate(calls):
        if i or content:
            out.append("\n")
        out.append(_render_call(call))
    out.append(IM_END)
    return "".join(out)


# ---------------------------------------------------------------------------- decode

#: How the turns the template writes begin (the generation prompt is the assistant's opener).
_OPENERS = (IM_START + "system\n", IM_START + "user\n", GENERATION_PROMPT)
#: The end of the tools block, up to the ``<|im_end|>`` that closes the first system turn.
_TOOLS_END = SYSTEM_TOOLS_FOOTER.removesuffix(TURN_END)
_CALL_HEAD = CALL_OPEN + '\n{"name": "'
_CALL_ARGUMENTS = '", "arguments": '
_CALL_TAIL = "}\n" + CALL_CLOSE
#: Stands for messages the template does not render (any role but system, user, assistant and
#: tool) where the prompt shows there were some: between two turns of tool results, before a
#: system turn that the tools header does not hold, or as the whole conversation.
UNSHOWN_MESSAGE: dict[str, Any] = {"role": "developer", "content": ""}


def prompt_conversation(prompt: str) -> Conversation:
    """The conversation ``prompt`` is a rendering of (what comes back: README, "Decoding prompts")."""
    turns, generation_prompt = read_turns(prompt, 0, _OPENERS)
    ids = itertools.count()
    messages, tools = read_messages(
        prompt, turns, SYSTEM_TOOLS_HEADER, _TOOLS_END, lambda turn: _assistant_message(prompt, turn, ids)
    )
    return Conversation.model_validate(
        {"messages": messages, "tools": tools, "add_generation_prompt": generation_prompt}
    )


def read_messages(
    text: str,
    turns: Sequence[ChatMLTurn],
    tools_header: str,
    tools_end: str,
    assistant: Callable[[ChatMLTurn], dict[str, Any]],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]] | None]:
    """The messages and the tools of hermes-style ChatML ``turns`` (the first system turn may end
    with the tools block that ``tools_header`` opens and ``tools_end`` closes); ``assistant``
    reads an assistant turn, in order. Messages the template does not render stand where the
    prompt shows there were some."""
    tools: list[dict[str, Any]] | None = None
    header_system = False  # the tools header holds the first system message
    messages: list[dict[str, Any]] = []
    for turn in turns:
        body = turn.body + 1  # past the newline after the role
        if turn.role == "system" and turn.start == 0 and text.endswith(tools_end, body, turn.end):
            system, tools = _tools_turn(text, body, turn.end - len(tools_end), tools_header)
            if system is not None:
                messages.append({"role": "system", "content": system})
                header_system = True
        elif turn.role == "user":
            results = tool_responses(text, turn.body, turn.end)
            if results is None:
                messages.append({"role": "user", "content": text[body : turn.end]})
            else:
                if messages and messages[-1]["role"] == "tool":  # else the two groups would render as one
                    messages.append(dict(UNSHOWN_MESSAGE))
                messages += [{"role": "tool", "content": result} for result in results]
        elif turn.role == "system":
            messages.append({"role": "system", "content": text[body : turn.end]})
        else:
            messages.append(assistant(turn))
    if tools and messages and messages[0]["role"] == "system" and not header_system:
        messages.insert(0, dict(UNSHOWN_MESSAGE))  # else the system message would move into the header
    if not messages:
        messages.append(dict(UNSHOWN_MESSAGE))
    return messages, tools


def _tools_turn(
    text: str, body: int, footer: int, tools_header: str = SYSTEM_TOOLS_HEADER
) -> tuple[str | None, list[dict[str, Any]]]:
    """The system text (None without one) and the tools of the first system turn; its tools block ends at ``footer``.

    ``tools_header``: the header the tools block opens with (``qwen3`` writes its own).
    """
    header = text.rfind(tools_header, body, footer)  # declarations are one-line JSON: the last header is it
    if header < 0:
        raise parse_error_at(text, footer, "the tools instructions are not preceded by their header")
    system = None
    if header > body:
        if not text.startswith("\n\n", header - 2) or header - 2 < body:
            raise parse_error_at(text, header, "expected a blank line between the system message and the tools")
        system = text[body : header - 2]
    pos = header + len(tools_header)
    tools: list[dict[str, Any]] = []
    while pos < footer:
        if not text.startswith("\n", pos):
            raise parse_error_at(text, pos, "expected one tool per line", expected=("\n",))
        line_end = text.find("\n", pos + 1, footer)
        line_end = footer if line_end < 0 else line_end
        tools.append(_tool_line(text, pos + 1, line_end))
        pos = line_end
    if not tools:
        raise parse_error_at(text, pos, "the tools block declares no tool")
    return system, tools


def _tool_line(text: str, start: int, end: int) -> dict[str, Any]:
    """The tool declared as JSON on ``text[start:end]``, as written (the template writes each tool as given)."""
    line = text[start:end]
    try:
        value, stop = PLAIN_JSON_DECODER.raw_decode(line)
    except json.JSONDecodeError as exc:
        raise parse_error_at(text, start + exc.pos, f"a tool declaration is not JSON: {exc.msg}") from None
    except (ValueError, RecursionError) as exc:
        raise parse_error_at(text, start, f"a tool declaration is not plain JSON: {exc}") from None
    if stop != len(line):
        raise parse_error_at(text, start + stop, "unexpected text after a tool declaration")
    if not isinstance(value, dict):
        raise parse_error_at(text, start, "a tool declaration is not a JSON object")
    return value


def _assistant_message(text: str, turn: ChatMLTurn, ids: Iterator[int]) -> dict[str, Any]:
    """An assistant turn: its content, then the calls that end it (each block that reads back exactly)."""
    start = turn.body + 1
    cut, calls = trailing_blocks(
        text,
        start,
        turn.end,
        _CALL_HEAD,
        _read_call,
        lambda pos: pos == start or (pos - start >= 2 and text[pos - 1] == "\n"),
    )
    content = text[start : turn.end] if not calls else text[start : max(start, cut - 1)]
    return assistant_message(content, calls, ids)


def _read_call(text: str, pos: int, end: int) -> tuple[tuple[str, dict[str, Any]], int] | None:
    """The call block at ``pos`` (name, arguments) and the offset after it, if it renders back as written.

    A block whose arguments are not as ``tojson`` writes them (arguments given as a differently
    spelled JSON string), or whose name holds the separator, is not a call: it stays content.
    """
    name_start = pos + len(_CALL_HEAD)
    name_end = text.find(_CALL_ARGUMENTS, name_start, end)
    if name_end < 0:
        return None
    got = json_object_as_written(text, name_end + len(_CALL_ARGUMENTS))
    if got is None or not text.startswith(_CALL_TAIL, got[1], end):
        return None
    return (text[name_start:name_end], got[0]), got[1] + len(_CALL_TAIL)


# ---------------------------------------------------------------------------- parse


def _string(token: Token) -> str:
    try:
        value = json_value(str(token))
    except ValueError as exc:
        raise BuildError(f"invalid JSON string: {exc}", token.start_pos) from None
    assert isinstance(value, str)
    return value


#: A surrogate code point: in a decoded string, one that no other pairs with (JSON's ``\\ud800``
#: alone; a Python literal leaves even a pair of escapes unpaired).
_SURROGATE = re.compile("[\ud800-\udfff]")
#: What may decode to one in JSON text (or an escaped backslash before ``ud8``..., a false alarm).
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_LONE_SURROGATE = "a lone surrogate in a string (no character), replaced with U+FFFD"


def _whole_characters(text: str, repairs: list[_Repair]) -> str:
    """``text`` with each lone surrogate replaced with U+FFFD (a pair of them made the character
    they stand for), reported (``lone_surrogate``, with the string's JSON text, escapes and all):
    no JSON text, nor the result's, can hold one."""
    if _SURROGATE.search(text) is None:
        return text
    fixed = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    if fixed.count("\ufffd") > text.count("\ufffd"):
        repairs.append(("lone_surrogate", _LONE_SURROGATE, json.dumps(text)))
    return fixed


class DecoderInput:
    """How many characters hermes has handed JSON decoders, in all (``chars``; tests read it).

    A decoder that fails counts the lines of the text it was given up to where it failed (for the
    error's ``lineno``), so each decode is handed a window of the text from where the value
    starts, never the rest of the reply: work in proportion to the value, not to its offset.
    """

    chars = 0


#: The first window a value is decoded in, and how much it grows while the value goes on past it.
_WINDOW = 512
_WINDOW_GROWTH = 8
#: How far past an error's position a decoder may have read to find it (``-Infinity``, a
#: ``\\uXXXX\\uXXXX`` pair): an error closer than that to a window's end may be the window's.
_DECODE_LOOKAHEAD = 16


def _window_short(exc: json.JSONDecodeError) -> bool:
    """Whether a decode in a window may have failed for the window's end (see :func:`raw_decode`)."""
    return exc.pos >= len(exc.doc) - _DECODE_LOOKAHEAD or exc.msg.startswith("Unterminated string")


class Undecodable(ValueError):
    """A value that does not decode: ``msg`` says why, ``pos`` is where in the whole text."""

    def __init__(self, msg: str, pos: int) -> None:
        super().__init__(f"{msg}: char {pos}")
        self.msg, self.pos = msg, pos


def raw_decode(decoder: json.JSONDecoder, text: str, pos: int = 0, size: int = _WINDOW) -> tuple[Any, int]:
    """``decoder.raw_decode(text, pos)``, handed only windows of ``text`` from ``pos``.

    A value read whole in a window reads the same in the whole text (a decoder reads nothing
    past an object's or a list's last bracket); an error too near a window's end to be sure of,
    or a string still open there, is decoded again in a window ``_WINDOW_GROWTH`` times as long
    (the first is ``size`` long).
    Raises :class:`Undecodable` (positions in ``text``) where ``raw_decode`` would raise a
    ``JSONDecodeError``; other errors (a repeated key, a number out of range) as they come.
    """
    n = len(text)
    while True:
        stop = min(n, pos + size)
        doc = text if pos == 0 and stop == n else text[pos:stop]
        DecoderInput.chars += stop - pos
        try:
            value, end = decoder.raw_decode(doc)
        except json.JSONDecodeError as exc:
            if stop < n and _window_short(exc):
                size *= _WINDOW_GROWTH
                continue
            raise Undecodable(exc.msg, pos + exc.pos) from None
        return value, pos + end


class _Members(dict[str, Any]):
    """An object as a decoder read it: a dict (a repeated key keeps its last value) that also
    keeps its members as written (``pairs``), so that a call object read by a repair is read
    member by member, exactly as the grammar's rules read one."""

    __slots__ = ("pairs",)
    pairs: list[tuple[str, Any]]


def _members(pairs: list[tuple[str, Any]]) -> _Members:
    out = _Members(pairs)
    out.pairs = pairs
    return out


def _pairs_decoder(*, strict: bool) -> json.JSONDecoder:
    """A JSON decoder like ``JSON_DECODER`` (no non-finite number) whose objects keep their members."""
    return json.JSONDecoder(
        object_pairs_hook=_members,
        parse_float=JSON_DECODER.parse_float,
        parse_constant=JSON_DECODER.parse_constant,
        strict=strict,
    )


_JSON_READING = "JSON"
#: How a broken block's or a shape's text is read, in turn: JSON, JSON with raw control characters
#: in strings, then (``_PYTHON``) a Python literal. Objects keep their members as written (a
#: repeated key is the reading's business: see :func:`_call_parts`).
_READINGS = (
    (_pairs_decoder(strict=True), _JSON_READING),
    (_pairs_decoder(strict=False), "JSON with raw control characters in strings"),
)
_PYTHON = "a Python literal"
#: A code fence around a whole ``<tool_call>`` block's body.
_BODY_FENCE = re.compile(r"[ \t\r\n]*```[A-Za-z]*[ \t]*\r?\n(.*?)\n[ \t]*```[ \t\r\n]*", re.DOTALL)


def _decode_objects(body: str) -> tuple[list[tuple[int, Any]], str] | None:
    """The JSON (or Python-literal) values ``body`` holds, each with where it starts, and how they
    were read; None if it holds none, or anything else. Their objects are :class:`_Members`."""
    for decoder, how in _READINGS:
        values: list[tuple[int, Any]] = []
        i, n = 0, len(body)
        try:
            while True:
                while i < n and body[i] in " \t\r\n":
                    i += 1
                if i >= n:
                    break
                start = i
                value, i = raw_decode(decoder, body, i)
                values.append((start, value))
        except (ValueError, RecursionError):
            continue
        if values:
            return (values, how) if all(nesting(v) <= MAX_DEPTH for _, v in values) else None
    try:
        value = python_literal(body, object_pairs_hook=_members)
    except ValueError:
        return None
    lead = len(body) - len(body.lstrip())
    return ([(lead, value)], _PYTHON) if nesting(value) <= MAX_DEPTH else None


#: What a call's name may be where nothing but the object says it is a call: no blank, quote,
#: bracket or markup.
_CALL_NAME = re.compile(r"[\w.:/\-]{1,256}")
#: The keys of a call object that needs no wrapper to be read as one.
_CALL_KEYS = frozenset({"name", "arguments", "parameters"})
#: A repair or a problem found reading a call object: (issue kind, message, text the issue keeps).
_Repair = tuple["IssueKind", str, "str | None"]
#: The messages of the issues a call object's members raise, whichever path reads them.
_NAME_REPEATED = '"name" repeated; {kept!r} is kept'
_ARGUMENTS_TWICE = "arguments given twice; merged"
_PARAMETERS_KEY = "'parameters' used for 'arguments'"
_ARGUMENTS_STRING = "arguments given as a JSON string, decoded"
_UNUSED_KEY = "key {key!r} in a tool call object is not used"
_SEVERAL_OBJECTS = "several call objects in one <tool_call> block"
_KEY_REPEATED = "key {key!r} repeated; the last value is kept"  # as LiteralHandlers.mapping says it
_ARGUMENT_REPEATED = "argument {key!r} repeated; the first value is kept"  # as CallWriter.argument says it


def _name_text(value: Any) -> str:
    """The text a repeated ``name`` is reported with: a string as it is, another value as JSON."""
    return value if isinstance(value, str) else json_text(value)


def _pairs(value: dict[str, Any]) -> list[tuple[str, Any]]:
    return value.pairs if isinstance(value, _Members) else list(value.items())


def _plain(value: Any, repairs: list[_Repair]) -> Any:
    """A decoded value with plain dicts for its objects: a key an object repeats keeps its last
    value and is reported (``duplicate_key``), after what its values raised, as the grammar's
    ``object`` rule does."""
    if isinstance(value, str):
        return _whole_characters(value, repairs)
    if isinstance(value, list):
        return [_plain(item, repairs) for item in value]
    if not isinstance(value, dict):
        return value
    members = []
    for key, item in _pairs(value):  # a member's value is read before its key, as the rules reduce them
        item = _plain(item, repairs)
        members.append((_whole_characters(key, repairs), item))
    out: dict[str, Any] = {}
    for key, item in members:
        if key in out:  # the value dropped is the issue's text
            repairs.append(("duplicate_key", _KEY_REPEATED.format(key=key), json_text({key: out[key]})))
        out[key] = item
    return out


def _add_arguments(arguments: dict[str, Any], members: dict[str, Any], repairs: list[_Repair]) -> None:
    """Add an arguments object's members to ``arguments``: an argument given twice keeps its first
    value and is reported with the other (``duplicate_argument``), as a call's writer does."""
    for key, value in _pairs(members):
        value = _plain(value, repairs)
        key = _whole_characters(key, repairs)
        if key in arguments:
            repairs.append(("duplicate_argument", _ARGUMENT_REPEATED.format(key=key), json_text(value)))
        else:
            arguments[key] = value


def _written(value: Any) -> str:
    """The JSON text of a decoded value, its objects' members as written (a repeated key too)."""
    if isinstance(value, list):
        return "[" + ", ".join(map(_written, value)) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_written(key)}: {_written(item)}" for key, item in _pairs(value)) + "}"
    if isinstance(value, str) and _SURROGATE.search(value) is not None:
        value = value.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")  # pairs joined
        if _SURROGATE.search(value) is not None:
            return json.dumps(value)  # a lone surrogate as its escape: no text may hold one
    return json_text(value)


def _arguments_text(text: str) -> Any:
    """The value an arguments string holds: JSON, else a Python literal (objects as :class:`_Members`;
    a blank string is no arguments); ValueError if it holds neither."""
    if not text.strip():
        return _members([])
    try:
        value, end = raw_decode(_READINGS[0][0], text, len(text) - len(text.lstrip()))
        if not text[end:].strip():
            return value
    except (ValueError, RecursionError):
        pass
    return python_literal(text, object_pairs_hook=_members)


def _call_parts(obj: Any, *, strict: bool = False) -> tuple[str, dict[str, Any], list[_Repair]] | None:
    """(name, arguments, repairs) of a decoded call object, or None if it is not one.

    Its members are read in order as the grammar's rules read them, with the same repairs in the
    same order (those before the name once it has come: an object without one is no call, and
    its text is reported whole): the first ``name`` is the call's; ``arguments`` and
    ``parameters`` objects are merged (one given as a string is decoded), the first value of an
    argument given twice kept; other keys are reported
    with their text. Inside ``<tool_call>`` an object with a string ``name`` is a call. ``strict``
    is for objects that only their shape makes calls (a bare reply, a fence, another tag): the
    keys are ``name`` and one of ``arguments`` / ``parameters``, the name looks like a function's,
    and a ``parameters`` object that is a JSON schema makes a tool declaration, not a call.
    """
    if not isinstance(obj, dict):
        return None
    members = _pairs(obj)
    if strict:
        keys = {key for key, _ in members}
        if not keys <= _CALL_KEYS or len(keys) != 2 or "name" not in keys:
            return None
        if any(key != "name" and _is_schema(value) for key, value in members):
            return None
    name: str | None = None
    arguments: dict[str, Any] = {}
    given = 0  # arguments members so far
    repairs: list[_Repair] = []
    pending: list[_Repair] = []  # before the name
    for key, value in members:
        out = repairs if name is not None else pending
        if key == "name":
            value = _plain(value, out)
            if name is not None:
                repairs.append(("duplicate_key", _NAME_REPEATED.format(kept=name), _name_text(value)))
                continue
            if not isinstance(value, str):
                return None
            name = value
            repairs += pending
        elif key in ("arguments", "parameters"):
            given += 1
            heading: list[_Repair] = [("duplicate_key", _ARGUMENTS_TWICE, None)] if given > 1 else []
            if key == "parameters":
                heading.append(("parameters_key", _PARAMETERS_KEY, None))
            if isinstance(value, dict):  # reported once the object is read, as its rule is reduced
                _add_arguments(arguments, value, out)
                out += heading
            elif isinstance(value, str):
                out += heading
                try:
                    decoded = _arguments_text(value)
                except ValueError:
                    return None
                if not isinstance(decoded, dict):
                    return None
                out.append(("arguments_as_string", _ARGUMENTS_STRING, None))
                _add_arguments(arguments, decoded, out)
            elif value is None and not strict:  # no arguments (a reading the grammar leaves to a repair)
                out += heading
            else:
                return None
        else:
            value = _plain(value, out)
            key = _whole_characters(key, out)
            out.append(("unexpected_key", _UNUSED_KEY.format(key=key), json_text({key: value})))
    if name is None or (strict and not _CALL_NAME.fullmatch(name)):
        return None
    return name, arguments, repairs


def _is_schema(value: Any) -> bool:
    """Whether ``value`` reads as a tool's parameters schema (``{"type": "object", "properties": ...}``)."""
    return isinstance(value, dict) and value.get("type") == "object" and isinstance(value.get("properties"), dict)


_SPACE = re.compile(r"[ \t\r\n]*")


def lex_json_container(text: str, pos: int, final: bool) -> tuple[Any, int] | Watch | None:
    """Any JSON object or array in a value position, decoded in C when it is complete (a watch
    follows one still arriving; anything the grammar's rules read otherwise is left to them)."""
    if pos >= len(text) or text[pos] not in "{[":
        return None
    try:
        value, end = raw_decode(PLAIN_JSON_DECODER, text, pos)
    except Undecodable as exc:
        if final or not (exc.pos >= len(text) - 5 or exc.msg.startswith("Unterminated string")):
            return None
        watch = JsonScan()
        return None if watch.scan(text[pos:]) else watch
    except (ValueError, RecursionError):
        return None
    return None if _may_hold_surrogates(text, pos, end) else (value, end)


def _may_hold_surrogates(text: str, pos: int, end: int) -> bool:
    """Whether JSON text ``text[pos:end]`` may decode to a lone surrogate: the grammar's rules
    then read it (and report one)."""
    return text.find("\\u", pos, end) >= 0 and _SURROGATE_ESCAPE.search(text, pos, end) is not None


def lex_call_json(text: str, pos: int, final: bool) -> tuple[Any, int] | None:
    """Fast path: a complete, ordinary call object at ``pos``, decoded in C.

    Only ``{"name": str, "arguments": {...}}`` with no repeated key and no non-finite number is
    taken; anything else, and an object still arriving (whose name and arguments should stream),
    is left to the grammar's rules.
    """
    if not text.startswith("{", pos):
        return None
    try:  # the first window, inline (the common case: a call that fits in it)
        doc = text[pos : pos + _WINDOW]
        DecoderInput.chars += len(doc)
        value, end = PLAIN_JSON_DECODER.raw_decode(doc)
        end += pos
    except json.JSONDecodeError as exc:
        if len(doc) < _WINDOW or not _window_short(exc):  # (all the text, or an error the window is not to blame for)
            return None
        try:
            value, end = raw_decode(PLAIN_JSON_DECODER, text, pos, _WINDOW * _WINDOW_GROWTH)
        except (ValueError, RecursionError):
            return None
    except (ValueError, RecursionError):
        return None
    if not (len(value) == 2 and isinstance(value.get("name"), str) and isinstance(value.get("arguments"), dict)):
        return None
    if text.find("\\u", pos, end) >= 0 and _may_hold_surrogates(text, pos, end):
        return None
    # Only where the grammar's rules could go on too: what follows must be able to end or
    # continue the block, else the rules (which see the object only with what follows) decide.
    after = _SPACE.match(text, end).end()  # type: ignore[union-attr]
    if text.startswith(_AFTER_OBJECT, after) or _opens_block(text, after) or (final and after == len(text)):
        return value, end
    return None


#: ``<tool_call>`` opens a block only where the line ends after it or a JSON object or list
#: starts (as ``CALL_OPEN`` in the grammar): elsewhere (``the <tool_call> tag``) it is text.
CALL_OPENER = r"<tool_call>(?=[ \t]?(?:\r?\n|[{\[]))"
#: What follows ``<tool_call>`` where it opens a block (the lookahead of ``CALL_OPENER``).
_OPENER_NEXT = tuple(blank + after for blank in ("", " ", "\t") for after in ("\n", "\r\n", "{", "["))


def _opens_block(text: str, pos: int) -> bool:
    """Whether a ``<tool_call>`` that opens a block is at ``pos`` (``CALL_OPENER`` matches there)."""
    return text.startswith(CALL_OPEN, pos) and text.startswith(_OPENER_NEXT, pos + _OPEN_LENGTH)


_OPEN_LENGTH = len(CALL_OPEN)


_AFTER_OBJECT = (CALL_CLOSE, "{", STOP)  # or a block's opener
#: JSON punctuation that no other terminal can extend where it is read (tests check it).
CLOSED_PUNCTUATION = ("LBRACE", "RBRACE", "LBRACK", "RBRACK", "COMMA", "COLON")


def lex_call_block(text: str, pos: int, final: bool) -> tuple[Any, int] | None:
    """Fast path for a whole ``<tool_call> {ordinary object} </tool_call>`` block.

    Decodes to the call object; None for anything else (the grammar's rules take it).
    """
    if not text.startswith(CALL_OPEN, pos) or not text.startswith(_OPENER_NEXT, pos + _OPEN_LENGTH):
        return None  # (what _opens_block says, inline: this runs at every token of the content)
    brace = _SPACE.match(text, pos + len(CALL_OPEN)).end()  # type: ignore[union-attr]
    got = lex_call_json(text, brace, final)
    if got is None:
        return None
    close = _SPACE.match(text, got[1]).end()  # type: ignore[union-attr]
    if not text.startswith(CALL_CLOSE, close):
        return None
    return got[0], close + len(CALL_CLOSE)


# -- calls in other models' shapes: a code fence, another tag, <function=NAME>, or no wrapper

#: Tags that models put around call objects in place of ``<tool_call>``.
FOREIGN_TAGS = ("tool", "tools", "response", "json", "xml", "JSON", "function_call")
#: The info strings of a code fence that may hold calls (none at all, too).
FENCE_LANGUAGES = ("", "json", "JSON", "xml", "XML")
_TAG_OPENERS = tuple(f"<{tag}>" for tag in FOREIGN_TAGS)
_FUNCTION_OPENERS = ("<function=", '<function name="')
#: A fence's closing line (up to three spaces of indentation, as Markdown has it) or the stop token.
_FENCE_END = re.compile(r"\n[ \t]{0,3}```|" + re.escape(STOP))
#: What a FOREIGN_CALLS token starts with, and what the end of the text may hold of that (cheaper
#: to rule out than to scan).
_FOREIGN_OPENERS = (*_TAG_OPENERS, *_FUNCTION_OPENERS)
_FOREIGN_START = re.compile(r"\n[ \t]{0,3}```|\n?(?:" + "|".join(map(re.escape, _FOREIGN_OPENERS)) + ")")
_LONGEST_OPENER = 1 + max(map(len, _FOREIGN_OPENERS))
_BLOCK_OPENERS = (CALL_OPEN, "\n" + CALL_OPEN)
_FOREIGN_PART = re.compile(
    r"(?:\n[ \t]{0,3}`{0,2}|\n?(?:"
    + "|".join(re.escape(opener[:k]) for opener in _FOREIGN_OPENERS for k in range(1, len(opener)))
    + r"))\Z"
)
_BLANKS = re.compile(r"[ \t\r\n]*")
_SPACES = re.compile(r"[ \t]*")
_IN_VALUE = re.compile(r"""["'{}\[\]()<`]""")
_IN_STRING = {'"': re.compile(r'["\\<]'), "'": re.compile(r"['\\<]")}
#: Blanks a shape's head may hold between its parts.
_HEAD_BLANKS = 16
#: The characters that must follow a token before the stream commits it (``Syntax.holdback``):
#: also what free text needs to see past a line break or a '<' to tell it from an opener
#: (CALL_OPEN's lookahead, '<function_call>'): the grammar's lookaheads fit in it.
_HOLDBACK = len(CALL_CLOSE) + 2


@dataclass(frozen=True, slots=True)
class Shape:
    """The parts of a call shape (FOREIGN_CALLS, LEAD_CALLS), as offsets from its token's start."""

    kind: str  #: "fence", "tag", "function" or "bare"
    opener: int  #: where its wrapper (a bare reply: its first object) starts
    body: int  #: where what the wrapper holds starts
    body_end: int  #: and where it ends
    closed: bool  #: whether the wrapper's closer was written (a bare reply has none)
    end: int  #: where the token ends
    name: str = ""  #: a tag's name; the function of ``<function=NAME>``


class _Text:
    """The text of a shape being scanned, given piece by piece (to a watch, as it arrives).

    ``s[i]`` is the next character; offsets (``at``) count from the shape's start. What was read
    is dropped when more text comes, so that a scan holds only what it still has to look at.
    """

    __slots__ = ("ended", "i", "off", "s")

    def __init__(self, text: str, pos: int) -> None:
        self.s, self.i, self.off, self.ended = text, pos, -pos, False

    @property
    def at(self) -> int:
        return self.off + self.i

    def more(self, chunk: str) -> None:
        self.off += self.i
        self.s, self.i = self.s[self.i :] + chunk, 0


_T = TypeVar("_T")
#: A step of a scan: a generator that yields while it needs more text, and returns what it read.
_Step = Generator[None, None, _T]


def _peek(t: _Text) -> _Step[str]:
    """The next character, not read ("" at the end of the text)."""
    while t.i >= len(t.s):
        if t.ended:
            return ""
        yield
    return t.s[t.i]


def _skip(t: _Text, chars: re.Pattern[str], limit: int = -1) -> _Step[None]:
    """Read the characters ``chars`` matches (at most ``limit`` of them)."""
    left = limit
    while True:
        stop = len(t.s) if left < 0 else min(len(t.s), t.i + left)
        end = chars.match(t.s, t.i, stop).end()  # type: ignore[union-attr]
        left -= end - t.i
        t.i = end
        if end < len(t.s) or t.ended or left == 0:
            return
        yield


def _literal(t: _Text, literal: str, *, read: bool = True) -> _Step[bool]:
    """Whether ``literal`` comes next, decided as soon as the text says (read, if so and ``read``)."""
    while True:
        have = t.s[t.i : t.i + len(literal)]
        if have == literal:
            t.i += len(literal) if read else 0
            return True
        if len(have) == len(literal) or t.ended or not literal.startswith(have):
            return False
        yield


def _one_of(t: _Text, literals: tuple[str, ...]) -> _Step[str]:
    """Which of ``literals`` (none a prefix of another) comes next, read; "" for none."""
    longest = max(map(len, literals))
    while True:
        have = t.s[t.i : t.i + longest]
        for literal in literals:
            if have.startswith(literal):
                t.i += len(literal)
                return literal
        if t.ended or not any(len(have) < len(lit) and lit.startswith(have) for lit in literals):
            return ""
        yield


def _word(t: _Text, limit: int) -> _Step[str]:
    """The ASCII letters that come next (stops after ``limit`` + 1 of them), read."""
    word = ""
    while len(word) <= limit:
        c = yield from _peek(t)
        if not (c.isascii() and c.isalpha()):
            break
        word += c
        t.i += 1
    return word


def _name(t: _Text, closer: str) -> _Step[str | None]:
    """A function name up to ``closer`` (read too): None if it runs past a line or 256 characters."""
    name = ""
    while len(name) <= 256:
        c = yield from _peek(t)
        t.i += 1
        if c == closer:
            return name
        if c in ("", "\n", "<", ">"):
            return None
        name += c
    return None


def _value_end(t: _Text, depth: int = 0) -> _Step[bool]:
    """Read to where the bracket opened here (``depth`` levels already read) closes: False where
    no JSON or Python value can go on (a ``<`` or a backtick outside a string, the end), and at
    the opener of another such shape even inside a string (so that no text is scanned for more
    than one shape: the one a string opened first gives up where the next begins)."""
    quote = ""
    while True:
        s, i, n = t.s, t.i, len(t.s)
        while i < n:
            if quote:
                m = _IN_STRING[quote].search(s, i)
                if m is None:
                    i = n
                elif m.group() == quote:
                    quote, i = "", m.end()
                    continue
                elif m.group() == "<":
                    if _FOREIGN_START.match(s, m.start()):
                        t.i = m.start()
                        return False
                    if t.ended or not _FOREIGN_PART.match(s, m.start()):
                        i = m.end()
                        continue
                    i = m.start()  # an opener may be arriving
                elif m.end() < n:
                    i = m.end() + 1
                    continue
                else:  # the escaped character is still to come
                    i = m.start()
                break
            m = _IN_VALUE.search(s, i)
            if m is None:
                i = n
                break
            c, i = m.group(), m.end()
            if c in "\"'":
                quote = c
            elif c in "{[(":
                depth += 1
            elif c in "}])":
                depth -= 1
                if depth <= 0:
                    t.i = i
                    return True
            else:
                t.i = m.start()
                return False
        t.i = i
        if t.ended:
            return False
        yield


def _call_head(t: _Text) -> _Step[int]:
    """Read the head of a call object (``{`` and a quoted ``name``, ``arguments`` or ``parameters``
    key), or of a list of them: the brackets it opened, 0 if none starts here."""
    depth = 0
    if (yield from _peek(t)) == "[":
        t.i += 1
        depth = 1
        yield from _skip(t, _BLANKS, _HEAD_BLANKS)
    if (yield from _peek(t)) != "{":
        return 0
    t.i += 1
    yield from _skip(t, _BLANKS, _HEAD_BLANKS)
    quote = yield from _peek(t)
    if quote not in ('"', "'"):
        return 0
    t.i += 1
    key = yield from _one_of(t, tuple(key + quote for key in ("name", "arguments", "parameters")))
    return depth + 1 if key else 0


def _values_end(t: _Text, depth: int) -> _Step[int]:
    """Read values separated by blanks, the first opened ``depth`` deep by its head: where the last
    ends (the blanks after it read), -1 if they do not read as values."""
    if not (yield from _value_end(t, depth)):
        return -1
    end = t.at
    while True:
        yield from _skip(t, _BLANKS)
        if (yield from _peek(t)) not in ("{", "["):
            return end
        if not (yield from _value_end(t)):
            return -1
        end = t.at


def _fence(t: _Text) -> _Step[Shape | None]:
    """A code fence from its opening backticks, if its body starts like calls: to its closing line,
    the stop token or the end of the text."""
    opener = t.at
    if not (yield from _literal(t, "```")):
        return None
    if (yield from _word(t, 8)) not in FENCE_LANGUAGES:
        return None
    yield from _skip(t, _SPACES, 8)
    if not ((yield from _literal(t, "\n")) or (yield from _literal(t, "\r\n"))):
        return None
    body = t.at
    yield from _skip(t, _BLANKS, _HEAD_BLANKS)
    if (yield from _peek(t)) == "<":
        tag = yield from _one_of(t, (CALL_OPEN, *_TAG_OPENERS))
        if not tag:
            return None
        yield from _skip(t, _BLANKS, _HEAD_BLANKS)
        if tag != CALL_OPEN and not (yield from _call_head(t)):
            return None
    elif not (yield from _call_head(t)):
        return None
    while True:
        m = _FENCE_END.search(t.s, t.i)
        if m is not None:
            break
        t.i = max(t.i, len(t.s) - len(STOP) + 1)
        if t.ended:
            t.i = len(t.s)
            return Shape("fence", opener, body, t.at, False, t.at)
        yield
    t.i = m.start()
    body_end = t.at
    if m.group() == STOP:
        return Shape("fence", opener, body, body_end, False, body_end)
    t.i = m.end()
    return Shape("fence", opener, body, body_end, True, t.at)


def _tagged(t: _Text) -> _Step[Shape | None]:
    """``<TAG>`` around call objects, or ``<function=NAME>`` (``<function name="NAME">``) around
    arguments: to the closer (or, where it is missing, the stop token or the end of the text)."""
    opener = t.at
    found = yield from _one_of(t, _FOREIGN_OPENERS)
    if found in _FUNCTION_OPENERS:
        name = yield from _name(t, ">" if found == "<function=" else '"')
        if name is None or (found != "<function=" and not (yield from _literal(t, ">"))):
            return None
        yield from _skip(t, _BLANKS, _HEAD_BLANKS)
        body = t.at
        if (yield from _peek(t)) != "{" or not (yield from _value_end(t)):
            return None
        kind, closer, body_end = "function", "</function>", t.at
        yield from _skip(t, _BLANKS)
    elif found:
        yield from _skip(t, _BLANKS, _HEAD_BLANKS)
        body = t.at
        depth = yield from _call_head(t)
        body_end = (yield from _values_end(t, depth)) if depth else -1
        if body_end < 0:
            return None
        kind, name, closer = "tag", found[1:-1], "</" + found[1:]
    else:
        return None
    closed = yield from _literal(t, closer)
    if not closed and (yield from _peek(t)) and not (yield from _literal(t, STOP, read=False)):
        return None
    return Shape(kind, opener, body, body_end, closed, t.at, name)


def _scan_foreign(t: _Text) -> _Step[Shape | None]:
    """FOREIGN_CALLS: a tagged shape, or a line break and a fence or a tagged shape (the line
    break before a call is markup, as it is before ``<tool_call>``)."""
    if (yield from _peek(t)) == "<":
        return (yield from _tagged(t))
    t.i += 1  # the line break
    if (yield from _peek(t)) == "<":
        return (yield from _tagged(t))
    yield from _skip(t, _SPACES, 3)
    return (yield from _fence(t))


def _scan_lead(t: _Text) -> _Step[Shape | None]:
    """LEAD_CALLS: blanks, then a fence, a tagged shape, or call objects that are all the reply
    holds before the stop token or a ``<tool_call>`` block.

    It reads every shape FOREIGN_CALLS reads there too: a stream that wakes after this scan has
    decided lexes with the reply's end in view, and the other lexer must then find nothing it
    would not find without it."""
    yield from _skip(t, _BLANKS)
    first = yield from _peek(t)
    if first == "`":
        return (yield from _fence(t))
    if first == "<":
        return (yield from _tagged(t))
    opener = t.at
    depth = yield from _call_head(t)
    end = (yield from _values_end(t, depth)) if depth else -1
    if end < 0:
        return None
    if (yield from _peek(t)) and not (
        (yield from _literal(t, STOP, read=False)) or (yield from _literal(t, CALL_OPEN, read=False))
    ):
        return None
    return Shape("bare", opener, opener, end, True, t.at)


class _ShapeWatch:
    """Follows a shape that has not ended yet: wakes the stream once the scan has decided it."""

    __slots__ = ("_steps", "_text")

    def __init__(self, text: _Text, steps: _Step[Shape | None]) -> None:
        self._text, self._steps = text, steps

    def scan(self, text: str) -> bool:
        self._text.more(text)
        try:
            next(self._steps)
        except StopIteration:
            return True
        return False


def _shape_lexer(
    scan: Callable[[_Text], _Step[Shape | None]],
    starts: str,
    opening: tuple[re.Pattern[str], re.Pattern[str]] | None = None,
) -> FastLexer:
    """A fast lexer of the shapes ``scan`` reads: the token is the whole shape, lexed once the
    text decides it (a watch follows it meanwhile).

    ``opening``: what a shape starts with, and what the end of the text may hold of that (text
    that matches neither is none, at once); its shapes start with a character that can start a
    marker, so that the stream commits nothing there while fewer than its holdback characters
    follow: until then an undecided shape is left for the next look, without a watch.
    """

    def lex(text: str, pos: int, final: bool) -> tuple[Shape, int] | _ShapeWatch | None:
        left = len(text) - pos
        if left <= 0 or text[pos] not in starts:
            return None
        if opening is not None and (
            (not final and left < _HOLDBACK)  # no shape is this short: look again then
            or text.startswith(_BLOCK_OPENERS, pos)  # the common case, ruled out first
            or (
                not opening[0].match(text, pos) and (final or left > _LONGEST_OPENER or not opening[1].match(text, pos))
            )
        ):
            return None
        t = _Text(text, pos)
        steps = scan(t)
        try:
            next(steps)
            if not final:
                return _ShapeWatch(t, steps)
            t.ended = True
            next(steps)
            raise AssertionError("a shape's scan ends with its text")  # pragma: no cover
        except StopIteration as done:
            shape: Shape | None = done.value
        if shape is None:
            return None
        if shape.kind == "fence" and not shape.closed and _shape_contents(shape, text[pos : pos + shape.end]) is None:
            return None  # a fence never closed is one only if it holds calls: else it might hold the rest
        return shape, pos + shape.end

    return lex


lex_foreign_calls = _shape_lexer(_scan_foreign, "\n<", (_FOREIGN_START, _FOREIGN_PART))
lex_lead_calls = _shape_lexer(_scan_lead, " \t\r\n`{[")


#: The issue each shape is reported with (``{name}``: the tag, or the function's name).
_SHAPE_ISSUES = {
    "bare": ("unwrapped_call", "call objects written without <tool_call>, as the whole reply"),
    "fence": ("fenced_call", "calls written in a code fence, without <tool_call>"),
    "tag": ("foreign_tag", "calls written in <{name}>, not in <tool_call>"),
    "function": ("function_tag", "a call written as <function={name}>, not in <tool_call>"),
}
_CLOSERS = {"fence": "```", "tag": "</{name}>", "function": "</function>"}
#: The issue of each reading of a text that is not plain JSON (see ``_READINGS``).
_REPAIRED = {
    _READINGS[1][1]: ("repaired_call", f"read as {_READINGS[1][1]}"),
    _PYTHON: ("repaired_call", f"read as {_PYTHON}"),
}
_FENCED_TAG = re.compile("<(" + "|".join(FOREIGN_TAGS) + ")>")
#: What a shape holds, in order: (offset, issue kind, message, None, the issue's text) for a
#: repair, and (offset, name, "", arguments, None) for a call.
_Found = list[tuple[int, str, str, "dict[str, Any] | None", "str | None"]]


def _shape_contents(shape: Shape, text: str) -> _Found | None:
    """The calls the shape ``text`` holds and the repairs it needed; None if it holds anything
    but calls (then it is text)."""
    kind, message = _SHAPE_ISSUES[shape.kind]
    found: _Found = [(shape.opener, kind, message.format(name=shape.name), None, None)]
    if not shape.closed:
        closer = _CLOSERS[shape.kind].format(name=shape.name)
        found.append((shape.end, "missing_closer", f"missing {closer!r} inserted", None, None))
    body = text[shape.body : shape.body_end]
    if shape.kind == "function":
        ok = _function_call(shape.name.strip(), body, shape.body, found)
    elif shape.kind == "fence":
        ok = _fenced(body, shape.body, found)
    else:
        ok = _objects(body, shape.body, found, strict=True)
    return found if ok else None


def _objects(body: str, at: int, found: _Found, *, strict: bool) -> bool:
    """Add the calls ``body`` (at offset ``at``) holds, with the repairs made to read them, to
    ``found``; False if it holds anything else. ``strict``: see :func:`_call_parts`; otherwise
    ``body`` is a ``<tool_call>`` block's, where a second object is reported."""
    decoded = _decode_objects(body)
    if decoded is None:
        return False
    values, how = decoded
    if how in _REPAIRED:
        found.append((at + values[0][0], *_REPAIRED[how], None, None))
    if not strict and len(values) > 1:
        found.append((at + values[1][0], "several_objects", _SEVERAL_OBJECTS, None, None))
    for start, value in values:
        listed = isinstance(value, list)
        if listed:
            found.append((at + start, "call_list", "calls written as one JSON list", None, None))
        for element in value if listed else [value]:
            call = _call_parts(element, strict=strict)
            if call is None:
                return False
            name, arguments, repairs = call
            found += [(at + start, kind, message, None, text) for kind, message, text in repairs]
            found.append((at + start, name, "", arguments, None))
    return bool(values)


def _function_call(name: str, body: str, at: int, found: _Found) -> bool:
    """Add the call ``<function=name>`` with the arguments ``body`` to ``found``, if they are an object."""
    decoded = _decode_objects(body)
    if decoded is None or len(decoded[0]) != 1 or not _CALL_NAME.fullmatch(name):
        return False
    (start, members), how = decoded[0][0], decoded[1]
    if not isinstance(members, dict):
        return False
    if how in _REPAIRED:
        found.append((at + start, *_REPAIRED[how], None, None))
    arguments: dict[str, Any] = {}
    repairs: list[_Repair] = []
    _add_arguments(arguments, members, repairs)
    found += [(at + start, kind, message, None, text) for kind, message, text in repairs]
    found.append((at + start, name, "", arguments, None))
    return True


def _fenced(body: str, at: int, found: _Found) -> bool:
    """Add the calls a fence's body holds: call objects, ``<tool_call>`` blocks, or one of the
    foreign tags around call objects."""
    inner = body.strip()
    lead = len(body) - len(body.lstrip())
    tag = _FENCED_TAG.match(inner)
    if tag is not None:
        closer = f"</{tag.group(1)}>"
        if not inner.endswith(closer):
            return False
        found.append((at + lead, "foreign_tag", f"calls written in {tag.group()}, not in <tool_call>", None, None))
        return _objects(inner[tag.end() : -len(closer)], at + lead + tag.end(), found, strict=True)
    if not inner.startswith(CALL_OPEN):
        return _objects(body, at, found, strict=True)
    i, n = lead, len(body)
    while i < n:
        if not body.startswith(CALL_OPEN, i):
            return False
        start = i + len(CALL_OPEN)
        close = body.find(CALL_CLOSE, start)
        if close < 0:
            found.append((at + n, "missing_closer", f"missing {CALL_CLOSE!r} inserted", None, None))
            close = n
        if not _objects(body[start:close], at + start, found, strict=False):
            return False
        i = _BLANKS.match(body, min(n, close + len(CALL_CLOSE))).end()  # type: ignore[union-attr]
    return True


class HermesBuilder(LiteralHandlers, Builder):
    """Builds calls from the hermes grammar's reductions and repairs blocks it rejects."""

    def __init__(self, sink: Sink) -> None:
        super().__init__(sink)
        self._call: CallWriter | None = None  # the call object being read
        self._args_seen = 0  # its "arguments" members so far
        #: The issues reported since the last call object ended (of the one being read: a repair
        #: that reads it again reports only the others).
        self._issued = 0
        self._done_in_block = 0  # call objects completed in the current block
        self._in_list = False  # the current block holds a list of call objects
        #: The issues of a call object whose name has not come yet (it may be no call at all: its
        #: text is then reported whole).
        self._pending: list[tuple[IssueKind, str, int, str | None]] = []

    def _issue(self, kind: IssueKind, message: str, pos: int, text: str | None = None) -> None:
        """An issue of the call object being read: reported once its name has come."""
        if self._call is None or self._call.name is None:
            self._pending.append((kind, message, pos, text))
            return
        self._issued += 1
        self.sink.issue(kind, message, pos, text)

    def _object_read(self) -> None:
        """The call object being read has ended (or the block's reading moves past it)."""
        self._call = None
        self._issued = 0
        self._pending.clear()

    def _text(self, token: Token) -> str:
        """A JSON string token's value, in whole characters (see :func:`_whole_characters`)."""
        value = _string(token)
        if "\\u" not in token:  # a lone surrogate comes from an escape (the reply's own are the caller's)
            return value
        return self._whole(value, token)

    def _whole(self, value: str, token: Token) -> str:
        repairs: list[_Repair] = []
        value = _whole_characters(value, repairs)
        for kind, message, text in repairs:
            self._issue(kind, message, token.start_pos, text)
        return value

    # values
    def string(self, token: Token) -> str:
        value = _string(token)
        return value if "\\u" not in token else self._whole(value, token)  # (self._text(), inline)

    def number(self, token: Token) -> Any:
        try:
            return json_value(str(token))
        except ValueError as exc:
            raise BuildError(str(exc), token.start_pos) from None

    def container(self, token: ValueToken) -> Any:
        return token.decoded

    def array(self, *children: Any) -> list[Any]:
        return list(children[1:-1:2])  # [ value , value ... ]

    def pair(self, key: Token, colon: Token, value: Any) -> tuple[str, Any, int]:
        return self._text(key), value, key.start_pos

    def object(self, *children: Any) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value, pos in children[1:-1:2]:  # { pair , pair ... }
            if key in out:  # the value dropped is the issue's text
                self._issue("duplicate_key", _KEY_REPEATED.format(key=key), pos, json_text({key: out[key]}))
            out[key] = value
        return out

    # the call object
    def _current(self, pos: int) -> CallWriter:
        if self._call is None:
            self._call = self.sink.call(None, pos)  # its name may come after its arguments
            self._args_seen = 0
        return self._call

    def name_member(self, key: Token, colon: Token, name: Any) -> None:
        call = self._current(key.start_pos)
        if call.name is not None:
            self._issue("duplicate_key", _NAME_REPEATED.format(kept=call.name), key.start_pos, _name_text(name))
            return
        if not isinstance(name, str):
            raise BuildError('"name" must be a string', key.start_pos)
        call.start(name)
        pending, self._pending = self._pending, []
        for kind, message, pos, text in pending:
            self._issue(kind, message, pos, text)

    def arg(self, key: Token, colon: Token, value: Any) -> None:
        call = self._call if self._call is not None else self._current(key.start_pos)
        name = _string(key)
        if "\\u" in key:
            name = self._whole(name, key)
        if name in call.arguments:  # (self._argument(), inline)
            self._issue("duplicate_argument", _ARGUMENT_REPEATED.format(key=name), key.start_pos, json_text(value))
        else:
            call.argument(name, value, key.start_pos)

    def _argument(self, call: CallWriter, key: str, value: Any, pos: int) -> None:
        if key in call.arguments:  # (what the writer would say)
            self._issue("duplicate_argument", _ARGUMENT_REPEATED.format(key=key), pos, json_text(value))
        else:
            call.argument(key, value, pos)

    def args_member(self, key: Token, colon: Token, arguments: None) -> None:
        self._args_key(self._current(key.start_pos), key)

    def args_string_member(self, key: Token, colon: Token, string: Token) -> None:
        call = self._current(key.start_pos)
        self._args_key(call, key)
        try:
            members = _arguments_text(_string(string))
        except ValueError:
            members = None
        if not isinstance(members, dict):
            raise BuildError("arguments string is not an object", string.start_pos)
        self._issue("arguments_as_string", _ARGUMENTS_STRING, string.start_pos)
        for name, value in _pairs(members):  # as _add_arguments() reads them
            repairs: list[_Repair] = []
            value = _plain(value, repairs)
            name = _whole_characters(name, repairs)
            for kind, message, text in repairs:
                self._issue(kind, message, string.start_pos, text)
            self._argument(call, name, value, string.start_pos)

    def _args_key(self, call: CallWriter, key: Token) -> None:
        self._args_seen += 1
        if self._args_seen > 1:
            self._issue("duplicate_key", _ARGUMENTS_TWICE, key.start_pos)
        if key.value == '"parameters"':
            self._issue("parameters_key", _PARAMETERS_KEY, key.start_pos)

    def other_member(self, key: Token, colon: Token, value: Any) -> None:
        name = self._text(key)
        text = json_text({name: value})
        self._issue("unexpected_key", _UNUSED_KEY.format(key=name), key.start_pos, text)

    def call_object(self, *children: Any) -> None:
        brace = children[0]
        call = self._current(brace.start_pos)
        if call.name is None:
            raise BuildError('tool call object has no "name"', brace.start_pos)
        self._object_read()
        self._object_done(brace.start_pos)
        call.end(brace.start_pos)

    def fast_call(self, token: ValueToken) -> None:
        found = token.decoded
        self.sink.whole_call(found["name"], token.start_pos, found["arguments"])
        self._object_done(token.start_pos)

    def fast_block(self, token: ValueToken) -> None:
        self.sink.block(token.start_pos)  # a block read whole: the stream saw no opener of it
        found = token.decoded
        brace = token.start_pos + token.index("{")
        self.sink.whole_call(found["name"], brace, found["arguments"])
        self._object_done(brace)
        self._done_in_block = 0

    def _object_done(self, pos: int) -> None:
        """A call object of the current block is complete (a second one is reported, outside a list)."""
        self._done_in_block += 1
        if self._done_in_block == 2 and not self._in_list:
            self.sink.issue("several_objects", _SEVERAL_OBJECTS, pos, call=LAST)

    def list_open(self, bracket: Token) -> None:
        self._in_list = True
        self.sink.issue("call_list", "calls written as one JSON list", bracket.start_pos)

    def call(self, *children: Any) -> None:
        self._done_in_block = 0
        self._in_list = False
        self._object_read()

    # calls in other models' shapes (a whole token each)
    def foreign(self, token: ValueToken) -> None:
        found = _shape_contents(token.decoded, str(token))
        if found is None or any(args is not None and self.sink.undeclared(name) for _, name, _, args, _ in found):
            self.sink.text(CONTENT, str(token), token.start_pos)  # an example, not a call
            return
        self.sink.block(token.start_pos)  # what is reported below concerns the calls the token holds
        for at, what, message, arguments, text in found:
            if arguments is None:
                self.sink.issue(cast("IssueKind", what), message, token.start_pos + at, text)  # checked by the sink
            else:
                self.sink.whole_call(what, token.start_pos + at, arguments)

    def lead(self, token: ValueToken) -> None:
        self.foreign(token)

    # a block the grammar rejected
    def recover(self, raw: str, pos: int, error: str) -> int | None:
        call, issued = self._call, self._issued
        self._object_read()
        skip, self._done_in_block = self._done_in_block, 0
        listed, self._in_list = self._in_list, False
        body = raw[len(CALL_OPEN) :] if raw.startswith(CALL_OPEN) else raw
        closed = body.rstrip().endswith(CALL_CLOSE)
        if closed:
            body = body.rstrip()[: -len(CALL_CLOSE)]
        fenced = _BODY_FENCE.fullmatch(body)
        decoded = _decode_objects(body if fenced is None else fenced.group(1))
        if decoded is None:
            return self._cut(call, raw, error, pos)
        values, how = [value for _, value in decoded[0]], decoded[1]
        # A list's elements are its calls: one that is no call is reported, the others kept.
        is_list = len(values) == 1 and isinstance(values[0], list)
        elements = values[0][skip:] if is_list else values[skip:]
        calls = [_call_parts(element) for element in elements]
        if not is_list and (not calls or None in calls):
            return self._cut(call, raw, error, pos)
        if is_list and not skip and not any(calls) and (call is None or call.name is None):
            return None
        if is_list and not listed:
            self.sink.issue("call_list", "calls written as one JSON list", pos)
        if fenced:
            self.sink.issue("fenced_call", "the block's JSON written in a code fence", pos)
        # A call the list or the fence was all that kept the grammar from reading needs no other
        # word (but a closer missing too needs one).
        read_as_is = how == _JSON_READING and (is_list or fenced is not None)
        if read_as_is and not closed:
            self.sink.issue("missing_closer", f"missing {CALL_CLOSE!r} inserted", pos + len(raw))
        for i, (element, found) in enumerate(zip(elements, calls, strict=True)):
            writer = call if i == 0 and call is not None and call.name is not None else None
            if writer is not None and (found is None or found[0] != writer.name or not writer.extends(found[1])):
                writer.cut(raw, error, pos)  # what was streamed of it cannot be taken back
                continue
            if found is None:
                text = _written(element)
                self.sink.issue("invalid_list_element", "an element of a call list that is no call, dropped", pos, text)
                continue
            name, args, repairs = found
            writer = writer or self.sink.call(name, pos)
            if not read_as_is:
                self.sink.issue("repaired_call", f"tool call {name!r} repaired ({error}): read as {how}", pos)
            # The members read as the grammar's rules read them, with the same issues; those the
            # rules reported before the block failed are not reported again.
            for kind, message, kept in repairs[issued if i == 0 else 0 :]:
                self.sink.issue(kind, message, pos, kept)
            if skip + i == 1 and not is_list:
                self.sink.issue("several_objects", _SEVERAL_OBJECTS, pos)
            writer.end(pos, args)
        return len(raw)

    @staticmethod
    def _cut(call: CallWriter | None, raw: str, error: str, pos: int) -> int | None:
        """A block that holds no usable call: the call it started is cut short (None: there is none)."""
        if call is None or call.name is None:
            return None
        call.cut(raw, error, pos)
        return len(raw)


def _read_block(text: str, pos: int) -> tuple[tuple[str, dict[str, Any]], int] | None:
    got = lex_call_block(text, pos, True)
    return None if got is None else ((got[0]["name"], got[0]["arguments"]), got[1])


def whole_reply(text: str, tools: ToolsByName | None) -> WholeReading | None:
    """A whole reply in the template's shape, read at once (see ``Syntax.whole``): blocks of
    ordinary call objects (what :func:`lex_call_block` takes) in ChatML's frame."""
    return read_whole_reply(text, CALL_OPEN, _read_block)


@functools.cache
def reply_syntax() -> Syntax:
    """The reply syntax: the grammar, the builder and how the stream reads them (built once)."""
    return Syntax(
        grammar=compile_grammar("hermes"),
        builder=HermesBuilder,
        text_terminals={"TEXT": CONTENT, "THOUGHT": REASONING},
        blocks={"CALL_OPEN": "CALL_CLOSE"},
        autoclose={"RBRACK": "]", "RBRACE": "}", "CALL_CLOSE": CALL_CLOSE, "THINK_CLOSE": "</think>"},
        autoclose_before=frozenset({"CALL_OPEN", "CALL_CLOSE", "STOP"}),
        resync_after=(CALL_CLOSE,),
        resync_before=(CALL_OPEN, STOP),
        delimiters=(Delimiter('"', '"', "\\"),),
        # JSON punctuation no other terminal can extend: taken as soon as it arrives, not held back.
        closed_terminals=frozenset({"STRING", "CALL_OPEN", "CALL_CLOSE", "STOP", *CLOSED_PUNCTUATION}),
        holdback=_HOLDBACK,
        nest_open=frozenset({"LBRACE", "LBRACK"}),
        nest_close=frozenset({"RBRACE", "RBRACK"}),
        fast_terminals={
            "CALL_BLOCK": lex_call_block,
            "CALL_JSON": lex_call_json,
            "JSON_CONTAINER": lex_json_container,
            "LEAD_CALLS": lex_lead_calls,
            "FOREIGN_CALLS": lex_foreign_calls,
        },
        reasoning_open="THINK_OPEN",
        preempt_starts=" \t\r\n<",
        prompt_opens_reasoning=lambda prompt: prompt.rstrip().endswith("<think>"),
        # Without a prompt, "...</think>" before any call or stop token: the prompt opened it.
        reasoning_close="</think>",
        reasoning_not_opened=("<think>", CALL_OPEN, STOP),
        whole=whole_reply,
    )


# ---------------------------------------------------------------------------- export (constrained decoding)


def grammar_calls(builder: GrammarBuilder, tools: list[dict[str, Any]]) -> CallSyntax:
    """Calls as the renderer writes them: ``<tool_call>\\n{"name": "NAME", "arguments": {...}}\\n</tool_call>``.

    The arguments are JSON constrained by the tool's parameters; parallel calls are separate
    blocks, one line apart. Reasoning is a leading ``<think>...</think>`` block.
    """
    values = JsonValues(builder)
    bodies = []
    for tool in tools:
        name = tool_name(tool)
        arguments = values.value(parameters_schema(tool))
        bodies.append(seq(f'\n{{"name": "{name}", "arguments": ', arguments, "}\n" + CALL_CLOSE))
    call = builder.rule("call", alt(*bodies)) if bodies else EMPTY
    return CallSyntax(
        triggers=((CALL_OPEN, call),),
        more=seq("\n", Marker(CALL_OPEN), call),
        text_forbid_markers=(CALL_OPEN, STOP),
        reasoning=Reasoning("<think>", "</think>"),
        stops=(STOP,),
    )


# ---------------------------------------------------------------------------- wire (the reply syntax)

WIRE = WireSpec(
    "json_object",
    call=(CALL_OPEN, CALL_CLOSE),
    stop=STOP,
    reasoning=("<think>", "</think>"),
    name=('"name"', ""),
    arguments_keys=("arguments", "parameters"),
    separator="\n",
)


# ---------------------------------------------------------------------------- format


class Hermes(Format):
    """Hermes / Qwen2.5 JSON tool calls (reference: the Tucano2 Portuguese Hermes template)."""

    name = "hermes"
    aliases = ("hermes_json",)
    summary = 'Hermes/Qwen2.5 JSON calls: <tool_call>\\n{"name": ..., "arguments": {...}}\\n</tool_call>'
    stop_token = STOP
    reference_template = "hermes-json-pt.jinja"
    template_markers = (IM_START, CALL_OPEN, '"arguments"')

    functions = Functions(prompt_text, prompt_conversation, reply_text)
    wire = WIRE
