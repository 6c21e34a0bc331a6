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
lists it builds, its loop iterations and macro calls, the integers its arithmetic makes, its
ranges and its CPU time. Every operation that can build more than it is given (``*``, ``+``,
``%``, ``~``, ``**``, padding, ``str.format``, joins, ``replace``, ``tojson``, filters, macro
bodies...) is checked against what is left before it runs, so a template that would exhaust the
process fails with a :class:`~codec.errors.RenderError` naming the limit instead. The checks see
everything a template runs: the code generator routes loops, ``~`` and slices through the
environment, the sandbox routes calls and operators through it, and every filter and global is
checked. The limits, the sizes reckoned before building and the bounded operations are
:mod:`codec._jinja_limits`; the code generator and the environment that route a template's
operations through them are here.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import sys
import types
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import datetime
from functools import lru_cache, wraps
from string import Formatter
from typing import Any

from jinja2 import Template, nodes
from jinja2.compiler import CodeGenerator, Frame, optimizeconst
from jinja2.exceptions import SecurityError, TemplateError
from jinja2.ext import Extension, loopcontrols
from jinja2.parser import Parser
from jinja2.runtime import BlockReference, LoopContext, Macro
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.utils import Namespace
from markupsafe import Markup
from pydantic import BaseModel

from codec._jinja_limits import (
    _BUDGET,
    _BUILT,
    _CONTAINERS,
    _ITEM,
    Limits,
    _bounded_filter,
    _Budget,
    _budget,
    _check_binop,
    _EscapeFormatter,
    _Formatter,
    _join,
    _length,
    _lipsum,
    _LoopItems,
    _range,
    _require_text,
    _size,
    _slice,
    _string_method_bound,
    _sum,
)
from codec.errors import RenderError

__all__ = ["Limits", "environment", "prepare_messages", "prepare_tools", "render_template", "require_messages"]

#: The names a message's reasoning may come under, in the order transformers looks for it.
REASONING_KEYS = ("reasoning_content", "thinking", "reasoning")


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
        return self.text(Limits(), dict(*args, **kwargs))

    def generate(self, *args: Any, **kwargs: Any) -> Iterator[str]:
        """The template's text piece by piece, rendered within the default :class:`Limits`."""
        return self.pieces(Limits(), dict(*args, **kwargs))

    def text(self, limits: Limits, variables: dict[str, Any]) -> str:
        """The rendered text, within ``limits``."""
        return "".join(self._run(limits, variables, paced=False))

    def pieces(self, limits: Limits, variables: dict[str, Any]) -> Iterator[str]:
        """The rendered text piece by piece, within ``limits``: the budget is active only while the template
        runs, and what the caller does between pieces does not count (its time included)."""
        return self._run(limits, variables, paced=True)

    def _run(self, limits: Limits, variables: dict[str, Any], paced: bool) -> Iterator[str]:
        """The pieces; ``paced`` when the caller may take time between them (which the clock then leaves
        out, at two readings a piece: a render joined at once reads it only as it goes)."""
        budget = _Budget(limits)
        rendering = self.root_render_func(self.new_context(variables))
        while True:
            token = _BUDGET.set(budget)
            if paced:
                budget.resume()
            try:
                piece = next(rendering, None)
            except Exception:
                self.environment.handle_exception()
            finally:
                if paced:
                    budget.pause()
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
        budget.advance(1 + _length(getattr(obj, "__self__", None)), "a call")
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
        if isinstance(args[0], (str, bytes)):  # listed character by character
            budget.require(_ITEM * len(args[0]), "join()")
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
        return compiled.text(limits or Limits(), inputs)
    except RenderError:  # a limit reached
        raise
    except Exception as exc:  # everything a template can raise: TemplateError, TypeError, ValueError...
        raise RenderError(str(exc)) from exc
