"""The ``json_object`` family's builder: calls from the grammar's reductions, rejected blocks
repaired, and the fast lexers of ordinary call objects and whole blocks (decoded in C)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, ClassVar, cast

from codec._lark import Token, ValueToken
from codec.formats._calls import LiteralHandlers
from codec.issues import IssueKind
from codec.literals import PLAIN_JSON_DECODER, json_text, json_value
from codec.sink import CONTENT, LAST, CallWriter, Sink
from codec.stream import Builder, BuildError
from codec.wire._json_object_shapes import OWN, Markers, shape_contents
from codec.wire._json_object_values import (
    ARGUMENT_REPEATED,
    BLANKS,
    JSON_READING,
    KEY_REPEATED,
    SEVERAL_OBJECTS,
    UNUSED_KEY,
    WINDOW,
    WINDOW_GROWTH,
    DecoderInput,
    Repair,
    arguments_text,
    call_parts,
    decode_objects,
    may_hold_surrogates,
    members_of,
    name_text,
    plain,
    raw_decode,
    string_value,
    whole_characters,
    window_short,
    written,
)

#: A code fence around a whole block's body.
BODY_FENCE = re.compile(r"[ \t\r\n]*```[A-Za-z]*[ \t]*\r?\n(.*?)\n[ \t]*```[ \t\r\n]*", re.DOTALL)


#: What may follow a call opener where it opens a block (the lookahead of :func:`opener_pattern`).
OPENER_NEXT = r"[ \t]?(?:\r?\n|[{\[])"
_OPENER_NEXT = tuple(blank + after for blank in ("", " ", "\t") for after in ("\n", "\r\n", "{", "["))
#: JSON punctuation that no other terminal can extend where it is read (tests check it).
CLOSED_PUNCTUATION = ("LBRACE", "RBRACE", "LBRACK", "RBRACK", "COMMA", "COLON")


def opener_pattern(opener: str, escape: Callable[[str], str] = re.escape) -> str:
    """The regex of a call opener where it opens a block: before a line break or a JSON object or
    list (``CALL_OPEN`` in the grammar); elsewhere (``the <tool_call> tag``) it is text.
    ``escape``: how the opener is written as regex source (for lark, ``regex_literal``)."""
    return escape(opener) + "(?=" + OPENER_NEXT + ")"


class CallLexers:
    """The fast lexers of ordinary call objects and blocks between ``markers``' opener and closer.

    Each is a function made for the markers (they run at every token of the content: the
    markers are the function's own, not looked up)."""

    def __init__(self, markers: Markers) -> None:
        self.markers = markers
        self.opens_block, self.call_json, self.call_block = _call_lexers(markers)


#: A fast lexer that takes a whole value or nothing (no watch).
CallLexer = Callable[[str, int, bool], "tuple[Any, int] | None"]


def _call_lexers(m: Markers) -> tuple[Callable[[str, int], bool], CallLexer, CallLexer]:
    open_, close, name_key, arguments_key, id_key = m.open, m.close, m.keys.name, m.keys.arguments[0], m.keys.id
    open_length = len(open_)
    # What may follow a call object: the block's closer, another object or the stop token (or a
    # block's opener); in a list of calls, the list's comma or its end.
    after_object = (",", "]") if m.listed else (close, "{", m.stop)
    size = 3 if id_key else 2

    def opens_block(text: str, pos: int) -> bool:
        """Whether an opener that opens a block is at ``pos`` (:func:`opener_pattern` matches there)."""
        return text.startswith(open_, pos) and text.startswith(_OPENER_NEXT, pos + open_length)

    def lex_call_json(text: str, pos: int, final: bool) -> tuple[Any, int] | None:
        """Fast path: a complete, ordinary call object at ``pos``, decoded in C.

        Only ``{"name": str, "arguments": {...}}`` (the member's keys: the arguments' first) with
        no repeated key and no non-finite number is
        taken; anything else, and an object still arriving (whose name and arguments should stream),
        is left to the grammar's rules.
        """
        if not text.startswith("{", pos):
            return None
        try:  # the first window, inline (the common case: a call that fits in it)
            doc = text[pos : pos + WINDOW]
            DecoderInput.chars += len(doc)
            value, end = PLAIN_JSON_DECODER.raw_decode(doc)
            end += pos
        except json.JSONDecodeError as exc:
            if len(doc) < WINDOW or not window_short(exc):  # (all the text, or an error the window is not to blame for)
                return None
            try:
                value, end = raw_decode(PLAIN_JSON_DECODER, text, pos, WINDOW * WINDOW_GROWTH)
            except (ValueError, RecursionError):
                return None
        except (ValueError, RecursionError):
            return None
        if not (
            len(value) in (2, size)
            and isinstance(value.get(name_key), str)
            and value[name_key].strip()
            and isinstance(value.get(arguments_key), dict)
            and (len(value) == 2 or isinstance(value.get(id_key), str))
        ):
            return None
        if text.find("\\u", pos, end) >= 0 and may_hold_surrogates(text, pos, end):
            return None
        # Only where the grammar's rules could go on too: what follows must be able to end or
        # continue the block, else the rules (which see the object only with what follows) decide.
        after = BLANKS.match(text, end).end()  # type: ignore[union-attr]
        if text.startswith(after_object, after) or opens_block(text, after) or (final and after == len(text)):
            return value, end
        return None

    def lex_call_block(text: str, pos: int, final: bool) -> tuple[Any, int] | None:
        """Fast path for a whole block: the opener, an ordinary call object, the closer.

        Decodes to the call object; None for anything else (the grammar's rules take it).
        """
        if m.listed or not text.startswith(open_, pos) or not text.startswith(_OPENER_NEXT, pos + open_length):
            return None  # (what opens_block says, inline: this runs at every token of the content)
        brace = BLANKS.match(text, pos + open_length).end()  # type: ignore[union-attr]
        got = lex_call_json(text, brace, final)
        if got is None:
            return None
        end = BLANKS.match(text, got[1]).end()  # type: ignore[union-attr]
        if not text.startswith(close, end):
            return None
        return got[0], end + len(close)

    return opens_block, lex_call_json, lex_call_block


class JsonObjectBuilder(LiteralHandlers, Builder):
    """Builds calls from the family grammar's reductions and repairs blocks it rejects.

    A member's builder is a subclass whose ``markers`` are its own (:func:`builder_of`)."""

    markers: ClassVar[Markers]
    #: The arguments' key the renderer writes, as a key token spells it (any other is an alias).
    _arguments_key: ClassVar[str]

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
        #: Where call objects write their id after their arguments: the name read (the call starts
        #: with its id, once that is read or the object ends) and the id read before the name.
        self._held: str | None = None
        self._held_id: str | None = None

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
        self._held = self._held_id = None

    def _text(self, token: Token) -> str:
        """A JSON string token's value, in whole characters (see :func:`whole_characters`)."""
        value = string_value(token)
        if "\\u" not in token:  # a lone surrogate comes from an escape (the reply's own are the caller's)
            return value
        return self._whole(value, token)

    def _whole(self, value: str, token: Token) -> str:
        repairs: list[Repair] = []
        value = whole_characters(value, repairs)
        for kind, message, text in repairs:
            self._issue(kind, message, token.start_pos, text)
        return value

    # values
    def string(self, token: Token) -> str:
        value = string_value(token)
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
                self._issue("duplicate_key", KEY_REPEATED.format(key=key), pos, json_text({key: out[key]}))
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
        named = call.name if call.name is not None else self._held
        if named is not None:
            self._issue("duplicate_key", self.markers.keys.name_repeated(named), key.start_pos, name_text(name))
            return
        if not isinstance(name, str):
            raise BuildError(f"{key.value} must be a string", key.start_pos)
        if not name.strip():  # no tool is called that: the object names none
            raise BuildError(f"{key.value} is empty", key.start_pos)
        if self.markers.keys.id and self._held_id is None:
            self._held = name  # the call starts with its id, which comes after the arguments
            return
        self._start(call, name, self._held_id)

    def _start(self, call: CallWriter, name: str, call_id: str | None) -> None:
        """The call starts, with the id its reply writes (None: the stream's), and the issues its
        members raised before are reported."""
        self._held = self._held_id = None
        call.start(name, call_id)
        pending, self._pending = self._pending, []
        for kind, message, pos, text in pending:
            self._issue(kind, message, pos, text)

    def arg(self, key: Token, colon: Token, value: Any) -> None:
        call = self._call if self._call is not None else self._current(key.start_pos)
        name = string_value(key)
        if "\\u" in key:
            name = self._whole(name, key)
        if name in call.arguments:  # (self._argument(), inline)
            self._issue("duplicate_argument", ARGUMENT_REPEATED.format(key=name), key.start_pos, json_text(value))
        else:
            call.argument(name, value, key.start_pos)

    def _argument(self, call: CallWriter, key: str, value: Any, pos: int) -> None:
        if key in call.arguments:  # (what the writer would say)
            self._issue("duplicate_argument", ARGUMENT_REPEATED.format(key=key), pos, json_text(value))
        else:
            call.argument(key, value, pos)

    def args_member(self, key: Token, colon: Token, arguments: None) -> None:
        self._args_key(self._current(key.start_pos), key)

    def args_string_member(self, key: Token, colon: Token, string: Token) -> None:
        call = self._current(key.start_pos)
        self._args_key(call, key)
        try:
            members = arguments_text(string_value(string))
        except ValueError:
            members = None
        if not isinstance(members, dict):
            raise BuildError("arguments string is not an object", string.start_pos)
        self._issue("arguments_as_string", self.markers.keys.arguments_string, string.start_pos)
        for name, value in members_of(members):  # as add_arguments() reads them
            repairs: list[Repair] = []
            value = plain(value, repairs)
            name = whole_characters(name, repairs)
            for kind, message, text in repairs:
                self._issue(kind, message, string.start_pos, text)
            self._argument(call, name, value, string.start_pos)

    def _args_key(self, call: CallWriter, key: Token) -> None:
        self._args_seen += 1
        if self._args_seen > 1:
            self._issue("duplicate_key", self.markers.keys.arguments_twice, key.start_pos)
        if key.value != self._arguments_key:
            self._issue("parameters_key", self.markers.keys.alias(json_value(key.value)), key.start_pos)

    def id_member(self, key: Token, colon: Token, string: Token) -> None:
        """The call's id as the reply writes it: the call's own id (a second one is reported)."""
        call = self._current(key.start_pos)
        value = self._text(string)
        if call.name is not None or self._held_id is not None:
            self._issue("duplicate_key", f"{key.value} repeated; the first is kept", key.start_pos, value)
        elif self._held is not None:
            self._start(call, self._held, value)
        else:
            self._held_id = value  # before the name: the call starts with it

    def other_member(self, key: Token, colon: Token, value: Any) -> None:
        name = self._text(key)
        text = json_text({name: value})
        self._issue("unexpected_key", UNUSED_KEY.format(key=name), key.start_pos, text)

    def call_object(self, *children: Any) -> None:
        brace = children[0]
        call = self._current(brace.start_pos)
        if call.name is None and self._held is not None:
            self._start(call, self._held, None)  # an object without its id
        if call.name is None:
            raise BuildError(f"tool call object has no {json.dumps(self.markers.keys.name)}", brace.start_pos)
        self._object_read()
        self._object_done(brace.start_pos)
        call.end(brace.start_pos)

    def fast_call(self, token: ValueToken) -> None:
        found = token.decoded
        keys = self.markers.keys
        written = found.get(keys.id) if keys.id else None
        self.sink.whole_call(found[keys.name], token.start_pos, found[keys.arguments[0]], written)
        self._object_done(token.start_pos)

    def fast_block(self, token: ValueToken) -> None:
        self.sink.block(token.start_pos)  # a block read whole: the stream saw no opener of it
        found = token.decoded
        brace = token.start_pos + token.index("{")
        keys = self.markers.keys
        self.sink.whole_call(found[keys.name], brace, found[keys.arguments[0]])
        self._object_done(brace)
        self._done_in_block = 0

    def _object_done(self, pos: int) -> None:
        """A call object of the current block is complete (a second one is reported, outside a list)."""
        self._done_in_block += 1
        if self._done_in_block == 2 and not self._in_list:
            self.sink.issue("several_objects", SEVERAL_OBJECTS.format(opener=self.markers.open), pos, call=LAST)

    def block_open(self, bracket: Token) -> None:
        self._in_list = True  # the member's own way of writing calls: nothing to report

    def listed_block(self, *children: Any) -> None:
        self.call()

    def list_open(self, bracket: Token) -> None:
        self._in_list = True
        self.sink.issue("call_list", "calls written as one JSON list", bracket.start_pos)

    def call(self, *children: Any) -> None:
        self._done_in_block = 0
        self._in_list = False
        self._object_read()

    # calls in other models' shapes (a whole token each)
    def foreign(self, token: ValueToken) -> None:
        found = shape_contents(token.decoded, str(token), self.markers)
        # A call in the member's own syntax is one whatever its name, as a call between markers is.
        undeclared = (
            args is not None and mark != OWN and self.sink.undeclared(name) for _, name, mark, args, _ in found or ()
        )
        if found is None or any(undeclared):
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
        if self._call is not None and self._call.name is None and self._held is not None:
            self._start(self._call, self._held, None)  # a call cut before its id: it was one
        call, issued = self._call, self._issued
        self._object_read()
        skip, self._done_in_block = self._done_in_block, 0
        listed, self._in_list = self._in_list, False
        # (A listed member's block closer stands after the list the block is: never in its text.)
        opener, closer = self.markers.open, "" if self.markers.listed else self.markers.close
        body = raw[len(opener) :] if raw.startswith(opener) else raw
        closed = not closer or body.rstrip().endswith(closer)  # (a list of calls has no closer)
        if closer and closed:
            body = body.rstrip()[: -len(closer)]
        fenced = BODY_FENCE.fullmatch(body)
        decoded = decode_objects(body if fenced is None else fenced.group(1))
        if decoded is None:
            return self._cut(call, raw, error, pos)
        values, how = [value for _, value in decoded[0]], decoded[1]
        # A list's elements are its calls: one that is no call is reported, the others kept.
        is_list = len(values) == 1 and isinstance(values[0], list)
        elements = values[0][skip:] if is_list else values[skip:]
        calls = [call_parts(element, self.markers.keys) for element in elements]
        if not is_list and (not calls or None in calls):
            return self._cut(call, raw, error, pos)
        if is_list and not skip and not any(calls) and (call is None or call.name is None):
            return None
        if is_list and not listed and not self.markers.listed:
            self.sink.issue("call_list", "calls written as one JSON list", pos)
        if fenced:
            self.sink.issue("fenced_call", "the block's JSON written in a code fence", pos)
        # A call the list or the fence was all that kept the grammar from reading needs no other
        # word (but a closer missing too needs one).
        read_as_is = how == JSON_READING and (is_list or fenced is not None)
        if read_as_is and not closed:
            self.sink.issue("missing_closer", f"missing {closer!r} inserted", pos + len(raw))
        for i, (element, found) in enumerate(zip(elements, calls, strict=True)):
            writer = call if i == 0 and call is not None and call.name is not None else None
            if writer is not None and (found is None or found[0] != writer.name or not writer.extends(found[1])):
                writer.cut(raw, error, pos)  # what was streamed of it cannot be taken back
                continue
            if found is None:
                text = written(element)
                self.sink.issue("invalid_list_element", "an element of a call list that is no call, dropped", pos, text)
                continue
            name, args, repairs = found
            given = element.get(self.markers.keys.id) if self.markers.keys.id and isinstance(element, dict) else None
            writer = writer or self.sink.call(name, pos, given if isinstance(given, str) else None)
            if not read_as_is:
                self.sink.issue("repaired_call", f"tool call {name!r} repaired ({error}): read as {how}", pos)
            # The members read as the grammar's rules read them, with the same issues; those the
            # rules reported before the block failed are not reported again.
            for kind, message, kept in repairs[issued if i == 0 else 0 :]:
                self.sink.issue(kind, message, pos, kept)
            if skip + i == 1 and not is_list:
                self.sink.issue("several_objects", SEVERAL_OBJECTS.format(opener=opener), pos)
            writer.end(pos, args)
        return len(raw)

    @staticmethod
    def _cut(call: CallWriter | None, raw: str, error: str, pos: int) -> int | None:
        """A block that holds no usable call: the call it started is cut short (None: there is none)."""
        if call is None or call.name is None:
            return None
        call.cut(raw, error, pos)
        return len(raw)


def builder_of(markers: Markers) -> type[JsonObjectBuilder]:
    """The builder of a member whose markers are ``markers``."""
    attributes = {"markers": markers, "_arguments_key": json.dumps(markers.keys.arguments[0]), "__module__": __name__}
    return type("JsonObjectBuilder", (JsonObjectBuilder,), attributes)
