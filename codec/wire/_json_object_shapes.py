"""The ``json_object`` family's reading of calls in other models' shapes: a code fence, another
tag (``<tool>``, ``<response>``...), ``<function=NAME>``, or bare call objects that are the whole
reply.

Other Hermes-style models (Hermes 2 Pro, Qwen 2.5) write calls so; each shape is one token
(FOREIGN_CALLS, LEAD_CALLS), lexed by a scan once its text has decided it, and read only where it
holds nothing but calls (a JSON example in a fence or a paragraph stays content). A member's
``recover`` names the shapes it reads (``foreign_shapes``, ``unwrapped_calls``). A member whose
calls are bare objects at the start of the reply (Llama 3.x: ``bare_calls``) reads them with the
same scan, as its own calls: one such call is no repair.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any, TypeVar

from codec.literals import python_calls
from codec.watch import FastLexer
from codec.wire._json_object_values import (
    BLANKS,
    CALL_NAME,
    PYTHON_READING,
    READINGS,
    SEVERAL_OBJECTS,
    Keys,
    Repair,
    add_arguments,
    call_parts,
    decode_objects,
    members_of,
    raw_decode,
)

#: Tags that models put around call objects in place of their call markers.
FOREIGN_TAGS = ("tool", "tools", "response", "json", "xml", "JSON", "function_call")
#: The info strings of a code fence that may hold calls (none at all, too).
FENCE_LANGUAGES = ("", "json", "JSON", "xml", "XML")
_TAG_OPENERS = tuple(f"<{tag}>" for tag in FOREIGN_TAGS)
_FUNCTION_OPENERS = ("<function=", '<function name="')
#: What a FOREIGN_CALLS token starts with, and what the end of the text may hold of that (cheaper
#: to rule out than to scan).
_FOREIGN_OPENERS = (*_TAG_OPENERS, *_FUNCTION_OPENERS)
_FOREIGN_START = re.compile(r"\n[ \t]{0,3}```|\n?(?:" + "|".join(map(re.escape, _FOREIGN_OPENERS)) + ")")
_LONGEST_OPENER = 1 + max(map(len, _FOREIGN_OPENERS))
_FOREIGN_PART = re.compile(
    r"(?:\n[ \t]{0,3}`{0,2}|\n?(?:"
    + "|".join(re.escape(opener[:k]) for opener in _FOREIGN_OPENERS for k in range(1, len(opener)))
    + r"))\Z"
)
_SPACES = re.compile(r"[ \t]*")
_IN_VALUE = re.compile(r"""["'{}\[\]()<`]""")
_IN_STRING = {'"': re.compile(r'["\\<]'), "'": re.compile(r"['\\<]")}
#: Blanks a shape's head may hold between its parts.
_HEAD_BLANKS = 16
#: What free text must see past a '<' to tell it from a foreign opener (``<function_call>``).
FOREIGN_LOOKAHEAD = len("function_call>")


@dataclass(frozen=True)
class Markers:
    """A member's markers and recoveries, as its lexers, its shapes and its builder read them."""

    #: The call opener and closer, and the stop token.
    open: str
    close: str
    stop: str
    #: The characters that must follow a token before the stream commits it (``Syntax.holdback``).
    holdback: int
    #: Whether calls in other models' shapes (fences, other tags, ``<function=NAME>``) are read,
    #: and bare call objects that are the whole reply (the recoveries ``foreign_shapes`` and
    #: ``unwrapped_calls``).
    foreign: bool
    unwrapped: bool
    #: The keys of a call object.
    keys: Keys
    #: Whether the member's own calls are call objects at the start of the reply, bare or each
    #: after the call opener, ``;`` or blanks apart, up to the stop token, the closer or the end
    #: (the recovery ``bare_calls``).
    bare: bool = False
    #: Whether the calls after the opener are one JSON list (a spec's ``block``: Mistral's
    #: ``[TOOL_CALLS][{...}, {...}]``, and ``close`` the block's closer where it has one, Nemotron's
    #: ``<TOOLCALL>[...]</TOOLCALL>``), not one object per opener and closer.
    listed: bool = False
    #: A fence's closing line (up to three spaces of indentation, as Markdown has it) or the stop token.
    fence_end: re.Pattern[str] = field(init=False, repr=False, compare=False)
    #: What a block's opener looks like where the content goes on to one (ruled out first).
    block_openers: tuple[str, str] = field(init=False, repr=False, compare=False)
    #: The keys a call object's head may start with (the name's first).
    head_keys: tuple[str, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "fence_end", re.compile(r"\n[ \t]{0,3}```|" + re.escape(self.stop)))
        object.__setattr__(self, "block_openers", (self.open, "\n" + self.open))
        object.__setattr__(self, "head_keys", (self.keys.name, *self.keys.arguments))


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


