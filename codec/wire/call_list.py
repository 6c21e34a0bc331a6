"""The ``call_list`` family: Python-style call lists (``[f(a=1), g()]``), bare or in a block.

A member's calls are a Python list of keyword calls, ``[name(key=value, ...), ...]``, written in free
text (``deepseek_pythonic``: ``Pre.[f(a="x")]<|end_of_sentence|>``) or in a block, a fence or tokens
around the list (``gemma3_tool_code``: ```` ```tool_code\\n[f(a="x")]\\n``` ````). The grammar
``grammars/wire/call_list.lark`` is filled in from the spec:

* ``stop``: the stop token (required);
* ``block``: the block's opener and closer, or none (a bare list). A line break that ends the opener
  or starts the closer is optional when read (so is a fence's blank space before it);
* ``reasoning``: the markers of reasoning at the reply's start, or None;
* ``values``: how values are written, which is also how string arguments are read:
  ``"json"`` (every value ``tojson``; a string argument may hold quotes left unescaped, or Python
  escapes), ``"json_raw"`` (strings ``"`` + value + ``"`` with nothing escaped, other values JSON;
  a string written with JSON escapes reads too, reported) or ``"python"`` (strings ``'`` + value +
  ``'`` with nothing escaped, mappings JSON, anything else through ``str()``: ``True``, ``None``; a
  string reads with Python's escapes where they read, else as written) or ``"python_str"`` (every
  value between ``"``, strings raw, anything else through ``str()``: ``"7"``, ``"True"``; read as
  ``"json_raw"`` strings, then typed by the tool's schema);
* ``recover``: the deviations of :data:`RECOVERIES` the member reads.

Whatever the spec, a list's values read as Python or JSON literals (``True`` / ``true``, either
quote, tuples), arguments separated by commas or by nothing, and a markdown code fence with a
language tag holds content. ``separator`` and ``argument_separator`` are what the reply renderer
and the constrained-decoding grammar write between calls and between arguments; they do not change
how replies parse (members that differ only there share one :class:`~codec.stream.Syntax`), but for
one thing: where ``argument_separator`` holds a comma, an argument written without one before it is
read, reported (``missing_comma``).

The stop token, the reasoning markers and the block's opener start with a character that is not
blank, not ``[`` and, but for a fence's opener, not a backtick (free text stops before them).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from codec import jinja
from codec._lark import Token, ValueToken, make_token
from codec.export import (
    EMPTY,
    NAME,
    WORD,
    CallSyntax,
    Expr,
    GrammarBuilder,
    JsonValues,
    Lit,
    Reasoning,
    Ref,
    alt,
    charset,
    many,
    maybe,
    ordered_items,
    parameters_schema,
    properties,
    ralt,
    rseq,
    schema_types,
    seq,
    star,
)
from codec.formats._calls import MARKUP, LiteralHandlers, before_stop, leading_reasoning
from codec.literals import json_value
from codec.schema import tool_name, tool_parameters
from codec.sink import CONTENT, NEXT, REASONING, CallWriter, Sink
from codec.stream import Builder, BuildError, Syntax, ToolsByName, WholeReading
from codec.watch import Delimiter, FastLexer
from codec.wire import Family, WireSpec, family_grammar, lark_literal, regex_literal
from codec.wire._call_list_fast import (
    JSON_STRING,
    QUOTE_OR_ESCAPE,
    TEXT_LOOKAHEAD,
    CallListReader,
    call_list_start,
    element_cutter,
    followed_by,
    json_calls_lexer,
    raw_string,
    skip_blanks,
    string_reading,
)
from codec.wire._call_list_python import (
    PYTHON_VALUES,
    PythonValues,
    python_value,
    quoted_python,
    render_python,
    typed_arguments,
)
from codec.wire._call_list_values import (
    checked_string,
    fitting_number,
    leading_zeros,
    out_of_range,
    padded,
    quoted_string_value,
    raw_controls_string_value,
    resolve_padded,
)

__all__ = ["CLOSED_PUNCTUATION", "RECOVERIES", "STRING_END", "VALUES", "CallList", "CallListBuilder"]

#: The deviations a member may read, by name (:attr:`WireSpec.recover`), beyond what every member reads.
RECOVERIES: dict[str, str] = {
    "python_tag": "the list between Llama's code-interpreter tags <|python_start|> and <|python_end|> "
    "(the tags reported, fenced_call, and dropped)",
    "json_calls": 'calls written as JSON objects, {"name": NAME, "parameters" (or "arguments"): {...}}: one '
    "or a list of them as the block's body; without a block, one as the reply's start (blanks aside); one "
    "after <|python_start|> (with python_tag) (reported, json_call)",
    "statements": "Python statements in the block, as code-running prompts have models write: "
    "`x = f(a=1)` (the assignment reported and dropped) and `print(f(a=1))` (the print reported and dropped)",
}
#: The value encodings the family writes (:attr:`WireSpec.values`): ``"json"``, every value as
#: ``tojson`` writes it; ``"json_raw"``, strings between ``"`` with nothing escaped, other values JSON;
#: ``"python"``, strings between ``'`` with nothing escaped, mappings JSON, the rest through ``str()``;
#: ``"python_str"``, every value between ``"``, strings as they are, the rest through ``str()``;
#: ``"raw_single"``, strings between ``'`` with nothing escaped, every other value JSON (OLMo 3's
#: template), read as ``"python"`` is (the grammar reads ``true`` and ``True`` alike).
VALUES = ("json", "json_raw", *PYTHON_VALUES, "raw_single")
#: The tags the ``python_tag`` recovery reads around a list (Llama's code-interpreter tags).
PYTHON_TAGS = ("<|python_start|>", "<|python_end|>")
#: A markdown code fence with a language tag, whose text (calls in it included) is content.
CODE_FENCE = ("CODE_OPEN", "CODE_TEXT", "CODE_CLOSE")
#: Punctuation that no terminal of any member can extend where it is read (tests check it).
CLOSED_PUNCTUATION = ("COMMA", "RPAR", "RBRACK", "RBRACE", "COLON", "EQ")
#: A pattern the grammar has for a piece a spec lacks: it matches nothing (and is dropped, unused).
_NOTHING = "(?!)"


# --------------------------------------------------------------------------- builders


class CallListBuilder(LiteralHandlers, Builder):
    """Builds calls from the ``call_list`` rules. Values are typed as written; string arguments are
    JSON (or Python) strings, where quotes left unescaped inside one are the value's own, reported."""

    #: Whether the member writes a comma between arguments (an argument without one before it is
    #: reported); else they run together, as the template writes them. A member's syntax sets it.
    argument_commas: ClassVar[bool] = False

    def __init__(self, sink: Sink) -> None:
        super().__init__(sink)
        self._call: CallWriter | None = None  # the call being read, once started
        self._pending: tuple[str, int] | None = None  # its name and offset, before it starts
        self._done_in_block = 0  # calls completed in the current list
        self._wrapped_at = -1  # where the last statement around a call (assignment, print) was reported
        self._padded = False  # the argument being read holds a number written with leading zeros

    def arg_string(self, token: Token) -> str:
        """A string written as a keyword argument's value (ARG_STRING)."""
        text = str(token)
        if JSON_STRING.fullmatch(text) is None:
            message = "quotes inside a string are not escaped: read as part of the value"
            self.sink.issue("unescaped_quote", message, token.start_pos)
            body = QUOTE_OR_ESCAPE.sub(lambda m: '\\"' if m.group() == '"' else m.group(), text[1:-1])
            token = make_token(token.type, '"' + body + '"', token.start_pos)
        return self.string(token)

    # ---- calls
    def _wrapped(self) -> None:
        """A call starts: a name and "(" still pending before it are a call around it, which only
        ``print`` may be (the ``statements`` recovery's ``printed`` rule)."""
        if self._pending is not None:
            outer, pos = self._pending
            if outer != "print":
                raise BuildError(f"{outer}(...) around a call is no tool call", pos)

    def call_name(self, token: Token) -> Token:
        self._wrapped()
        # The call starts (ToolCallStart) at its first argument or its ")": a name followed by
        # anything else ("see [Smith(2020)]") is not a call, and stays text.
        self._pending = (str(token), token.start_pos)
        return token

    def _started(self) -> CallWriter:
        if self._call is None:
            assert self._pending is not None
            name, pos = self._pending
            self._pending = None
            self._call = self.sink.call(name, pos)
        return self._call

    def start_cut(self) -> None:
        # A name and "(" the reply ends after (or inside the first argument's value): a call cut.
        if self._pending is not None:
            self._started()

    def number(self, token: Token) -> Any:
        """A number as written; one that a float cannot hold, or with leading zeros, is kept as its
        text, a string, reported."""
        text = str(token)
        if leading_zeros(text):
            self._padded = True
            return padded(text, token.start_pos)
        value = fitting_number(text)
        return out_of_range(self.sink, text, token.start_pos) if value is None else value

    def typed(self, name: str | None, arguments: dict[str, Any]) -> dict[str, Any]:
        """The arguments of the call ``name`` as the member reads them: as written (a member whose
        values are typed by the schema types them here)."""
        return arguments

    def arg(self, name: Token, equals: Token, value: Any) -> tuple[str, int]:
        call = self._started()
        if self._padded:
            self._padded = False
            value = resolve_padded(self.sink, call.name, str(name), value)
        value = self.typed(call.name, {str(name): value})[str(name)]
        call.argument(str(name), value, name.start_pos)
        return str(name), name.start_pos

    def args(self, *children: Any) -> None:
        """Arguments: where the member writes a comma between two and one is missing (``a=1b=2``),
        the argument after it is read, reported."""
        if len(children) == 2 and self.argument_commas:
            key, pos = children[1]
            self.sink.issue("missing_comma", f"argument {key!r} written without ',' before it", pos)

    def fast_call(self, *children: Any) -> None:
        self._wrapped()
        token = children[-1]  # FAST_CALL, or (fast_next_call) the FAST_NEXT_CALL after the calls before it
        name, args, offset = token.decoded
        self._done_in_block += 1
        self.sink.whole_call(name, token.start_pos + offset, self.typed(name, args))

    fast_next_call = fast_call

    def fast_arg(self, token: ValueToken) -> tuple[str, int]:
        key, value = token.decoded
        call = self._started()
        call.argument(key, self.typed(call.name, {key: value})[key], token.start_pos)
        return key, token.start_pos

    def call(self, *children: Any) -> None:
        call = self._started()
        self._call = None
        self._done_in_block += 1
        call.end()

    def call_list(self, *children: Any) -> None:
        self._done_in_block = 0

    def python_open(self, token: Token) -> None:
        """Llama's code-interpreter tag before a list (the ``python_tag`` recovery): reported, dropped."""
        message = "calls written after <|python_start|>: the tag is dropped"
        self.sink.issue("fenced_call", message, token.start_pos, str(token), call=NEXT)

    def python_close(self, token: Token) -> None:
        """Llama's code-interpreter tag after a list: reported, dropped."""
        self.sink.issue(
            "fenced_call", "<|python_end|> after the calls: the tag is dropped", token.start_pos, str(token)
        )

    def json_lead(self, token: ValueToken) -> None:
        """A call written as a JSON object at the reply's start (the ``json_calls`` recovery)."""
        self._json_calls(token, "at the reply's start")

    def python_json(self, tag: Token, token: ValueToken) -> None:
        """A call written as a JSON object after Llama's code-interpreter tag."""
        self.python_open(tag)
        self._json_calls(token, "after <|python_start|>")

    def json_block(self, token: ValueToken) -> None:
        """Calls written as JSON objects (one, or a list of them) for the block's body."""
        self._json_calls(token, "in the block")
        self._done_in_block = 0

    def _json_calls(self, token: ValueToken, where: str) -> None:
        self.sink.block(token.start_pos)  # calls read whole: the stream saw no opener of theirs
        for name, arguments, offset in token.decoded:
            message = f"call {name!r} written as a JSON object {where}, not as a call list: read"
            self.sink.issue("json_call", message, token.start_pos + offset, call=NEXT)
            self.sink.whole_call(name, token.start_pos + offset, arguments)

    def printed(self, name: Token, *children: Any) -> None:
        self.printed_call(name.start_pos, str(name) + "(")

    def assignment(self, target: Token, equals: Token, call: None) -> None:
        self._assignment(str(target), target.start_pos)

    def _assignment(self, target: str, pos: int) -> None:
        self._wrapped_at = pos
        message = f"the call's result is assigned to {target!r} (a Python statement); the assignment is dropped"
        self.sink.issue("assignment", message, pos, f"{target} =")

    def fast_list(self, token: ValueToken) -> None:
        self.sink.block(token.start_pos)  # a list read whole: the stream saw no opener of it
        for name, args, offset in token.decoded:
            self.sink.whole_call(name, token.start_pos + offset, self.typed(name, args))
        self._done_in_block = 0

    # ---- values
    def string(self, token: Token) -> str:
        text = str(token)
        try:
            value = quoted_string_value(text)
        except ValueError as exc:
            controlled = raw_controls_string_value(text)
            if controlled is None:
                raise BuildError(f"invalid string: {exc}", token.start_pos) from None
            message = "a string holds raw line breaks or other control characters: read with them kept"
            self.sink.issue("raw_control_character", message, token.start_pos)
            value = controlled
        return checked_string(self.sink, value, text, token.start_pos)

    def pair(self, key: Any, colon: Token, value: Any) -> tuple[Any, Any]:
        return key, value

    def pairs(self, *children: Any) -> list[tuple[Any, Any]]:
        return _extended(children)

    def elements(self, *children: Any) -> list[Any]:
        return _extended(children)

    def dict_value(self, *children: Any) -> dict[str, Any]:
        brace = children[0]
        pairs = children[1] if len(children) > 2 and isinstance(children[1], list) else []
        for key, _ in pairs:
            if not isinstance(key, str):
                raise BuildError(f"dict key {key!r} is not a string", brace.start_pos)
        return self.mapping((key, value, brace.start_pos) for key, value in pairs)

    def list_value(self, *children: Any) -> list[Any]:
        return children[1] if len(children) > 2 and isinstance(children[1], list) else []

    def tuple_value(self, *children: Any) -> list[Any]:
        return self.list_value(*children)

    # ---- a list the grammar rejected
    def frame(self, raw: str) -> tuple[int, int]:
        """Where the calls lie in a rejected block ``raw``: past the block's opener at its start and
        before its closer at its end, where it has them (a bare list: all of it)."""
        cutter = element_cutter(self.sink.grammar)
        opener = cutter.block_open.match(raw) if cutter.block_open is not None else None
        if opener is None:
            return 0, len(raw)
        assert cutter.block_close is not None
        closer = cutter.block_close.search(raw, opener.end())
        return opener.end(), closer.start() if closer is not None else len(raw)

    def reach(self, text: str, start: int) -> int | None:
        # A bare list's recovery reads up to its "]" (see recover): the element cutter finds it.
        cutter = element_cutter(self.sink.grammar)
        i = skip_blanks(text, start)
        if not text.startswith("[", i) or (cutter.block_open is not None and cutter.block_open.match(text, start)):
            return None
        return cutter.cut(text, i + 1, True)[1]

    def recover(self, raw: str, pos: int, error: str) -> int | None:
        self._padded = False
        call, done = self._call, self._done_in_block
        self._call, self._pending, self._done_in_block = None, None, 0
        start, stop = self.frame(raw)
        i = skip_blanks(raw, start)
        bracketed = raw.startswith("[", i)
        cutter = element_cutter(self.sink.grammar)
        elements, end = cutter.cut(raw[:stop], i + 1 if bracketed else i, bracketed)
        # A bare list ends at its "]": what follows is read again as usual. A fence covers the rest.
        used = end if start == 0 else len(raw)
        reported = False
        if 0 < done <= len(elements):  # the statement around the last call returned, if its rule did not say
            self._wrapper(*elements[done - 1], pos)
        later = elements[done:]  # the first `done` elements are the calls already returned
        if call is not None:
            piece = later.pop(0)[1] if later else ""
            if self._probe(piece) != (call.name, call.arguments):
                call.cut(raw[:used], error, call.pos)  # a bare list: up to its "]", the rest is read again
                reported = True
            else:
                call.end()
        found = [(pos + offset, piece, self._probe(piece)) for offset, piece in later]
        if call is None and done == 0 and not any(read for _, _, read in found):
            if used == len(raw):
                return None  # no call in it: the stream keeps the block as content
            self.sink.keep_as_content(raw[:used], pos, error)  # the list alone; the rest is read again
            return used
        for at, piece, read in found:
            if read is None:
                self.sink.issue("invalid_tool_call", "call in a broken list kept as content", at, piece)
                self.sink.text(CONTENT, piece, at)
                reported = True
                continue
            # The call is where its name is (as the rules say), past the blanks and the assignment before it.
            target = self._assigned(piece)
            if target is not None:
                self._assignment(target[1], at + target.start(1))
            name_at = at + target.end() if target is not None else at + len(piece) - len(piece.lstrip())
            self.sink.whole_call(read[0], name_at, read[1])
        tail = raw[end:stop] if start else ""
        if tail.strip():
            self.sink.issue("unexpected_text", "text after the call list, kept as content", pos + end, tail)
            self.sink.text(CONTENT, tail, pos + end)
        elif not reported:  # every call was read after all (a missing comma...): still say so
            self.sink.issue("repaired_list", f"call list repaired: {error}", pos, raw[:end])
        return used

    def _wrapper(self, offset: int, piece: str, pos: int) -> None:
        """Report the assignment or ``print(`` that ``piece`` (a call already returned, at ``pos +
        offset``) is wrapped in, unless its rule has: the grammar refuses the token after a
        statement's call (``x = f(a=1)]``) before it reduces the statement."""
        target = self._assigned(piece)
        if target is not None:
            at = pos + offset + target.start(1)
            if self._wrapped_at != at:
                self._assignment(target[1], at)
            return
        printed = self._printed(piece)
        if printed is not None and self._wrapped_at != pos + offset + printed.start(1):
            self.printed_call(pos + offset + printed.start(1), printed[1])

    def printed_call(self, pos: int, text: str) -> None:
        """Report a call inside ``print(`` (``text``, written at ``pos``)."""
        self._wrapped_at = pos
        message = "the call is printed, print(...) (a Python statement): the print is dropped"
        self.sink.issue("printed_call", message, pos, text)

    def _printed(self, piece: str) -> re.Match[str] | None:
        """The ``print(`` that ``piece`` starts with, where the member reads such statements."""
        if "printed" not in self.sink.grammar.rule_names:
            return None
        return _PRINTED.match(piece)

    def _assigned(self, piece: str) -> re.Match[str] | None:
        """The assignment ``x = `` that ``piece`` starts with (``x = f(...)``), where the member reads
        such statements (its grammar has the ``assignment`` rule); None otherwise."""
        grammar = self.sink.grammar
        if "assignment" not in grammar.rule_names:
            return None
        return element_cutter(grammar).assignment.match(piece)

    def _probe(self, piece: str) -> tuple[str, dict[str, Any]] | None:
        """The call ``piece`` holds (name, arguments), read on its own as a one-call list; None
        unless it is exactly that."""
        target = self._assigned(piece)
        if target is not None:  # a statement `x = f(...)`: the call is f(...)
            piece = piece[target.end() :]
        found = self.sink.reading("[" + piece.strip() + "]")
        if found is None or len(found.tool_calls) != 1 or found.content.strip():
            return None
        function = found.tool_calls[0].function
        return function.name, function.arguments


