"""Where a free-text terminal's match could still end earlier once more text arrives.

A free-text terminal of the stream's grammars is a repetition of small alternatives, some of which
look ahead (``\\n(?!</parameter>)``: a line break is text unless a closer follows it). Near the end
of what has arrived, such a lookahead may read past the end: its verdict, and so where the text
ends, can change with the next chunk. Everything before the first such lookahead (less what its
alternative consumed before it) is text whatever comes next, and can be committed at once.

:func:`text_probe` derives, once per terminal, a pattern whose leftmost partial match (the
``regex`` module's partial matching) is the first position where a lookahead of the terminal
could read past the end of the text, and how many characters before it its alternative may have
consumed. One search per feed over the tail of what has arrived: linear work whatever the chunking.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from typing import Any

import regex

# The standard library's regex parser: the tree of a pattern, and its items' widths.
if sys.version_info >= (3, 11):
    import re._constants as sre_constants  # type: ignore[import-not-found,unused-ignore]
    import re._parser as sre_parse  # type: ignore[import-not-found,unused-ignore]
else:  # pragma: no cover - Python 3.10
    import sre_constants
    import sre_parse

__all__ = ["TextProbe", "text_probe"]


@dataclass(frozen=True)
class TextProbe:
    """A text terminal's undecided lookaheads: ``pattern`` matches (partially, at the latest at
    the end of the text) where one could read past the end, and ``before`` bounds how many
    characters its alternative consumed before the lookahead."""

    pattern: regex.Pattern[str]
    before: int

    def holds_from(self, text: str, start: int) -> int:
        """The first offset from ``start`` on at which ``text`` may stop being the terminal's text
        once more arrives (``len(text)`` at the latest, less :attr:`before`)."""
        found = self.pattern.search(text, start, partial=True)
        at = len(text) if found is None else found.start()
        return max(start, at - self.before)


def text_probe(pattern: str, reach: int) -> TextProbe | None:
    """The probe of a text terminal's ``pattern`` (None where its shape is not one the probe can
    judge: the stream then holds its text back from the first character that could start a marker).

    ``reach`` bounds how far any lookahead of the pattern reads (the format's holdback): a nested
    lookahead within that distance of the end is taken as possibly either way."""
    try:
        tree = sre_parse.parse(pattern)
    except re.error:  # pragma: no cover - the grammar compiled it already
        return None
    widths: list[int] = []
    if not _walk_top(list(tree.data), widths):
        return None
    spans = _lookahead_spans(pattern)
    if spans is None or len(spans) != len(widths):
        return None
    if not spans:
        return TextProbe(regex.compile(r"(?!)"), 0)
    pieces, before = [], 0
    for (alt, opened, closed), offset in zip(spans, widths, strict=True):
        # The piece is the lookahead's alternative up to it, then its body: it matches where that
        # alternative starts. Items before the alternative within the repetition's iteration (a
        # nested group) are what ``before`` adds.
        head, body = _relax(pattern[alt:opened], reach), _relax(pattern[opened + 3 : closed], reach)
        if head is None or body is None:
            return None
        head_width = _max_width(pattern[alt:opened])
        if head_width is None:
            return None
        before = max(before, offset - head_width)
        pieces.append(f"{head}(?:{body})")
    # A lookahead is undecided where its body can match from there on to the end of the text or
    # past it: ``\Z`` then one more character makes every such match partial, so that the leftmost
    # one is found (a full match would be preferred to an earlier partial one).
    probe = regex.compile("(?:" + "|".join(pieces) + r")\Z[\s\S]")
    return TextProbe(probe, before)


# --------------------------------------------------------------------------- the pattern's tree

# (Possessive repetitions and atomic groups are Python 3.11's: None before.)
_POSSESSIVE: Any = getattr(sre_constants, "POSSESSIVE_REPEAT", None)
_ATOMIC: Any = getattr(sre_constants, "ATOMIC_GROUP", None)
_REPEATS = {sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT, _POSSESSIVE} - {None}
_LOOKS = {sre_constants.ASSERT, sre_constants.ASSERT_NOT}
#: Positions a text terminal may not depend on outside a lookahead (they read past the text).
_AT_END = {sre_constants.AT_END, sre_constants.AT_END_STRING, sre_constants.AT_BOUNDARY, sre_constants.AT_NON_BOUNDARY}


def _walk_top(items: list[tuple[Any, Any]], widths: list[int]) -> bool:
    """Collect, for each outermost lookahead of a top-level item sequence, the most characters its
    alternative consumed before it (False: a shape the probe cannot judge). A repetition at the
    top level must be the last item: nothing after it may make the engine give back what it took."""
    for k, (op, _) in enumerate(items):
        if op in _REPEATS and k != len(items) - 1:
            return False
    offset: int | None = 0
    for op, av in items:
        if op in _REPEATS:
            # Each iteration of the last repetition is an alternative of its own: a lookahead in it
            # that fails ends the text where the iteration started.
            if not _walk(list(av[2]), 0, widths):
                return False
            continue
        if not _walk([(op, av)], offset, widths):
            return False
        offset = _add(offset, _width(op, av))
    return True


def _walk(items: list[tuple[Any, Any]], offset: int | None, widths: list[int]) -> bool:
    """Collect the lookaheads of ``items`` met ``offset`` characters (at most) after the start of
    their alternative (None: unbounded)."""
    for op, av in items:
        if op in _LOOKS:
            direction, _ = av
            if direction == 1:
                if offset is None:
                    return False
                widths.append(offset)
            continue  # a lookbehind reads what has arrived: decided
        if op is sre_constants.AT and av in _AT_END:
            return False
        if op is sre_constants.GROUPREF_EXISTS or op is sre_constants.GROUPREF:
            return False
        if op is sre_constants.BRANCH:
            if not all(_walk(list(alt), offset, widths) for alt in av[1]):
                return False
        elif op is sre_constants.SUBPATTERN:
            if not _walk(list(av[-1]), offset, widths):
                return False
        elif _ATOMIC is not None and op is _ATOMIC:
            if not _walk(list(av), offset, widths):
                return False
        elif op in _REPEATS and not _walk(list(av[2]), _add(offset, _width(op, av)), widths):
            # A lookahead inside a nested repetition: bounded by the whole repetition's width.
            return False
        offset = _add(offset, _width(op, av))
    return True


def _width(op: Any, av: Any) -> int | None:
    """The most characters one item consumes (None: unbounded)."""
    high = sre_parse.SubPattern(sre_parse.State(), [(op, av)]).getwidth()[1]
    return None if high >= sre_constants.MAXREPEAT else int(high)


def _reading(source: str) -> int | None:
    """How far a lookahead's body ``source`` reads at most (None: unbounded): its widest match,
    its own lookarounds counted as if they consumed what they read."""
    opened = source.replace("(?<=", "(?:").replace("(?<!", "(?:").replace("(?=", "(?:").replace("(?!", "(?:")
    try:
        return _max_width(opened)
    except re.error:
        return None


def _max_width(source: str) -> int | None:
    """The most characters ``source`` (a piece of a pattern) consumes (None: unbounded)."""
    high = sre_parse.parse(source).getwidth()[1]
    return None if high >= sre_constants.MAXREPEAT else int(high)


def _add(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else a + b


# --------------------------------------------------------------------------- the pattern's source


def _lookahead_spans(pattern: str) -> list[tuple[int, int, int]] | None:
    """For each outermost lookahead, in order: where the alternative holding it starts, where the
    lookahead starts and where it closes (its body is between the opener and the close); None
    where the pattern has a named group or a backreference, which a probe made of several pieces
    could not keep apart."""
    spans: list[tuple[int, int, int]] = []
    stack: list[list[Any]] = []  # [kind, where it opened, where its current alternative starts]
    top_alt = 0
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if c == "[":
            i = _class_end(pattern, i)
            continue
        if c == "(":
            if pattern.startswith(("(?P", "(?("), i):
                return None
            if pattern.startswith(("(?=", "(?!"), i):
                kind, content = "ahead", i + 3
            elif pattern.startswith(("(?<=", "(?<!"), i):
                kind, content = "behind", i + 4
            elif pattern.startswith("(?", i):
                colon = pattern.find(":", i)
                close = pattern.find(")", i)
                if pattern.startswith("(?>", i):
                    content = i + 3
                elif colon < 0 or (0 <= close < colon):
                    content = close  # an inline flag group (?i): nothing inside
                else:
                    content = colon + 1
                kind = "group"
            else:
                kind, content = "group", i + 1
            stack.append([kind, i, content])
            i = max(i + 1, content)
            continue
        if c == "|":
            if stack:
                stack[-1][2] = i + 1
            else:
                top_alt = i + 1
        elif c == ")":
            kind, opened, _ = stack.pop()
            if kind == "ahead" and all(k == "group" for k, _, _ in stack):
                spans.append((stack[-1][2] if stack else top_alt, opened, i))
        i += 1
    return spans


def _class_end(pattern: str, i: int) -> int:
    """Where the character class opening at ``pattern[i]`` ends (past its ``]``)."""
    j = i + 1
    if j < len(pattern) and pattern[j] == "^":
        j += 1
    if j < len(pattern) and pattern[j] == "]":
        j += 1
    while j < len(pattern) and pattern[j] != "]":
        j += 2 if pattern[j] == "\\" else 1
    return j + 1


def _relax(body: str, reach: int) -> str | None:
    """A lookahead's body with its own lookaheads made to succeed within ``reach`` of the end,
    where more text could change their verdict (consuming to the end, so that the body's match is
    seen to reach it): a body that could match once more text arrives matches here."""
    out: list[str] = []
    i, n = 0, len(body)
    while i < n:
        c = body[i]
        if c == "\\":
            out.append(body[i : i + 2])
            i += 2
            continue
        if c == "[":
            j = _class_end(body, i)
            out.append(body[i:j])
            i = j
            continue
        if body.startswith(("(?=", "(?!"), i):
            end = _group_end(body, i)
            if end is None:
                return None
            # Within as many characters of the end as it can read, either verdict may come.
            span = _reading(body[i + 3 : end])
            out.append(f"(?:{body[i : end + 1]}|[\\s\\S]{{0,{reach if span is None else min(span, reach)}}}\\Z)")
            i = end + 1
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _group_end(pattern: str, i: int) -> int | None:
    """Where the group opening at ``pattern[i]`` closes (the index of its ``)``)."""
    depth, j = 0, i
    while j < len(pattern):
        c = pattern[j]
        if c == "\\":
            j += 2
            continue
        if c == "[":
            j = _class_end(pattern, j)
            continue
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return j
        j += 1
    return None