def _call_head(t: _Text, keys: tuple[str, ...]) -> _Step[int]:
    """Read the head of a call object (``{`` and one of its ``keys`` quoted), or of a list of
    them: the brackets it opened, 0 if none starts here."""
    depth = 0
    if (yield from _peek(t)) == "[":
        t.i += 1
        depth = 1
        yield from _skip(t, BLANKS, _HEAD_BLANKS)
    if (yield from _peek(t)) != "{":
        return 0
    t.i += 1
    yield from _skip(t, BLANKS, _HEAD_BLANKS)
    quote = yield from _peek(t)
    if quote not in ('"', "'"):
        return 0
    t.i += 1
    key = yield from _one_of(t, tuple(key + quote for key in keys))
    return depth + 1 if key else 0


def _values_end(t: _Text, depth: int) -> _Step[int]:
    """Read values separated by blanks, the first opened ``depth`` deep by its head: where the last
    ends (the blanks after it read), -1 if they do not read as values."""
    if not (yield from _value_end(t, depth)):
        return -1
    end = t.at
    while True:
        yield from _skip(t, BLANKS)
        if (yield from _peek(t)) not in ("{", "["):
            return end
        if not (yield from _value_end(t)):
            return -1
        end = t.at


def _fence(t: _Text, m: Markers) -> _Step[Shape | None]:
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
    yield from _skip(t, BLANKS, _HEAD_BLANKS)
    if (yield from _peek(t)) == "<":
        tag = yield from _one_of(t, (m.open, *_TAG_OPENERS))
        if not tag:
            return None
        yield from _skip(t, BLANKS, _HEAD_BLANKS)
        if tag != m.open and not (yield from _call_head(t, m.head_keys)):
            return None
    elif not (yield from _call_head(t, m.head_keys)):
        return None
    while True:
        end = m.fence_end.search(t.s, t.i)
        if end is not None:
            break
        t.i = max(t.i, len(t.s) - len(m.stop) + 1)
        if t.ended:
            t.i = len(t.s)
            return Shape("fence", opener, body, t.at, False, t.at)
        yield
    t.i = end.start()
    body_end = t.at
    if end.group() == m.stop:
        return Shape("fence", opener, body, body_end, False, body_end)
    t.i = end.end()
    return Shape("fence", opener, body, body_end, True, t.at)


def _tagged(t: _Text, m: Markers) -> _Step[Shape | None]:
    """``<TAG>`` around call objects, or ``<function=NAME>`` (``<function name="NAME">``) around
    arguments: to the closer (or, where it is missing, the stop token or the end of the text)."""
    opener = t.at
    found = yield from _one_of(t, _FOREIGN_OPENERS)
    if found in _FUNCTION_OPENERS:
        name = yield from _name(t, ">" if found == "<function=" else '"')
        if name is None or (found != "<function=" and not (yield from _literal(t, ">"))):
            return None
        yield from _skip(t, BLANKS, _HEAD_BLANKS)
        body = t.at
        if (yield from _peek(t)) != "{" or not (yield from _value_end(t)):
            return None
        kind, closer, body_end = "function", "</function>", t.at
        yield from _skip(t, BLANKS)
    elif found:
        yield from _skip(t, BLANKS, _HEAD_BLANKS)
        body = t.at
        depth = yield from _call_head(t, m.head_keys)
        body_end = (yield from _values_end(t, depth)) if depth else -1
        if body_end < 0:
            return None
        kind, name, closer = "tag", found[1:-1], "</" + found[1:]
    else:
        return None
    closed = yield from _literal(t, closer)
    if not closed and (yield from _peek(t)) and not (yield from _literal(t, m.stop, read=False)):
        return None
    return Shape(kind, opener, body, body_end, closed, t.at, name)


