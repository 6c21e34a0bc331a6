"""The ``named_json`` family: a call's name, maybe its id, then its arguments as one JSON object, between markers.

DeepSeek V3.1 writes (its markers as the example; a member's :class:`~codec.wire.WireSpec` gives
its own)::

    [reasoning</think>]content<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>
    {"city": "Paris"}<｜tool▁call▁end｜><｜tool▁calls▁end｜><｜end▁of▁sentence｜>

(one line: the break is only for this page).

A member's spec sets:

* ``block``: what opens and closes the section around a turn's calls; empty for none (each call
  then opens with its own marker alone).
* ``call``: what opens and closes each call; an empty closer: the call ends with its arguments'
  closing brace.
* ``name``: what stands before the name (Kimi K2's ``functions.``) and what stands between the
  name (or its id) and the arguments (``<｜tool▁sep｜>``, ``<|tool_call_argument_begin|>``,
  ``[ARGS]``).
* ``call_id``: where calls write an id between their name and their arguments, what stands
  before it (Kimi K2's ``:``, Mistral's ``[CALL_ID]``) and the call's id made of what is written, a
  template of ``{name}`` and ``{id}`` (Kimi's ``functions.{name}:{id}``, Mistral's ``{id}``); the
  id written is the call's id (no ``call_id`` function makes one), and the reply renderer writes a
  message's id back where it has that shape. Empty: calls write no id.
* ``separator``: what stands between two calls (xLAM's ``, `` in ``[{"name": ...}, {"name": ...}]``);
  empty for nothing. A blank one is layout, as any blank between a section's markers is; another is
  read only between two calls of a section, and is text anywhere else.
* ``values``: ``"json"``, or ``"python_repr"`` for arguments written as Python's ``str()`` of the
  dict (InternLM2's and Apriel 1.5's ``{'city': 'Paris', 'days': 3}``): strings between ``'`` (or
  ``"``) with Python's escapes, ``True``, ``False``, ``None``; each string read by Python's literal
  rules (:func:`codec.literals.python_literal`), the rest by the grammar.
* ``stop``, ``reasoning``, ``special_tokens``; ``recover``: the deviations of :data:`RECOVERIES`.

Arguments are JSON and keep their JSON types. Tolerated, each reported: arguments given as a JSON
string holding the object (``arguments_as_string``); a call outside the section (``bare_call``);
a missing closer before the next marker or the end (``missing_closer``); a call opened inside
unclosed reasoning (``unclosed_reasoning``); a section or call closer, or an arguments opener,
with nothing open, and a reasoning closer after the calls that ended the reasoning
(``stray_closer``); a section opener with text after it before any call, kept as content with its
closer (``invalid_tool_call``); a name without the spec's prefix or with the prefix's punctuation lost, an id
missing, not in the spec's shape or written right after the name without its opener, the section
in its singular spelling (``call_opener``); text after the stop token; and where the spec's
``recover`` names them (:data:`RECOVERIES`), a lost arguments opener (``missing_opener``), calls
as a JSON list after the opener (``call_list``) and a JSON object of calls written as text
(``bare_call``). The grammar is
``grammars/wire/named_json.lark``.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from codec._lark import Token, ValueToken
from codec._whole_reply import WholeCall
from codec.export import (
    EMPTY,
    CallSyntax,
    Expr,
    GrammarBuilder,
    JsonValues,
    Marker,
    Reasoning,
    Term,
    alt,
    charset,
    parameters_schema,
    plus,
    seq,
)
from codec.formats._calls import LiteralHandlers
from codec.formats._render import attr, concat, iterate, string
from codec.issues import IssueKind
from codec.literals import PLAIN_JSON_DECODER, json_text, json_value
from codec.models import dump_arguments
from codec.schema import tool_name
from codec.sink import CONTENT, LAST, NEXT, REASONING, CallWriter, Sink
from codec.stream import Builder, BuildError, Syntax, ToolsByName, WholeReading
from codec.watch import Delimiter, JsonScan, Watch
from codec.wire import Family, WireSpec, family_grammar, regex_literal
from codec.wire._call_list_python import PythonValues
from codec.wire._call_list_values import quoted_string_value
from codec.wire._json_object_builder import CLOSED_PUNCTUATION
from codec.wire._json_object_values import (
    arguments_text,
    lex_json_container,
    may_hold_surrogates,
    members_of,
    string_value,
)

__all__ = ["DSML_OPENER", "FAMILY", "RECOVERIES", "Markers", "NamedJson", "arguments_json"]

#: What opens DeepSeek V3.2's DSML calls, which a V3.1 member's models are sometimes given.
DSML_OPENER = "<｜DSML｜function_calls>"
#: The deviations a member's ``recover`` may name, and what each reads.
RECOVERIES = {
    "singular_section": (
        "the section's markers with the plural 'calls' written 'call' (Kimi K2's "
        "<|tool_call_section_begin|> for <|tool_calls_section_begin|>): read as the section's, the "
        "opener reported (call_opener)"
    ),
    "dsml_calls": (
        f"DeepSeek V3.2's DSML calls ({DSML_OPENER}...): not this syntax, so never read as calls; "
        "the opener is reported (invalid_tool_call) and everything is kept as content"
    ),
    "lost_args_opener": (
        "a call whose arguments' opener is lost, the arguments right after the name (or the id): "
        "NAME{...}, as a detokenizer that skips special tokens leaves it; read, reported (missing_opener)"
    ),
    "calls_in_text": (
        'a JSON object {"tool_calls": [call objects]} written as plain text at the start of the reply '
        "(Devstral's slip): read as calls where every one names a declared tool, reported (bare_call); "
        "kept as content otherwise"
    ),
    "call_lists": (
        'calls written as one JSON list of call objects ({"name", "arguments", "id"?}) after the '
        "call opener, or one such object: an older form of the member's models, also more than one "
        "list in a reply; read, each call reported (call_list)"
    ),
}
#: A written id as the whole-reply reader takes it (the grammar's NAME reads any other).
_WRITTEN_ID = re.compile(r"[A-Za-z0-9_\-]{1,64}")
#: A name with a counter written right after it (``exec5``): the name and the counter.
_TRAILING_COUNTER = re.compile(r"(?P<name>.*[^0-9])(?P<id>[0-9]{1,9})")
#: A regex that matches nothing (the terminals of markers a member has none of).
NEVER = r"\x00(?!\x00)\x00"


# ---------------------------------------------------------------------------- markers


@dataclass(frozen=True)
class Markers:
    """The markers a member's replies are read with: the fields of its spec that parsing depends on
    (members with equal markers share one :class:`~codec.stream.Syntax`)."""

    section_open: str
    section_close: str
    call_open: str
    call_close: str
    name_open: str
    args_open: str
    id_open: str
    #: The call's id made of what is written (``{name}``, ``{id}``), "" where calls write none.
    id_form: str
    stop: str
    think_open: str
    think_close: str
    foreign: tuple[str, ...]
    #: The section's other spelling, opener and closer, read as its own (empty: none).
    section_variant: tuple[str, str] = ("", "")
    #: Whether a call whose arguments' opener is lost is read (``lost_args_opener``).
    lost_args: bool = False
    #: Whether calls written as a JSON list after the call opener are read (``call_lists``).
    lists: bool = False
    #: Whether a JSON object of calls at the start of the reply is read (``calls_in_text``).
    lead: bool = False
    #: What stands between two calls ("" for nothing).
    separator: str = ""
    #: Whether arguments are Python's ``str()`` of the dict (``values="python_repr"``), else JSON.
    python: bool = False

    @classmethod
    def of(cls, spec: WireSpec) -> Markers:
        think_open, think_close = spec.reasoning or ("", "")
        foreign = (DSML_OPENER,) if "dsml_calls" in spec.recover else ()
        variant = singular_section(spec.block) if "singular_section" in spec.recover else ("", "")
        return cls(
            *spec.block,
            *spec.call,
            *spec.name,
            *spec.call_id,
            spec.stop,
            think_open,
            think_close,
            foreign,
            variant,
            "lost_args_opener" in spec.recover,
            "call_lists" in spec.recover,
            "calls_in_text" in spec.recover,
            spec.separator,
            spec.values == "python_repr",
        )

    @functools.cached_property
    def section_opens(self) -> tuple[str, ...]:
        """The section's openers: its own and its other spelling."""
        return tuple(m for m in (self.section_open, self.section_variant[0]) if m)

    @functools.cached_property
    def section_closes(self) -> tuple[str, ...]:
        """The section's closers: its own and its other spelling."""
        return tuple(m for m in (self.section_close, self.section_variant[1]) if m)

    @functools.cached_property
    def loose_prefix(self) -> str:
        """The name's prefix without its closing punctuation (Kimi's ``functions`` of
        ``functions.``), which models sometimes write so; empty where it has none to drop."""
        loose = self.name_open.rstrip("".join(c for c in self.name_open if not c.isalnum()))
        return loose if loose != self.name_open else ""

    @functools.cached_property
    def blank_led(self) -> bool:
        """Whether a marker of a call or of its section starts with a blank."""
        marks = (self.section_open, self.section_close, self.call_open, self.call_close, self.args_open, self.id_open)
        return any(mark[:1].isspace() for mark in marks)

    @functools.cached_property
    def read_separator(self) -> str:
        """The separator the grammar reads as a terminal of its own: one that is not blank (a blank
        one is layout, as the blanks between a section's markers are); "" for none."""
        return self.separator if self.separator.strip() else ""

    @functools.cached_property
    def strays(self) -> tuple[str, ...]:
        """The markers that mean nothing outside a call or a section: reported where they stand."""
        return tuple(m for m in (*self.section_closes, self.call_close, self.args_open) if m)

    @functools.cached_property
    def frame(self) -> tuple[str, ...]:
        """The markers free text stops before."""
        opens = (*self.section_opens, self.call_open, self.stop, *self.strays, *self.foreign, self.think_close)
        return tuple(dict.fromkeys(m for m in (*opens, self.read_separator) if m))

    @functools.cached_property
    def thought_ends(self) -> tuple[str, ...]:
        """The markers reasoning text stops before: its closer, and the openers of calls (a call
        opened inside reasoning ends it) and the stop token."""
        ends = (self.think_close, *self.section_opens, self.call_open, self.stop)
        return tuple(dict.fromkeys(m for m in ends if m))

    @functools.cached_property
    def holdback(self) -> int:
        """Longer than any marker, so that a token cannot still grow into one."""
        return max(len(m) for m in (*self.frame, *self.thought_ends, self.think_open, self.id_open)) + 2

    @functools.cached_property
    def id_pattern(self) -> re.Pattern[str] | None:
        """What a call's id made of ``id_form`` looks like, with its name and written id as groups."""
        if not self.id_form:
            return None
        parts = re.split(r"(\{name\}|\{id\})", self.id_form)
        groups = {"{name}": r"(?P<name>[^\s]+?)", "{id}": r"(?P<id>[A-Za-z0-9_\-]+)"}
        return re.compile("".join(groups.get(part) or re.escape(part) for part in parts))

    def call_id(self, name: str, written: str) -> str:
        """The id of a call named ``name`` whose reply wrote ``written`` as its id."""
        return self.id_form.replace("{name}", name).replace("{id}", written)

    def written_id(self, call_id: Any, name: Any, index: int) -> str:
        """What a reply writes as the id of call ``index`` of a message, named ``name``, whose id is
        ``call_id``: the written part of an id in the spec's shape (for this name), else the index."""
        pattern = self.id_pattern
        found = pattern.fullmatch(call_id) if pattern is not None and isinstance(call_id, str) else None
        if found is not None and found.groupdict().get("name", name) == name:
            return found["id"]
        return str(index)


