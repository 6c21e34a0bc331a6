"""A Jinja environment that renders chat templates exactly as transformers 5 ``apply_chat_template`` does.

Our own implementation of the behaviour of ``transformers.utils.chat_template_utils``:

* ``ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)`` with the ``loopcontrols``
  extension and a ``{% generation %}...{% endgeneration %}`` tag that renders its body unchanged
  (as a call block, so ``{% set %}`` inside it stays local, as in transformers);
* ``tojson`` as ``json.dumps`` (``ensure_ascii=False``, no HTML escaping; ``indent``,
  ``separators`` and ``sort_keys`` arguments), ``raise_exception``, ``strftime_now``, and the
  restricted ``dict`` and ``namespace`` globals;
* the input normalisation: message objects (pydantic models, dataclasses, mappings) become plain
  dicts, a message's keys whose value is ``None`` are dropped, everything the template sees is
  rebuilt from plain JSON-like types, and ``reasoning_content`` / ``thinking`` / ``reasoning``
  are aliased.

Template failures (``raise_exception``, undefined attributes, type errors, syntax errors) surface
as :class:`~codec.errors.RenderError` carrying the template's own message.

Unlike transformers, a render is bounded (:class:`Limits`): the text it writes, the strings and
lists it builds, its loop iterations and macro calls, the integers its arithmetic makes and its
ranges. Every operation that can build more than it is given (``*``, ``+``, ``%``, ``~``,
``**``, padding, ``str.format``, joins, ``replace``, ``tojson``, filters, macro bodies...) is
checked against what is left before it runs, so a template that would exhaust the process fails
with a :class:`~codec.errors.RenderError` naming the limit instead. The checks see everything a
template runs: the code generator routes loops, ``~`` and slices through the environment, the
sandbox routes calls and operators through it, and every filter and global is checked.
"""

from __future__ import annotations

import copy
import dataclasses
import itertools
import json
import operator
import re
import sys
import types
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextvars import ContextVar
from datetime import datetime
from functools import lru_cache, wraps
from string import Formatter
from typing import Any

from jinja2 import Template, nodes, pass_environment, pass_eval_context
from jinja2.compiler import CodeGenerator, Frame, optimizeconst
from jinja2.exceptions import SecurityError, TemplateError
from jinja2.ext import Extension, loopcontrols
from jinja2.filters import make_attrgetter, sync_do_join, sync_do_slice
from jinja2.nodes import EvalContext
from jinja2.parser import Parser
from jinja2.runtime import BlockReference, LoopContext, Macro
from jinja2.sandbox import ImmutableSandboxedEnvironment, SandboxedEscapeFormatter, SandboxedFormatter
from jinja2.utils import Namespace, generate_lorem_ipsum
from markupsafe import Markup
from pydantic import BaseModel

from codec.errors import RenderError

__all__ = ["Limits", "environment", "prepare_messages", "prepare_tools", "render_template", "require_messages"]

#: The names a message's reasoning may come under, in the order transformers looks for it.
REASONING_KEYS = ("reasoning_content", "thinking", "reasoning")


# --------------------------------------------------------------------------- limits


@dataclasses.dataclass(frozen=True)
class Limits:
    """What one render of a chat template may do; past any of these it raises RenderError naming the limit.

    The defaults are far above what the reference templates need for a conversation that fits
    a model's context (but for gemma4's, which loops over every earlier message for each message:
    about 1,400 messages), and stop a template that would exhaust the process within seconds and
    a few hundred megabytes.
    """

    #: Characters of the rendered text.
    output: int = 10_000_000
    #: What the template builds, in total, about in bytes: a character counts 1, an item of a list or
    #: dict 64. What ``~``, ``+``, ``*``, ``%``, methods, ``format``, filters, slices and macro or
    #: block bodies make counts; a value that would not fit is refused before it is built.
    built: int = 100_000_000
    #: Loop iterations, in total (nested loops multiply).
    iterations: int = 1_000_000
    #: Calls of macros (``caller()``, blocks and a recursive loop's ``loop()`` too), in total.
    calls: int = 100_000
    #: Bits of an integer that arithmetic produces (``*``, ``**``, ``+``, ``-``).
    integer_bits: int = 4_096
    #: Items of a ``range()``.
    range_size: int = 100_000

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if type(value) is not int or value < 0:
                raise ValueError(f"Limits.{field.name} must be a non-negative int, not {value!r}")