#: A ``print(`` around a call (the ``printed`` rule).
_PRINTED = re.compile(r"[ \t\r\n]*(print[ \t\r\n]*\()")


def _extended(children: tuple[Any, ...]) -> list[Any]:
    """A left-recursive list rule's value: ``[item]``, or the list so far with ``, item`` added."""
    if len(children) == 1:
        return [children[0]]
    children[0].append(children[2])
    return children[0]  # type: ignore[no-any-return]


class RawStringsBuilder(CallListBuilder):
    """String arguments written ``"`` + value + ``"`` with no escaping (values ``"json_raw"``): the text
    between is the value. One written with escapes, where the escaped reading wins (ESC_STRING), is
    decoded and reported."""

    def arg_string(self, token: Token) -> str:
        return raw_string(str(token))

    def escaped_string(self, token: Token) -> str:
        message = "a string written with backslash escapes, where the template writes it raw: escapes decoded"
        self.sink.issue("escaped_string", message, token.start_pos)
        value = json_value(str(token))
        assert isinstance(value, str)
        return checked_string(self.sink, value, str(token), token.start_pos)


class TypedStringsBuilder(RawStringsBuilder):
    """Every value written between ``"`` (values ``"python_str"``): read as raw strings are, then each
    top-level string typed by its parameter's schema (``"7"`` of an integer is 7)."""

    def typed(self, name: str | None, arguments: dict[str, Any]) -> dict[str, Any]:
        return typed_arguments(arguments, self.sink.tool_schema(name) if name is not None else None)


