"""Reading a gemma4 prompt back into the conversation it renders (:func:`prompt_conversation`).

The renderer writes every text raw: a content, a description or a string value may hold
``<turn|>\\n``, ``<|"|>`` or any other marker, and then the prompt reads several ways. The reader
below tries the readings in a fixed order (a text ends at the first closer that lets the rest
read, a call's braces read as ``key:value`` pairs before raw text) and the first complete reading
that renders back to the prompt is the conversation: readings that render the same are told
apart by that order alone. What comes back, and what the template drops: README, "Decoding
prompts". The quirks named Q1... and the renderer's functions the docstrings name
(``format_value``, ``render_properties``, ``_property``...) are those of :mod:`codec.formats.gemma4`.

This module is loaded by :func:`codec.formats.gemma4.prompt_conversation` on first use.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from codec.format import PromptText
from codec.formats._decode import bos_token, call_id, rendering
from codec.formats._reading import Reader, Readings
from codec.formats.gemma4 import (
    CALL_CLOSE,
    CALL_OPEN,
    CHANNEL_CLOSE,
    CHANNEL_OPEN,
    DECLARATION_CLOSE,
    DECLARATION_OPEN,
    GENERATION_PROMPT,
    QUOTE,
    RESPONSE_CLOSE,
    RESPONSE_OPEN,
    THINK,
    THOUGHT_END,
    THOUGHT_OPEN,
    TURN_END,
    TURN_OPEN,
    prompt_text,
    quote_string,
)
from codec.literals import python_literal
from codec.models import Conversation, Function, FunctionCall, Message, Tool, ToolCall

# ---------------------------------------------------------------------------- the readings

_SYSTEM_HEADER = TURN_OPEN + "system\n"
_MEDIA_TOKENS = ("<|image|>", "<|audio|>", "<|video|>")
_MEDIA_TOKEN = re.compile("(" + "|".join(map(re.escape, _MEDIA_TOKENS)) + ")")
_SCALAR = re.compile(r"[^,}\]]*")
#: Complete readings of an ambiguous prompt rendered back before the first one is returned as is.
_MAX_READINGS = 16


@dataclass(frozen=True)
class PromptDialect:
    """What reading the prompts of a Gemma 4 template needs to know where they differ from the
    reference template's (:data:`REFERENCE`; the 31B templates: :mod:`codec.formats.gemma4_31b`)."""

    #: The format's name, for errors.
    name: str
    #: The template's renderer: a reading is the conversation when it renders back to the prompt.
    render: PromptText
    #: What the generation prompt may be (the first that renders back wins).
    generation_prompts: tuple[str, ...] = (GENERATION_PROMPT,)
    #: What closes a thought written back before calls (Q9; the interleaved template: ``<channel|>``).
    thought_end: str = THOUGHT_END
    #: The interleaved template's turns (:mod:`codec.formats.gemma4_31b_interleaved`, I2-I3): tool
    #: messages are ``<|turn>tool`` turns, every turn is closed but one that ends with its responses,
    #: and only a message with calls right after such a turn opens none.
    tool_turns: bool = False
    #: Declarations in the interleaved template's layout (I1: ``{,properties:{...}type:...}``).
    leading_commas: bool = False


#: The reference template's dialect.
REFERENCE = PromptDialect("gemma4", prompt_text)


@dataclass(frozen=True)
class _Span:
    """Where a string of a call or result lies in the prompt, taken once a whole reading is complete.

    A search tries a string's every possible close: what lies before each one is not copied.
    """

    start: int
    end: int


@dataclass(frozen=True)
class _Header:
    """The system turn the template opens for thinking, tools or a first system message."""

    thinking: bool
    system: str
    tools: tuple[dict[str, Any], ...]


@dataclass(frozen=True)
class _Gemma4Turn:
    """One non-tool message as the prompt shows it (assistant turns merged by Q7 are separate)."""

    role: str
    #: Where its text lies in the prompt: taken (:attr:`content`) once a whole reading is complete.
    span: tuple[int, int]
    #: What closed it: :data:`TURN_END`, :data:`RESPONSE_OPEN` (Q5), or ``""`` (answered calls, no content).
    end: str
    thought: str | _Span | None = None
    calls: tuple[tuple[str, dict[str, Any] | str | _Span], ...] = ()
    #: ``(name, the mapping between the braces)`` of each ``response:NAME{...}``.
    responses: tuple[tuple[str, dict[str, Any]], ...] = ()
    content: str = ""


