"""The ``json_object`` family's values: JSON (or Python-literal) text decoded in windows, and call
objects read member by member as the grammar's rules read them, with the same repairs.

Nothing here depends on a member's markers: the grammar's builder, the shapes of other models
(:mod:`codec.wire._json_object_shapes`) and the whole-reply reader all decode through it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from codec._lark import Token
from codec._whole_reply import has_surrogate
from codec.issues import IssueKind
from codec.literals import JSON_DECODER, PLAIN_JSON_DECODER, json_text, json_value, nesting, python_literal
from codec.stream import MAX_DEPTH, BuildError
from codec.watch import JsonScan, Watch

#: Blanks, as JSON has them (between values, around a call object).
BLANKS = re.compile(r"[ \t\r\n]*")


def string_value(token: Token) -> str:
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


def whole_characters(text: str, repairs: list[Repair]) -> str:
    """``text`` with each lone surrogate replaced with U+FFFD (a pair of them made the character
    they stand for), reported (``lone_surrogate``, with the string's JSON text, escapes and all):
    no JSON text, nor the result's, can hold one."""
    if not has_surrogate(text):
        return text
    fixed = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    if fixed.count("\ufffd") > text.count("\ufffd"):
        repairs.append(("lone_surrogate", _LONE_SURROGATE, json.dumps(text)))
    return fixed


class DecoderInput:
    """How many characters the family has handed JSON decoders, in all (``chars``; tests read it).

    A decoder that fails counts the lines of the text it was given up to where it failed (for the
    error's ``lineno``), so each decode is handed a window of the text from where the value
    starts, never the rest of the reply: work in proportion to the value, not to its offset.
    """

    chars = 0


#: The first window a value is decoded in, and how much it grows while the value goes on past it.
WINDOW = 512
WINDOW_GROWTH = 8
#: How far past an error's position a decoder may have read to find it (``-Infinity``, a
#: ``\\uXXXX\\uXXXX`` pair): an error closer than that to a window's end may be the window's.
_DECODE_LOOKAHEAD = 16


def window_short(exc: json.JSONDecodeError) -> bool:
    """Whether a decode in a window may have failed for the window's end (see :func:`raw_decode`)."""
    return exc.pos >= len(exc.doc) - _DECODE_LOOKAHEAD or exc.msg.startswith("Unterminated string")


class Undecodable(ValueError):
    """A value that does not decode: ``msg`` says why, ``pos`` is where in the whole text."""

    def __init__(self, msg: str, pos: int) -> None:
        super().__init__(f"{msg}: char {pos}")
        self.msg, self.pos = msg, pos


def raw_decode(decoder: json.JSONDecoder, text: str, pos: int = 0, size: int = WINDOW) -> tuple[Any, int]:
    """``decoder.raw_decode(text, pos)``, handed only windows of ``text`` from ``pos``.

    A value read whole in a window reads the same in the whole text (a decoder reads nothing
    past an object's or a list's last bracket); an error too near a window's end to be sure of,
    or a string still open there, is decoded again in a window ``WINDOW_GROWTH`` times as long
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
            if stop < n and window_short(exc):
                size *= WINDOW_GROWTH
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


JSON_READING = "JSON"
#: How a broken block's or a shape's text is read, in turn: JSON, JSON with raw control characters
#: in strings, then (``PYTHON_READING``) a Python literal. Objects keep their members as written (a
#: repeated key is the reading's business: see :func:`call_parts`).
READINGS = (
    (_pairs_decoder(strict=True), JSON_READING),
    (_pairs_decoder(strict=False), "JSON with raw control characters in strings"),
)
PYTHON_READING = "a Python literal"


def decode_objects(body: str) -> tuple[list[tuple[int, Any]], str] | None:
    """The JSON (or Python-literal) values ``body`` holds, each with where it starts, and how they
    were read; None if it holds none, or anything else. Their objects are :class:`_Members`."""
    for decoder, how in READINGS:
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
    return ([(lead, value)], PYTHON_READING) if nesting(value) <= MAX_DEPTH else None


#: What a call's name may be where nothing but the object says it is a call: no blank, quote,
#: bracket or markup.
CALL_NAME = re.compile(r"[\w.:/\-]{1,256}")
#: A repair or a problem found reading a call object: (issue kind, message, text the issue keeps).
Repair = tuple["IssueKind", str, "str | None"]


@dataclass(frozen=True)
class Keys:
    """The keys of a call object: its name's, and its arguments' (the first the one the renderer
    writes, the others aliases a model may write, each reported: ``parameters_key``)."""

    name: str
    arguments: tuple[str, ...]
    #: The key a call object writes its id under (after its arguments, Mistral's ``id``), or "" for none.
    id: str = ""

    @property
    def all(self) -> frozenset[str]:
        """The keys of a call object that needs no wrapper to be read as one."""
        return frozenset({self.name, *self.arguments})

    # The messages of the issues a call object's members raise, whichever path reads them.
    def name_repeated(self, kept: str) -> str:
        return f"{json.dumps(self.name)} repeated; {kept!r} is kept"

    @property
    def arguments_twice(self) -> str:
        return f"{self.arguments[0]} given twice; merged"

    def alias(self, key: str) -> str:
        return f"{key!r} used for {self.arguments[0]!r}"

    @property
    def arguments_string(self) -> str:
        return f"{self.arguments[0]} given as a JSON string, decoded"


UNUSED_KEY = "key {key!r} in a tool call object is not used"
SEVERAL_OBJECTS = "several call objects in one {opener} block"  # the call opener
KEY_REPEATED = "key {key!r} repeated; the last value is kept"  # as LiteralHandlers.mapping says it
ARGUMENT_REPEATED = "argument {key!r} repeated; the first value is kept"  # as CallWriter.argument says it


def name_text(value: Any) -> str:
    """The text a repeated ``name`` is reported with: a string as it is, another value as JSON."""
    return value if isinstance(value, str) else json_text(value)


def members_of(value: dict[str, Any]) -> list[tuple[str, Any]]:
    return value.pairs if isinstance(value, _Members) else list(value.items())


def plain(value: Any, repairs: list[Repair]) -> Any:
    """A decoded value with plain dicts for its objects: a key an object repeats keeps its last
    value and is reported (``duplicate_key``), after what its values raised, as the grammar's
    ``object`` rule does."""
    if isinstance(value, str):
        return whole_characters(value, repairs)
    if isinstance(value, list):
        return [plain(item, repairs) for item in value]
    if not isinstance(value, dict):
        return value
    members = []
    for key, item in members_of(value):  # a member's value is read before its key, as the rules reduce them
        item = plain(item, repairs)
        members.append((whole_characters(key, repairs), item))
    out: dict[str, Any] = {}
    for key, item in members:
        if key in out:  # the value dropped is the issue's text
            repairs.append(("duplicate_key", KEY_REPEATED.format(key=key), json_text({key: out[key]})))
        out[key] = item
    return out


def add_arguments(arguments: dict[str, Any], members: dict[str, Any], repairs: list[Repair]) -> None:
    """Add an arguments object's members to ``arguments``: an argument given twice keeps its first
    value and is reported with the other (``duplicate_argument``), as a call's writer does."""
    for key, value in members_of(members):
        value = plain(value, repairs)
        key = whole_characters(key, repairs)
        if key in arguments:
            repairs.append(("duplicate_argument", ARGUMENT_REPEATED.format(key=key), json_text(value)))
        else:
            arguments[key] = value


def written(value: Any) -> str:
    """The JSON text of a decoded value, its objects' members as written (a repeated key too)."""
    if isinstance(value, list):
        return "[" + ", ".join(map(written, value)) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{written(key)}: {written(item)}" for key, item in members_of(value)) + "}"
    if isinstance(value, str) and _SURROGATE.search(value) is not None:
        value = value.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")  # pairs joined
        if _SURROGATE.search(value) is not None:
            return json.dumps(value)  # a lone surrogate as its escape: no text may hold one
    return json_text(value)