class PythonStringsBuilder(CallListBuilder):
    """Strings written ``'`` + value + ``'`` with nothing escaped (values ``"python"``): a string reads
    with Python's escapes where they read (``'a\\nb'`` holds a line break, as models mean it), else as
    written (``'C:\\Users'``, a raw line break: the template's own text), with nothing to report."""

    def string(self, token: Token) -> str:
        text = str(token)
        if not text.startswith("'"):
            return super().string(token)
        try:
            value = quoted_string_value(text)
        except ValueError:
            return text[1:-1]
        return checked_string(self.sink, value, text, token.start_pos)


# --------------------------------------------------------------------------- the grammar and the syntax


def _class_text(chars: str) -> str:
    """``chars`` as the inside of a regex character class."""
    return "".join("\\" + ch if ch in "\\]^-[" else regex_literal(ch) for ch in chars)


def _firsts(markers: tuple[str, ...]) -> str:
    """The first characters of ``markers`` (none empty), each once, in order."""
    return "".join(dict.fromkeys(marker[0] for marker in markers))


def _opener_pattern(opener: str, *, lookahead: bool = False) -> str:
    """The regex of a block's opener: a line break that ends it optional, as are a fence's blanks
    before it, where a ``[`` follows instead (``lookahead``: as a lookahead's text, the ``[`` taken)."""
    if not opener.endswith("\n"):
        return regex_literal(opener)
    rest = r"(?:\r?\n|\[)" if lookahead else r"(?:\r?\n|(?=\[))"
    blanks = r"[ \t]{0,16}" if opener.startswith("`") else ""
    return regex_literal(opener[:-1]) + blanks + rest