def _scalar(token: str) -> tuple[Any] | None:
    """``(value,)`` for a scalar that :func:`format_value` writes as exactly ``token``, else ``None``."""
    if token in ("None", "true", "false"):
        return ({"None": None, "true": True, "false": False}[token],)
    try:
        number: float = int(token) if token.lstrip("-").isdigit() else float(token)
    except ValueError:  # not a number, or an int too long to convert
        return None
    if not math.isfinite(number) or str(number) != token:
        return None
    return (number,)


def _longest_scalar() -> int:
    """The longest scalar that reads back: an int of as many digits as Python converts, and its sign."""
    digits: int = getattr(sys, "get_int_max_str_digits", lambda: 0)()
    return digits + 1 if digits else sys.maxsize


def _sorted_mapping(pairs: tuple[tuple[str, Any], ...]) -> dict[str, Any] | None:
    """The mapping of ``pairs`` if :func:`dictsort` writes its keys in this order and none repeats."""
    keys = [key for key, _ in pairs]
    if len(set(keys)) != len(keys) or keys != sorted(keys, key=str.lower):
        return None
    return dict(pairs)


def _schema_type(text: str) -> str | list[str] | None:
    """A ``type`` back from its upper-cased text: ``None`` for none, a list from its Python repr (Q12)."""
    if not text:
        return None
    if text.startswith("["):
        try:
            kinds = python_literal(text.lower())
        except ValueError:
            return text.lower()
        if isinstance(kinds, list) and all(isinstance(kind, str) for kind in kinds):
            return kinds
    return text.lower()


def _lower_type(value: Any) -> Any:
    """An ``items`` schema's ``type``, written upper-cased (a string or a list of them), lower-cased back."""
    if isinstance(value, str):
        return value.lower()
    if isinstance(value, list):
        return [item.lower() if isinstance(item, str) else item for item in value]
    return value


