"""The limits of a chat template's render, and the operations that keep to them.

:class:`Limits` (what one render may do), the budget a render spends (:class:`_Budget`, the running
render's in :data:`_BUDGET`), the sizes of what an operation would build, reckoned before it builds
it, and the bounded forms of the operations and filters that can build more than they are given:
loops, ``range()``, ``lipsum()``, ``str.format``, the ``sum``, ``join`` and ``slice`` filters, and
every filter wrapped by :func:`_bounded_filter`. :mod:`codec.jinja` routes a template's operations
through these (its code generator and environment) and re-exports :class:`Limits`.
"""

from __future__ import annotations

import dataclasses
import itertools
import operator
import re
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sized
from contextvars import ContextVar
from functools import wraps
from typing import Any

from jinja2 import pass_environment, pass_eval_context
from jinja2.filters import make_attrgetter, sync_do_join, sync_do_slice
from jinja2.nodes import EvalContext
from jinja2.sandbox import SandboxedEscapeFormatter, SandboxedFormatter
from jinja2.utils import Namespace, generate_lorem_ipsum

from codec.errors import RenderError

# --------------------------------------------------------------------------- limits


@dataclasses.dataclass(frozen=True)
class Limits:
    """What one render of a chat template may do; past any of these it raises RenderError naming the limit.

    The defaults are far above what the reference templates need for a conversation that fits
    a model's context (but for gemma4's, which loops over every earlier message for each message:
    about 1,400 messages), and stop a template that would exhaust the process within half a minute
    of CPU and a few hundred megabytes.
    """

    #: Characters of the rendered text.
    output: int = 10_000_000
    #: What the template builds, in total, about in bytes: a character counts 1, an item of a list or
    #: dict 64. What ``~``, ``+``, ``*``, ``%``, methods, ``format``, filters, slices and macro or
    #: block bodies make counts, and the lists of words or lines filters make on their way; a value
    #: that would not fit is refused before it is built.
    built: int = 100_000_000
    #: Loop iterations, in total (nested loops multiply).
    iterations: int = 1_000_000
    #: Calls of macros (``caller()``, blocks and a recursive loop's ``loop()`` too), in total.
    calls: int = 100_000
    #: Bits of an integer that arithmetic produces (``*``, ``**``, ``+``, ``-``).
    integer_bits: int = 4_096
    #: Items of a ``range()``.
    range_size: int = 100_000
    #: Seconds of CPU time of the thread that renders, while the template runs (not what the caller of
    #: ``generate()`` does between pieces). Read at loop iterations, calls and filters, about every
    #: thousand items they go through: an operation under way finishes first.
    seconds: float = 30.0

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if field.name == "seconds":
                if type(value) not in (int, float) or not value >= 0:  # NaN is not >= 0
                    raise ValueError(f"Limits.seconds must be a non-negative number, not {value!r}")
            elif type(value) is not int or value < 0:
                raise ValueError(f"Limits.{field.name} must be a non-negative int, not {value!r}")


#: What each limit counts, for the error that names it.
_UNITS = {
    "output": "characters written",
    "built": "characters built in all (a list or dict item counts 64)",
    "iterations": "loop iterations",
    "calls": "macro calls",
    "integer_bits": "bits in an integer",
    "range_size": "items in a range",
    "seconds": "seconds of CPU time",
}
#: The work (loop iterations, macro calls, items a filter goes through) between two readings of the
#: clock: reading it costs about as much as a thousand iterations' bookkeeping.
_CLOCK_STRIDE = 1_000


class _OverLimit(RenderError):
    """A render stopped at one of its :class:`Limits` (``limit`` is the field's name)."""

    def __init__(self, limit: str, limits: Limits, what: str) -> None:
        self.limit = limit
        super().__init__(f"{what} goes past Limits.{limit}: at most {getattr(limits, limit):,} {_UNITS[limit]}")