def _closer_pattern(closer: str) -> str:
    """The regex of a block's closer: a line break that starts it optional."""
    return r"\n?" + regex_literal(closer[1:]) if closer.startswith("\n") else regex_literal(closer)


def _text_markers(markers: tuple[str, ...], patterns: dict[str, str]) -> str:
    """TEXT's alternatives for the first characters of ``markers``: each such character where none of
    the markers it starts follows (``patterns``: a marker's regex without its first character)."""
    out = []
    for first in _firsts(markers):
        tails = "|".join(patterns[marker] for marker in markers if marker[0] == first)
        out.append(f"|{regex_literal(first)}(?!{tails})")
    return "".join(out)


def grammar_values(spec: WireSpec) -> tuple[tuple[str, str], ...]:
    """The values of ``grammars/wire/call_list.lark``'s placeholders for ``spec``."""
    stop, (opener, closer), reasoning = spec.stop, spec.block, spec.reasoning
    # Markers free text stops before: the stop token and the block's opener (a fence's, the backtick
    # alternative's business, whose code-fence test it joins).
    in_text = (stop, opener) if opener and not opener.startswith("`") else (stop,)
    tagged = "python_tag" in spec.recover
    if tagged:
        in_text = (*in_text, *PYTHON_TAGS)
    tails = {marker: regex_literal(marker[1:]) for marker in in_text}
    if opener:
        tails[opener] = _opener_pattern(opener, lookahead=True)[len(regex_literal(opener[0])) :]
    fence = f"(?!{tails[opener]})" if opener.startswith("`") else ""
    if reasoning is not None:
        think_open, think_close = reasoning
        first = think_close[0]
        thought = (
            f"(?:[^{_class_text(first)}\\n]+|\\n(?!{regex_literal(think_close)})"
            f"|{regex_literal(first)}(?!{regex_literal(think_close[1:])}))+"
        )
        think = (r"[ \t\r\n]*" + regex_literal(think_open) + r"\n?", r"\n?" + regex_literal(think_close) + r"\n*")
    raw = spec.values in ("json_raw", "python_str")
    json = "json_calls" in spec.recover
    return (
        ("REASONING", "reasoning? " if reasoning is not None else ""),
        ("BLOCK", " | fence" if opener else ""),
        ("STATEMENTS", " | assignment | printed" if "statements" in spec.recover else ""),
        ("PYTHON_TAG", (" | python_open | python_close" + (" | python_json" if json else "")) if tagged else ""),
        ("JSON_LEAD", "json_lead? " if json and not opener else ""),
        ("JSON_BLOCK", " | json_block" if json and opener else ""),
        ("JSON_RULES", _json_rules(json, tagged, bool(opener))),
        ("PYTHON_OPEN", lark_literal(PYTHON_TAGS[0]) if tagged else f"/{_NOTHING}/"),
        ("PYTHON_CLOSE", lark_literal(PYTHON_TAGS[1]) if tagged else f"/{_NOTHING}/"),
        (
            "STRING_ARGUMENT",
            "RAW_STRING -> arg_string | ESC_STRING -> escaped_string" if raw else "ARG_STRING -> arg_string",
        ),
        ("STOP", lark_literal(stop)),
        ("TEXT_STARTS", _class_text(_firsts(in_text))),
        ("TEXT_MARKERS", _text_markers(in_text, tails)),
        ("TEXT_FENCE", fence),
        ("CODE_TEXT_STARTS", _class_text(stop[0])),
        ("CODE_TEXT_STOP", _text_markers((stop,), tails)),
        ("FENCE_OPEN", _opener_pattern(opener) if opener else _NOTHING),
        ("FENCE_CLOSE", _closer_pattern(closer) if opener else _NOTHING),
        ("FRAME_ENDS", _frame_ends(spec)),
        ("THINK_OPEN", think[0] if reasoning is not None else _NOTHING),
        ("THINK_CLOSE", think[1] if reasoning is not None else _NOTHING),
        ("THOUGHT", thought if reasoning is not None else _NOTHING),
    )


