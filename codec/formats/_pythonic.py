"""Reading call lists back from prompts, exactly: what the decoders of the Python-list formats
(``gemma3_tool_code``, ``deepseek_pythonic``) share.

Their reply side is the ``call_list`` wire family's (``codec/wire/call_list.py``); the value
readers it shares with other families' reply sides live there too, and are named here as well
for the modules that read them from here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from codec import jinja
from codec.errors import parse_error_at
from codec.formats._decode import call_id
from codec.formats._reading import Readings, find_all
from codec.models import FunctionCall, ToolCall
from codec.wire._call_list_values import raw_decode_from

__all__ = [
    "CallListSyntax",
    "ReadCall",
    "ValueReadings",
    "decoded_call",
    "decoded_tool",
    "json_readings",
    "raw_string_readings",
    "read_call_list",
]


# --------------------------------------------------------------------------- exact call lists
#
# A prompt's call lists must be read back exactly: the reading has to render to the same text.
# Both templates write values that a greedy reader can misread (Gemma 3 runs keyword arguments
# together, DeepSeek leaves quotes in strings unescaped), so the reader tries each way a value may
# end, preferred one first, and keeps the first reading of the whole list that fits.

#: The readings of the value written at an offset: ``(value, end)`` pairs, the preferred one first.
ValueReadings = Callable[[str, int], Readings[Any]]
#: A call read back: its name and its arguments (keyword arguments, or positional values).
ReadCall = tuple[str, dict[str, Any] | list[Any]]

_JSON_READER = json.JSONDecoder()
_JSON_NUMBER = re.compile(r"(?P<int>-?(?:0|[1-9]\d*))(?P<frac>\.\d+)?(?P<exp>[eE][-+]?\d+)?")


def json_readings(text: str, pos: int, *, shorter_numbers: bool = False) -> Readings[Any]:
    """The JSON value at ``pos``, when ``tojson`` writes it exactly so; then, with ``shorter_numbers``,
    the shorter numbers it starts with (``1`` of ``1e5``: a key ``e5`` may follow an unseparated ``1``).
    """
    try:
        value, end = raw_decode_from(_JSON_READER, text, pos)
    except (ValueError, RecursionError):
        end = pos
    else:
        if jinja.tojson(value) == text[pos:end]:
            yield value, end
    match = _JSON_NUMBER.match(text, pos) if shorter_numbers else None
    if match is None:
        return
    for cut in sorted({match.end("int"), match.end("frac") if match["frac"] else pos}, reverse=True):
        if pos < cut < end:
            number = json.loads(text[pos:cut])
            if jinja.tojson(number) == text[pos:cut]:
                yield number, cut


def raw_string_readings(text: str, pos: int) -> Readings[str]:
    """A string written ``"`` + value + ``"`` with nothing escaped: each closing quote that ``, `` or
    ``)`` follows, the nearest first (the value itself may hold quotes).
    """
    if not text.startswith('"', pos):
        return
    for close in find_all(text, pos + 1, ('"',)):
        if text.startswith((", ", ")"), close + 1):
            yield text[pos + 1 : close], close + 1


@dataclass(frozen=True)
class CallListSyntax:
    """How a template writes a call list ``[name(key=value...), ...]``."""

    #: Between two calls.
    call_separator: str
    #: Between two keyword arguments (Gemma 3's seed writes none).
    argument_separator: str
    read_value: ValueReadings
    #: Whether a call may hold positional values, joined by ``", "`` (Gemma 3 iterates string arguments).
    positional: bool = False


def read_call_list(text: str, syntax: CallListSyntax) -> list[ReadCall] | None:
    """``text``, exactly ``[call, ...]`` as ``syntax`` writes it, read back; ``None`` if it is not one.

    Names run to their first ``(`` and keys to their first ``=`` (a key holding ``"``, ``(``, ``)`` or ``,``
    is not read: those are the list's own syntax). Where values can end in several
    places, the first reading of the whole list in the order :attr:`CallListSyntax.read_value`
    gives them wins; a reading that repeats a key is no reading (a dict cannot write it twice).
    """
    if len(text) < 2 or text[0] != "[" or text[-1] != "]":
        return None
    if text == "[]":
        return []
    try:
        return _ExactCallListReader(text, syntax).calls(1)
    except RecursionError:  # thousands of arguments: not a list this reader can follow
        return None


#: Characters no key is read to hold, though a template writes any key: they are the list's own
#: syntax, so a key spanning them (`p", q` in `a="p", q=2`) is a misreading.
_NOT_IN_KEYS = ('"', "(", ")", ",")
_Args = tuple[list[Any], list[ReadCall]]  # what a call's remaining arguments read as, and the calls after it


@dataclass
class _ExactCallListReader:
    """Backtracking reader of one call list; every state is memoized by its offset, so each is read once.

    Only the first reading of the rest from an offset matters here, which is what makes the memo
    possible: :meth:`codec.formats._reading.Reader.separated`, which gives every reading, would not.
    """

    text: str
    syntax: CallListSyntax
    _calls: dict[int, list[ReadCall] | None] = field(default_factory=dict)
    _keywords: dict[int, _Args | None] = field(default_factory=dict)
    _positionals: dict[int, _Args | None] = field(default_factory=dict)

    def calls(self, pos: int) -> list[ReadCall] | None:
        """The calls from ``pos`` (a call's name) to the closing ``]``."""
        if pos not in self._calls:
            self._calls[pos] = self._read_calls(pos)
        return self._calls[pos]

    def _read_calls(self, pos: int) -> list[ReadCall] | None:
        opening = self.text.find("(", pos, len(self.text) - 1)
        if opening < 0:
            return None
        name = self.text[pos:opening]
        if self.text.startswith(")", opening + 1) and (rest := self._after_call(opening + 2)) is not None:
            return [(name, {}), *rest]
        # Positional values first: a key may hold any text, so `f("{", "a"),g(b=1)` also reads as one
        # call with the key `"{", "a"),g(b`, but a value is never followed by `=`.
        positionals = self.positionals(opening + 1) if self.syntax.positional else None
        if positionals is not None:
            return [(name, positionals[0]), *positionals[1]]
        keywords = self.keywords(opening + 1)
        if keywords is not None:
            return [(name, dict(keywords[0])), *keywords[1]]
        return None

    def _after_call(self, pos: int) -> list[ReadCall] | None:
        """What follows a call's ``)``: the closing ``]``, or the separator and the next calls."""
        if pos == len(self.text) - 1:
            return []
        separator = self.syntax.call_separator
        return self.calls(pos + len(separator)) if self.text.startswith(separator, pos) else None

    def keywords(self, pos: int) -> _Args | None:
        """``key=value`` pairs from ``pos`` to the call's ``)``, and the calls after it."""
        if pos not in self._keywords:
            self._keywords[pos] = self._read_keywords(pos)
        return self._keywords[pos]

    def _read_keywords(self, pos: int) -> _Args | None:
        text, separator = self.text, self.syntax.argument_separator
        equals = text.find("=", pos, len(text) - 1)
        if equals < 0:
            return None
        key = text[pos:equals]
        if any(mark in key for mark in _NOT_IN_KEYS):
            return None
        for value, end in self.syntax.read_value(text, equals + 1):
            if text.startswith(")", end) and (rest := self._after_call(end + 1)) is not None:
                return [(key, value)], rest
            if text.startswith(separator, end):
                more = self.keywords(end + len(separator))
                if more is not None and all(key != other for other, _ in more[0]):
                    return [(key, value), *more[0]], more[1]
        return None

    def positionals(self, pos: int) -> _Args | None:
        """Values joined by ``", "`` from ``pos`` to the call's ``)``, and the calls after it."""
        if pos not in self._positionals:
            self._positionals[pos] = self._read_positionals(pos)
        return self._positionals[pos]

    def _read_positionals(self, pos: int) -> _Args | None:
        for value, end in self.syntax.read_value(self.text, pos):
            if self.text.startswith(")", end) and (rest := self._after_call(end + 1)) is not None:
                return [value], rest
            if self.text.startswith(", ", end) and (more := self.positionals(end + 2)) is not None:
                return [value, *more[0]], more[1]
        return None


def decoded_call(name: str, arguments: dict[str, Any] | list[Any] | str, index: int) -> ToolCall:
    """The tool call ``call_<index>`` (the prompts carry no ids) for a call read back from a prompt.

    Arguments that are not keyword arguments (Gemma 3 writes a string or a list as positional
    values) are kept as they are, without validation, so that the call renders the same again.
    """
    if isinstance(arguments, dict):
        function = FunctionCall(name=name, arguments=arguments)
    else:
        function = FunctionCall.model_construct(name=name, arguments=arguments)
    return ToolCall(id=call_id(index), function=function)


def decoded_tool(value: Any, text: str, pos: int) -> dict[str, Any]:
    """The tool whose JSON is ``value`` (read at ``pos`` of ``text``), as written; :class:`ParseError`
    unless it is a JSON object (the templates write each tool as given)."""
    if not isinstance(value, dict):
        raise parse_error_at(text, pos, "a tool in the tools block is not a JSON object")
    return value