#: What each limit counts, for the error that names it.
_UNITS = {
    "output": "characters written",
    "built": "characters built in all (a list or dict item counts 64)",
    "iterations": "loop iterations",
    "calls": "macro calls",
    "integer_bits": "bits in an integer",
    "range_size": "items in a range",
}


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

    def call(self, what: str) -> None:
        """One more macro call."""
        self.calls += 1
        if self.calls > self.limits.calls:
            raise _OverLimit("calls", self.limits, what)

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

    0 for the others, and for arguments the method itself refuses (it raises its own error).
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
}
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
    stringifies = name in _STRINGIFYING
    charged = name not in _SELECTING
    what = f"the {name} filter"

    @wraps(function)
    def bounded(*args: Any, **kwargs: Any) -> Any:
        budget = _budget()
        given = args[skip:]
        if stringifies and given:
            _require_text(budget, given[0], what)
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


# --------------------------------------------------------------------------- the environment


class GenerationExtension(Extension):
    """``{% generation %}...{% endgeneration %}``: renders its body unchanged.

    transformers uses the tag to mark assistant text for training masks; rendering is unaffected.
    The body is compiled as a call block (a caller macro), which is what gives it its own scope.
    """

    tags = {"generation"}  # noqa: RUF012 (jinja2 declares it as a plain class attribute)

    def parse(self, parser: Parser) -> nodes.Node:
        """Parse the tag and its body up to ``endgeneration``."""
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        call = self.call_method("_body")
        return nodes.CallBlock(call, [], [], body).set_lineno(lineno)

    def _body(self, caller: Callable[[], str]) -> str:
        return caller()


def _check_namespace_name(name: object) -> None:
    if isinstance(name, str) and name.startswith("_"):
        raise SecurityError(f"a chat template may not set the underscore-prefixed namespace attribute {name!r}")


class TemplateNamespace(Namespace):
    """``namespace(...)``: jinja's namespace, refusing attribute names that start with ``_``."""

    def __init__(*args: Any, **kwargs: Any) -> None:
        """Build from a mapping and/or keyword arguments, like ``dict(...)``."""
        self, rest = args[0], args[1:]
        attrs = dict(*rest, **kwargs)
        for name in attrs:
            _check_namespace_name(name)
        Namespace.__init__(self, attrs)

    def __setitem__(self, name: str, value: Any) -> None:
        """``{% set ns.name = value %}``."""
        _check_namespace_name(name)
        Namespace.__setitem__(self, name, value)


class TemplateDict:
    """``dict(...)`` and ``dict.fromkeys(...)`` for templates, without exposing the ``dict`` type itself."""

    def __call__(self, *args: Any, **kwargs: Any) -> dict[Any, Any]:
        """``dict(mapping_or_pairs, **kwargs)``."""
        return dict(*args, **kwargs)

    def fromkeys(self, keys: Iterable[Any], value: Any = None) -> dict[Any, Any]:
        """``dict.fromkeys(keys, value)``."""
        return dict.fromkeys(keys, value)


def tojson(
    value: Any,
    ensure_ascii: bool = False,
    indent: int | str | None = None,
    separators: tuple[str, str] | None = None,
    sort_keys: bool = False,
) -> str:
    """HF's ``tojson`` filter: plain ``json.dumps`` (non-ASCII kept, no HTML escaping)."""
    return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def raise_exception(message: Any) -> None:
    """``raise_exception(message)``: abort rendering with ``message``."""
    raise TemplateError(message)