def singular_section(block: tuple[str, str]) -> tuple[str, str]:
    """The section's markers with their plural ``calls`` written ``call``."""
    variant = (block[0].replace("calls", "call"), block[1].replace("calls", "call"))
    if not block[0] or variant == block:
        raise ValueError("the singular_section recovery needs section markers that write 'calls'")
    return variant


def _outside(markers: tuple[str, ...]) -> str:
    """Text that starts none of ``markers``: runs of characters no marker starts with, and each
    first character of a marker where no marker's rest follows it."""
    rests: dict[str, list[str]] = {}
    for marker in markers:
        rests.setdefault(marker[0], []).append(regex_literal(marker[1:]))
    starts = "".join(regex_literal(first) for first in rests)
    marks = [f"{regex_literal(first)}(?!{'|'.join(after)})" for first, after in rests.items() if all(after)]
    return "(?:" + "|".join([f"[^{starts}]+", *marks]) + ")+"


def _alternatives(markers: tuple[str, ...]) -> str:
    return "|".join(regex_literal(m) for m in markers) if markers else NEVER


def _marker(text: str) -> str:
    return regex_literal(text) if text else NEVER


def grammar_values(m: Markers) -> tuple[tuple[str, str], ...]:
    """The values of ``grammars/wire/named_json.lark``'s placeholders for ``m``."""
    name_stops = {c for marker in (m.args_open, m.id_open, m.call_close, m.call_open) if marker for c in marker[:1]}
    name_stops |= {"{", '"'}
    reasoning = bool(m.think_open)
    return (
        ("TEXT", _outside(m.frame)),
        ("THOUGHT", _outside((*m.thought_ends, "\n" + m.think_close)) if reasoning else NEVER),
        ("THINK_OPEN", r"[ \t\r\n]*" + regex_literal(m.think_open) + r"\n?" if reasoning else NEVER),
        ("THINK_CLOSE", r"\n?" + regex_literal(m.think_close) + r"\n*" if reasoning else NEVER),
        ("STOP", _marker(m.stop)),
        ("FOREIGN", _alternatives(m.foreign)),
        ("SECTION_OPEN", _alternatives(m.section_opens)),
        ("SECTION_CLOSE", _alternatives(m.section_closes)),
        ("CALL_OPEN", _marker(m.call_open)),
        ("CALL_CLOSE", _marker(m.call_close)),
        ("ARGS_OPEN", _marker(m.args_open)),
        ("ID_OPEN", _marker(m.id_open) if m.id_open != ":" else NEVER),
        # At most 128 characters: a longer run is no name (the block is rejected), and a name that
        # keeps growing is not lexed again on every chunk.
        ("NAME", "[^ \\t\\r\\n" + "".join(regex_literal(c) for c in sorted(name_stops)) + "]{1,128}"),
        ("CALL_END", "CALL_CLOSE" if m.call_close else ""),
        # An id opener that is JSON's colon is that terminal (two terminals of one text collide).
        ("ID_OPEN_TERM", "COLON" if m.id_open == ":" else "ID_OPEN"),
        (
            "LOST_ARGS_HEAD",
            "| NAME -> call_head_bare\n         | NAME ID_OPEN NAME -> call_head_id_bare" if m.lost_args else "",
        ),
        ("LISTED_ITEM", "| listed" if m.lists else ""),
        ("LISTED_RULE", "listed: call_opener JSON_CONTAINER" if m.lists else ""),
        ("LEAD", "lead?" if m.lead else ""),
        ("LEAD_RULE", "lead: LEAD_CALLS\n%declare LEAD_CALLS" if m.lead else ""),
        ("SEPARATOR_ITEM", "| separator" if m.read_separator else ""),
        ("SEPARATOR_RULE", "separator: SEPARATOR" if m.read_separator else ""),
        ("SEPARATOR", _marker(m.read_separator)),
        ("MARKS", ".1" if m.blank_led else ""),
        ("STRING", _PY_STRING if m.python else _JSON_STRING),
        ("TRUE", '"True"' if m.python else '"true"'),
        ("FALSE", '"False"' if m.python else '"false"'),
        ("NULL", '"None"' if m.python else '"null"'),
    )