class _Budget:
    """What one render has used of its :class:`Limits`."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.written = 0
        self.built = 0
        self.iterations = 0
        self.calls = 0
        #: Work done, and the count at which the clock is read next (at the first piece of work, then
        #: every :data:`_CLOCK_STRIDE`).
        self.work = 0
        self.next_reading = 0
        #: CPU seconds spent in the render's earlier runs, and the thread's CPU time when this one began.
        self.spent = 0.0
        self.resumed = time.thread_time()

    def resume(self) -> None:
        """The template runs again (after the caller took a piece)."""
        self.resumed = time.thread_time()

    def pause(self) -> None:
        """The template stops running (a piece goes to the caller)."""
        self.spent += time.thread_time() - self.resumed

    def advance(self, work: int, what: str) -> None:
        """``work`` more items gone through by ``what``: past :attr:`Limits.seconds`, it stops the render."""
        self.work += work
        if self.work >= self.next_reading:
            self.next_reading = self.work + _CLOCK_STRIDE
            if self.spent + time.thread_time() - self.resumed > self.limits.seconds:
                raise _OverLimit("seconds", self.limits, what)

    @property
    def room(self) -> int:
        """What is left of :attr:`Limits.built`."""
        return self.limits.built - self.built

    def write(self, size: int) -> None:
        """``size`` more characters of output."""
        self.written += size
        if self.written > self.limits.output:
            raise _OverLimit("output", self.limits, "the output")

    def require(self, size: int, what: str) -> None:
        """Refuse ``what`` before it runs if it may build ``size`` characters or items and they would not fit."""
        if size > self.room:
            raise _OverLimit("built", self.limits, what)

    def build(self, size: int, what: str) -> None:
        """``what`` built ``size`` characters or items."""
        self.require(size, what)
        self.built += size

    def iterate(self, what: str) -> None:
        """One more loop iteration."""
        self.iterations += 1
        if self.iterations > self.limits.iterations:
            raise _OverLimit("iterations", self.limits, what)
        self.advance(1, what)

    def call(self, what: str) -> None:
        """One more macro call."""
        self.calls += 1
        if self.calls > self.limits.calls:
            raise _OverLimit("calls", self.limits, what)
        self.advance(1, what)

    def integer(self, bits: int, what: str) -> None:
        """Refuse an integer of ``bits`` bits."""
        if bits > self.limits.integer_bits:
            raise _OverLimit("integer_bits", self.limits, what)


#: The budget of the render running in this thread (or task); ``None`` between renders.
_BUDGET: ContextVar[_Budget | None] = ContextVar("codec.jinja budget", default=None)


def _budget() -> _Budget:
    """The running render's budget.

    Outside a render this raises: the only code that runs a template's operations then is the
    compiler folding constant expressions, which leaves what raises to the render.
    """
    budget = _BUDGET.get()
    if budget is None:
        raise RuntimeError("a chat template's operations run only while it renders")
    return budget


# --------------------------------------------------------------------------- sizes, before building


#: Values whose text is that of what they hold (``Namespace``: its attributes).
_CONTAINERS = (list, tuple, dict, set, frozenset, Namespace)
#: Values an operation builds, charged by :func:`_size`.
_BUILT = (str, bytes, list, tuple, dict)
#: What an item of a list or dict counts for in :attr:`Limits.built` (a character counts 1): about the
#: memory of the item and of a small value in it, so that ``built`` is about the bytes allocated.
_ITEM = 64
#: Room for a number written out in full: ``'%f' % 1e308`` has 316 characters.
_NUMBER_ROOM = 330
_DIGITS = re.compile(r"\d+")


def _size(value: str | bytes | list[Any] | tuple[Any, ...] | dict[Any, Any]) -> int:
    """What a value built counts for in :attr:`Limits.built`: its characters, or :data:`_ITEM` per item."""
    return len(value) if isinstance(value, (str, bytes)) else _ITEM * len(value)


def _length(value: Any) -> int:
    """The items (or characters) of a value that has them, else 0."""
    return len(value) if isinstance(value, Sized) else 0


#: The blanks (what ``str.isspace()`` and a pattern's ``\\s`` match), the line breaks of
#: ``str.splitlines()``, and the other characters Jinja's ``title`` filter cuts a text at.
_BLANKS = (
    "\t\n\v\f\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)
_LINE_BREAKS = "\n\v\f\r\x1c\x1d\x1e\x85\u2028\u2029"
_TITLE_BREAKS = _BLANKS + "-({[<"


def _count(text: str | bytes, characters: str) -> int:
    """How many of ``text``'s characters are among ``characters``, counted in place (no list, no copy)."""
    if isinstance(text, bytes):
        return sum(text.count(ord(char)) for char in characters if ord(char) < 256)
    return sum(text.count(char) for char in characters)


