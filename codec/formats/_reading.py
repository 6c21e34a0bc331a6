"""Backtracking reading of a text that may read several ways: the kit the prompt decoders share.

A template writes text raw, so a rendered prompt can often be read more than one way: a string
may end at any of the quotes in it, a turn at any of its closers. A *reading* of something at an
offset is the value read and the offset after it; :data:`Readings` is an iterator over them, the
preferred one first, and a decoder takes the first reading of the whole text that fits,
backtracking through the readings of each piece.

:class:`Reader` holds what such a search needs besides the readings of a format's own pieces
(its subclass's methods): the farthest place any reading failed and what was expected there (the
:class:`~codec.errors.ParseError` of a text that reads no way points there), a step budget that
stops a search a damaged text would make endless, the readings of runs and separated lists of
pieces, found without recursion (a prompt can be long), and the looks at the text themselves. A
literal's occurrences are found once, in one pass over the text, and every later search for it
is a lookup among them: a search never starts over from where another one started, nor runs on
to the end of the text turn after turn, so reading a prompt takes work linear in its length
(:attr:`Reader.examined` counts it).
"""

from __future__ import annotations

import heapq
import re
from bisect import bisect_left
from collections.abc import Callable, Iterator
from typing import ClassVar, TypeVar

from codec.errors import ParseError, parse_error_at

T = TypeVar("T")
#: The readings of something at an offset, in order: each value read and the offset after it.
Readings = Iterator[tuple[T, int]]


def find_all(text: str, pos: int, literals: tuple[str, ...], end: int | None = None) -> Iterator[int]:
    """Every offset from ``pos`` on where one of ``literals`` starts, in order, each offset once.

    With ``end``, only the occurrences that lie wholly before ``end`` (as :meth:`str.find` finds them).
    """
    if len(literals) == 1:  # the common case, without the bookkeeping of several literals
        literal = literals[0]
        found = text.find(literal, pos, end)
        while found >= 0:
            yield found
            found = text.find(literal, found + 1, end)
        return
    next_hits = {literal: text.find(literal, pos, end) for literal in literals}
    while True:
        hits = [hit for hit in next_hits.values() if hit >= 0]
        if not hits:
            return
        found = min(hits)
        yield found
        for literal, hit in next_hits.items():
            if hit == found:
                next_hits[literal] = text.find(literal, found + 1, end)


