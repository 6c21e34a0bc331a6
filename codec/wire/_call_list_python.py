"""Values written the Python way in the ``call_list`` family: how the members whose templates write
values through Python's ``str()`` render them, type them back and constrain them.

Two encodings (:attr:`~codec.wire.WireSpec.values`):

* ``"python"``: a string between ``'`` with nothing escaped, a mapping as JSON (``tojson``), anything
  else through ``str()`` (``True``, ``None``, ``['a', 1]``), as LFM2's template writes them;
* ``"python_str"``: every value between ``"``, a string as it is, anything else through ``str()``
  (``"7"``, ``"True"``, ``"['a', 1]"``), as Llama 4's pythonic template writes them (``"%s" |
  format(value)``): values come back typed by the tool's schema.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from codec import jinja
from codec.export import (
    Expr,
    GrammarBuilder,
    JsonValues,
    Lit,
    Regex,
    alt,
    charset,
    ralt,
    rseq,
    schema_types,
    seq,
    star,
)
from codec.schema import type_text

__all__ = ["PYTHON_VALUES", "PythonValues", "python_value", "render_python", "typed_arguments"]

#: The encodings of this module, by :attr:`~codec.wire.WireSpec.values`.
PYTHON_VALUES = ("python", "python_str")


def render_python(value: Any, values: str) -> str:
    """An argument's value as ``values`` writes it (see the module's docstring)."""
    if values == "python_str":
        return '"' + (value if isinstance(value, str) else str(value)) + '"'
    if isinstance(value, str):
        return "'" + value + "'"
    return jinja.tojson(value) if isinstance(value, Mapping) else str(value)


def typed_arguments(arguments: dict[str, Any], parameters: Mapping[str, Any] | None) -> dict[str, Any]:
    """``arguments`` with each top-level string typed by its parameter's schema, where the schema
    declares a type it reads as (``"7"`` of an integer is 7, ``"True"`` of a boolean is True,
    ``"['a']"`` of an array is the list); a string that fits none of its types stays a string (the
    tool check reports it). Without a schema, strings stay strings."""
    properties = parameters.get("properties") if isinstance(parameters, Mapping) else None
    if not isinstance(properties, Mapping):
        return arguments
    typed = {}
    for key, value in arguments.items():
        schema = properties.get(key)
        if isinstance(value, str) and isinstance(schema, Mapping):
            read, problem = type_text(value, schema)
            value = value if problem is not None else read
        typed[key] = value
    return typed


class PythonValues(JsonValues):
    """Values as Python's ``repr`` writes them inside a container (and ``str()`` at the top):
    ``True``, ``None``, strings between ``'`` (or ``"``) with backslash escapes, ``{'k': v}``."""

    tag = "python"
    true, false, null = "True", "False", "None"

    def write(self, value: Any) -> str:
        return repr(value)

    def key(self, name: str) -> str:
        return repr(name) + ": "

    def free_key(self) -> Expr:
        return seq(self.string(), ": ")

    def string(self) -> Expr:
        return self.b.term("PY_STRING", ralt(_quoted("'"), _quoted('"')))


def _quoted(quote: str) -> Regex:
    """A string as ``repr`` writes it between ``quote``: backslash escapes, no raw line break."""
    return rseq(quote, star(ralt(charset(quote + "\\\n", negate=True), rseq("\\", charset("\n", negate=True)))), quote)


def _python_literal(value: Any) -> str:
    return render_python(value, "python")


def python_value(py: JsonValues, js: JsonValues, schema: Any, literal: Callable[[Any], str] = _python_literal) -> Expr:
    """A top-level argument value as ``values="python"`` writes it: a mapping as JSON, a string between
    ``'`` as it is (line breaks too; no ``'`` or backslash, which would read as the string's end or an
    escape), anything else as Python writes it. With ``py`` the JSON values (and ``literal`` what writes
    a constant), as ``"raw_single"`` writes them: every value but a string as JSON."""
    if not isinstance(schema, Mapping) or (not schema_types(schema) and not _constrained(schema)):
        scalars = (_top(py, {}, "string"), py.number(), py.true, py.false, py.null)
        return alt(*scalars, py.array(py.any()), js.free_object(js.any()))
    if "const" in schema:
        return Lit(literal(schema["const"]))
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return alt(*(Lit(literal(v)) for v in schema["enum"]))
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list) and options:
            return alt(*(python_value(py, js, option, literal) for option in options))
    kinds = schema_types(schema)
    return alt(*(js.typed(schema, kind) if kind == "object" else _top(py, schema, kind) for kind in kinds))


def _top(py: JsonValues, schema: Mapping[str, Any], kind: str) -> Expr:
    """A top-level value of JSON type ``kind``, not a mapping: a string as written (see :func:`python_value`)."""
    if kind == "string":
        return py.b.term("RAW_PY_STRING", rseq("'", star(charset("'\\", negate=True)), "'"))
    return py.typed(schema, kind)


def _constrained(schema: Mapping[str, Any]) -> bool:
    return any(key in schema for key in ("const", "enum", "anyOf", "oneOf"))


def quoted_python(builder: GrammarBuilder, py: PythonValues, schema: Any) -> Expr | None:
    """A ``values="python_str"`` value other than a free string, between its quotes: ``"`` + what
    ``str()`` writes + ``"``; None where the schema allows nothing but a free string."""
    if not isinstance(schema, Mapping) or (not schema_types(schema) and not _constrained(schema)):
        return seq('"', alt(py.number(), py.true, py.false, py.null, py.array(py.any()), py.free_object(py.any())), '"')
    if "const" in schema:
        return Lit(render_python(schema["const"], "python_str"))
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return alt(*(Lit(render_python(v, "python_str")) for v in schema["enum"]))
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list) and options:
            found = [e for e in (quoted_python(builder, py, option) for option in options) if e is not None]
            return alt(*found) if found else None
    kinds = [kind for kind in schema_types(schema) if kind != "string"]
    return seq('"', alt(*(py.typed(schema, kind) for kind in kinds)), '"') if kinds else None