def strftime_now(fmt: str) -> str:
    """``strftime_now(format)``: the current local time, formatted."""
    if isinstance(fmt, str):
        _budget().require(12 * len(fmt), "strftime_now()")  # '%c' writes the most: 24 characters for 2
    return datetime.now().strftime(fmt)


class _BoundedCodeGenerator(CodeGenerator):
    """Jinja's code generator, with loops counted and ``~`` and slices checked by the environment."""

    def visit_For(self, node: nodes.For, frame: Frame) -> None:
        """A ``{% for %}`` over ``environment.loop_items(...)``."""
        counted = copy.copy(node)
        counted.iter = nodes.Call(nodes.EnvironmentAttribute("loop_items"), [node.iter], [], None, None)
        counted.iter.set_lineno(node.lineno)
        super().visit_For(counted, frame)

    def visit_Getitem(self, node: nodes.Getitem, frame: Frame) -> None:
        """``obj[a:b:c]`` (which jinja writes as a Python slice): ``environment.slice_of(obj, slice(a, b, c))``."""
        if not isinstance(node.arg, nodes.Slice):
            super().visit_Getitem(node, frame)
            return
        self.write("environment.slice_of(")
        self.visit(node.node, frame)
        self.write(", slice(")
        for part in (node.arg.start, node.arg.stop, node.arg.step):
            if part is None:
                self.write("None")
            else:
                self.visit(part, frame)
            self.write(", ")
        self.write("))")

    @optimizeconst
    def visit_Concat(self, node: nodes.Concat, frame: Frame) -> None:
        """``a ~ b``: ``environment.join_values((a, b))``."""
        self.write("environment.join_values((")
        for arg in node.nodes:
            self.visit(arg, frame)
            self.write(", ")
        self.write("))")


def _finalize(value: Any) -> Any:
    """``{{ value }}``: a container's text must fit before ``str()`` builds it."""
    if isinstance(value, _CONTAINERS):
        _require_text(_budget(), value, "writing a value")
    return value


def _builds(function: Any) -> bool:
    """Whether calling ``function`` builds what it returns (``str`` and ``int`` methods, copies, ``dict()``)."""
    owner = getattr(function, "__self__", None)
    if isinstance(owner, (str, bytes, int)):
        return True
    if type(owner) in (list, tuple, dict):
        return function.__name__ in ("copy", "fromkeys")
    return isinstance(function, TemplateDict) or isinstance(owner, TemplateDict)


class BoundedTemplate(Template):
    """A template of :class:`BoundedEnvironment`: every render runs within a budget (:class:`Limits` by default)."""

    def render(self, *args: Any, **kwargs: Any) -> str:
        """The template's text, rendered within the default :class:`Limits`."""
        return "".join(self.pieces(Limits(), dict(*args, **kwargs)))

    def generate(self, *args: Any, **kwargs: Any) -> Iterator[str]:
        """The template's text piece by piece, rendered within the default :class:`Limits`."""
        return self.pieces(Limits(), dict(*args, **kwargs))

    def pieces(self, limits: Limits, variables: dict[str, Any]) -> Iterator[str]:
        """The rendered text piece by piece, within ``limits``: the budget is active only while the template runs."""
        budget = _Budget(limits)
        rendering = self.root_render_func(self.new_context(variables))
        while True:
            token = _BUDGET.set(budget)
            try:
                piece = next(rendering, None)
            except Exception:
                self.environment.handle_exception()
            finally:
                _BUDGET.reset(token)
            if piece is None:
                return
            budget.write(len(piece))
            yield piece