def _scan_foreign(t: _Text, m: Markers) -> _Step[Shape | None]:
    """FOREIGN_CALLS: a tagged shape, or a line break and a fence or a tagged shape (the line
    break before a call is markup, as it is before a call's opener)."""
    if (yield from _peek(t)) == "<":
        return (yield from _tagged(t, m))
    t.i += 1  # the line break
    if (yield from _peek(t)) == "<":
        return (yield from _tagged(t, m))
    yield from _skip(t, _SPACES, 3)
    return (yield from _fence(t, m))


def _scan_lead(t: _Text, m: Markers) -> _Step[Shape | None]:
    """LEAD_CALLS: blanks, then a fence, a tagged shape, or call objects that are all the reply
    holds before the stop token or a call's opener (each where its recovery is on).

    It reads every shape FOREIGN_CALLS reads there too: a stream that wakes after this scan has
    decided lexes with the reply's end in view, and the other lexer must then find nothing it
    would not find without it."""
    yield from _skip(t, BLANKS)
    if m.bare:
        return (yield from _bare(t, m))
    first = yield from _peek(t)
    if first in "`<":
        if not m.foreign:
            return None
        return (yield from (_fence(t, m) if first == "`" else _tagged(t, m)))
    if not m.unwrapped:
        return None
    opener = t.at
    depth = yield from _call_head(t, m.head_keys)
    end = (yield from _values_end(t, depth)) if depth else -1
    if end < 0:
        return None
    if (yield from _peek(t)) and not (
        (yield from _literal(t, m.stop, read=False)) or (yield from _literal(t, m.open, read=False))
    ):
        return None
    return Shape("bare", opener, opener, end, True, t.at)


_SEVERAL_TAGS = "{opener} written again before another call"
#: The mark of a call in the member's own syntax (``bare_calls``) in what a shape holds: a call
#: whatever its name (a tool not declared is reported), as a call inside the call markers is.
OWN = "own"
#: The keys a bare call object may start with beside its name's and arguments': ``"type"``
#: (``"type": "function"``, as OpenAI writes a call).
_TYPE_KEY = "type"


def _bare(t: _Text, m: Markers) -> _Step[Shape | None]:
    """A member's own bare calls (``bare_calls``): call objects or lists of them, each after the
    call opener or not, ``;`` or blanks apart, that are all the reply holds before the stop token,
    the closer (read: it ends the calls) or the end."""
    opener = t.at
    heads = (*m.head_keys, _TYPE_KEY)
    while True:
        tagged = yield from _literal(t, m.open)
        if tagged:
            yield from _skip(t, BLANKS)
        if tagged and (yield from _starts_python(t)):  # Python only after the opener
            if not (yield from _python_call_end(t)):
                return None
        else:
            depth = yield from _call_head(t, heads)
            if not depth or not (yield from _value_end(t, depth)):
                return None
        end = t.at
        yield from _skip(t, BLANKS)
        after = yield from _peek(t)
        if after == ";":
            t.i += 1
            yield from _skip(t, BLANKS)
            continue
        if not after or (yield from _literal(t, m.stop, read=False)):
            return Shape("bare", opener, opener, end, True, t.at)
        if (yield from _literal(t, m.close)):
            return Shape("bare", opener, opener, end, True, t.at)
        if after not in "{[" and not (yield from _literal(t, m.open, read=False)):  # blanks apart, or the opener
            return None


_PYTHON_NAME = re.compile(r"[A-Za-z_][\w.]{0,255}")


def _starts_python(t: _Text) -> _Step[bool]:
    """Whether a Python call (a name) or a list of them comes next, nothing read."""
    while True:
        s, i = t.s, t.i
        if i < len(s) and s[i] == "[":
            i = BLANKS.match(s, i + 1, min(len(s), i + 1 + _HEAD_BLANKS)).end()  # type: ignore[union-attr]
        if i < len(s) and (s[i] not in " \t\r\n" or i - t.i > _HEAD_BLANKS):
            return s[i].isalpha() or s[i] == "_"
        if t.ended:
            return False
        yield


