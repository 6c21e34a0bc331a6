"""Reading the values of a call list (the ``call_list`` family), where the rules and the fast paths agree.

Numbers a float cannot hold or written with leading zeros, strings that escape surrogates or hold
raw control characters, JSON containers decoded in a window: each read one way, here, by the
builder's rules and the fast lexers alike (and by the other families that read Python-style
values: ``gemma4``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from codec.literals import json_value, number_literal, python_literal
from codec.schema import declared_types
from codec.sink import Sink

__all__ = [
    "SURROGATE",
    "SURROGATE_ESCAPE",
    "checked_string",
    "fitting_number",
    "leading_zeros",
    "out_of_range",
    "padded",
    "quoted_string_value",
    "raw_controls_string_value",
    "raw_decode_from",
    "resolve_padded",
]


def fitting_number(text: str) -> int | float | None:
    """The value of a number literal, or None where a float cannot hold it: it overflows to
    infinity (``1e999``), or a number that is not zero underflows to zero (``1e-400``)."""
    try:
        value = number_literal(text)
    except ValueError:
        return None
    if value == 0 and isinstance(value, float) and any(digit in "123456789" for digit in re.split("[eE]", text)[0]):
        return None
    return value


#: A number whose integer part starts with a zero and goes on (``02134``, ``-007``, ``00.5``).
_LEADING_ZEROS = re.compile(r"[-+]?0[0-9]")


def leading_zeros(text: str) -> bool:
    """Whether the number literal ``text`` has leading zeros, which neither JSON nor Python reads
    (a zip code, a phone number, an id written as digits: the zeros are the value's own)."""
    return _LEADING_ZEROS.match(text) is not None


class _Padded:
    """A number written with leading zeros, until the argument it is in says how it reads."""

    __slots__ = ("pos", "text", "value")

    def __init__(self, text: str, pos: int, value: int | float | None) -> None:
        self.text, self.pos, self.value = text, pos, value  # value None: no float holds it


def padded(text: str, pos: int) -> _Padded:
    """The number ``text`` with leading zeros (see :func:`leading_zeros`), written at ``pos``."""
    return _Padded(text, pos, fitting_number(text.lstrip("+")))


def out_of_range(sink: Sink, text: str, pos: int) -> str:
    """The number ``text`` (written at ``pos``) that no float holds, as its text, reported
    (``number_out_of_range``)."""
    message = f"the number {text} does not fit a float: kept as the string {text!r}"
    sink.issue("number_out_of_range", message, pos, text)
    return text


def resolve_padded(sink: Sink, name: str | None, key: str, value: Any) -> Any:
    """``value``, an argument ``key`` of the call ``name`` that holds numbers written with leading
    zeros: each reads as the number its digits give (``07`` is 7, as models mean a zero-padded month),
    or, as the whole value of a parameter the tools declare a string and not a number, as its text
    (``zip=02134`` is ``"02134"``); each reported (``leading_zeros``)."""
    if isinstance(value, _Padded):
        if value.value is None:  # both reported, the text kept: there is no number to read
            message = f"the number {value.text} has leading zeros, and no float holds it"
            sink.issue("leading_zeros", message, value.pos, value.text)
            return out_of_range(sink, value.text, value.pos)
        schema = sink.tool_schema(name) if name is not None else None
        properties = schema.get("properties") if isinstance(schema, Mapping) else None
        types = declared_types(properties.get(key)) if isinstance(properties, Mapping) else []
        if "string" in types and "integer" not in types and "number" not in types:
            kept = f"kept as the string {value.text!r} (the tool declares a string)"
            sink.issue("leading_zeros", f"the number {value.text} has leading zeros: {kept}", value.pos, value.text)
            return value.text
        read = f"read as {value.value!r}"
        sink.issue(
            "leading_zeros",
            f"the number {value.text} has leading zeros, which JSON does not read: {read}",
            value.pos,
            value.text,
        )
        return value.value
    if isinstance(value, list):
        return [resolve_padded(sink, None, "", item) for item in value]
    if isinstance(value, dict):
        return {k: resolve_padded(sink, None, "", item) for k, item in value.items()}
    return value


#: A surrogate code point: half of a character written as two ``\\uXXXX`` escapes (JSON's way).
SURROGATE = re.compile("[\ud800-\udfff]")
#: The escape of one, in a string's text.
SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def checked_string(sink: Sink, value: str, text: str, pos: int) -> str:
    """``value``, a string decoded from ``text`` (written at ``pos``), with no surrogate code point
    left in it (no UTF-8 or JSON encoder takes one): a pair, as a Python literal decodes it, joined
    into the character it escapes (``surrogate_pair``), a lone one replaced with U+FFFD
    (``lone_surrogate``), each reported once per string."""
    if "\\" not in text or SURROGATE.search(value) is None:
        return value
    joined = value.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    escape = SURROGATE_ESCAPE.search(text)
    shown = escape.group() if escape is not None else None
    if joined.count("\ufffd") > value.count("\ufffd"):
        message = "a string escapes half of a character (a lone surrogate): replaced with U+FFFD"
        sink.issue("lone_surrogate", message, pos, shown)
    else:
        message = "a string escapes a character as a surrogate pair (JSON's way) in a Python string: joined"
        sink.issue("surrogate_pair", message, pos, shown)
    return joined


#: The text a JSON value is first decoded in (doubled while the value may run past it).
_JSON_WINDOW = 512
#: How far before a window's end a decoder's error or end may be one the text past it would change
#: (a number or keyword cut short, an escape cut in two).
_JSON_MARGIN = 32


def raw_decode_from(decoder: json.JSONDecoder, text: str, pos: int) -> tuple[Any, int]:
    """``decoder.raw_decode(text, pos)``, handing the decoder no more text than the value needs.

    A failed decode costs what it read, not the text before it (``json`` counts the lines of the
    whole document up to an error) nor the text after it (a slice to the end): the value is decoded
    in a window from ``pos``, doubled while its error or its end lies near the window's end or a
    string runs past it. Raises ``ValueError`` as ``raw_decode`` does (positions in the window).
    """
    size = _JSON_WINDOW
    while True:
        cut = pos + size < len(text)
        window = text[pos : pos + size]
        try:
            value, end = decoder.raw_decode(window)
        except json.JSONDecodeError as exc:
            if cut and (exc.pos >= len(window) - _JSON_MARGIN or exc.msg.startswith("Unterminated")):
                size *= 2
                continue
            raise
        if cut and end >= len(window) - _JSON_MARGIN:
            size *= 2
            continue
        return value, pos + end


def quoted_string_value(text: str) -> str:
    """The value of a quoted string, as Python or JSON reads it (JSON first: it is what the templates write)."""
    try:
        value = json_value(text) if text.startswith('"') else python_literal(text)
    except ValueError:
        value = python_literal(text)
    if not isinstance(value, str):
        raise ValueError("not a string")
    return value


#: Characters neither a JSON string nor (line breaks, NUL) a one-line Python string may hold raw.
_CONTROL = re.compile(r"[\x00-\x1f]")


def raw_controls_string_value(text: str) -> str | None:
    """The value of a quoted string that holds raw control characters (a raw line break), read with
    them kept as they are; None where the string reads without that or does not read even so."""
    if _CONTROL.search(text) is None:
        return None
    try:
        return quoted_string_value(_CONTROL.sub(lambda m: f"\\u{ord(m.group()):04x}", text))
    except ValueError:
        return None