class BoundedEnvironment(ImmutableSandboxedEnvironment):
    """The immutable sandbox, with every operation that can build or loop checked against the render's budget."""

    code_generator_class = _BoundedCodeGenerator
    template_class = BoundedTemplate
    #: The operators that can build more than they are given (``/`` and ``//`` cannot).
    intercepted_binops = frozenset(("+", "-", "*", "**", "%"))

    def __init__(self, **options: Any) -> None:
        super().__init__(finalize=_finalize, **options)
        self.globals["range"] = _range
        self.globals["lipsum"] = _lipsum
        self.filters["sum"] = _sum
        self.filters["join"] = _join
        self.filters["slice"] = _slice
        self.filters["tojson"] = tojson
        self.filters = {name: _bounded_filter(name, function) for name, function in self.filters.items()}

    def loop_items(self, iterable: Any) -> _LoopItems:
        """What a ``{% for %}`` loops over, each item counted."""
        return _LoopItems(iterable, _budget())

    def join_values(self, values: tuple[Any, ...]) -> str:
        """``a ~ b ~ ...``: the values' text, refused before it is joined if it would not fit."""
        budget = _budget()
        for value in values:
            _require_text(budget, value, "~")
        pieces = [value if isinstance(value, str) else str(value) for value in values]
        budget.build(sum(map(len, pieces)), "~")
        return "".join(pieces)

    def concat(self, pieces: Iterable[str]) -> str:
        """The text of a macro, call block, ``{% set %}`` or ``{% filter %}`` block, charged before it is joined."""
        parts = list(pieces)
        _budget().build(sum(map(len, parts)), "a macro's or block's text")
        return "".join(parts)

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        """``left operator right``, refused before it runs if its result cannot fit."""
        budget = _budget()
        _check_binop(budget, operator, left, right)
        result = super().call_binop(context, operator, left, right)
        if isinstance(result, int):
            budget.integer(result.bit_length(), operator)
        elif isinstance(result, _BUILT):
            budget.build(_size(result), operator)
        return result

    def slice_of(self, obj: Any, part: slice) -> Any:
        """``obj[start:stop:step]``: a copy, charged."""
        result = obj[part]
        if isinstance(result, _BUILT) and result is not obj:
            _budget().build(_size(result), "a slice")
        return result

    def wrap_str_format(self, value: Any) -> Callable[..., str] | None:
        """``str.format`` and ``str.format_map`` of a string, through a formatter that refuses what cannot fit."""
        if not isinstance(value, (types.MethodType, types.BuiltinMethodType)):
            return None
        if value.__name__ not in ("format", "format_map"):
            return None
        text = value.__self__
        if not isinstance(text, str):
            return None
        formatter: Formatter = (
            _EscapeFormatter(self, escape=text.escape) if isinstance(text, Markup) else _Formatter(self)
        )
        is_format_map = value.__name__ == "format_map"

        @wraps(value)
        def wrapper(*args: Any, **kwargs: Any) -> str:
            if is_format_map:
                if kwargs:
                    raise TypeError("format_map() takes no keyword arguments")
                if len(args) != 1:
                    raise TypeError(f"format_map() takes exactly one argument ({len(args)} given)")
                kwargs, args = args[0], ()
            result = type(text)(formatter.vformat(text, args, kwargs))
            _budget().build(len(result), "str.format")
            return result

        return wrapper

    def call(self, context: Any, obj: Any, /, *args: Any, **kwargs: Any) -> Any:
        """``obj(*args, **kwargs)``: a macro call is an iteration, a method that builds is checked and charged."""
        budget = _budget()
        if isinstance(obj, (Macro, BlockReference)):
            budget.call("a macro call")
        elif isinstance(obj, LoopContext):  # loop(children) in a recursive loop
            budget.call("a recursive loop")
            args = (_LoopItems(args[0], budget), *args[1:]) if args else args
        else:
            args = _check_call(budget, obj, args, kwargs)
        result = super().call(context, obj, *args, **kwargs)
        if _builds(obj) and isinstance(result, _BUILT):
            budget.build(_size(result), f"{getattr(obj, '__name__', 'a call')}()")
        return result


