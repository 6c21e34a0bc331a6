"""Converting conversations from one format to another, record by record: what ``codec convert`` does.

A record is a JSON object of one of two shapes:

* a rendered conversation ``{"text": ...}``, decoded with the source format;
* a messages record ``{"messages": [...], "tools": [...]}``, with optional ``add_generation_prompt``
  and ``variables``: the shape ``codec render`` reads and ``codec decode`` writes.

Its conversation is rendered with the target format and written as ``{"text": ...}`` (or, with
``output="messages"``, as its messages record), and the record's other keys (ids, metadata) are
kept as they are. :func:`convert_record` converts one record and raises for one that cannot be
converted; :func:`convert_lines` converts a JSON-lines stream and never stops at a bad line: each
record gives a :class:`Converted` or a :class:`Rejected`, in order.

The record-reading pieces outside :data:`__all__` (:func:`record_conversation`, :func:`decoded`,
:func:`messages_record`...) serve the ``codec`` command too: ``render`` and ``decode`` read and write
the same records.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

from pydantic import BaseModel, ValidationError

from codec.errors import CodecError, ParseError
from codec.format import Format
from codec.literals import JSON_DECODER
from codec.models import Message, Tool

__all__ = ["Converted", "MissingSource", "RecordError", "Rejected", "convert_lines", "convert_record"]

#: What a conversion writes: the rendered text, or the decoded conversation's messages record.
Output = Literal["text", "messages"]
#: Keys of a record that hold the conversation; every other key is copied to the output record.
CONVERSATION_KEYS = frozenset({"text", "messages", "tools", "add_generation_prompt", "variables"})
#: Parameters of :meth:`Format.render` that a template variable must not shadow.
RESERVED_VARIABLES = frozenset({"self", "messages", "tools", "add_generation_prompt", "template"})
#: What ``bytes.strip()`` strips: a line of nothing else holds no record.
_BLANKS = " \t\n\r\x0b\x0c"
#: The deepest nesting of lists and objects a JSON input may have. Deeper input is refused when it
#: is read, not met later as a RecursionError: the renderers (gemma4's recurses thrice a level),
#: the grammar export and the parsers all stay far from Python's recursion limit at this depth.
MAX_JSON_DEPTH = 128
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


class RecordError(CodecError, ValueError):
    """A record that is not a conversation, or not a rendering of the source format; the message says why."""


class MissingSource(RecordError):
    """A rendered conversation (``{"text": ...}``) to convert, and no source format to decode it with."""

    def __init__(self, message: str = 'a "text" record needs a source format to decode it with') -> None:
        super().__init__(message)


# ---------------------------------------------------------------------------- reading records


class RenderInput(NamedTuple):
    """What :meth:`Format.render` takes, read from a record (messages and tools as the record gives them)."""

    messages: list[Any]
    tools: list[Any] | None
    add_generation_prompt: bool
    variables: dict[str, Any]


def json_type(value: Any) -> str:
    """How a message names the JSON type of ``value``: ``null``, ``a string``, ``an object``..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    return "an object"


def _where(prefix: str, loc: Sequence[int | str]) -> str:
    return prefix + "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in loc)


class NotJSON(RecordError):
    """Text that is not a JSON value: bad syntax, NaN or Infinity, a number out of range."""


def read_json(text: str, source: str | None = None) -> Any:
    """The JSON value of ``text``, checked as :func:`checked_json` checks it. Raises :class:`NotJSON`
    for text that is not JSON and :class:`RecordError` for JSON that nests too deeply or holds a lone
    surrogate, with ``source`` (a file name, ``--var NAME``...) first in the message when given."""
    prefix = f"{source}: " if source else ""
    try:
        value = JSON_DECODER.decode(text)
    except RecursionError:  # far deeper than MAX_JSON_DEPTH
        raise RecordError(f"{prefix}JSON nested more than {MAX_JSON_DEPTH} levels deep") from None
    except json.JSONDecodeError as exc:
        raise NotJSON(f"{prefix}invalid JSON: {exc}") from None
    except ValueError as exc:  # NaN, a number out of range, an integer of more digits than Python reads
        raise NotJSON(f"{prefix}invalid JSON: {str(exc).partition(';')[0]}") from None
    return checked_json(value, source, text)