def _json_rules(json: bool, tagged: bool, block: bool) -> str:
    """The rules of the ``json_calls`` recovery the member's pieces use (none without it): a member
    with a block reads JSON calls as its body, one without as the reply's start (and each after the
    code-interpreter tag, where it reads that)."""
    if not json:
        return ""
    rules = ["json_block: JSON_CALLS", "%declare JSON_CALLS"] if block else ["json_lead: JSON_CALL"]
    if tagged:
        rules.append("python_json: PYTHON_OPEN JSON_CALL")
    if tagged or not block:
        rules.append("%declare JSON_CALL")
    return "\n".join(rules)


#: How much of a reply the stream holds back at least: as long as the grammar's lookaheads in free
#: text (where a "[" opens a call list).
_HOLDBACK = TEXT_LOOKAHEAD


def _parsing(spec: WireSpec) -> WireSpec:
    """``spec`` reduced to the fields that change how replies parse: the key members share a syntax by."""
    values = spec.values if spec.values in ("json_raw", *PYTHON_VALUES) else "json"
    values = "python" if spec.values == "raw_single" else values
    recover = tuple(sorted(spec.recover))
    commas = "," if "," in spec.argument_separator else ""  # whether a missing one is reported
    return WireSpec(
        "call_list",
        block=spec.block,
        stop=spec.stop,
        reasoning=spec.reasoning,
        values=values,
        argument_separator=commas,
        recover=recover,
    )


def _frame_ends(spec: WireSpec) -> str:
    """The regex alternatives of the frame's ends a JSON string argument may close before: the stop
    token, the block's closer (its line break aside)."""
    closer = spec.block[1].lstrip("\n")
    return "|" + regex_literal(spec.stop) + ("|" + regex_literal(closer) if closer else "")