class _PromptReader(Reader):
    """The readings of a gemma4 prompt, in order; where the deepest one failed, for the error."""

    refusal = "not a gemma4 prompt: no reading of it gets past here"
    gave_up = "; the search gave up there: the prompt reads too many ways to try them all"

    def __init__(self, text: str, dialect: PromptDialect = REFERENCE) -> None:
        super().__init__(text)
        self.dialect = dialect
        #: (offset, previous role) from which no reading of the turns reached the end.
        self._dead: set[tuple[int, str | None]] = set()

    # ------------------------------------------------------------------ primitives

    def _named(self, pos: int, head: str, expected: str) -> tuple[str, int] | None:
        """``head`` at ``pos``, then a name up to the next ``{``: (the name, the brace's offset)."""
        if not self.at(pos, head):
            return None
        brace = self.find(pos + len(head), "{")
        if brace < 0:
            self.fail(len(self.text), (expected,))
            return None
        return self.piece(pos + len(head), brace), brace

    # ------------------------------------------------------------------ values (Gemma notation)

    def _string(self, pos: int, follow: tuple[str, ...]) -> Readings[str]:
        """``<|"|>text<|"|>``, closed by a ``<|"|>`` that one of ``follow`` comes after (Q1)."""
        for span, after in self._string_span(pos, follow):
            yield self.piece(span.start, span.end), after

    def _string_span(self, pos: int, follow: tuple[str, ...]) -> Readings[_Span]:
        """Where the text of each reading of ``<|"|>text<|"|>`` lies (:meth:`_string`)."""
        if not self.at(pos, QUOTE):
            return
        start = pos + len(QUOTE)
        for close in self.find_all(start, (QUOTE,)):
            after = close + len(QUOTE)
            if self.starts(after, follow):
                yield _Span(start, close), after
            else:
                self.fail(after, follow)

    def _value(self, pos: int, follow: tuple[str, ...], quote_keys: bool) -> Readings[Any]:
        """A value as :func:`format_value` writes it (keys ``<|"|>``-quoted with ``quote_keys``).

        The strings of a call or result (bare keys) come as :class:`_Span`: nothing checks them
        while reading; a declaration's (quoted keys) are strings, whose order and types count.
        """
        if self.starts(pos, QUOTE):
            yield from (self._string_span(pos, follow) if not quote_keys else self._string(pos, follow))
        elif self.starts(pos, "{"):
            yield from self._mapping(pos, quote_keys)
        elif self.starts(pos, "["):
            yield from self._list(pos, quote_keys)
        else:
            longest = _longest_scalar()  # a scalar runs to the next , } or ]: no further than this
            match = self.match(_SCALAR, pos, longest + 1)
            assert match is not None  # the pattern matches the empty string
            scalar = _scalar(match.group()) if match.end() - pos <= longest else None
            if scalar is None:
                self.fail(pos, ("a value",))
            else:
                yield scalar[0], match.end()

    def _list(self, pos: int, quote_keys: bool) -> Readings[list[Any]]:
        if not self.at(pos, "["):
            return
        if self.starts(pos + 1, "]"):
            yield [], pos + 2
            return
        for items, end in self.separated(pos + 1, lambda at: self._value(at, (",", "]"), quote_keys), "]"):
            yield list(items), end

    def _key(self, pos: int, quote_keys: bool) -> Readings[str]:
        if quote_keys:
            yield from self._string(pos, (":",))
            return
        colon = self.find(pos, ":")  # a bare key holds no ':' (the first one ends it)
        if colon < 0:
            self.fail(len(self.text), (":",))
        else:
            yield self.piece(pos, colon), colon

    def _mapping(self, pos: int, quote_keys: bool) -> Readings[dict[str, Any]]:
        """``{key:value,...}``, keys in :func:`dictsort` order."""
        if not self.at(pos, "{"):
            return
        if self.starts(pos + 1, "}"):
            yield {}, pos + 2
        for pairs, end in self.separated(pos + 1, lambda at: self._pair(at, quote_keys), "}"):
            mapping = _sorted_mapping(pairs)
            if mapping is not None:
                yield mapping, end

    def _pair(self, pos: int, quote_keys: bool) -> Readings[tuple[str, Any]]:
        for key, after_key in self._key(pos, quote_keys):
            if self.at(after_key, ":"):
                for value, after in self._value(after_key + 1, (",", "}"), quote_keys):
                    yield (key, value), after

    # ------------------------------------------------------------------ declarations (system turn)

    def _fields(self, pos: int, read: Callable[[str, int], Readings[Any]]) -> Readings[dict[str, Any]]:
        """``{name:value,...}`` with bare names, each value read by ``read(name, pos)``."""
        if not self.at(pos, "{"):
            return
        if self.starts(pos + 1, "}"):
            yield {}, pos + 2
            return
        for fields, end in self.separated(pos + 1, lambda at: self._field(at, read), "}"):
            if len({name for name, _ in fields}) == len(fields):
                yield dict(fields), end

    def _field(self, pos: int, read: Callable[[str, int], Readings[Any]]) -> Readings[tuple[str, Any]]:
        colon = self.find(pos, ":")
        if colon < 0:
            self.fail(len(self.text), (":",))
            return
        name = self.piece(pos, colon)
        for value, after in read(name, colon + 1):
            yield (name, value), after

    def _properties(self, pos: int) -> Readings[dict[str, Any]]:
        """``{name:{...},...}`` as :func:`render_properties` writes it: the property schemas."""
        return self._fields(pos, lambda _name, at: self._property(at))

    def _property(self, pos: int) -> Readings[dict[str, Any]]:
        """One property's ``{...}`` (:func:`_property`); no ``type`` for an empty one, no empty ``properties``."""
        fields_read = self._comma_led(pos) if self.dialect.leading_commas else self._fields(pos, self._property_field)
        for fields, after in fields_read:
            schema = {key: value for key, value in fields.items() if key != "type" or value is not None}
            if schema.get("properties") == {}:
                del schema["properties"]  # an object with none lists none (Q12)
            yield schema, after

    def _property_field(self, name: str, pos: int) -> Readings[Any]:
        """One field of a property (:func:`_property`)."""
        if name == "description":
            yield from self._string(pos, (",",))
        elif name in ("enum", "required"):
            yield from self._value(pos, (",", "}"), quote_keys=True)
        elif name == "items":
            yield from self._fields(pos, self._items_field)
        elif name == "nullable":
            if self.at(pos, "true"):
                yield True, pos + len("true")
        elif name == "properties":
            yield from self._properties(pos)
        elif name == "type":
            for kind, after in self._string(pos, ("}",)):
                yield _schema_type(kind), after
        else:
            self.fail(pos - len(name) - 1, ("description", "enum", "items", "nullable", "properties", "type"))

    def _comma_led(self, pos: int) -> Readings[dict[str, Any]]:
        """A property's ``{...}`` in the interleaved layout (:func:`_property_with_leading_commas`, I1)."""
        if not self.at(pos, "{"):
            return
        if not self.starts(pos + 1, "description:"):
            yield from self._comma_led_nullable({}, pos + 1, False)
            return
        for description, at in self._string(pos + 1 + len("description:"), (",",)):
            yield from self._comma_led_nullable({"description": description}, at, True)

    def _comma_led_nullable(self, fields: dict[str, Any], pos: int, comma: bool) -> Readings[dict[str, Any]]:
        """The rest of :meth:`_comma_led` from ``nullable`` on (``comma``: the template's add_comma)."""
        head = ("," if comma else "") + "nullable:true"
        if self.starts(pos, head):
            fields, pos, comma = {**fields, "nullable": True}, pos + len(head), True
        lead = "," if comma else ""
        if self.starts(pos, lead + "enum:"):
            for enum, at in self._value(pos + len(lead + "enum:"), (",type:",), True):
                yield from self._comma_led_type({**fields, "enum": enum}, at, True)
        elif self.starts(pos, ",properties:{"):
            for properties, at in self._properties(pos + len(",properties:")):
                schema = {**fields, "properties": properties}
                if self.starts(at, ",required:"):
                    for names, end in self._list(at + len(",required:"), quote_keys=True):
                        yield from self._comma_led_type({**schema, "required": names}, end, comma)
                else:
                    yield from self._comma_led_type(schema, at, comma)
        elif self.starts(pos, ",items:{"):
            for items, at in self._fields(pos + len(",items:"), self._items_field):
                yield from self._comma_led_type({**fields, "items": items}, at, comma)
        else:
            yield from self._comma_led_type(fields, pos, comma)

    def _comma_led_type(self, fields: dict[str, Any], pos: int, comma: bool) -> Readings[dict[str, Any]]:
        """The type that ends :meth:`_comma_led`, and the property's closing brace."""
        head = ("," if comma else "") + "type:"
        if not self.starts(pos, head):
            self.fail(pos, (head,))
            return
        for kind, after in self._string(pos + len(head), ("}",)):
            yield {**fields, "type": _schema_type(kind)}, after + 1

    def _items_field(self, name: str, pos: int) -> Readings[Any]:
        """One field of an array's ``items`` (:func:`_items_schema`): any key, ``properties`` as schemas."""
        if name == "properties":
            yield from self._properties(pos)
        else:
            for value, after in self._value(pos, (",", "}"), quote_keys=True):
                yield (_lower_type(value) if name == "type" else value), after

    def _parameters(self, pos: int) -> Readings[dict[str, Any] | None]:
        """``,parameters:{properties:{...},required:[...],type:<|"|>T<|"|>}``, each part optional.

        Without a type, the template writes no closing ``}`` (the declaration's own closes it).
        """
        if not self.starts(pos, ",parameters:{"):
            yield None, pos
            return
        yield from self._parameter_parts(pos + len(",parameters:{"))

    def _part(
        self, pos: int, label: str, read: Callable[[int], Readings[Any]], schema: dict[str, Any]
    ) -> Readings[dict[str, Any]]:
        """``schema`` with ``label:VALUE,`` read at ``pos`` if the text has that part there."""
        if not self.starts(pos, label + ":"):
            yield schema, pos
            return
        for value, after in read(pos + len(label) + 1):
            if self.at(after, ","):
                yield {**schema, label: value}, after + 1

    def _parameter_parts(self, pos: int) -> Readings[dict[str, Any]]:
        for schema, at in self._part(pos, "properties", self._properties, {}):
            for full, at_type in self._part(at, "required", lambda p: self._list(p, quote_keys=True), schema):
                yield from self._parameter_type(full, at_type)

    def _parameter_type(self, schema: dict[str, Any], pos: int) -> Readings[dict[str, Any]]:
        if self.starts(pos, "type:"):
            for kind, after in self._string(pos + len("type:"), ("}",)):
                yield {**schema, "type": _schema_type(kind)}, after + 1
        else:  # parameters the template writes nothing for are still truthy: written as ``{``
            yield (schema or {"properties": {}}), pos

    def _response(self, pos: int) -> Readings[dict[str, Any] | None]:
        """``,response:{description:<|"|>D<|"|>,type:<|"|>OBJECT<|"|>}``, each part optional."""
        if not self.starts(pos, ",response:{"):
            yield None, pos
            return
        pos += len(",response:{")
        described: list[tuple[dict[str, Any], int]] = [({}, pos)]
        if self.starts(pos, "description:"):
            described = [({"description": d}, at + 1) for d, at in self._string(pos + len("description:"), (",",))]
        for response, at in described:
            if self.starts(at, "type:" + quote_string("OBJECT") + "}"):
                yield {**response, "type": "object"}, at + len("type:" + quote_string("OBJECT") + "}")
            yield response, at

    def _declaration(self, pos: int) -> Readings[dict[str, Any]]:
        """``<|tool>declaration:NAME{description:...}<tool|>``: the tool's function, as a JSON schema."""
        named = self._named(pos, DECLARATION_OPEN + "declaration:", "{description:")
        if named is None:
            return
        name, brace = named
        if not self.at(brace, "{description:"):
            return
        follow = (",parameters:{", ",response:{", "}" + DECLARATION_CLOSE)
        for description, at in self._string(brace + len("{description:"), follow):
            for parameters, at_response in self._parameters(at):
                for response, end in self._response(at_response):
                    if self.at(end, "}" + DECLARATION_CLOSE):
                        function: dict[str, Any] = {"name": name}
                        if description:
                            function["description"] = description
                        if parameters is not None:
                            function["parameters"] = parameters
                        if response is not None:
                            function["response"] = response
                        yield function, end + len("}" + DECLARATION_CLOSE)

    def _header(self, pos: int) -> Readings[_Header | None]:
        """The system turn: ``<|turn>system\\n[<|think|>\\n]TEXT[<|tool>...<tool|>]*<turn|>\\n``."""
        if not self.starts(pos, _SYSTEM_HEADER):
            yield None, pos
            return
        pos += len(_SYSTEM_HEADER)
        thinking = self.starts(pos, THINK)
        if thinking:
            pos += len(THINK)
        for end in self.find_all(pos, (DECLARATION_OPEN, TURN_END)):
            for tools, after in self.repeat(self._declaration, end):
                if self.at(after, TURN_END):
                    yield _Header(thinking, self.piece(pos, end), tools), after + len(TURN_END)

    # ------------------------------------------------------------------ turns

    def _call(self, pos: int) -> Readings[tuple[str, dict[str, Any] | _Span]]:
        """``<|tool_call>call:NAME{...}<tool_call|>``: pairs, else the raw text of string arguments (Q10)."""
        named = self._named(pos, CALL_OPEN + "call:", "{")
        if named is None:
            return
        name, brace = named
        for arguments, after in self._mapping(brace, quote_keys=False):
            if self.at(after, CALL_CLOSE):
                yield (name, arguments), after + len(CALL_CLOSE)
        for close in self.find_all(brace + 1, ("}" + CALL_CLOSE,)):
            yield (name, _Span(brace + 1, close)), close + 1 + len(CALL_CLOSE)

    def _tool_response(self, pos: int) -> Readings[tuple[str, dict[str, Any]]]:
        """``<|tool_response>response:NAME{...}<tool_response|>``."""
        named = self._named(pos, RESPONSE_OPEN + "response:", "{")
        if named is None:
            return
        name, brace = named
        for body, after in self._mapping(brace, quote_keys=False):
            if self.at(after, RESPONSE_CLOSE):
                yield (name, body), after + len(RESPONSE_CLOSE)

    def _text_ends(self, pos: int, closers: tuple[str, ...], *, model: bool = False) -> Iterator[int]:
        """Where a trimmed turn text from ``pos`` may end: the offsets of the ``closers`` that may close it.

        A model text holds no ``<|channel>`` or ``<channel|>`` (the template strips them, Q9). Only
        offsets: the text itself is taken (:meth:`piece`) by a reading whose rest is not known to fail.
        """
        limit = pos if self.piece(pos, pos + 1).isspace() else len(self.text)  # only "" is trimmed then
        if model:
            channels = (self.find(pos, CHANNEL_OPEN), self.find(pos, CHANNEL_CLOSE))
            limit = min([limit, *(at for at in channels if at >= 0)])
        for end in self.find_all(pos, closers):
            if end > limit:
                return
            if end == pos or not self.piece(end - 1, end).isspace():
                yield end

    def _model_turn(self, pos: int) -> Readings[_Gemma4Turn]:
        """An assistant message: ``[thought]calls*responses*content`` and what ends it (Q3, Q5, Q9)."""
        if not self.starts(pos, THOUGHT_OPEN):
            yield from self._model_body(pos, None)
            return
        start = pos + len(THOUGHT_OPEN)
        thought_end = self.dialect.thought_end
        for end in self.find_all(start, (thought_end + CALL_OPEN,)):
            yield from self._model_body(end + len(thought_end), _Span(start, end))

    def _model_body(self, pos: int, thought: _Span | None) -> Readings[_Gemma4Turn]:
        for calls, at in self.repeat(self._call, pos):
            if thought is not None and not calls:
                continue  # reasoning is written back only for a message with calls
            for responses, at_content in self.repeat(self._tool_response, at):
                turn = _Gemma4Turn("assistant", (at_content, at_content), "", thought, calls, responses)
                yield from self._model_end(at_content, turn)

    def _model_end(self, pos: int, turn: _Gemma4Turn) -> Readings[_Gemma4Turn]:
        if self.dialect.tool_turns:
            yield from self._closed_model_end(pos, turn)
            return
        if turn.responses:
            yield turn, pos  # answered, nothing more: the model goes on in the same turn (Q5)
        closers = (RESPONSE_OPEN, TURN_END) if turn.calls and not turn.responses else (TURN_END,)
        for end in self._text_ends(pos, closers, model=True):
            closer = RESPONSE_OPEN if self.starts(end, RESPONSE_OPEN) else TURN_END
            if turn.responses and end == pos:
                continue
            if closer == TURN_END and turn.calls and not turn.responses and not self._media(pos, end):
                continue  # unanswered calls end with <|tool_response> unless a media part came last
            after = end + len(closer)
            if (after, "assistant") not in self._dead:
                yield dataclasses.replace(turn, span=(pos, end), end=closer), after

    def _closed_model_end(self, pos: int, turn: _Gemma4Turn) -> Readings[_Gemma4Turn]:
        """The end of a model turn of the interleaved template: ``<turn|>\n`` after its text, or nothing
        after its responses (I3)."""
        if turn.responses:
            yield turn, pos
        for end in self._text_ends(pos, (TURN_END,), model=True):
            if turn.responses and end == pos:
                continue
            after = end + len(TURN_END)
            if (after, "assistant") not in self._dead:
                yield dataclasses.replace(turn, span=(pos, end), end=TURN_END), after

    def _after(self, turn: _Gemma4Turn) -> str:
        """What the reading of the next message needs to know of ``turn``: its role, or for the
        interleaved template ``"tool_response"`` where its responses were the last thing it wrote (I3)."""
        if self.dialect.tool_turns and turn.responses and not self._media(*turn.span):
            return "tool_response"
        return turn.role

    def _media(self, start: int, end: int) -> bool:
        """Whether a media token (``<|image|>``...) lies between ``start`` and ``end``."""
        return any(0 <= self.find(start, token) <= end - len(token) for token in _MEDIA_TOKENS)

    def _plain_turn(self, pos: int, role: str) -> Readings[_Gemma4Turn]:
        for end in self._text_ends(pos, (TURN_END,)):
            after = end + len(TURN_END)
            if (after, role) not in self._dead:
                yield _Gemma4Turn(role, (pos, end), TURN_END), after

    def _turns_at(self, pos: int, previous: str | None) -> Readings[_Gemma4Turn]:
        """The readings of the message at ``pos``, given the role before it (Q7: none after an assistant)."""
        if self.dialect.tool_turns:
            yield from self._interleaved_turns_at(pos, previous)
            return
        if self.starts(pos, TURN_OPEN):
            start = pos + len(TURN_OPEN)
            newline = self.find(start, "\n")
            role = self.piece(start, newline) if newline >= 0 else ""
            if newline < 0:
                self.fail(len(self.text), ("\n",))
            elif role == "model" and previous != "assistant":
                yield from self._model_turn(newline + 1)
            elif role in ("model", "assistant", "tool"):
                self.fail(start, ("user", "system") if role == "model" else ("user", "model", "system"))
            else:
                yield from self._plain_turn(newline + 1, role)
        else:
            self.fail(pos, (TURN_OPEN,))
        if previous == "assistant":
            yield from self._model_turn(pos)

    def _interleaved_turns_at(self, pos: int, previous: str | None) -> Readings[_Gemma4Turn]:
        """:meth:`_turns_at` for the interleaved template: tool turns (I2), a header for each message
        but one with calls after responses (I3)."""
        if self.starts(pos, TURN_OPEN):
            start = pos + len(TURN_OPEN)
            newline = self.find(start, "\n")
            role = self.piece(start, newline) if newline >= 0 else ""
            if newline < 0:
                self.fail(len(self.text), ("\n",))
            elif role == "model":
                turns = self._model_turn(newline + 1)
                yield from (step for step in turns if not (previous == "tool_response" and step[0].calls))
            elif role == "assistant":
                self.fail(start, ("user", "model", "system", "tool"))
            else:
                yield from self._plain_turn(newline + 1, role)
        else:
            self.fail(pos, (TURN_OPEN,))
        if previous == "tool_response":
            yield from (step for step in self._model_turn(pos) if step[0].calls)

    def _bodies(self, pos: int) -> Iterator[tuple[list[_Gemma4Turn], bool]]:
        """Every reading of the turns from ``pos`` to the end: ``(turns, generation prompt)``.

        Depth-first over messages without recursion (a conversation can be long). A place from
        which no reading reached the end is not tried again, nor a second reading of a message
        that ends where another one did (both render the same).
        """
        size = len(self.text)
        path: list[_Gemma4Turn] = []
        #: Per message being read: its readings, where it starts, the completions before it, the ends seen.
        stack: list[tuple[Iterator[tuple[_Gemma4Turn, int]], tuple[int, str | None], int, set[tuple[int, str]]]] = []
        completed = 0
        here: tuple[int, str | None] | None = (pos, None)
        while True:
            if here is not None:
                if here in self._dead:
                    if path:
                        path.pop()
                else:
                    at = here[0]
                    generation = any(
                        size - at == len(prompt) and self.starts(at, prompt)
                        for prompt in self.dialect.generation_prompts
                    )
                    if at == size or generation:
                        completed += 1
                        yield list(path), generation
                    if at < size:
                        stack.append((self._turns_at(*here), here, completed, set()))
                    elif path:
                        path.pop()
                here = None
            if not stack:
                return
            readings, state, before, ends = stack[-1]
            step = next(readings, None)
            if step is None:
                stack.pop()
                if completed == before:
                    self._dead.add(state)
                if path:
                    path.pop()
                continue
            turn, end = step
            if (end, turn.role) in ends:
                continue
            ends.add((end, turn.role))
            path.append(turn)
            here = (end, self._after(turn))

    def conversations(self) -> Iterator[Conversation]:
        """Every complete reading of the prompt, in order."""
        start = self.find(0, TURN_OPEN)
        if start < 0:
            start = len(self.text)
        bos = bos_token(self.text, start, TURN_OPEN)
        for header, at in self._header(start):
            for turns, generation in self._bodies(at):
                taken = [self._taken(turn) for turn in turns]
                yield _conversation(bos, header, taken, generation, self.dialect.tool_turns)

    def _taken(self, turn: _Gemma4Turn) -> _Gemma4Turn:
        """``turn`` with its texts taken from the prompt: its content, reasoning, and calls' and results' strings."""
        calls = tuple((name, self._texts(arguments)) for name, arguments in turn.calls)
        responses = tuple((name, self._texts(body)) for name, body in turn.responses)
        content, thought = self.piece(*turn.span), self._texts(turn.thought)
        return dataclasses.replace(turn, content=content, thought=thought, calls=calls, responses=responses)

    def _texts(self, value: Any) -> Any:
        """``value`` with the text of each :class:`_Span` in it."""
        if isinstance(value, _Span):
            return self.piece(value.start, value.end)
        if isinstance(value, dict):
            return {key: self._texts(item) for key, item in value.items()}
        if isinstance(value, list):
            return [self._texts(item) for item in value]
        return value