def checked_json(value: Any, source: str | None = None, text: str | None = None) -> Any:
    """``value``, checked to be JSON every part of codec can work with: nested at most
    :data:`MAX_JSON_DEPTH` levels, and with no lone surrogate (which no UTF-8 output can hold) in a
    string or a key; :class:`RecordError` naming ``source`` and where in ``value`` if not. ``text``,
    the JSON it was read from, spares the walk through ``value`` when it cannot hold either."""
    prefix = f"{source}: " if source else ""
    may_nest = text is None or text.count("[") + text.count("{") > MAX_JSON_DEPTH
    if may_nest and _nests_deeper(value, MAX_JSON_DEPTH):
        raise RecordError(f"{prefix}JSON nested more than {MAX_JSON_DEPTH} levels deep")
    if text is None or _may_hold_surrogate(text):
        found = _surrogate_at(value)
        if found is not None:
            char, loc, in_key = found
            where = _where("", loc).lstrip(".")
            what = ("a key" if in_key else "a string") + (f" at {where}" if where else "")
            raise RecordError(f"{prefix}{what} holds {lone_surrogate(char)}, which is no text UTF-8 can write")
    return value


def _nests_deeper(value: Any, limit: int) -> bool:
    """Whether ``value`` nests lists and objects more than ``limit`` levels deep: a level at a time,
    looking at each container once, and no further than ``limit + 1`` levels."""
    level = [value] if isinstance(value, (dict, list)) else []
    for _ in range(limit):
        level = [
            child
            for item in level
            for child in (item.values() if isinstance(item, dict) else item)
            if isinstance(child, (dict, list))
        ]
        if not level:
            return False
    return True


def _may_hold_surrogate(text: str) -> bool:
    """Whether JSON ``text`` may decode to a lone surrogate: it has a \\uD800-\\uDFFF escape (half a
    pair, or a pair), or holds one itself (text that did not come from UTF-8)."""
    if "\\u" in text and _SURROGATE_ESCAPE.search(text):
        return True
    if text.isascii():
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def lone_surrogate(char: str) -> str:
    """How a message names a lone surrogate (half of a UTF-16 pair: no character)."""
    return f"a lone surrogate (\\u{ord(char):04x})"


def _surrogate_at(value: Any) -> tuple[str, tuple[int | str, ...], bool] | None:
    """The first lone surrogate in ``value``'s strings and keys, where it is, and whether in a key."""
    stack: list[tuple[Any, tuple[int | str, ...], bool]] = [(value, (), False)]
    while stack:
        item, loc, is_key = stack.pop()
        if isinstance(item, str):
            found = _LONE_SURROGATE.search(item)
            if found is not None:
                return found.group(), loc, is_key
        elif isinstance(item, dict):  # pushed in reverse, popped in order: a key before its value
            for key, child in reversed(item.items()):
                stack += [(child, (*loc, key), False), (key, loc, True)]
        elif isinstance(item, list):
            stack += [(child, (*loc, i), False) for i, child in reversed(list(enumerate(item)))]
    return None


def validation_line(exc: ValidationError, prefix: str) -> str:
    """A pydantic error as one line: the first problem, with its location, and how many more there are."""
    errors = exc.errors()
    if not errors:
        return f"{prefix}: invalid"
    first = errors[0]
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{_where(prefix, first['loc'])}: {first['msg']}{more}"


def checked_items(items: Any, model: type[BaseModel], what: str, source: str) -> list[dict[str, Any]]:
    """``items``, checked to be a list of objects that ``model`` accepts; :class:`RecordError` if not.

    The original dicts are passed on (not the models' dumps) so that key order and extra keys
    reach the renderer exactly as written. ``what`` and ``source`` name them in the error.
    """
    if not isinstance(items, list):
        raise RecordError(f"{source}: {what} must be a JSON list, not {json_type(items)}")
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise RecordError(f"{source}: {what}[{i}] must be a JSON object, not {json_type(item)}")
        try:
            model.model_validate(item)
        except ValidationError as exc:
            raise RecordError(f"{source}: {validation_line(exc, f'{what}[{i}]')}") from None
    return items