def _python_call_end(t: _Text) -> _Step[bool]:
    """Read a Python call ``NAME(...)``, or a list of them ``[NAME(...), ...]``, to its closing bracket."""
    depth = 0
    if (yield from _peek(t)) == "[":
        t.i += 1
        depth = 1
        yield from _skip(t, BLANKS, _HEAD_BLANKS)
    name = ""
    while len(name) <= 256:
        c = yield from _peek(t)
        if not c or not (c.isalnum() or c in "_."):
            break
        name += c
        t.i += 1
    if not _PYTHON_NAME.fullmatch(name) or not (yield from _literal(t, "(")):
        return False
    return (yield from _value_end(t, depth + 1))


def _python_extent(body: str, pos: int) -> int:
    """Where the Python call (or list of them) at ``pos`` ends, -1 where none does."""
    t = _Text(body, pos)
    t.ended = True
    steps = _python_call_end(t)
    try:
        while True:
            next(steps)
    except StopIteration as done:
        return pos + t.at if done.value else -1


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
    scan: Callable[[_Text, Markers], _Step[Shape | None]],
    starts: str,
    m: Markers,
    opening: tuple[re.Pattern[str], re.Pattern[str]] | None = None,
) -> FastLexer:
    """A fast lexer of the shapes ``scan`` reads: the token is the whole shape, lexed once the
    text decides it (a watch follows it meanwhile).

    ``opening``: what a shape starts with, and what the end of the text may hold of that (text
    that matches neither is none, at once); its shapes start with a character that can start a
    marker, so that the stream commits nothing there while fewer than its holdback characters
    follow: until then an undecided shape is left for the next look, without a watch.
    """

    holdback, block_openers = m.holdback, m.block_openers

    def lex(text: str, pos: int, final: bool) -> tuple[Shape, int] | _ShapeWatch | None:
        left = len(text) - pos
        if left <= 0 or text[pos] not in starts:
            return None
        if opening is not None and (
            (not final and left < holdback)  # no shape is this short: look again then
            or text.startswith(block_openers, pos)  # the common case, ruled out first
            or (
                not opening[0].match(text, pos) and (final or left > _LONGEST_OPENER or not opening[1].match(text, pos))
            )
        ):
            return None
        t = _Text(text, pos)
        steps = scan(t, m)
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
        if shape.kind == "fence" and not shape.closed and shape_contents(shape, text[pos : pos + shape.end], m) is None:
            return None  # a fence never closed is one only if it holds calls: else it might hold the rest
        return shape, pos + shape.end

    return lex


def shape_lexers(m: Markers) -> dict[str, FastLexer]:
    """The fast lexers of the shapes ``m``'s recoveries read, by terminal: FOREIGN_CALLS anywhere in
    the content, LEAD_CALLS at its start."""
    lexers = {}
    if m.foreign or m.unwrapped or m.bare:
        starts = " \t\r\n" + ("`" if m.foreign else "") + ("{[" if m.unwrapped or m.bare else "")
        starts += m.open[0] if m.bare else ""
        lexers["LEAD_CALLS"] = _shape_lexer(_scan_lead, starts, m)
    if m.foreign:
        lexers["FOREIGN_CALLS"] = _shape_lexer(_scan_foreign, "\n<", m, (_FOREIGN_START, _FOREIGN_PART))
    return lexers


#: The issue each shape is reported with (``{name}``: the tag, or the function's name; ``{opener}``:
#: the call opener).
_SHAPE_ISSUES = {
    "bare": ("unwrapped_call", "call objects written without {opener}, as the whole reply"),
    "fence": ("fenced_call", "calls written in a code fence, without {opener}"),
    "tag": ("foreign_tag", "calls written in <{name}>, not in {opener}"),
    "function": ("function_tag", "a call written as <function={name}>, not in {opener}"),
}
_CLOSERS = {"fence": "```", "tag": "</{name}>", "function": "</function>"}
#: The issue of each reading of a text that is not plain JSON (see ``READINGS``).
_REPAIRED = {
    READINGS[1][1]: ("repaired_call", f"read as {READINGS[1][1]}"),
    PYTHON_READING: ("repaired_call", f"read as {PYTHON_READING}"),
}
_FENCED_TAG = re.compile("<(" + "|".join(FOREIGN_TAGS) + ")>")
#: What a shape holds, in order: (offset, issue kind, message, None, the issue's text) for a
#: repair, and (offset, name, "", arguments, None) for a call.
Found = list[tuple[int, str, str, "dict[str, Any] | None", "str | None"]]