@functools.cache
def _reader_class(name: str) -> type[_PromptReader]:
    """The reader of format ``name``'s prompts: gemma4's, whose errors name that format."""
    if name == REFERENCE.name:
        return _PromptReader

    class Named(_PromptReader):
        refusal = f"not a {name} prompt: no reading of it gets past here"

    return Named


# ---------------------------------------------------------------------------- the conversation of a reading


def _system_content(text: str) -> str | list[dict[str, Any]]:
    """The first system message's content: the text, or text parts where it has the parts' trailing spaces (Q11)."""
    if text == text.strip():
        return text
    lead = len(text) - len(text.lstrip(" "))
    trail = len(text) - len(text.rstrip(" "))
    middle = text[lead : len(text) - trail]
    parts = [""] * lead + ([middle] + [""] * (trail - 1) if middle else [])
    return [{"type": "text", "text": part} for part in parts]


def _media_parts(text: str) -> list[dict[str, Any]]:
    """Model content as parts, its ``<|image|>``... tokens as media parts (their kind decides the generation prompt)."""
    parts: list[dict[str, Any]] = []
    for piece in _MEDIA_TOKEN.split(text):
        if _MEDIA_TOKEN.fullmatch(piece):
            parts.append({"type": piece[2:-2]})
        elif piece:
            parts.append({"type": "text", "text": piece})
    return parts