@functools.cache
def _syntax(spec: WireSpec) -> Syntax:
    """The syntax of the members whose specs reduce to ``spec`` (:func:`_parsing`)."""
    grammar = family_grammar("wire/call_list", grammar_values(spec))
    (opener, closer), stop, reasoning = spec.block, spec.stop, spec.reasoning
    strings_read = string_reading(grammar, _frame_ends(spec))
    commas = "," in spec.argument_separator
    reader = CallListReader(grammar, strings_read.arguments, commas=commas)
    fast: dict[str, FastLexer] = {
        **strings_read.lexers,
        "CALL_LIST": reader.lexer(in_text=True),
        "FAST_CALL": reader.call_lexer(),
        "FAST_NEXT_CALL": reader.call_lexer(after_comma=True),
        "FAST_ARG": reader.argument_lexer(),
    }
    if "json_calls" in spec.recover:
        if opener:
            fast["JSON_CALLS"] = json_calls_lexer(many=True)
        if not opener or "python_tag" in spec.recover:
            fast["JSON_CALL"] = json_calls_lexer(many=False)
    closing = closer.lstrip("\n")  # the closer as the fast paths and resync look for it, blanks skipped
    if opener:
        fast["FENCED_LIST"] = reader.lexer(followed_by(closing))
    text_terminals = {
        "TEXT": CONTENT,
        **({"THOUGHT": REASONING} if reasoning else {}),
        **dict.fromkeys(CODE_FENCE, CONTENT),
    }
    autoclose = {"RPAR": ")", "RBRACK": "]"}
    if reasoning:  # an unclosed reasoning block or block is closed at the end too, like a bracket
        autoclose["THINK_CLOSE"] = reasoning[1]
    if opener:
        autoclose["FENCE_CLOSE"] = closing
    tags = PYTHON_TAGS if "python_tag" in spec.recover else ()
    markers = tuple(marker for marker in (stop, opener, *(reasoning or ()), *tags) if marker)
    whole = whole_reader(
        fast["FENCED_LIST" if opener else "CALL_LIST"],
        stop,
        opener,
        closer,
        (reasoning[0] + "\n", "\n" + reasoning[1] + "\n\n") if reasoning else None,
        typed=spec.values == "python_str",
    )
    return Syntax(
        grammar=grammar,
        builder=_builder(_BUILDERS.get(spec.values, CallListBuilder), commas),
        text_terminals=text_terminals,
        blocks={"FENCE_OPEN": "FENCE_CLOSE", "LBRACK": None} if opener else {"LBRACK": None},
        autoclose=autoclose,
        autoclose_before=frozenset({"STOP"}),
        resync_after=(closing,) if opener else (),
        resync_before=(stop,),
        delimiters=(strings_read.delimiter, Delimiter("'", "'", "\\")),
        # Punctuation no other terminal can extend: taken as soon as it arrives, not held back.
        # (A code fence's opener and closer too: text, but not to be cut where they hold a backtick.)
        closed_terminals=frozenset({"DQ_STRING", "SQ_STRING", "STOP", "CODE_OPEN", "CODE_CLOSE", *CLOSED_PUNCTUATION}),
        holdback=max(_HOLDBACK, *(len(marker) + 1 for marker in markers)),
        marker_starts="[" + _firsts(markers).replace("[", "").replace("`", "") + "`\n",
        nest_open=frozenset({"LBRACK", "LPAR", "LBRACE"}),
        nest_close=frozenset({"RBRACK", "RPAR", "RBRACE"}),
        reasoning_open="THINK_OPEN" if reasoning else None,
        prompt_opens_reasoning=_prompt_opens(reasoning[0]) if reasoning else None,
        # A template writes "<think>\n": THINK_OPEN drops the line break too.
        reasoning_open_rest="\n" if reasoning else "",
        # Without a prompt, "...</think>" before any call list, block or the stop token: the prompt
        # opened it (R1's templates end the prompt with "<think>\n").
        reasoning_close=reasoning[1] if reasoning else None,
        reasoning_not_opened=(
            (reasoning[0], call_list_start(grammar), *((opener,) if opener else ()), stop) if reasoning else ()
        ),
        reasoning_marker_span=TEXT_LOOKAHEAD,
        preempt_starts=" \t\r\n" + _firsts((stop, *(reasoning[:1] if reasoning else ()))),
        fast_terminals=fast,
        whole=whole,
    )


#: The builder of each value encoding that reads strings otherwise than JSON does.
_BUILDERS: dict[str, type[CallListBuilder]] = {
    "json_raw": RawStringsBuilder,
    "python": PythonStringsBuilder,
    "python_str": TypedStringsBuilder,
}


def _builder(base: type[CallListBuilder], commas: bool) -> type[CallListBuilder]:
    """``base``, for a member that writes a comma between arguments (``commas``) or none."""
    if not commas:
        return base
    return type(base.__name__, (base,), {"argument_commas": True, "__module__": __name__})


def _prompt_opens(opener: str) -> Callable[[str], bool]:
    """Whether a prompt ends inside reasoning: its last marker, blanks aside, is the opener."""

    def opens(prompt: str) -> bool:
        return prompt.rstrip().endswith(opener)

    return opens


def whole_reader(
    read_list: FastLexer,
    stop: str,
    opener: str,
    closer: str,
    reasoning_marks: tuple[str, str] | None,
    typed: bool = False,
) -> Callable[[str, ToolsByName | None], WholeReading | None]:
    """The whole-reply reader (``Syntax.whole``) of a member: optional reasoning between
    ``reasoning_marks``, prose, then nothing, or ``opener``, a call list ``read_list`` reads whole
    (the stream's own fast path for it) and ``closer``; then nothing or ``stop``. Prose holding what
    may be markup, text after the list, a list the fast path declines: the grammar's. With ``typed``,
    each call's string arguments are typed by its tool's schema, as the builder types them."""

    def whole(text: str, tools: ToolsByName | None) -> WholeReading | None:
        lead = ("", 0) if reasoning_marks is None else leading_reasoning(text, *reasoning_marks)
        if lead is None:
            return None
        reasoning, start = lead
        last = before_stop(text, stop)
        first = text.find(opener or "[", start, last)
        prose = text[start:last] if first < 0 else text[start:first]
        if MARKUP.search(prose):
            return None
        if first < 0:
            return prose, reasoning, []
        got = read_list(text, first + len(opener), True)
        if not isinstance(got, tuple) or text[got[1] : last] != closer:
            return None
        if not typed:
            return prose, reasoning, [(name, arguments) for name, arguments, _ in got[0]]
        return (
            prose,
            reasoning,
            [(name, typed_arguments(arguments, _parameters(tools, name))) for name, arguments, _ in got[0]],
        )

    return whole


def _parameters(tools: ToolsByName | None, name: str) -> Any:
    """The parameters schema of the tool ``name``, or None."""
    tool = tools.get(name) if tools is not None else None
    return tool_parameters(tool) if tool is not None else None


# --------------------------------------------------------------------------- the reply renderer


def render_value(value: Any, values: str) -> str:
    """An argument's value as ``values`` writes it: ``tojson``, but for a string with ``"json_raw"``,
    written between ``"`` with nothing escaped, and as Python writes it with ``"python"``."""
    if values in PYTHON_VALUES:
        return render_python(value, values)
    if values == "raw_single" and isinstance(value, str):
        return "'" + value + "'"
    return f'"{value}"' if values == "json_raw" and isinstance(value, str) else jinja.tojson(value)