def arguments_text(text: str) -> Any:
    """The value an arguments string holds: JSON, else a Python literal (objects as :class:`_Members`;
    a blank string is no arguments); ValueError if it holds neither."""
    if not text.strip():
        return _members([])
    try:
        value, end = raw_decode(READINGS[0][0], text, len(text) - len(text.lstrip()))
        if not text[end:].strip():
            return value
    except (ValueError, RecursionError):
        pass
    return python_literal(text, object_pairs_hook=_members)


def call_parts(obj: Any, keys: Keys, *, strict: bool = False) -> tuple[str, dict[str, Any], list[Repair]] | None:
    """(name, arguments, repairs) of a decoded call object, or None if it is not one.

    Its members are read in order as the grammar's rules read them, with the same repairs in the
    same order (those before the name once it has come: an object without one is no call, and
    its text is reported whole): the first name (``keys.name``: ``name``) is the call's; the
    arguments objects (``keys.arguments``: ``arguments``, ``parameters``) are merged (one given as
    a string is decoded), the first value of an argument given twice kept; other keys are
    reported with their text. Inside a call's markers an object with a string name is a call.
    ``strict`` is for objects that only their shape makes calls (a bare reply, a fence, another
    tag): the keys are the name's and one of the arguments', the name looks like a function's,
    and an arguments object that is a JSON schema makes a tool declaration, not a call.
    """
    if not isinstance(obj, dict):
        return None
    members = members_of(obj)
    if strict:
        found = {key for key, _ in members}
        if not found <= keys.all or len(found) != 2 or keys.name not in found:
            return None
        if any(key != keys.name and _is_schema(value) for key, value in members):
            return None
    name: str | None = None
    arguments: dict[str, Any] = {}
    given = 0  # arguments members so far
    repairs: list[Repair] = []
    pending: list[Repair] = []  # before the name
    for key, value in members:
        out = repairs if name is not None else pending
        if key == keys.name:
            value = plain(value, out)
            if name is not None:
                repairs.append(("duplicate_key", keys.name_repeated(name), name_text(value)))
                continue
            if not isinstance(value, str) or not value.strip():  # no name, or an empty one: no call
                return None
            name = value
            repairs += pending
        elif key in keys.arguments:
            given += 1
            heading: list[Repair] = [("duplicate_key", keys.arguments_twice, None)] if given > 1 else []
            if key != keys.arguments[0]:
                heading.append(("parameters_key", keys.alias(key), None))
            if isinstance(value, dict):  # reported once the object is read, as its rule is reduced
                add_arguments(arguments, value, out)
                out += heading
            elif isinstance(value, str):
                out += heading
                try:
                    decoded = arguments_text(value)
                except ValueError:
                    return None
                if not isinstance(decoded, dict):
                    return None
                out.append(("arguments_as_string", keys.arguments_string, None))
                add_arguments(arguments, decoded, out)
            elif value is None and not strict:  # no arguments (a reading the grammar leaves to a repair)
                out += heading
            else:
                return None
        elif key == keys.id and keys.id and isinstance(value, str):
            continue  # the call's id as the reply writes it: markup, as the grammar's id_member reads it
        else:
            value = plain(value, out)
            key = whole_characters(key, out)
            out.append(("unexpected_key", UNUSED_KEY.format(key=key), json_text({key: value})))
    if name is None or (strict and not CALL_NAME.fullmatch(name)):
        return None
    return name, arguments, repairs


def _is_schema(value: Any) -> bool:
    """Whether ``value`` reads as a tool's parameters schema (``{"type": "object", "properties": ...}``)."""
    return isinstance(value, dict) and value.get("type") == "object" and isinstance(value.get("properties"), dict)


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
    return None if may_hold_surrogates(text, pos, end) else (value, end)


def may_hold_surrogates(text: str, pos: int, end: int) -> bool:
    """Whether JSON text ``text[pos:end]`` may decode to a lone surrogate: the grammar's rules
    then read it (and report one)."""
    return text.find("\\u", pos, end) >= 0 and _SURROGATE_ESCAPE.search(text, pos, end) is not None