def _check_call(budget: _Budget, function: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> tuple[Any, ...]:
    """Refuse a call of a method that would build what cannot fit; ``str.join``'s items, listed, for the call."""
    owner = getattr(function, "__self__", None)
    name = getattr(function, "__name__", "")
    if isinstance(owner, (str, bytes)) and name == "join" and args:
        try:
            items = list(args[0])
        except TypeError:  # join raises its own error
            return args
        parts = sum(len(item) for item in items if isinstance(item, (str, bytes)))
        budget.require(parts + len(owner) * max(len(items) - 1, 0), "join()")
        return (items, *args[1:])
    if isinstance(owner, (str, bytes)):
        budget.require(_string_method_bound(owner, name, args, kwargs), f"{name}()")
    elif type(owner) is int and name == "to_bytes":
        length = args[0] if args else kwargs.get("length", 1)
        budget.require(length if isinstance(length, int) else 0, "to_bytes()")
    return args


@lru_cache(maxsize=1)
def environment() -> BoundedEnvironment:
    """The shared sandboxed environment, configured as transformers configures its own, and bounded."""
    env = BoundedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[GenerationExtension, loopcontrols])
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    env.globals["dict"] = TemplateDict()
    env.globals["namespace"] = TemplateNamespace
    return env


@lru_cache(maxsize=64)
def _compile(template: str) -> BoundedTemplate:
    compiled = environment().from_string(template)
    assert isinstance(compiled, BoundedTemplate)
    return compiled


# --------------------------------------------------------------------------- input normalisation