def shape_contents(shape: Shape, text: str, m: Markers) -> Found | None:
    """The calls the shape ``text`` holds and the repairs it needed; None if it holds anything
    but calls (then it is text)."""
    if shape.kind == "bare" and m.bare:
        found: Found = []
        return found if _bare_calls(text[shape.body : shape.body_end], shape.body, found, m) else None
    kind, message = _SHAPE_ISSUES[shape.kind]
    found = [(shape.opener, kind, message.format(name=shape.name, opener=m.open), None, None)]
    if not shape.closed:
        closer = _CLOSERS[shape.kind].format(name=shape.name)
        found.append((shape.end, "missing_closer", f"missing {closer!r} inserted", None, None))
    body = text[shape.body : shape.body_end]
    if shape.kind == "function":
        ok = _function_call(shape.name.strip(), body, shape.body, found)
    elif shape.kind == "fence":
        ok = _fenced(body, shape.body, found, m)
    else:
        ok = _objects(body, shape.body, found, m, strict=True)
    return found if ok else None


def _objects(body: str, at: int, found: Found, m: Markers, *, strict: bool) -> bool:
    """Add the calls ``body`` (at offset ``at``) holds, with the repairs made to read them, to
    ``found``; False if it holds anything else. ``strict``: see :func:`call_parts`; otherwise
    ``body`` is a call block's, where a second object is reported."""
    decoded = decode_objects(body)
    if decoded is None:
        return False
    values, how = decoded
    if how in _REPAIRED:
        found.append((at + values[0][0], *_REPAIRED[how], None, None))
    if not strict and len(values) > 1:
        found.append((at + values[1][0], "several_objects", SEVERAL_OBJECTS.format(opener=m.open), None, None))
    for start, value in values:
        listed = isinstance(value, list)
        if listed:
            found.append((at + start, "call_list", "calls written as one JSON list", None, None))
        for element in value if listed else [value]:
            call = call_parts(element, m.keys, strict=strict)
            if call is None:
                return False
            name, arguments, repairs = call
            found += [(at + start, kind, message, None, text) for kind, message, text in repairs]
            found.append((at + start, name, "", arguments, None))
    return bool(values)


def _bare_calls(body: str, at: int, found: Found, m: Markers) -> bool:
    """Add the member's own bare calls ``body`` holds (see :func:`_bare`) to ``found``: the opener
    written again before a call is reported (``several_objects``: the calls ``;`` or blanks apart
    are the reply's calls as they are), a call object that also says ``"type": "function"`` too
    (``unexpected_key``); False if it holds anything but calls."""
    i, n, count, tags = 0, len(body), 0, 0
    while i < n:
        i = BLANKS.match(body, i).end()  # type: ignore[union-attr]
        if body.startswith(m.open, i):
            tags += 1
            if tags == 2:
                found.append((at + i, "several_objects", _SEVERAL_TAGS.format(opener=m.open), None, None))
            i = BLANKS.match(body, i + len(m.open)).end()  # type: ignore[union-attr]
        if body.startswith(("{", "["), i) and not _PYTHON_LIST.match(body, i):
            got = _one_value(body, i)
        else:
            got = _python_value(body, i)
        if got is None:
            return False
        value, how, end = got
        if how == _PYTHON_CALLS:
            count += _add_python_calls(value, at + i, found)
            i = BLANKS.match(body, end).end()  # type: ignore[union-attr]
            if i < n and body[i] == ";":
                i += 1
            continue
        if how in _REPAIRED:
            found.append((at + i, *_REPAIRED[how], None, None))
        listed = isinstance(value, list)
        if listed:
            found.append((at + i, "call_list", "calls written as one JSON list", None, None))
        for element in value if listed else [value]:
            call = _bare_call(element, m.keys)
            if call is None:
                return False
            count += 1
            name, arguments, repairs = call
            found += [(at + i, kind, message, None, text) for kind, message, text in repairs]
            found.append((at + i, name, OWN, arguments, None))
        i = BLANKS.match(body, end).end()  # type: ignore[union-attr]
        if i < n and body[i] == ";":
            i += 1
    return count > 0


_PYTHON_CALLS = "Python calls"
_PYTHON_LIST = re.compile(r"\[[ \t\r\n]*[A-Za-z_]")
#: The suffix of a built-in tool's call (Llama's ``brave_search.call(query="...")``).
_BUILTIN_CALL = ".call"


