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
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from functools import lru_cache
from typing import Any

from jinja2 import Template, nodes
from jinja2.exceptions import SecurityError, TemplateError
from jinja2.ext import Extension, loopcontrols
from jinja2.parser import Parser
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.utils import Namespace
from pydantic import BaseModel

from codec.errors import RenderError

__all__ = ["environment", "prepare_messages", "prepare_tools", "render_template", "require_messages"]

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
    return datetime.now().strftime(fmt)


@lru_cache(maxsize=1)
def environment() -> ImmutableSandboxedEnvironment:
    """The shared sandboxed environment, configured as transformers configures its own."""
    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[GenerationExtension, loopcontrols]
    )
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    env.globals["dict"] = TemplateDict()
    env.globals["namespace"] = TemplateNamespace
    return env


@lru_cache(maxsize=64)
def _compile(template: str) -> Template:
    return environment().from_string(template)


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
    **variables: Any,
) -> str:
    """Render a chat template as ``tokenizer.apply_chat_template(..., tokenize=False)`` would.

    ``messages`` and ``tools`` are normalised (see :func:`prepare_messages`, :func:`prepare_tools`;
    already prepared input is unchanged by it). ``variables`` are the extra template variables
    (``bos_token``, ``enable_thinking``, ``documents``...), also rebuilt from plain types. The
    template always sees ``messages``, ``tools``, ``documents`` (``None`` unless given) and
    ``add_generation_prompt``. The compiled template is cached by its text.

    Raises :class:`~codec.errors.RenderError` with the template's message when the template
    raises or does not compile, and for an empty conversation (as ``apply_chat_template`` does).
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
        rendered: str = compiled.render(
            messages=chat,
            tools=tool_list,
            documents=_plain(documents),
            add_generation_prompt=add_generation_prompt,
            **context,
        )
    except Exception as exc:  # everything a template can raise: TemplateError, TypeError, ValueError...
        raise RenderError(str(exc)) from exc
    return rendered