def record_conversation(data: Mapping[str, Any], source: str) -> RenderInput:
    """The conversation of a messages record ``{"messages": [...], "tools": [...]}``, with the optional
    ``add_generation_prompt`` and ``variables``; :class:`RecordError` naming ``source`` if it is none.

    Other keys (model, temperature...) are ignored, so a chat-completions request body works as is.
    """
    if "messages" not in data:
        raise RecordError(f'{source}: expected a list of messages or an object with a "messages" key')
    messages = checked_items(data["messages"], Message, "messages", source)
    tools = checked_items(data["tools"], Tool, "tools", source) if data.get("tools") is not None else None
    agp = data.get("add_generation_prompt", False)
    if not isinstance(agp, bool):
        raise RecordError(f"{source}: add_generation_prompt must be true or false, not {json_type(agp)}")
    variables = data.get("variables") or {}
    if not isinstance(variables, dict):
        raise RecordError(f"{source}: variables must be a JSON object, not {json_type(variables)}")
    for key in variables:
        if key in RESERVED_VARIABLES:
            raise RecordError(f"{source}: variable name {key!r} is reserved")
    return RenderInput(messages, tools, agp, dict(variables))


def decoded(fmt: Format, prompt: str, source: str) -> RenderInput:
    """The conversation ``prompt`` renders in ``fmt``; :class:`RecordError` (naming ``source``, with the
    line and column where it stops matching) for text that is not a rendering of ``fmt``."""
    try:
        c = fmt.decode(prompt)
    except ParseError as exc:
        where = f"line {exc.line}, column {exc.column} (offset {exc.pos})"
        raise RecordError(f"{source}: {exc.message} at {where}") from exc
    return RenderInput(c.messages, c.tools, c.add_generation_prompt, c.variables)


def messages_record(conversation: RenderInput) -> dict[str, Any]:
    """A conversation as the messages record ``codec render`` reads. Call arguments stay JSON objects
    (an ``arguments`` string renders differently), so rendering the record gives the prompt back exactly."""
    messages, tools, add_generation_prompt, variables = conversation

    def plain(item: Any) -> Any:
        return item.model_dump(mode="python") if isinstance(item, BaseModel) else item

    data: dict[str, Any] = {"messages": [plain(m) for m in messages]}
    if tools is not None:
        data["tools"] = [plain(t) for t in tools]
    data["add_generation_prompt"] = add_generation_prompt
    data["variables"] = variables
    return data


# ---------------------------------------------------------------------------- converting


def _check_options(to: Format | None, output: Output) -> None:
    """Options that cannot convert any record: a ValueError before the first one is read."""
    if output not in ("text", "messages"):
        raise ValueError(f"output must be 'text' or 'messages', not {output!r}")
    if output == "text" and to is None:
        raise ValueError("to= is required to render the records (or output='messages' to write them decoded)")
    if output == "messages" and to is not None:
        raise ValueError("to= is not used with output='messages', which writes the decoded conversations")


def _conversation(record: Mapping[str, Any], source: Format | None) -> RenderInput:
    if "text" in record and "messages" in record:
        raise RecordError('a record holds either "text" or "messages", not both')
    if "messages" in record:
        return record_conversation(record, "record")
    if "text" not in record:
        raise RecordError('a record must have a "text" or a "messages" key')
    text = record["text"]
    if not isinstance(text, str):
        raise RecordError(f'"text" must be a string, not {json_type(text)}')
    if source is None:
        raise MissingSource
    return decoded(source, text, "text")