def _pieces(text: str | bytes, name: str, separator: Any = None, most: int = -1) -> int:
    """At most how many pieces ``text.split(separator, most)`` (``rsplit``, ``splitlines``) makes."""
    if name == "splitlines":
        return _count(text, _LINE_BREAKS) + 1
    count = _count(text, _BLANKS) + 1 if separator is None else text.count(separator) + 1
    return count if most < 0 else min(count, most + 1)


def _leaf_size(value: Any) -> int:
    """About ``len(repr(value))`` for a value that holds no others."""
    if isinstance(value, (str, bytes)):
        return len(value) + 3
    if isinstance(value, int):
        return value.bit_length() // 3 + 2
    if isinstance(value, float):
        return 24
    return 64  # None, an Undefined, a macro, a loop...


def _children(value: Any) -> Iterator[Any]:
    if isinstance(value, Namespace):
        value = object.__getattribute__(value, "_Namespace__attrs")
    if isinstance(value, dict):
        return itertools.chain.from_iterable(value.items())
    return iter(value)


def _add(totals: list[int], shape: tuple[int, int, int]) -> None:
    """Count a value's ``shape`` in that of the container holding it."""
    text, items, depths = shape
    totals[0] += text + 2
    totals[1] += 1 + items
    totals[2] += 1 + depths + items


def _shape(value: Any) -> tuple[int, int, int]:
    """``(text, items, depths)`` of ``value``, without building its text.

    ``text`` is about ``len(str(value))``, ``items`` the number of values nested in it and
    ``depths`` the sum of their depths, each counted as often as it occurs: a list that holds one
    long string a million times has a million times its text. Each distinct container is walked
    once, without recursion; one that holds itself counts as ``[...]``. The walk stops once the
    text is past what the render has left to build (then only ``text`` says so).
    """
    if not isinstance(value, _CONTAINERS):
        return _leaf_size(value), 0, 0
    room = _budget().room
    done: dict[int, tuple[int, int, int]] = {}
    open_ids = {id(value)}
    stack: list[tuple[Any, Iterator[Any], list[int]]] = [(value, _children(value), [2, 0, 0])]
    seen = 2  # the text of all that was walked: never more than the whole's
    while True:
        node, children, totals = stack[-1]
        for child in children:
            if not isinstance(child, _CONTAINERS):
                shape = (_leaf_size(child), 0, 0)
            elif id(child) in done:
                shape = done[id(child)]
            elif id(child) in open_ids:
                shape = (5, 0, 0)
            else:
                open_ids.add(id(child))
                stack.append((child, _children(child), [2, 0, 0]))
                seen += 2
                break
            _add(totals, shape)
            seen += shape[0] + 2
            if seen > room:
                return seen, totals[1], totals[2]
        else:
            stack.pop()
            open_ids.discard(id(node))
            shape = (totals[0], totals[1], totals[2])
            if not stack:
                return shape
            done[id(node)] = shape
            _add(stack[-1][2], shape)


def _text_size(value: Any) -> int:
    """About ``len(str(value))``, without building it (see :func:`_shape`)."""
    if isinstance(value, (str, bytes)):
        return len(value)
    return _shape(value)[0]


