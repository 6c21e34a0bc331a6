"""The ``xml_params`` family's reply builder: calls from the grammar's reductions, values typed by schema.

What the rules of ``grammars/wire/xml_params.lark`` read becomes calls here: each value typed by
the tool's schema (a string streams as it arrives), the layout of a pretty-printed call read off
its values (:class:`_Lines`), drifted tags and bare calls reported, and the ``<parameter=`` heads
a string value holds decided (:meth:`XmlParamsBuilder._seam`). The markers are a member's
(:class:`~codec.wire.xml_params.Tags`), a class attribute of the builder made for its spec.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from codec._lark import CompiledGrammar, Token, ValueToken
from codec.issues import IssueKind
from codec.schema import declared_types, type_text
from codec.sink import CallWriter, Sink
from codec.stream import Builder, BuildError
from codec.watch import FastLexer

if TYPE_CHECKING:
    from codec.wire.xml_params import Tags

#: Text kind of the parameter-value terminal: the builder types it, or streams it as a string.
VALUE = "value"

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


def _tag_name(head: str, start: int, end: str) -> str:
    """The name a ``<function=NAME>`` or ``<parameter=NAME>`` head gives from ``start``, past its
    ``=``, up to ``end`` (its ``>``, which may be missing)."""
    stop = head.find(end, start)
    return (head[start:stop] if stop >= 0 else head[start:]).strip()


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


def param_block_lexer(grammar: CompiledGrammar, holdback: int) -> FastLexer:
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
        if tail is None or (tail.end() + holdback > len(text) and not final):
            return None
        return (head.group(), pieces, tail.group()), tail.end()

    return lex


class XmlParamsBuilder(Builder):
    """Builds calls from the xml_params grammar, typing each value by the tool's schema, and reads
    the layout of pretty-printed calls (see :class:`_Lines`).

    A member's builder is a subclass whose :attr:`tags` are its spec's (:func:`builder_for`)."""

    #: The member's markers.
    tags: ClassVar[Tags]

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
        message = f"{str(token)!r} without {self.tags.name_end!r} read as a function head"
        self.sink.issue("function_head_unterminated", message, token.start_pos)

    def bare_head(self, token: Token) -> None:
        self._bare(token, None)

    def line_head(self, line: Token, token: Token) -> None:
        self._bare(token, line)

    def _name(self, head: str, start: int, end: str, pos: int) -> str:
        """The name of a ``<function=`` or ``<parameter=`` head (``end``: its ``>``); one written
        between quotes is reported."""
        name = _tag_name(head, start, end)
        if name and name[0] in "\"'" and len(name) > 2 and name[0] == name[-1]:
            name = name[1:-1]
            self.sink.issue("quoted_name", f"name {name!r} written between quotes", pos)
        return name

    def _bare(self, token: Token, line: Token | None) -> None:
        tags = self.tags
        name = _tag_name(token, len(tags.function), tags.name_end).strip("\"'")
        head = f"{tags.function}{name}{tags.name_end} without {tags.call_open}"
        if self.sink.undeclared(name):
            raise BuildError(f"{head} names no declared tool", token.start_pos)
        self.sink.issue("bare_function", f"{head} accepted", token.start_pos)
        self._start(token, line if line is not None and _blanks_of(line) else None)

    def _start(self, token: Token, indent: Token | None) -> None:
        self._laid_out = False
        self._function_indent = ""
        if indent is not None:
            self._function_indent = _blanks_of(indent)
            self._indented(_tag_pos(indent))
        tags = self.tags
        name = self._name(str(token), len(tags.function), tags.name_end, token.start_pos)
        self._call = self.sink.call(name, token.start_pos)

    def function(self, *children: Any) -> None:
        call, self._call = self._call, None
        assert call is not None
        closer = children[-1]
        if len(children) > 2 and isinstance(children[-2], Token):  # the INDENT of its own line
            self._indented(_tag_pos(children[-2]))
        if closer.type == "FUNCTION_CLOSE_UNTERMINATED":
            closer_text = self.tags.function_close
            message = f"{closer_text[:-1]!r} without '>' read as {closer_text!r}"
            self.sink.issue("function_closer_unterminated", message, closer.start_pos)
        call.end()

    def first_bare(self, *children: Any) -> None:
        self.function(*children)

    def line_bare(self, *children: Any) -> None:
        self.function(*children)

    def call(self, *children: Token) -> None:
        if len(children) > 3 and children[2].type == "INDENT":  # an INDENT before the call's closer
            self._indented(_tag_pos(children[2]))

    def fenced_call(self, *children: Token) -> None:
        self.sink.issue("fenced_call", "a tool call inside a code fence, read as a call", children[0].start_pos)
        self.call(*children)

    def orphan_close(self, token: Token) -> None:
        closer, opener = self.tags.call_close, self.tags.call_open
        self.sink.issue("orphan_closer", f"{closer} without {opener}, ignored", _tag_pos(token), closer)

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
        message = f"{str(token).strip()!r} without {self.tags.key_end!r} read as a parameter head"
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
        tags = self.tags
        name = self._name(head, len(tags.parameter), tags.key_end, pos)
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
        tags = self.tags
        at = text.rfind(tags.parameter)
        head = text[at:]
        named = _tag_name(head, len(tags.parameter), tags.key_end).strip("\"'")
        if param.streams and self._names_text(call, param, named):
            self._value(text, pos)
            return
        before = text[:at]
        close = before.find(tags.parameter_close)
        close = close + len(tags.parameter_close) if close >= 0 else 0
        line = before.rfind("\n", close)  # the line break before an indented head: its INDENT
        indent = None
        if line >= 0 and line + 1 < at:
            indent = Token("INDENT", before[line:], start_pos=pos + line)
        if close > 0:
            self._end_param("PARAM_CLOSE", before[:close], pos)
        else:  # as the stream inserts a missing closer before a head it refuses
            where = pos + line if indent is not None else pos + at
            self.sink.issue("missing_closer", f"missing {tags.parameter_close!r} inserted", where)
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
        if closer not in self.tags.plain_closers:
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
        """A parameter closer written otherwise than plainly (``\\n</parameter>``): on its own indented
        line, drifted."""
        at = pos + len(closer) - len(closer.lstrip(" \t\n"))
        if _blanks_of(closer):
            self._indented(at)
        spelled, proper = closer[at - pos :], self.tags.parameter_close
        if kind == "PARAM_CLOSE_SUFFIX":
            self.sink.issue("parameter_closer_suffix", f"{spelled!r} read as {proper!r}", at, spelled)
        elif kind == "PARAM_CLOSE_UNTERMINATED":
            message = f"{proper[:-1]!r} without '>' read as {proper!r}"
            self.sink.issue("parameter_closer_unterminated", message, at)

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
        properties = schema_properties(self.sink.tool_schema(call.name or ""))
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


def schema_properties(parameters: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A tool's parameter schemas by name, from its parameters schema, as calls are typed (None:
    no tool, or no ``properties``)."""
    properties = parameters.get("properties") if parameters is not None else None
    return properties if isinstance(properties, dict) else None