#: A JSON string, and a string as Python's ``repr`` writes it (between either quote, backslash
#: escapes, no raw line break).
_JSON_STRING = r'"[^"\\\x00-\x1f]*(?:\\.[^"\\\x00-\x1f]*)*"'
_PY_STRING = r"'[^'\\\n]*(?:\\.[^'\\\n]*)*'|\"[^\"\\\n]*(?:\\.[^\"\\\n]*)*\""


def _string(m: Markers, token: Token) -> str:
    """A string token's value: JSON's, or (``python_repr``) Python's literal reading."""
    if not m.python:
        return string_value(token)
    try:
        return quoted_string_value(str(token))
    except ValueError as exc:
        raise BuildError(f"invalid Python string: {exc}", token.start_pos) from None


# ---------------------------------------------------------------------------- parse


class NamedJsonBuilder(LiteralHandlers, Builder):
    """Builds calls from the family grammar's reductions. A member's builder is a subclass whose
    ``markers`` are its own (:func:`reply_syntax`)."""

    markers: ClassVar[Markers]

    def __init__(self, sink: Sink) -> None:
        super().__init__(sink)
        self._call: CallWriter | None = None  # the call being read
        self._opened = 0  # where the call being read opened
        self._end = 0  # where the last call ended
        self._calls = 0  # the calls started so far
        self._blanks: list[tuple[str, int]] = []  # blank text in a section, layout unless text follows
        self._text_end = -1  # where the last text in a section that was no layout ended
        self._counter = ""  # the bare counter a call being read was named by
        self._in_section = False
        self._section_at = self._section_calls = 0  # where the open section opened, its calls so far
        self._section_text = ""  # how the open section's opener is spelled
        self._reasoning_cut = False  # whether a call ended the reasoning, whose closer has not come since
        #: A section whose opener was kept as content with a first call that was no call: its closer is too.
        self._orphan_section: bool | None = None
        self._separated = False  # whether the separator stood after the last call

    # values
    def string(self, token: Token) -> str:
        return _string(self.markers, token)

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
        return _string(self.markers, key), value, key.start_pos

    def object(self, *children: Any) -> dict[str, Any]:
        return self.mapping(children[1:-1:2])  # { pair , pair ... }

    # the frame
    def on_text(self, kind: str, text: str, pos: int) -> None:
        if self._in_section and kind == CONTENT:
            # Blanks right after a marker are layout between a section's markers, unless text
            # follows them; blanks that continue text are that text's (however the chunks cut it).
            if not text.strip() and pos != self._text_end:
                self._blanks.append((text, pos))
                return
            if not self._section_calls and self._call is None:
                # Text before any call: the opener was no section's (a marker leaking into the
                # content): it is content, and so is its closer.
                self._in_section, self._orphan_section = False, True
                why = "a calls section opener with text after it"
                self.sink.keep_as_content(self._section_text, self._section_at, why)
            self._flush_blanks()
            self._text_end = pos + len(text)
        self.sink.text(kind, text, pos)

    def _flush_blanks(self) -> None:
        for text, pos in self._blanks:
            self.sink.text(CONTENT, text, pos)
        self._blanks.clear()

    def reasoning(self, *children: Any) -> None:
        self._reasoning_cut = str(children[-1]) == ""  # the closer the stream inserted at a call

    def late_close(self, token: Token) -> None:
        text = str(token)
        if not self._reasoning_cut:
            self.on_text(CONTENT, text, token.start_pos)
            return
        self._reasoning_cut = False
        message = f"{text.strip()!r} after the calls that ended the reasoning, ignored"
        self.sink.issue("stray_closer", message, token.start_pos, text)

    def stray(self, token: Token) -> None:
        text = str(token)
        self.sink.issue("stray_closer", f"{text!r} with nothing open, ignored", token.start_pos, text)

    def foreign(self, token: Token) -> None:
        self.sink.keep_as_content(str(token), token.start_pos, "calls in another model's syntax, not read as calls")

    def section_close(self, token: Token) -> None:
        self._blanks.clear()
        text, kept = str(token), self._orphan_section
        self._orphan_section = None
        if self._in_section:
            self._in_section = False
        elif kept:  # its opener went to the content with a first call that was no call
            self.sink.text(CONTENT, text, token.start_pos)
        else:
            self.sink.issue("stray_closer", f"{text!r} with nothing open, ignored", token.start_pos, text)

    def stop(self, token: Token) -> None:
        self._unclosed(token.start_pos)
        self.sink.stop(token)

    def start(self, *children: Any) -> None:
        """The end of the reply."""
        self._unclosed(self._end)

    def _unclosed(self, pos: int) -> None:
        self._blanks.clear()
        if self._in_section:
            self._in_section = False
            self.sink.issue("missing_closer", f"missing {self.markers.section_close!r} inserted", pos, call=LAST)

    def separator(self, token: Token) -> None:
        """The spec's separator: once between two calls of a section, nothing; anywhere else (a second
        one included), text."""
        between = self._in_section and self._section_calls and self._call is None and not self._blanks
        if between and not self._separated:
            self._separated = True
            return
        self.on_text(CONTENT, str(token), token.start_pos)

    def section_open(self, token: Token) -> None:
        self._in_section, self._section_at, self._orphan_section = True, token.start_pos, None
        self._section_calls, self._section_text = 0, str(token)

    # a call
    def call_opener(self, token: Token) -> None:
        self._opened = token.start_pos
        self._blanks.clear()
        self._separated = False

    def call_head(self, name: Token, args_open: Token) -> None:
        self._start(name, None)

    def call_head_id(self, name: Token, id_open: Token, written: Token, args_open: Token) -> None:
        self._start(name, written)

    def call_head_nameless(self, args_open: Token) -> None:
        raise BuildError("a call without a name", self._opened)

    def call_head_bare(self, name: Token) -> None:
        self._lost_args(name, None)

    def call_head_id_bare(self, name: Token, id_open: Token, written: Token) -> None:
        self._lost_args(name, written)

    def _lost_args(self, name: Token, written: Token | None) -> None:
        """A call whose arguments' opener is lost (``lost_args_opener``): read as if it were there
        (an id the member writes, lost too, is reported as any missing id is)."""
        m = self.markers
        self._start(name, written)
        assert self._call is not None
        pos = name.start_pos + len(name) if written is None else written.start_pos + len(written)
        self._call.issue("missing_opener", f"{m.args_open!r} missing before the arguments, read as if written", pos)

    def listed(self, opener: None, token: ValueToken) -> None:
        """Calls as one JSON list of call objects after the opener, or one object (``call_lists``):
        each a name, its arguments (an object, or a JSON string of one) and maybe an id."""
        value = token.decoded
        read = self._call_objects(value if isinstance(value, list) else [value], self._opened)
        message = f"calls written as a JSON list after {self.markers.call_open!r}"
        self._write_calls(read, self._opened, "call_list", message, str(token))

    def lead(self, token: ValueToken) -> None:
        """A JSON object of calls written as the reply's first text (``calls_in_text``): calls where
        each names a declared tool, else content as it is."""
        pos, calls = token.start_pos, token.decoded.get("tool_calls")
        try:
            read = self._call_objects(calls if isinstance(calls, list) else [None], pos, arguments_given=True)
        except BuildError:
            read = []
        declared = set(self.sink.declared())
        if not read or not all(name in declared for name, *_ in read):
            self.sink.text(CONTENT, str(token), pos)
            return
        self._opened = pos
        message = "calls written as a JSON object in the text, without the call opener"
        self._write_calls(read, pos, "bare_call", message, str(token))

    def _call_objects(
        self, items: list[Any], pos: int, *, arguments_given: bool = False
    ) -> list[tuple[str, Any, str | None, bool]]:
        """The calls of a list of call objects: (name, arguments, written id, arguments were a
        string). ``arguments_given``: each object must give its arguments (no call is made of an
        object in the text that names a tool alone)."""
        read = []
        for item in items:
            if not isinstance(item, dict) or not isinstance(item.get("name"), str) or not item["name"]:
                raise BuildError("a list after the call opener that holds no call objects", pos)
            if arguments_given and "arguments" not in item:
                raise BuildError("a call object without its arguments", pos)
            arguments = item.get("arguments", {})
            as_string = isinstance(arguments, str)
            if as_string:
                try:
                    arguments = arguments_text(arguments)
                except ValueError:
                    arguments = None
            if not isinstance(arguments, dict) or set(item) - {"name", "arguments", "id"}:
                raise BuildError("a call object that is not a name, its arguments and an id", pos)
            written = item.get("id")
            read.append((item["name"], arguments, written if isinstance(written, str) else None, as_string))
        if not read:
            raise BuildError("an empty list of calls", pos)
        return read

    def _write_calls(
        self, read: list[tuple[str, Any, str | None, bool]], pos: int, kind: IssueKind, message: str, raw: str
    ) -> None:
        """The calls read out of call objects, each reported as ``kind``; the first issue holds the
        objects' text (``raw``), whose keys and ids no call keeps."""
        m = self.markers
        for index, (name, arguments, written, as_string) in enumerate(read):
            call_id = m.call_id(name, written) if m.id_form and written is not None else None
            call = self.sink.call(name, pos, call_id)
            call.issue(kind, message, pos, raw if index == 0 else None)
            if as_string:
                call.issue("arguments_as_string", "arguments given as a JSON string, decoded", pos)
            for key, item_value in members_of(arguments):
                call.argument(key, item_value, pos)
            call.end()
            self._calls += 1
        self._end = pos

    def _start(self, name_token: Token, written_token: Token | None) -> None:
        m, pos = self.markers, self._opened
        name, written = str(name_token), None if written_token is None else str(written_token)
        if m.section_open and not self._in_section and not self._orphan_section:
            self.sink.issue("bare_call", f"a call outside the calls section ({m.section_open!r} missing)", pos)
        if self._in_section and not self._section_calls and self._section_text != m.section_open:
            message = f"the calls section opened with {self._section_text!r} for {m.section_open!r}"
            self.sink.issue("call_opener", message, self._section_at, call=NEXT)
        if m.id_form and written is None and name.isdigit():  # a bare counter for the id: the name is the tools'
            self._counter = name
            self._call = self.sink.call(None, pos)
            return
        if m.name_open:
            name, written = self._head(name, written, pos)
        call_id = None
        if m.id_form:
            if written is None:
                self.sink.issue("call_opener", f"a call without its id ({m.id_open!r} and the id)", pos)
            if written is not None:
                call_id = m.call_id(name, written)
            elif m.id_form != "{id}":  # the id holds the name: the counter stands for the written part
                call_id = m.call_id(name, str(self._calls))
        self._call = self.sink.call(name, pos, call_id)
        self._calls += 1
        self._section_calls += 1

    def _head(self, head: str, written: str | None, pos: int) -> tuple[str, str | None]:
        """The name and the written id of a call whose head (up to the id opener, or the arguments'
        opener) is ``head``, past the spec's prefix. Read too, each reported: the prefix written
        without its punctuation (``functionsexec5``), and the id a counter written right after the
        name without its opener (``functions.exec5``). A head that names a declared tool as it
        stands is that tool; otherwise the tools say where the name ends (the name without the
        counter, or without the loose prefix, is declared), and without tools a counter is split
        off a name only where the prefix lost its punctuation too (as models that do write both)."""
        m, declared = self.markers, set(self.sink.declared())
        strict = head.startswith(m.name_open) and len(head) > len(m.name_open)
        rest = head[len(m.name_open) :] if strict else head[len(m.loose_prefix) :] if m.loose_prefix else ""
        counter = _TRAILING_COUNTER.fullmatch(rest) if m.id_form and written is None and rest else None
        fits = declared and (rest in declared or (counter is not None and counter["name"] in declared))
        loose = not strict and bool(m.loose_prefix) and head.startswith(m.loose_prefix) and head not in declared
        loose = loose and bool(fits or (not declared and counter is not None))
        if not strict and not loose:
            self.sink.issue("call_opener", f"a call named without {m.name_open!r} before its name", pos)
            return head, written
        split = counter is not None and rest not in declared and (counter["name"] in declared or not declared)
        split = split and (loose or bool(declared))
        wrong = [f"{m.name_open!r} without its punctuation"] if loose else []
        if split:
            wrong.append(f"the id right after the name, without {m.id_open!r}")
        if wrong:
            # The head as written is the issue's text: the name and id read from it spell it otherwise.
            self.sink.issue("call_opener", f"a call's head {head!r} written with {' and '.join(wrong)}", pos, head)
        if split:
            assert counter is not None
            return counter["name"], counter["id"]
        return rest, written

    def _named_by_tools(self, call: CallWriter, pos: int) -> None:
        """A call whose head is a bare counter: named after the one declared tool whose parameters
        its arguments fit (all of them declared, the required ones given), reported."""
        fits = []
        for name in self.sink.declared():
            schema = self.sink.tool_schema(name) or {}
            properties, required = schema.get("properties") or {}, schema.get("required") or []
            if set(call.arguments) <= set(properties) and set(required) <= set(call.arguments):
                fits.append(name)
        if len(fits) != 1:
            raise BuildError(f"a call named by the counter {self._counter!r} whose arguments fit no one tool", pos)
        name = fits[0]
        call.issue("call_opener", f"a call named by a bare counter; its arguments are {name!r}'s", pos)
        call.start(name, self.markers.call_id(name, self._counter))
        self._calls += 1
        self._section_calls += 1

    def arg(self, key: Token, colon: Token, value: Any) -> None:
        assert self._call is not None
        self._call.argument(_string(self.markers, key), value, key.start_pos)

    def args_string(self, token: Token) -> None:
        try:
            members = arguments_text(string_value(token))
        except ValueError:
            members = None
        if not isinstance(members, dict):
            raise BuildError("the arguments are a string that holds no JSON object", token.start_pos)
        self.sink.issue("arguments_as_string", "arguments given as a JSON string, decoded", token.start_pos)
        self._arguments(dict(members_of(members)), token.start_pos)
        self._name_by_tools()

    def _arguments(self, arguments: Any, pos: int) -> None:
        if not isinstance(arguments, dict):
            raise BuildError("the arguments are no JSON object", pos)
        assert self._call is not None
        for key, value in arguments.items():
            self._call.argument(key, value, pos)

    def arguments(self, args: None) -> None:
        self._name_by_tools()

    def _name_by_tools(self) -> None:
        call = self._call
        if call is not None and call.name is None:
            self._named_by_tools(call, self._opened)

    def call(self, *children: Any) -> None:
        call, self._call = self._call, None
        assert call is not None
        last = children[-1]
        self._end = last.start_pos + len(last) if isinstance(last, Token) else call.pos
        call.end()

    # a call the grammar rejected
    def recover(self, raw: str, pos: int, error: str) -> int | None:
        call, self._call = self._call, None
        if call is None or call.name is None or not call.open:
            if self._in_section and not self._section_calls:  # its opener goes to the content with it
                self._in_section, self._orphan_section = False, True
                self.sink.text(CONTENT, self._section_text, self._section_at)
            return None
        call.cut(raw, error, pos)
        return len(raw)