def _require_text(budget: _Budget, value: Any, what: str) -> None:
    """Refuse to turn a container into text that would not fit (a string or number always fits)."""
    if isinstance(value, _CONTAINERS):
        budget.require(_text_size(value), what)


def _spec_size(spec: str) -> int:
    """The widths and precisions a format spec asks for, summed (a number too long to read counts as no room)."""
    return sum(int(digits) if len(digits) < 19 else sys.maxsize for digits in _DIGITS.findall(spec))


_PERCENT_SPEC = re.compile(r"%(?:\(([^)]*)\))?([-#0 +]*(?:\*|\d+)?(?:\.(?:\*|\d+))?)[hlL]?(.?)", re.DOTALL)


def _percent_bound(template: str | bytes, values: Any) -> int:
    """An upper bound of ``len(template % values)``, computed without formatting.

    Each conversion writes its value (ten times its length for ``%r`` and ``%a``, which escape),
    padded to its width and precision (a ``*`` takes them from the largest integer given); a
    tuple's values are each written once, a single value or mapping once per conversion. The
    count stops once past what the render has left to build.
    """
    text = template.decode("latin-1") if isinstance(template, bytes) else template
    room = _budget().room
    spread = isinstance(values, tuple)
    sizes: dict[Any, int] = {}  # the text of each value a conversion writes, by its key
    if spread:
        sizes[None] = sum(_text_size(value) for value in values)
    stars = max((abs(value) for value in values if isinstance(value, int)), default=0) if spread else 0
    bound = len(text) + sizes.get(None, 0)
    for spec in _PERCENT_SPEC.finditer(text):
        if bound > room:
            break
        key, options, kind = spec.groups()
        bound += _spec_size(options) + options.count("*") * stars + _NUMBER_ROOM
        escapes = 10 if kind in ("r", "a") else 1  # repr writes a character as up to ten
        if spread:
            bound += (escapes - 1) * sizes[None]
            continue
        if key not in sizes:
            keyed = key is not None and isinstance(values, Mapping) and key in values
            sizes[key] = _text_size(values[key] if keyed else values)
        bound += escapes * sizes[key]
    return bound