def _function_call(name: str, arguments: dict[str, Any] | str | _Span) -> FunctionCall:
    """A call's function; string arguments (Q10) are kept as the raw text the template pasted."""
    assert not isinstance(arguments, _Span)  # taken from the prompt by then
    if isinstance(arguments, str):
        return FunctionCall.model_construct(name=name, arguments=arguments)  # raw text, not JSON
    return FunctionCall(name=name, arguments=arguments)


def _tool_messages(responses: tuple[tuple[str, dict[str, Any]], ...], calls: list[ToolCall]) -> list[Message]:
    """OpenAI tool messages for ``value:`` responses, each linked to the first unanswered call of its name."""
    answered: set[int] = set()
    messages = []
    for name, body in responses:
        message: dict[str, Any] = {"role": "tool", "name": name, "content": body["value"]}
        for index, call in enumerate(calls):
            if index not in answered and call.function.name == name:
                answered.add(index)
                message["tool_call_id"] = call.id
                break
        messages.append(Message(**message))
    return messages


def _is_tool_message(body: dict[str, Any]) -> bool:
    """Whether a response body is what a ``role: tool`` message renders: ``{value:<text or None>}``."""
    return list(body) == ["value"] and (body["value"] is None or isinstance(body["value"], str))


def _legacy_response(name: str, body: dict[str, Any]) -> dict[str, Any]:
    """An entry of an assistant message's ``tool_responses``: a mapping, or the value of ``{value:...}``."""
    if list(body) == ["value"] and not isinstance(body["value"], dict):
        return {"name": name, "response": body["value"]}
    return {"name": name, "response": body}