def _raw_single(value: Any) -> str:
    return render_value(value, "raw_single")


def render_calls(spec: WireSpec, calls: list[Any]) -> str:
    """``[name(key=value...), ...]`` between the block's markers, as ``spec`` writes a call list (its
    calls alone, ``separator`` apart, where it writes no brackets)."""
    rendered = []
    for call in calls:
        function = call.get("function", call)
        arguments = function.get("arguments") or {}
        if isinstance(arguments, str):
            arguments = json_value(arguments) if arguments.strip() else {}
        pairs = (f"{key}={render_value(value, spec.values)}" for key, value in arguments.items())
        rendered.append(f"{function['name']}({spec.argument_separator.join(pairs)})")
    if not spec.brackets:
        return spec.block[0] + spec.separator.join(rendered) + spec.block[1]
    return spec.block[0] + "[" + spec.separator.join(rendered) + "]" + spec.block[1]


def content_text(content: Any) -> str:
    """A message's text: a string as it is, or the ``text`` of its text parts, joined."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "".join(
        str(part.get("text", "")) for part in content if isinstance(part, Mapping) and part.get("type") == "text"
    )


# --------------------------------------------------------------------------- constrained decoding

_SPACE = star(charset(" \t\r\n"))
_NAME = rseq(charset("A-Za-z_"), star(ralt(WORD, charset("-."))))
#: What starts a call list in free text (``[name(``), as the grammar reads it.
CALL_START = rseq("[", _SPACE, _NAME, _SPACE, "(")
#: Where a raw string argument may end: a quote followed by ``, name=``, ``,)`` or ``)`` (the parser
#: takes ``)`` only where no quote follows it: the grammar keeps all of them out of string values).
STRING_END = rseq('"', _SPACE, ralt(rseq(",", _SPACE, ralt(rseq(_NAME, _SPACE, "="), ")")), ")"))


def _json_arguments(
    values: JsonValues, tool: dict[str, Any], separator: Expr, value: Callable[[Any], Expr] | None = None
) -> Expr:
    """A call's keyword arguments in schema order (any names where the schema says none), each value
    as ``value(schema)`` writes it: JSON by default."""
    value = value or values.value
    declared = properties(parameters_schema(tool))
    if declared is None:  # free-form parameters: any names, any values
        pair = seq(NAME, "=", value(None))
        return maybe(seq(pair, many(seq(separator, pair))))
    props, required = declared
    items = [(seq(key + "=", value(schema)), key in required) for key, schema in props.items()]
    return ordered_items(items, separator)


def _free_string(schema: Any) -> bool:
    """Whether ``schema`` allows a free string, written raw between quotes."""
    if not isinstance(schema, Mapping):
        return True
    if "const" in schema or isinstance(schema.get("enum"), list):
        return False
    options = schema.get("anyOf", schema.get("oneOf"))
    if isinstance(options, list) and options:
        return any(_free_string(o) for o in options)
    return "string" in schema_types(schema) or not (schema_types(schema) or _constrained(schema))


def _other_values(values: JsonValues, schema: Any) -> Expr | None:
    """What ``schema`` allows besides a raw string: literals (strings raw in quotes) and JSON, or None."""
    if not isinstance(schema, Mapping) or not (schema_types(schema) or _constrained(schema)):
        any_value = values.any()
        containers = (values.array(any_value), values.free_object(any_value))
        return alt(values.number(), values.true, values.false, values.null, *containers)
    if "const" in schema:
        return Lit(render_value(schema["const"], "json_raw"))
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return alt(*(Lit(render_value(v, "json_raw")) for v in schema["enum"]))
    options = schema.get("anyOf", schema.get("oneOf"))
    if isinstance(options, list) and options:
        found = [e for e in (_other_values(values, o) for o in options) if e is not None]
        return alt(*found) if found else None
    found = [values.typed(schema, kind) for kind in schema_types(schema) if kind != "string"]
    return alt(*found) if found else None


def _quoted_other(builder: GrammarBuilder, py: PythonValues, schema: Any) -> Expr | None:
    """A ``"python_str"`` value that is not a free string (those are raw text between quotes), or None."""
    return None if _free_string(schema) else quoted_python(builder, py, schema)


def _constrained(schema: Mapping[str, Any]) -> bool:
    return any(key in schema for key in ("const", "enum", "anyOf", "oneOf"))


def _raw_arguments(
    builder: GrammarBuilder,
    values: JsonValues,
    tool: dict[str, Any],
    separator: str,
    other_values: Callable[[Any], Expr | None] | None = None,
) -> Expr:
    """A call's keyword arguments (strings raw) and its ``)``, in schema order; a value that is not a
    free string as ``other_values(schema)`` writes it (by default JSON: :func:`_other_values`).

    A raw string ends at the first quote followed by ``, name=`` or ``)``: in llguidance the
    lexeme must end there, so the string's closing quote, the next argument's name and ``=`` (or
    the ``)``) are one lexeme, and each argument's rule says what may follow it.
    """
    declared = properties(parameters_schema(tool))
    props, required = declared if declared is not None else ({}, set())
    names = list(props)
    rules: dict[int, Ref] = {}

    def followers(index: int) -> list[tuple[str, int | None]]:
        out: list[tuple[str, int | None]] = []
        for nxt in range(index + 1, len(names)):
            out.append(((separator if index >= 0 else "") + names[nxt] + "=", nxt))
            if names[nxt] in required:
                return out
        return [*out, (")", None)]

    def value_then(index: int | None) -> Expr:
        if index is None:
            return EMPTY
        if index not in rules:
            schema = props[names[index]]
            options: list[Expr] = []
            if _free_string(schema):
                text = builder.text(forbid=(STRING_END,))
                ends = [seq(builder.head(text, '"' + follow), value_then(nxt)) for follow, nxt in followers(index)]
                options.append(seq('"', alt(*ends)))
            other = other_values(schema) if other_values is not None else _other_values(values, schema)
            if other is not None:
                options.append(seq(other, after(index)))
            rules[index] = builder.rule("argument", alt(*options))
        return rules[index]

    def after(index: int) -> Expr:
        return alt(*(seq(follow, value_then(nxt)) for follow, nxt in followers(index)))

    return after(-1)


# --------------------------------------------------------------------------- the family


class CallList(Family):
    """Python-style call lists, compiled from a spec (see the module's docstring)."""

    name = "call_list"
    parameters = frozenset(
        {"block", "stop", "reasoning", "arguments", "values", "separator", "argument_separator", "recover", "brackets"}
    )

    @classmethod
    def check(cls, spec: WireSpec) -> None:
        """Refuse, besides what :meth:`Family.check` refuses, a spec the family cannot write or read:
        no stop token, half a block, values it does not write, markers free text cannot stop before
        (see the module's docstring), recoveries it does not know."""
        super().check(spec)
        if not spec.stop:
            raise ValueError("a call_list member needs a stop token")
        if bool(spec.block[0]) != bool(spec.block[1]):
            raise ValueError("a call_list block needs both an opener and a closer, or neither")
        if not spec.brackets and (not spec.block[0] or not spec.separator):
            raise ValueError("a call_list member without brackets writes its calls in a block, a separator apart")
        if spec.arguments != "python":
            raise ValueError(f"the call_list family writes arguments as 'python', not {spec.arguments!r}")
        if spec.values not in VALUES:
            raise ValueError(f"the call_list family writes values as {' or '.join(VALUES)}, not {spec.values!r}")
        markers = (spec.stop, *(spec.reasoning or ()))
        if spec.block[0] and not spec.block[0].startswith("`"):
            markers = (*markers, spec.block[0])
        if any(marker == "" or marker[0] in " \t\r\n[`" for marker in markers):
            raise ValueError(
                "a call_list marker starts with a blank, '[' or a backtick: free text cannot stop before it"
            )
        unknown = sorted(set(spec.recover) - set(RECOVERIES))
        if unknown:
            raise ValueError(f"the call_list family has no recoveries {unknown}; it has {sorted(RECOVERIES)}")

    @functools.cached_property
    def _parsed(self) -> Syntax:
        return _syntax(_parsing(self.spec))

    def syntax(self) -> Syntax:
        """The syntax of every member whose spec parses as this one's (built once, then this kit's)."""
        return self._parsed

    def reply_text(self, message: dict[str, Any]) -> str:
        """The reasoning (between the spec's markers, on lines of its own), the content, the call list
        (in the block) where there are calls, and the stop token."""
        spec, out = self.spec, []
        reasoning = message.get("reasoning_content")
        if spec.reasoning is not None and isinstance(reasoning, str) and reasoning:
            out.append(f"{spec.reasoning[0]}\n{reasoning}\n{spec.reasoning[1]}\n\n")
        out.append(content_text(message.get("content")))
        calls = message.get("tool_calls")
        if calls:
            out.append(render_calls(spec, calls))
        return "".join(out) + spec.stop

    def grammar_calls(self, builder: GrammarBuilder, tools: list[dict[str, Any]]) -> CallSyntax:
        """Calls as the spec writes them: ``[NAME(key=value...), ...]``, in the block where it has one.

        With ``"json_raw"`` values, a string argument is raw between quotes and what may follow it
        decides where it ends. With ``"json"``, values are JSON, and where the spec writes no separator
        between arguments (Gemma 3's template), ``", "`` may stand there too. Without a block, the list
        opens with ``[NAME(`` (free text may hold ``[`` but not ``[name(``).
        """
        spec = self.spec
        values = JsonValues(builder)
        calls: list[tuple[str, Expr]] = []
        py = PythonValues(builder)
        for tool in tools:
            head = f"{tool_name(tool)}("
            if spec.values in ("python", "raw_single"):
                # (raw_single: Python's raw strings, every other value JSON's.)
                if spec.values == "python":
                    python = functools.partial(python_value, py, values)
                else:
                    python = functools.partial(python_value, values, values, literal=_raw_single)
                arguments = _json_arguments(values, tool, Lit(spec.argument_separator), python)
                calls.append((head, seq(arguments, ")")))
            elif spec.values == "python_str":
                quoted = functools.partial(_quoted_other, builder, py)
                arguments = _raw_arguments(builder, values, tool, spec.argument_separator, quoted)
                calls.append((head, builder.rule("arguments", arguments)))
            elif spec.values == "json_raw":
                calls.append(
                    (head, builder.rule("arguments", _raw_arguments(builder, values, tool, spec.argument_separator)))
                )
            else:
                separator = Lit(spec.argument_separator) if spec.argument_separator else maybe(Lit(", "))
                calls.append((head, seq(_json_arguments(values, tool, separator), ")")))
        call = builder.rule("call", alt(*(seq(head, arguments) for head, arguments in calls))) if calls else EMPTY
        opener, closer = spec.block
        if opener:
            triggers: tuple[tuple[str, Expr], ...] = ((opener + ("[" if spec.brackets else ""), call),)
        else:
            triggers = tuple(("[" + head, arguments) for head, arguments in calls)
        return CallSyntax(
            triggers=triggers,
            more=seq(spec.separator, call),
            tail=Lit(("]" if spec.brackets else "") + closer),
            text_forbid_markers=(*((opener.rstrip("\n"),) if opener else ()), spec.stop),
            text_forbid=(CALL_START,),
            reasoning=Reasoning(*spec.reasoning) if spec.reasoning is not None else None,
            stops=(spec.stop,),
        )

    def reply_markers(self) -> tuple[str, ...]:
        """The block's opener, or the end of a bare list right before the stop token; with the
        ``python_tag`` recovery, Llama's tag before a list too."""
        opener = self.spec.block[0]
        found = (re.escape(opener.rstrip("\n")),) if opener else (r"\)\]" + re.escape(self.spec.stop),)
        return (*found, re.escape(PYTHON_TAGS[0]) + r"\[") if "python_tag" in self.spec.recover else found


FAMILY = CallList