def _to_dicts(value: Any) -> Any:
    """Turn message objects (and objects nested in them) into dicts; leave everything else alone."""
    if isinstance(value, Mapping):
        return {key: _to_dicts(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_to_dicts(item) for item in value]
    if isinstance(value, tuple):
        return tuple(_to_dicts(item) for item in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _to_dicts(getattr(value, f.name)) for f in dataclasses.fields(value)}
    # pydantic models; ``model_dump()`` is ``mode="python"``, so tool-call arguments stay dicts
    if callable(getattr(value, "model_dump", None)):
        return _to_dicts(value.model_dump())
    return value


def _plain(value: Any) -> Any:
    """Rebuild ``value`` from plain JSON-like types; other objects become ``"<TypeName>"`` placeholders."""
    if value is None or type(value) in (str, int, float, bool):
        return value
    if isinstance(value, str):  # subclasses (str enums...) lose their extra methods
        return str.__str__(value)
    if isinstance(value, int):
        return int.__int__(value)
    if isinstance(value, float):
        return float.__float__(value)
    if isinstance(value, Mapping):
        return {_plain(key): _plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    if isinstance(value, tuple):
        return tuple(_plain(item) for item in value)
    numpy = sys.modules.get("numpy")  # numpy scalars can only exist if numpy was imported
    if numpy is not None and isinstance(value, numpy.generic):
        return _plain(value.item())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if callable(getattr(value, "model_dump", None)):
        return _plain(value.model_dump())
    return f"<{type(value).__name__}>"


def _alias_reasoning(message: dict[str, Any]) -> dict[str, Any]:
    """Copy a message's reasoning to ``reasoning_content`` (and to ``thinking`` when that key is absent).

    The reasoning is the first non-``None`` of ``reasoning_content``, ``thinking``, ``reasoning``.
    As in transformers, ``thinking`` becomes the first key (keeping its own value if it had one)
    and ``reasoning_content`` keeps its place, or is appended.
    """
    reasoning = next((message[key] for key in REASONING_KEYS if message.get(key) is not None), None)
    if reasoning is None:
        return message
    aliased = {"thinking": reasoning}
    aliased.update(message)
    aliased["reasoning_content"] = reasoning
    return aliased


def prepare_messages(messages: Iterable[Mapping[str, Any] | BaseModel]) -> list[dict[str, Any]]:
    """The messages as plain dicts, exactly as transformers hands them to a chat template.

    Objects become dicts (pydantic models via ``model_dump(mode="python")``, so tool-call
    ``arguments`` stay dicts), keys whose value is ``None`` are dropped (top level of each
    message only), values are rebuilt from plain types and reasoning fields are aliased.
    Idempotent. Raises :class:`TypeError` for a message that is not a mapping or model.
    """
    prepared: list[dict[str, Any]] = []
    for raw in messages:
        message = _to_dicts(raw)
        if not isinstance(message, dict):
            raise TypeError(f"chat messages must be mappings, dataclasses or pydantic models, not {raw!r}")
        plain = _plain({key: value for key, value in message.items() if value is not None})
        prepared.append(_alias_reasoning(plain))
    return prepared


def prepare_tools(tools: Iterable[Mapping[str, Any] | BaseModel] | None) -> list[dict[str, Any]] | None:
    """The tools as plain dicts, as transformers passes them to a chat template (``None`` stays ``None``).

    Unlike messages, tools keep their ``None`` values. An empty list stays an empty list, which a
    template can tell from ``None`` (``tools is not none``). Raises :class:`TypeError` for a tool
    that is not a mapping or pydantic model.
    """
    if tools is None:
        return None
    prepared: list[dict[str, Any]] = []
    for tool in tools:
        if isinstance(tool, BaseModel):
            prepared.append(_plain(tool.model_dump(mode="python")))
        elif isinstance(tool, Mapping):
            prepared.append(_plain(tool))
        else:
            raise TypeError(f"tools must be JSON-schema mappings or pydantic models, not {tool!r}")
    return prepared


# --------------------------------------------------------------------------- rendering


def require_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``messages``, or :class:`~codec.errors.RenderError` for an empty conversation (as transformers)."""
    if not messages:
        raise RenderError("Cannot apply chat template to an empty conversation. Provide at least one message.")
    return messages


def render_template(
    template: str,
    messages: Iterable[Mapping[str, Any] | BaseModel],
    tools: Iterable[Mapping[str, Any] | BaseModel] | None = None,
    *,
    add_generation_prompt: bool = False,
    limits: Limits | None = None,
    **variables: Any,
) -> str:
    """Render a chat template as ``tokenizer.apply_chat_template(..., tokenize=False)`` would.

    ``messages`` and ``tools`` are normalised (see :func:`prepare_messages`, :func:`prepare_tools`;
    already prepared input is unchanged by it). ``variables`` are the extra template variables
    (``bos_token``, ``enable_thinking``, ``documents``...), also rebuilt from plain types. The
    template always sees ``messages``, ``tools``, ``documents`` (``None`` unless given) and
    ``add_generation_prompt``. The compiled template is cached by its text. The render runs
    within ``limits`` (:class:`Limits` by default).

    Raises :class:`~codec.errors.RenderError` with the template's message when the template
    raises or does not compile, for an empty conversation (as ``apply_chat_template`` does), and
    when the render would go past one of its limits (the message names it).
    """
    chat = require_messages(prepare_messages(messages))
    tool_list = prepare_tools(tools)
    documents = variables.pop("documents", None)
    if documents is not None:
        documents = [_to_dicts(document) for document in documents]
        if not all(isinstance(document, dict) for document in documents):
            raise TypeError("documents must be a list of mappings with 'title' and 'text' keys")
    context = _plain(variables)
    try:
        compiled = _compile(template)
        inputs = {
            "messages": chat,
            "tools": tool_list,
            "documents": _plain(documents),
            "add_generation_prompt": add_generation_prompt,
            **context,
        }
        return "".join(compiled.pieces(limits or Limits(), inputs))
    except RenderError:  # a limit reached
        raise
    except Exception as exc:  # everything a template can raise: TemplateError, TypeError, ValueError...
        raise RenderError(str(exc)) from exc