def _assistant_messages(
    turn: _Gemma4Turn, ids: Iterator[int], last_with_generation: bool, tool_turns: bool = False
) -> list[Message]:
    """The assistant message of a model turn, then the tool messages its responses render from
    (``tool_turns``: the interleaved template's, whose responses are only ``tool_responses``)."""
    calls = [ToolCall(id=call_id(next(ids)), function=_function_call(name, args)) for name, args in turn.calls]
    if tool_turns:  # a media part after the responses is what opens the next turn (I3)
        needs_media = bool(turn.responses and _MEDIA_TOKEN.search(turn.content))
    else:
        needs_media = bool(
            (calls and not turn.responses and turn.end == TURN_END)
            or (last_with_generation and turn.responses and turn.content)
        )
    content: Any = turn.content or (None if calls or turn.responses else "")
    if needs_media:
        content = _media_parts(turn.content)
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if turn.thought is not None:
        message["reasoning_content"] = turn.thought
    if calls:
        message["tool_calls"] = calls
    results: list[Message] = []
    if not tool_turns and calls and turn.responses and all(_is_tool_message(body) for _, body in turn.responses):
        results = _tool_messages(turn.responses, calls)
    elif turn.responses:
        message["tool_responses"] = [_legacy_response(name, body) for name, body in turn.responses]
    return [Message(**message), *results]