class Reader:
    """The readings of one text, and where the deepest of them failed.

    A subclass reads its format's pieces in methods that yield :data:`Readings`, from these
    primitives; each place that refuses a reading calls :meth:`fail` with what it expected, and
    :meth:`error` is then the error for a text no reading gets through. It looks at the text
    only through them (:meth:`starts`, :meth:`at`, :meth:`find`, :meth:`find_all`,
    :meth:`match`, :meth:`piece`), which count what they examine.
    """

    #: What :meth:`error` says of a text no reading gets through, before what was expected.
    refusal: ClassVar[str] = "no reading of the text gets past here"
    #: What :meth:`error` adds once the step budget is spent.
    gave_up: ClassVar[str] = "; the search gave up there: the text reads too many ways to try them all"
    #: Places tried per character of the text before the search gives up: a valid text needs well
    #: under one; only a damaged text that its many markers let read a great many ways gets near this.
    steps_per_char: ClassVar[int] = 4
    #: Places any text may try, however short.
    base_steps: ClassVar[int] = 2_000

    def __init__(self, text: str) -> None:
        self.text = text
        #: The farthest offset a reading failed at, and what was expected there.
        self.farthest = 0
        self.expected: set[str] = set()
        self._steps = self.steps_per_char * len(text) + self.base_steps
        #: Characters of the text examined so far: a pass over the whole text per literal searched
        #: for, and what each other look takes in (one per lookup among a literal's offsets).
        self.examined = 0
        self._offsets: dict[tuple[str, ...], list[int]] = {}

    def error(self, note: str = "") -> ParseError:
        """The ParseError for a text no reading gets through: at the farthest point any reading reached."""
        shown = " or ".join(repr(literal) for literal in sorted(self.expected))
        message = self.refusal + (f" (expected {shown})" if shown else "") + note
        return parse_error_at(self.text, self.farthest, message, expected=sorted(self.expected))

    def fail(self, pos: int, expected: tuple[str, ...]) -> None:
        """A reading stopped at ``pos``, where one of ``expected`` would have let it go on."""
        if pos > self.farthest:
            self.farthest, self.expected = pos, set(expected)
        elif pos == self.farthest:
            self.expected.update(expected)

    def tick(self) -> None:
        """One more place tried; :meth:`error` (raised) once the budget is spent."""
        self._steps -= 1
        if self._steps < 0:  # the markers in its texts make it read too many ways to try them all
            raise self.error(self.gave_up)

    # ------------------------------------------------------------------ looking at the text

    def starts(self, pos: int, literal: str | tuple[str, ...]) -> bool:
        """Whether ``literal`` (or one of several) is at ``pos``."""
        self.examined += len(literal) if isinstance(literal, str) else sum(map(len, literal))
        return self.text.startswith(literal, pos)

    def at(self, pos: int, literal: str) -> bool:
        """Whether ``literal`` is at ``pos`` (a failure there if not)."""
        if self.starts(pos, literal):
            return True
        self.fail(pos, (literal,))
        return False

    def piece(self, start: int, end: int) -> str:
        """The text from ``start`` to ``end``."""
        self.examined += max(end - start, 0)
        return self.text[start:end]

    def match(self, pattern: re.Pattern[str], pos: int, longest: int) -> re.Match[str] | None:
        """``pattern`` matched at ``pos``, over at most ``longest`` characters (what it may need, not the rest)."""
        found = pattern.match(self.text, pos, min(len(self.text), pos + longest))
        self.examined += (found.end() - pos if found else 0) + 1
        return found

    def offsets(self, *literals: str) -> list[int]:
        """Every offset where one of ``literals`` starts, in order, each once.

        Found in one pass over the text per literal, the first time it is asked; the offsets of
        several, merged from theirs once.
        """
        found = self._offsets.get(literals)
        if found is None:
            if len(literals) == 1:
                found = list(find_all(self.text, 0, literals))
                self.examined += len(self.text)
            else:
                found = list(dict.fromkeys(heapq.merge(*(self.offsets(literal) for literal in literals))))
            self._offsets[literals] = found
        return found

    def find(self, pos: int, literal: str) -> int:
        """The first offset from ``pos`` on where ``literal`` starts, or -1: a lookup among its :meth:`offsets`."""
        found = self.offsets(literal)
        index = bisect_left(found, pos)
        self.examined += 1
        return found[index] if index < len(found) else -1

    def find_all(self, pos: int, literals: tuple[str, ...]) -> Iterator[int]:
        """Every offset from ``pos`` on where one of ``literals`` starts, in order, each a step.

        When there are no more, the failure is where the search started: the text that is never
        closed starts there (a truncated prompt reports its last open turn or string).
        """
        found = self.offsets(*literals)
        for index in range(bisect_left(found, pos), len(found)):
            self.tick()
            self.examined += 1
            yield found[index]
        self.fail(pos, literals)

    # ------------------------------------------------------------------ runs and lists

    def repeat(self, read: Callable[[int], Readings[T]], pos: int) -> Readings[tuple[T, ...]]:
        """Runs of what ``read`` reads, from ``pos``: longer runs first, one per end (iterative: runs can be long).

        Two runs over the same text render the same, so a run that ends where another one did is
        not yielded, nor continued.
        """
        readings = read(pos)
        first = next(readings, None)
        if first is None:  # the common case, kept light: a prompt's every turn waits here for backtracking
            del readings
            yield (), pos
            return
        items: list[T] = []
        ends = [pos]
        stack = [readings]
        visited = {pos}
        step: tuple[T, int] | None = first
        while stack:
            if step is None:
                step = next(stack[-1], None)
                if step is None:
                    stack.pop()
                    yield tuple(items), ends.pop()
                    if items:
                        items.pop()
                    continue
            item, after = step
            step = None
            if after in visited:
                continue
            visited.add(after)
            items.append(item)
            ends.append(after)
            stack.append(read(after))

    def separated(self, pos: int, read: Callable[[int], Readings[T]], close: str) -> Readings[tuple[T, ...]]:
        """``item,item,...`` then ``close``, from ``pos``; every reading, in order (iterative: lists can be long)."""
        items: list[T] = []
        stack = [read(pos)]
        while stack:
            step = next(stack[-1], None)
            if step is None:
                stack.pop()
                if items:
                    items.pop()
                continue
            item, after = step
            if self.starts(after, close):
                yield (*items, item), after + len(close)
            elif self.at(after, ","):
                items.append(item)
                stack.append(read(after + 1))