#: How a JSON object of calls written as text starts (``calls_in_text``).
_LEAD_CALLS = re.compile(r'\{\s*"tool_calls"\s*:')
#: The longest start of text that may still grow into one (blanks after the brace included).
_LEAD_PREFIX = 64


def _may_grow_into_lead(text: str) -> bool:
    """Whether ``text``, a brace and what follows it, may still grow into ``{"tool_calls":``."""
    if len(text) >= _LEAD_PREFIX:
        return False
    rest = text[1:].lstrip()
    return '"tool_calls":'.startswith(rest) or ('"tool_calls"'.startswith(rest.rstrip()) and rest == rest.rstrip())


class _LeadWatch:
    """Follows a reply that starts with a brace: until it shows whether it is a JSON object of calls
    (``{"tool_calls":``), then, where it is, until that object may be complete."""

    def __init__(self, seen: str) -> None:
        self.seen = seen
        self.json: Watch | None = None

    def scan(self, text: str) -> bool:
        if self.json is not None:
            return self.json.scan(text)
        self.seen += text
        if _LEAD_CALLS.match(self.seen) is None:
            return not _may_grow_into_lead(self.seen)
        self.json = JsonScan()
        return self.json.scan(self.seen)


def lex_lead_calls(text: str, pos: int, final: bool) -> tuple[Any, int] | Watch | None:
    """A JSON object ``{"tool_calls": ...}`` at ``pos``, decoded when it is complete (a watch
    follows one still arriving, or a start too short to tell); None for any other text."""
    if pos >= len(text) or text[pos] != "{":
        return None
    if _LEAD_CALLS.match(text, pos) is None:
        return _LeadWatch(text[pos:]) if not final and _may_grow_into_lead(text[pos:]) else None
    found = lex_json_container(text, pos, final)
    if isinstance(found, tuple) and not isinstance(found[0], dict):
        return None
    return found