def _conversation(
    bos: str, header: _Header | None, turns: list[_Gemma4Turn], generation: bool, tool_turns: bool = False
) -> Conversation:
    """The conversation of one reading (ids ``call_0``... in order; see the module docs for the canonical choices)."""
    variables: dict[str, Any] = {"bos_token": bos} if bos else {}
    messages: list[Message] = []
    tools = None
    first_merges = not turns or turns[0].role in ("system", "developer")  # would join the system turn (Q8)
    if header is not None:
        if header.thinking:
            variables["enable_thinking"] = True
        if header.tools:
            tools = [Tool(function=Function(**function)).model_dump() for function in header.tools]
        if header.system or not (header.thinking or header.tools) or first_merges:
            messages.append(Message(role="system", content=_system_content(header.system)))
    elif first_merges:  # a first message the template drops (Q6), so that the next one is not merged
        messages.append(Message(role="tool", content=""))
    ids = itertools.count()
    for index, turn in enumerate(turns):
        if turn.role == "assistant":
            messages.extend(_assistant_messages(turn, ids, generation and index == len(turns) - 1, tool_turns))
        else:
            messages.append(Message(role=turn.role, content=turn.content))
    return Conversation(messages=messages, tools=tools, add_generation_prompt=generation, variables=variables)


def prompt_conversation(prompt: str, dialect: PromptDialect = REFERENCE) -> Conversation:
    """The conversation ``prompt`` renders from: the first reading that renders back to it exactly
    (with ``dialect``'s renderer: the reference template's by default).

    With none, the first complete reading (the caller reports where its rendering departs), or a
    ParseError at the farthest point any reading reached.
    """
    reader = _reader_class(dialect.name)(prompt, dialect)
    first: Conversation | None = None
    try:
        for count, conversation in enumerate(reader.conversations()):
            first = first or conversation
            if rendering(conversation, dialect.render) == prompt:
                return conversation
            if count + 1 >= _MAX_READINGS:
                break
    except RecursionError:  # values nested deeper than Python recurses
        raise reader.error("; values are nested too deeply there to read") from None
    if first is None:
        raise reader.error()
    return first