def convert_record(
    record: Mapping[str, Any],
    *,
    to: Format | None = None,
    source: Format | None = None,
    output: Output = "text",
    variables: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The record ``record`` converts to: its other keys, then ``"text"`` (rendered with ``to``) or, with
    ``output="messages"``, its conversation as a messages record (``to`` is then not given).

    A ``{"text": ...}`` record is decoded with ``source``. ``variables`` are template variables
    for the render, over the record's own. Raises :class:`RecordError` for a record that is not a
    conversation or not a rendering of ``source`` (:class:`MissingSource` without one),
    :class:`~codec.errors.RenderError` where the target's template refuses the conversation, and
    ValueError for options that convert nothing.
    """
    _check_options(to, output)
    if not isinstance(record, Mapping):
        raise RecordError(f'a record must be a JSON object with "text" or "messages", not {json_type(record)}')
    conversation = _conversation(record, source)
    kept = {key: value for key, value in record.items() if key not in CONVERSATION_KEYS}
    if output == "messages":
        return {**kept, **messages_record(conversation)}
    assert to is not None  # _check_options
    messages, tools, add_generation_prompt, own_variables = conversation
    text = to.render(
        messages, tools, add_generation_prompt=add_generation_prompt, **{**own_variables, **(variables or {})}
    )
    return {**kept, "text": text}


@dataclass(frozen=True, slots=True)
class Converted:
    """A line converted: its number (1-based, blank lines counted) and the record it converts to."""

    line: int
    record: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Rejected:
    """A line that cannot be converted: its number, its text (without its line break) and why."""

    line: int
    input: str
    error: Exception

    @property
    def reason(self) -> str:
        """Why, in one line."""
        error = self.error
        if isinstance(error, CodecError):
            return (str(error).splitlines() or [""])[0]
        if isinstance(error, (ValueError, TypeError, RecursionError)):
            return f"invalid input: {type(error).__name__}: {error}"
        return f"internal error: {type(error).__name__}: {error} (please report this)"


def is_blank(line: str | bytes) -> bool:
    """Whether ``line`` holds no record: nothing but ASCII blanks (as ``bytes.strip()`` sees them)."""
    return not (line.strip() if isinstance(line, bytes) else line.strip(_BLANKS))


def _line_record(line: str | bytes) -> Any:
    """The JSON value of one line (UTF-8 if bytes); :class:`RecordError` if it is not JSON that
    :func:`read_json` accepts."""
    if isinstance(line, bytes):
        try:
            line = line.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise RecordError(f"not valid UTF-8 ({exc.reason} at byte {exc.start})") from None
    return read_json(line)


def convert_lines(
    lines: Iterable[str | bytes],
    *,
    to: Format | None = None,
    source: Format | None = None,
    output: Output = "text",
    variables: Mapping[str, Any] | None = None,
    start: int = 1,
) -> Iterator[Converted | Rejected]:
    """Each line of a JSON-lines stream converted as :func:`convert_record` converts its record, in order,
    read as they are needed: a :class:`Converted` or a :class:`Rejected` per line that is not blank.

    Lines are text or UTF-8 bytes, with or without their line breaks, numbered from ``start``. A
    line that cannot be converted is rejected with its error (whatever it is: one bad record never
    stops a dataset) and the next line is read. Options that convert nothing raise ValueError here,
    before any line is read.
    """
    _check_options(to, output)
    return _converted_lines(lines, to, source, output, variables, start)


def _converted_lines(
    lines: Iterable[str | bytes],
    to: Format | None,
    source: Format | None,
    output: Output,
    variables: Mapping[str, Any] | None,
    start: int,
) -> Iterator[Converted | Rejected]:
    for number, line in enumerate(lines, start):
        if is_blank(line):
            continue
        outcome: Converted | Rejected
        try:
            record = _line_record(line)
            outcome = Converted(
                number, convert_record(record, to=to, source=source, output=output, variables=variables)
            )
        except Exception as exc:  # kept, not swallowed: Rejected.reason says what it was (a bug: "internal error")
            text = line.decode("utf-8", errors="replace") if isinstance(line, bytes) else line
            outcome = Rejected(number, text.rstrip("\r\n"), exc)
        yield outcome