@functools.cache
def reply_syntax(m: Markers) -> Syntax:
    """The reply syntax of members with markers ``m`` (one per process: members that reply alike share it)."""
    reasoning = bool(m.think_open)
    builder = type("NamedJsonBuilder", (NamedJsonBuilder,), {"markers": m, "__module__": __name__})
    closers = {"THINK_CLOSE": m.think_close} if reasoning else {}
    if m.call_close:
        closers["CALL_CLOSE"] = m.call_close
    markers = (*m.frame, *m.thought_ends, m.think_open)
    closer = "CALL_CLOSE" if m.call_close else None
    return Syntax(
        grammar=family_grammar("wire/named_json", grammar_values(m)),
        builder=builder,
        text_terminals={"TEXT": CONTENT, "THOUGHT": REASONING},
        blocks={"CALL_OPEN": closer},
        autoclose={"RBRACE": "}", "RBRACK": "]", **closers},
        autoclose_before=frozenset({"SECTION_OPEN", "CALL_OPEN", "CALL_CLOSE", "SECTION_CLOSE", "STOP"}),
        reasoning_closer="THINK_CLOSE" if reasoning else None,
        resync_after=(m.call_close,) if m.call_close else (),
        resync_before=tuple(x for x in (m.call_open, m.section_close, m.stop) if x),
        # (Python's strings open with either quote.)
        delimiters=(Delimiter('"', '"', "\\"), *([Delimiter("'", "'", "\\")] if m.python else [])),
        # Blanks are taken as soon as they arrive, unless a marker starts with one: they then wait to
        # be told from that marker.
        closed_terminals=frozenset(
            {"STRING", "CALL_OPEN", "SECTION_OPEN", "CALL_CLOSE", "SECTION_CLOSE", "STOP", *CLOSED_PUNCTUATION}
            | (set() if m.blank_led else {"WS"})
        ),
        holdback=m.holdback,
        marker_starts="".join(dict.fromkeys(marker[0] for marker in markers if marker)),
        nest_open=frozenset({"LBRACE", "LBRACK"}),
        nest_close=frozenset({"RBRACE", "RBRACK"}),
        fast_terminals={"JSON_CONTAINER": lex_json_container, **({"LEAD_CALLS": lex_lead_calls} if m.lead else {})},
        reasoning_open="THINK_OPEN" if reasoning else None,
        preempt_starts=" \t\r\n" + m.think_open[0] if reasoning else "",
        prompt_opens_reasoning=(lambda prompt: prompt.rstrip().endswith(m.think_open)) if reasoning else None,
        # Without a prompt, "...</think>" before any call or stop token: the prompt opened it.
        reasoning_close=m.think_close or None,
        reasoning_not_opened=tuple(x for x in (m.think_open, *m.section_opens, m.call_open, m.stop) if x)
        if reasoning
        else (),
        whole=_whole_reader(m),
    )