def _string_method_bound(text: str | bytes, name: str, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> int:
    """An upper bound of the length of ``text.name(*args)`` for the methods that build more than they are given.

    0 for the others, and for arguments the method itself refuses (it raises its own error). The
    ``split`` methods count the list they make (:data:`_ITEM` an item).
    """
    try:
        if name in ("center", "ljust", "rjust", "zfill"):
            return max(len(text), operator.index(args[0]))
        if name == "expandtabs":
            size = operator.index(args[0] if args else kwargs.get("tabsize", 8))
            return len(text) + text.count("\t" if isinstance(text, str) else b"\t") * max(size, 0)  # type: ignore[arg-type]
        if name == "replace":
            old, new = args[0], args[1]
            count = operator.index(args[2] if len(args) > 2 else kwargs.get("count", -1))
            found = text.count(old) if old else len(text) + 1
            return len(text) + (found if count < 0 else min(found, count)) * max(len(new) - len(old), 0)
        if name in ("split", "rsplit", "splitlines"):  # a list: an item per piece
            separator = args[0] if args else kwargs.get("sep")
            most = operator.index(args[1] if len(args) > 1 else kwargs.get("maxsplit", -1))
            return _ITEM * _pieces(text, name, None if name == "splitlines" else separator, most)
        if name == "translate":
            table = args[0]
            values = table.values() if isinstance(table, Mapping) else table
            longest = max((len(value) for value in values if isinstance(value, (str, bytes))), default=1)
            return len(text) * max(longest, 1)
    except (IndexError, TypeError, ValueError):
        return 0
    return 0


def _repeat_bound(left: Any, right: Any) -> int:
    """The size of ``left * right`` for a sequence repeated (0 for anything else)."""
    sequence, times = (left, right) if isinstance(right, int) else (right, left)
    if isinstance(sequence, (str, bytes, list, tuple)) and isinstance(times, int):
        return _size(sequence) * max(times, 0)
    return 0


def _check_binop(budget: _Budget, op: str, left: Any, right: Any) -> None:
    """Refuse ``left op right`` before it runs if its result cannot fit."""
    both_ints = isinstance(left, int) and isinstance(right, int)
    if op == "*" and both_ints and left and right:
        budget.integer(left.bit_length() + right.bit_length() - 1, "*")
    elif op == "*":
        budget.require(_repeat_bound(left, right), "repeating with *")
    elif op == "**" and both_ints and right > 0 and abs(left) > 1:
        budget.integer((left.bit_length() - 1) * right + 1, "**")
    elif op == "+" and isinstance(left, (str, bytes, list, tuple)) and isinstance(right, (str, bytes, list, tuple)):
        budget.require(_size(left) + _size(right), "+")
    elif op == "%" and isinstance(left, (str, bytes)):
        budget.require(_percent_bound(left, right), "% formatting")


# --------------------------------------------------------------------------- bounded operations


class _LoopItems:
    """What a ``{% for %}`` loops over: each item taken is an iteration (its ``len`` is the source's)."""

    __slots__ = ("_budget", "_items", "_source")

    def __init__(self, source: Any, budget: _Budget) -> None:
        self._source = source
        self._items = iter(source)
        self._budget = budget

    def __iter__(self) -> _LoopItems:
        return self

    def __next__(self) -> Any:
        item = next(self._items)
        self._budget.iterate("a loop")
        return item

    def __len__(self) -> int:
        return len(self._source)


class _BoundedFields:
    """A ``str.format`` formatter that refuses, field by field, a result that would not fit."""

    _bound = 0

    def vformat(self, format_string: str, args: Any, kwargs: Any) -> str:
        self._bound = len(format_string)
        return super().vformat(format_string, args, kwargs)  # type: ignore[misc,no-any-return]

    def _grow(self, size: int) -> None:
        self._bound += size
        _budget().require(self._bound, "str.format")

    def convert_field(self, value: Any, conversion: str | None) -> Any:
        if conversion in ("r", "a"):
            _budget().require(self._bound + 10 * _text_size(value), "str.format")
        return super().convert_field(value, conversion)  # type: ignore[misc]

    def format_field(self, value: Any, format_spec: str) -> Any:
        self._grow(_spec_size(format_spec) + _text_size(value) + (0 if isinstance(value, str) else _NUMBER_ROOM))
        return super().format_field(value, format_spec)  # type: ignore[misc]


class _Formatter(_BoundedFields, SandboxedFormatter):
    pass


class _EscapeFormatter(_BoundedFields, SandboxedEscapeFormatter):
    pass


def _range(*args: int) -> range:
    """``range()``, of at most :attr:`Limits.range_size` items."""
    items = range(*args)
    limits = _budget().limits
    try:
        too_long = len(items) > limits.range_size
    except OverflowError:  # more items than an index can count
        too_long = True
    if too_long:
        raise _OverLimit("range_size", limits, "range()")
    return items


def _lipsum(n: int = 5, html: bool = True, min: int = 20, max: int = 100) -> str:
    """``lipsum()``: ``n`` paragraphs of at most ``max`` words (of at most 14 characters and a separator)."""
    budget = _budget()
    budget.require(operator.index(n) * (operator.index(max) * 16 + 16), "lipsum()")
    text = generate_lorem_ipsum(n, html, min, max)
    budget.build(len(text), "lipsum()")
    return text


def _linear_sum(iterable: Iterable[Any], start: Any) -> Any:
    """``sum(iterable, start)`` for a list or tuple ``start``: items of its type joined at once, not pairwise.

    Added pairwise, ``n`` lists cost ``n`` copies of the growing list; the first item of another
    type is added as ``sum`` adds it (raising its ``TypeError``), then the rest as ``sum`` would.
    """
    budget = _budget()
    kind = type(start)
    parts = [start]
    items = iter(iterable)
    total = _size(start)
    for item in items:
        if type(item) is not kind:
            return sum(items, kind(itertools.chain.from_iterable(parts)) + item)
        total += _size(item)
        budget.require(total, "the sum filter")
        parts.append(item)
    return kind(itertools.chain.from_iterable(parts))


@pass_environment
def _sum(environment: Any, iterable: Iterable[Any], attribute: str | int | None = None, start: Any = 0) -> Any:
    """The ``sum`` filter (jinja's), adding lists and tuples in linear time."""
    if attribute is not None:
        iterable = map(make_attrgetter(environment, attribute), iterable)
    if type(start) in (list, tuple):
        return _linear_sum(iterable, start)
    return sum(iterable, start)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else str(value)


def _indent_bound(s: Any, width: int | str = 4, first: bool = False, blank: bool = False) -> int:
    text = _text(s)
    pad = len(width) if isinstance(width, str) else operator.index(width)
    return len(text) + (text.count("\n") + 1) * max(pad, 0)


def _wordwrap_bound(
    s: Any, width: int = 79, break_long_words: bool = True, wrapstring: str | None = None, *rest: Any, **more: Any
) -> int:
    text = _text(s)  # at most a wrap per character, and one per line
    return len(text) + (len(text) + text.count("\n") + 1) * len("\n" if wrapstring is None else wrapstring)


def _urlize_bound(
    value: Any, trim_url_limit: Any = None, nofollow: Any = False, target: Any = None, rel: Any = None, *rest: Any
) -> int:
    text = _text(value)  # each word may become a link: twice itself, its attributes and the markup
    attributes = sum(len(_text(given)) for given in (target, rel) if given is not None)
    return 3 * len(text) + (text.count(" ") + text.count("\n") + 1) * (attributes + 64)


def _json_bound(value: Any, indent: int | str | None, separators: tuple[str, str] | None) -> int:
    """About the length of the JSON of ``value``: its text, a separator per item, a line per item and bracket."""
    text, items, depths = _shape(value)
    item_separator, key_separator = separators or ((", ", ": ") if indent is None else (",", ": "))
    bound = text + items * (len(item_separator) + len(key_separator))
    if indent is not None:
        width = len(indent) if isinstance(indent, str) else max(operator.index(indent), 0)
        bound += 2 * (depths * width + items + 1)
    return bound


def _pprint_bound(value: Any) -> int:
    text, items, depths = _shape(value)
    return text + 2 * (depths + items + 1)


#: Upper bounds of the length of what a filter builds, from its arguments (the value first), for the
#: filters that can build more than they are given.
_FILTER_BOUNDS: dict[str, Callable[..., int]] = {
    "center": lambda value, width=80: max(len(_text(value)), operator.index(width)),
    "indent": _indent_bound,
    "wordwrap": _wordwrap_bound,
    "replace": lambda s, old, new, count=None: _string_method_bound(
        _text(s), "replace", (_text(old), _text(new), -1 if count is None else count), {}
    ),
    "format": lambda value, *args, **kwargs: _percent_bound(_text(value), kwargs or args),
    "batch": lambda value, linecount, fill_with=None: 0 if fill_with is None else _ITEM * operator.index(linecount),
    "urlize": _urlize_bound,
    "tojson": lambda value, ensure_ascii=False, indent=None, separators=None, sort_keys=False: _json_bound(
        value, indent, separators
    ),
    "pprint": _pprint_bound,
    # jinja's wordcount lists the words: at most one a character and a separator
    "wordcount": lambda s: _ITEM * ((len(_text(s)) + 1) // 2),
}


def _wordwrap_pieces(s: Any, width: int = 79, *rest: Any, **more: Any) -> int:
    """At most the chunks textwrap cuts ``s`` into (a chunk ends at a blank or a hyphen), and its lines."""
    text = _text(s)
    chunks = 2 * _count(text, _BLANKS + "-") + 1
    return chunks + len(text) // max(operator.index(width), 1) + chunks


#: The items of the lists a filter makes on its way to its result (a list of words, of lines), from
#: its arguments (the value first): each counts :data:`_ITEM` in :attr:`Limits.built`, charged before
#: the filter runs.
_FILTER_LISTS: dict[str, Callable[..., int]] = {
    # jinja's title splits at its breaks (a word and a break each a piece), then lists the pieces recased
    "title": lambda s: 2 * (2 * _count(_text(s), _TITLE_BREAKS) + 1),
    "striptags": lambda value: _count(_text(value), _BLANKS) + 1,
    "indent": lambda s, *rest, **more: _count(_text(s), _LINE_BREAKS) + 2,
    "wordwrap": _wordwrap_pieces,
}
#: Filters that list their value's items (its characters, for a text) on their way: those items must
#: fit before they are listed (``sort`` also lists a key per item, each in a list of its own).
_LISTING = {"list": 1, "sort": 3, "unique": 1, "groupby": 3, "dictsort": 2}

#: Filters that turn their value into text: a container's text must fit before it is built.
_STRINGIFYING = frozenset(
    (
        *("capitalize", "center", "e", "escape", "forceescape", "format", "indent", "lower", "replace", "safe"),
        *("string", "striptags", "title", "trim", "truncate", "upper", "urlencode", "urlize", "wordcount"),
        *("wordwrap", "xmlattr"),
    )
)
#: Filters that give back a value they were given (or one in it): nothing is built.
_SELECTING = frozenset(("attr", "d", "default", "first", "last", "max", "min", "random"))


def _bounded_filter(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    """``function`` as the ``name`` filter: refused when what it builds cannot fit, what it built charged."""
    skip = 1 if getattr(function, "jinja_pass_arg", None) is not None else 0  # the context or environment
    bound = _FILTER_BOUNDS.get(name)
    lists = _FILTER_LISTS.get(name)
    listing = _LISTING.get(name, 0)
    stringifies = name in _STRINGIFYING
    charged = name not in _SELECTING
    what = f"the {name} filter"

    @wraps(function)
    def bounded(*args: Any, **kwargs: Any) -> Any:
        budget = _budget()
        given = args[skip:]
        budget.advance(1 + (_length(given[0]) if given else 0), what)
        if stringifies and given:
            _require_text(budget, given[0], what)
        if listing and given:
            budget.require(listing * _ITEM * _length(given[0]), what)
        if lists is not None and given:
            try:
                pieces = lists(*given, **kwargs)
            except (TypeError, ValueError):  # arguments the filter refuses: it raises its own error
                pieces = 0
            budget.build(_ITEM * pieces, what)
        if bound is not None:
            try:
                size = bound(*given, **kwargs)
            except (TypeError, ValueError):  # arguments the filter refuses: it raises its own error
                size = 0
            budget.require(size, what)
        result = function(*args, **kwargs)
        if charged and isinstance(result, _BUILT) and not (given and result is given[0]):
            budget.build(_size(result), what)
        return result

    return bounded


@pass_eval_context
def _join(eval_ctx: EvalContext, value: Any, d: Any = "", attribute: str | int | None = None) -> str:
    """The ``join`` filter (jinja's), refused before joining when the items' text and separators would not fit."""
    if isinstance(value, str):  # listed character by character
        _budget().require(_ITEM * len(value), "the join filter")
    try:
        items = list(value)
    except TypeError:  # not iterable: join raises its own error
        return sync_do_join(eval_ctx, value, d, attribute)
    size = sum(_text_size(item) for item in items) + _text_size(d) * max(len(items) - 1, 0)
    _budget().require(size, "the join filter")
    return sync_do_join(eval_ctx, items, d, attribute)


def _slice(value: Any, slices: int, fill_with: Any = None) -> Iterator[list[Any]]:
    """The ``slice`` filter (jinja's): each slice it makes is an iteration (a million empty slices take long)."""
    budget = _budget()
    for part in sync_do_slice(value, slices, fill_with):
        budget.iterate("the slice filter")
        budget.build(_ITEM + _size(part), "the slice filter")
        yield part