def _python_value(body: str, pos: int) -> tuple[Any, str, int] | None:
    """The Python calls at ``pos`` (see :func:`_python_call_end`), and where they end."""
    end = _python_extent(body, pos)
    if end < 0:
        return None
    try:
        calls = python_calls(body[pos:end])
    except ValueError:
        return None
    return (body[pos] == "[", calls), _PYTHON_CALLS, end


def _add_python_calls(value: Any, at: int, found: Found) -> int:
    """Add Python calls (``(listed, calls)``) to ``found``: a built-in tool's ``NAME.call(...)`` is
    the call ``NAME``, as written; another function's, written where JSON was, is reported. Returns
    how many there were."""
    listed, calls = value
    if listed:
        found.append((at, "call_list", "calls written as one Python list", None, None))
    for name, pairs in calls:
        arguments: dict[str, Any] = {}
        repairs: list[Repair] = []
        add_arguments(arguments, dict(pairs), repairs)
        found += [(at, kind, message, None, text) for kind, message, text in repairs]
        builtin = name.endswith(_BUILTIN_CALL)
        if not builtin:
            found.append((at, "repaired_call", f"tool call {name!r} written as a Python call, read", None, None))
        found.append((at, name.removesuffix(_BUILTIN_CALL), OWN, arguments, None))
    return len(calls)


def _one_value(body: str, pos: int) -> tuple[Any, str, int] | None:
    """The JSON (or Python-literal) value at ``pos``, how it was read and where it ends."""
    for decoder, how in READINGS:
        try:
            value, end = raw_decode(decoder, body, pos)
        except (ValueError, RecursionError):
            continue
        return value, how, end
    return None


def _bare_call(obj: Any, keys: Keys) -> tuple[str, dict[str, Any], list[Repair]] | None:
    """A bare call object's parts (:func:`call_parts`, strict), where ``"type": "function"`` may stand beside them."""
    if not isinstance(obj, dict):
        return None
    members = members_of(obj)
    typed = [value for key, value in members if key == _TYPE_KEY]
    if not typed:
        return call_parts(obj, keys, strict=True)
    untyped = {key: value for key, value in members if key != _TYPE_KEY}
    if typed != ["function"] or call_parts(untyped, keys, strict=True) is None:
        return None
    return call_parts(obj, keys)


def _function_call(name: str, body: str, at: int, found: Found) -> bool:
    """Add the call ``<function=name>`` with the arguments ``body`` to ``found``, if they are an object."""
    decoded = decode_objects(body)
    if decoded is None or len(decoded[0]) != 1 or not CALL_NAME.fullmatch(name):
        return False
    (start, members), how = decoded[0][0], decoded[1]
    if not isinstance(members, dict):
        return False
    if how in _REPAIRED:
        found.append((at + start, *_REPAIRED[how], None, None))
    arguments: dict[str, Any] = {}
    repairs: list[Repair] = []
    add_arguments(arguments, members, repairs)
    found += [(at + start, kind, message, None, text) for kind, message, text in repairs]
    found.append((at + start, name, "", arguments, None))
    return True


def _fenced(body: str, at: int, found: Found, m: Markers) -> bool:
    """Add the calls a fence's body holds: call objects, call blocks, or one of the foreign tags
    around call objects."""
    inner = body.strip()
    lead = len(body) - len(body.lstrip())
    tag = _FENCED_TAG.match(inner)
    if tag is not None:
        closer = f"</{tag.group(1)}>"
        if not inner.endswith(closer):
            return False
        found.append((at + lead, "foreign_tag", f"calls written in {tag.group()}, not in {m.open}", None, None))
        return _objects(inner[tag.end() : -len(closer)], at + lead + tag.end(), found, m, strict=True)
    if not inner.startswith(m.open):
        return _objects(body, at, found, m, strict=True)
    i, n = lead, len(body)
    while i < n:
        if not body.startswith(m.open, i):
            return False
        start = i + len(m.open)
        close = body.find(m.close, start)
        if close < 0:
            found.append((at + n, "missing_closer", f"missing {m.close!r} inserted", None, None))
            close = n
        if not _objects(body[start:close], at + start, found, m, strict=False):
            return False
        i = BLANKS.match(body, min(n, close + len(m.close))).end()  # type: ignore[union-attr]
    return True