def _whole_reader(m: Markers) -> Callable[[str, ToolsByName | None], WholeReading | None]:
    """The whole-reply reader (``Syntax.whole``): content holding no character a marker starts
    with, then the calls as the renderer writes them (names in the grammar's shape, arguments an
    object's plain JSON right after the arguments' opener), the section closed (where the member
    has one; a call without a closer ends with its arguments), then the stop token.
    Anything else (reasoning, blanks, an id in another shape, a marker out of place) is the grammar's to read."""
    name = re.compile(dict(grammar_values(m))["NAME"])
    starts = re.compile("[" + "".join(re.escape(marker[0]) for marker in (*m.frame, *m.thought_ends)) + "]")

    def head(text: str, start: int, end: int) -> tuple[str, str | None] | None:
        """A call's name and id as the renderer writes its head, or None."""
        if not text.startswith(m.name_open, start):
            return None
        start += len(m.name_open)
        split = text.rfind(m.id_open, start, end) if m.id_form else end
        if split < 0 or name.fullmatch(text, start, split) is None:
            return None
        if not m.id_form:
            return text[start:end], None
        written = text[split + len(m.id_open) : end]
        if _WRITTEN_ID.fullmatch(written) is None:
            return None
        return text[start:split], m.call_id(text[start:split], written)

    def whole_reply(text: str, tools: ToolsByName | None) -> WholeReading | None:
        opener = m.section_open or m.call_open  # without a section, the first call opens the calls
        if not opener or m.python or (m.separator and not m.section_open):
            return None  # (a separator outside a section is text between calls: the grammar's to place)
        end = len(text) - len(m.stop) if text.endswith(m.stop) else len(text)
        start = text.find(opener, 0, end)
        content = text[: end if start < 0 else start]
        if starts.search(content) is not None:
            return None
        calls: list[WholeCall] = []
        if start < 0:
            return content, "", calls
        pos = start + len(m.section_open)
        while text.startswith(m.call_open, pos):
            pos += len(m.call_open)
            sep = text.find(m.args_open, pos, end)
            read = head(text, pos, sep) if sep >= 0 else None
            if read is None:
                return None
            try:
                arguments, after = PLAIN_JSON_DECODER.raw_decode(text, sep + len(m.args_open))
            except (ValueError, RecursionError):
                return None
            if not isinstance(arguments, dict) or not text.startswith(m.call_close, after):
                return None
            if may_hold_surrogates(text, sep, after):
                return None
            call_name, call_id = read
            calls.append((call_name, arguments) if call_id is None else (call_name, arguments, call_id))
            pos = after + len(m.call_close)
            if m.separator and text.startswith(m.separator + m.call_open, pos):
                pos += len(m.separator)
        if not calls or pos + len(m.section_close) != end or not text.startswith(m.section_close, pos):
            return None
        return content, "", calls

    return whole_reply


# ---------------------------------------------------------------------------- the family


class NamedJson(Family):
    """The ``named_json`` family compiled for one spec."""

    name = "named_json"
    parameters = frozenset(
        {"block", "call", "name", "call_id", "stop", "reasoning", "special_tokens", "recover", "separator", "values"}
    )

    @classmethod
    def check(cls, spec: WireSpec) -> None:
        """Refuse what :meth:`Family.check` refuses, a spec without a call opener, an arguments
        opener or a stop token, a section with one marker of two, an id part without its form, and
        recoveries the family does not know."""
        super().check(spec)
        if not spec.call[0] or not spec.name[1] or not spec.stop:
            raise ValueError("a named_json member needs a call opener, an arguments opener (name[1]) and a stop token")
        if bool(spec.block[0]) != bool(spec.block[1]):
            raise ValueError("a named_json member's section has an opener and a closer, or neither")
        if spec.reasoning is not None and not all(spec.reasoning):
            raise ValueError("a named_json member's reasoning markers are an opener and a closer, or None")
        marker, form = spec.call_id
        if bool(marker) != bool(form) or (form and "{id}" not in form):
            raise ValueError("a named_json member's call_id is a marker and a form holding {id}, or neither")
        unknown = sorted(set(spec.recover) - set(RECOVERIES))
        if unknown:
            known = ", ".join(RECOVERIES)
            raise ValueError(f"the named_json family recovers no {', '.join(unknown)}; it knows {known}")
        if spec.values not in ("json", "python_repr"):
            raise ValueError(f"a named_json member writes values as 'json' or 'python_repr', not {spec.values!r}")
        if spec.separator.strip() and spec.separator[0].isspace():
            raise ValueError("a named_json member's separator is blank, or starts with other than a blank")

    def __init__(self, spec: WireSpec) -> None:
        super().__init__(spec)
        self.markers = Markers.of(spec)

    def syntax(self) -> Syntax:
        return reply_syntax(self.markers)

    # ---- reply

    def call_text(self, call: Any, index: int) -> str:
        """Call ``index`` of a message as the spec writes it: its name, its id where the spec writes
        one, and its arguments' JSON text (a string of them as it is)."""
        m = self.markers
        function = attr(call, "function")
        name = attr(function, "name")
        head = concat(m.call_open + m.name_open, name)
        if m.id_form:
            head += m.id_open + m.written_id(attr(call, "id"), name, index)
        arguments = attr(function, "arguments")
        written = repr(arguments) if m.python and isinstance(arguments, dict) else arguments_json(arguments)
        return head + m.args_open + written + m.call_close

    def reply_text(self, message: dict[str, Any]) -> str:
        """The content, then the calls in their section, then the stop token."""
        m = self.markers
        content = message.get("content")
        out = [content if isinstance(content, str) else ""]
        calls = message.get("tool_calls")
        if calls:
            out.append(m.section_open)
            out.append(m.separator.join(self.call_text(call, i) for i, call in enumerate(iterate(calls))))
            out.append(m.section_close)
        out.append(m.stop)
        return "".join(out)

    def reply_ids(self, message: dict[str, Any]) -> list[str] | None:
        """The ids :meth:`reply_text` writes for the message's calls, where the spec writes ids."""
        m = self.markers
        if not m.id_form:
            return None
        calls = message.get("tool_calls") or []
        out = []
        for i, call in enumerate(iterate(calls)):
            name = attr(attr(call, "function"), "name")
            out.append(m.call_id(string(name), m.written_id(attr(call, "id"), name, i)))
        return out

    def grammar_calls(self, builder: GrammarBuilder, tools: list[dict[str, Any]]) -> CallSyntax:
        """Calls as the renderer writes them, in their section: the call opener, the name (and its
        id: letters and digits), the arguments opener, JSON arguments constrained by the tool's parameters,
        the call closer. Reasoning is a leading reasoning block."""
        m = self.markers
        values = PythonValues(builder) if m.python else JsonValues(builder)
        bodies = []
        for tool in tools:
            head: Expr = seq(m.name_open + (tool_name(tool) or ""))
            if m.id_form:
                head = seq(head, m.id_open, Term("CALL_ID", plus(charset("A-Za-z0-9"))))
            closer = Marker(m.call_close) if m.call_close else EMPTY
            bodies.append(seq(head, Marker(m.args_open), values.value(parameters_schema(tool)), closer))
        body = builder.rule("call", alt(*bodies)) if bodies else EMPTY
        call = seq(Marker(m.call_open), body) if bodies else EMPTY
        # The first call opens with the section's opener and its own, or (without a section) its own.
        first = (m.section_open, call) if m.section_open else (m.call_open, body)
        return CallSyntax(
            triggers=(first,),
            more=seq(m.separator, call) if m.separator else call,
            tail=Marker(m.section_close) if m.section_close else EMPTY,
            text_forbid_markers=tuple(x for x in (m.section_open, m.call_open, m.stop) if x),
            reasoning=(
                None if not m.think_open else Reasoning(m.think_open, m.think_close, forbid_markers=m.thought_ends[1:])
            ),
            stops=(m.stop,),
        )

    def reply_markers(self) -> tuple[str, ...]:
        m = self.markers
        return tuple(re.escape(marker) for marker in m.section_opens) or (re.escape(m.call_open),)


def arguments_json(arguments: Any) -> str:
    """A call's arguments as a reply writes them: a string (OpenAI's JSON text) as it is, else
    their JSON text as OpenAI spells it."""
    if isinstance(arguments, str):
        return arguments
    return dump_arguments(arguments) if isinstance(arguments, dict) else json_text(arguments)


FAMILY = NamedJson
