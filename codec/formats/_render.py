"""Jinja semantics shared by the renderers, in plain Python.

A byte-exact renderer has to copy how the reference templates, rendered by transformers' Jinja
environment, look attributes up, join text and apply filters, and also how they fail on odd input:
the failure's message becomes the :class:`~codec.errors.RenderError`'s. Each helper names the
template construct it stands for. Values are what :func:`codec.jinja.prepare_messages` and
:func:`codec.jinja.prepare_tools` produce: plain dicts, lists, tuples, strings, numbers, None.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from codec import jinja
from codec.errors import RenderError

__all__ = [
    "Undefined",
    "attr",
    "call_method",
    "concat",
    "contains",
    "default",
    "defined",
    "dictsort",
    "is_iterable",
    "is_mapping",
    "is_sequence",
    "items",
    "iterate",
    "length",
    "lookup",
    "required",
    "string",
    "subscript",
    "tojson",
    "trim",
    "upper",
]


def _type_repr(obj: Any) -> str:
    """How Jinja names an object in "has no attribute" errors (``'dict object'``, ``'None'``)."""
    if obj is None:
        return "None"
    cls = type(obj)
    return f"{cls.__name__} object" if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__name__} object"


class Undefined:
    """Jinja's ``Undefined`` for ``obj.name`` when there is no such key (or ``obj[i]`` with no such element).

    As in Jinja it is ``''`` as text (``~``, ``| string``, ``| trim``, ``{{ }}``), false, an empty
    iterable, and an error as soon as it takes part in ``+`` (see :func:`concat`).
    """

    __slots__ = ("name", "obj")

    def __init__(self, obj: Any, name: Any) -> None:
        self.obj = obj
        self.name = name

    def __str__(self) -> str:
        return ""

    def __bool__(self) -> bool:
        return False

    def __iter__(self) -> Iterator[Any]:
        return iter(())

    def __repr__(self) -> str:
        return f"Undefined({self.message})"

    @property
    def message(self) -> str:
        """Jinja's error text: ``'dict object' has no attribute 'name'``, ``list object has no element 0``."""
        if not isinstance(self.name, str):
            return f"{_type_repr(self.obj)} has no element {self.name!r}"
        return f"{_type_repr(self.obj)!r} has no attribute {self.name!r}"


def attr(obj: Any, name: str) -> Any:
    """``obj.name``: the mapping's value for key ``name``, else :class:`Undefined`.

    Jinja tries a Python attribute first; the names the templates look up (``role``, ``content``,
    ``function``, ``name``, ``arguments``...) are not attributes of dicts, lists or strings, so for
    them the key lookup is all there is.
    """
    if isinstance(obj, Mapping) and name in obj:
        return obj[name]
    return Undefined(obj, name)


def length(value: Any) -> int:
    """``value | length``: Python's ``len()``, 0 for an undefined value, and the template's error
    (a :class:`~codec.errors.RenderError`) for a value that has no length."""
    if isinstance(value, Undefined):
        return 0
    try:
        return len(value)
    except TypeError as exc:
        raise RenderError(str(exc)) from None


def lookup(obj: Any, name: str) -> Any:
    """``obj.name`` where ``obj`` may itself be undefined (``a.b.c``): looking into an undefined value raises.

    Jinja lets an undefined value be printed or tested, but any attribute of it fails with the
    undefined value's own error (``'dict object' has no attribute 'function'``).
    """
    if isinstance(obj, Undefined):
        raise RenderError(obj.message)
    return attr(obj, name)


def subscript(obj: Any, key: Any) -> Any:
    """``obj[key]``: Python indexing (a mapping's value, a list's or string's element), else :class:`Undefined`.

    Unlike :func:`attr` it takes integer keys and indexes any object (``content[0]``); a missing
    element is undefined with Jinja's message (``list object has no element 0``, ``'str object'
    has no attribute 'text'``), and indexing an undefined ``obj`` raises that value's error. As in
    :func:`attr`, Jinja's fallback to a Python attribute of the same name is not copied.
    """
    if isinstance(obj, Undefined):
        raise RenderError(obj.message)
    try:
        return obj[key]
    except (TypeError, LookupError):
        return Undefined(obj, key)


def call_method(obj: Any, name: str, *args: Any) -> Any:
    """``obj.name(*args)``, e.g. ``part.get('type')`` or ``text.split(sep)``.

    A method the object lacks is an undefined value, and calling it raises Jinja's error
    (``'str object' has no attribute 'get'``); so does any method of an undefined ``obj``.
    """
    if isinstance(obj, Undefined):
        raise RenderError(obj.message)
    method = getattr(obj, name, None)
    if method is None:
        raise RenderError(Undefined(obj, name).message)
    return method(*args)


def default(value: Any, fallback: Any) -> Any:
    """``value | default(fallback)``: only an undefined value is replaced (``None`` is kept)."""
    return fallback if isinstance(value, Undefined) else value


def defined(value: Any) -> bool:
    """``value is defined``."""
    return not isinstance(value, Undefined)


def required(obj: Any, name: str) -> Any:
    """``obj.name`` where the template goes on to use the value in ``+``: a missing key raises Jinja's error."""
    value = attr(obj, name)
    if isinstance(value, Undefined):
        raise RenderError(value.message)
    return value


def concat(*parts: Any) -> str:
    """``a + b + ...``: Python ``+`` from the left, so it fails where the template fails.

    An undefined operand raises Jinja's "has no attribute" error; ``str + None`` raises
    ``can only concatenate str (not "NoneType") to str``.
    """
    result = parts[0]
    for part in parts[1:]:
        for operand in (result, part):
            if isinstance(operand, Undefined):
                raise RenderError(operand.message)
        try:
            result = result + part
        except TypeError as exc:
            raise RenderError(str(exc)) from None
    if isinstance(result, Undefined):
        raise RenderError(result.message)
    if not isinstance(result, str):
        raise RenderError(f"expected text, got {type(result).__name__}")
    return result


def string(value: Any) -> str:
    """``{{ value }}``, ``value | string`` and ``a ~ b``: Python ``str()``.

    So ``None``, ``True``, ``3.0``, ``['integer', 'null']``, ``{'a': 1}``; undefined is ``''``.
    """
    return str(value)


def trim(value: Any) -> str:
    """``value | trim``: :func:`string` then ``str.strip()`` (Unicode whitespace at both ends)."""
    return str(value).strip()


def upper(value: Any) -> str:
    """``value | upper``: :func:`string` upper-cased (a list gives ``"['INTEGER', 'NULL']"``, undefined ``''``)."""
    return str(value).upper()


def tojson(value: Any, *, indent: int | None = None) -> str:
    """``value | tojson`` (or ``tojson(indent=n)``) as transformers defines it: ``json.dumps``, non-ASCII kept.

    Separators are ``", "`` / ``": "``, or ``","`` / ``": "`` with an ``indent``. A value JSON
    cannot hold (an undefined one) raises Python's error (``Object of type Undefined is not JSON
    serializable``).
    """
    try:
        return jinja.tojson(value, indent=indent)
    except (TypeError, ValueError) as exc:
        raise RenderError(str(exc)) from None


def is_mapping(value: Any) -> bool:
    """``value is mapping``."""
    return isinstance(value, Mapping)


def is_sequence(value: Any) -> bool:
    """``value is sequence``: anything with a length and indexing, so strings, lists, **dicts** and undefined values."""
    if isinstance(value, Undefined):
        return True
    try:
        len(value)
    except TypeError:
        return False
    return hasattr(value, "__getitem__")


def is_iterable(value: Any) -> bool:
    """``value is iterable``: strings, lists, tuples, dicts and undefined values are; numbers are not."""
    try:
        iter(value)
    except TypeError:
        return False
    return True


def items(value: Any) -> Iterable[tuple[Any, Any]]:
    """``value | items``: a mapping's pairs, nothing for an undefined value, an error for anything else."""
    if isinstance(value, Undefined):
        return ()
    if not isinstance(value, Mapping):
        raise RenderError("Can only get item pairs from a mapping.")
    return value.items()


def iterate(value: Any) -> Iterator[Any]:
    """``{% for x in value %}``: a mapping's keys, a string's characters, nothing for an undefined value.

    A value that cannot be iterated raises Python's error (``'int' object is not iterable``).
    """
    try:
        return iter(value)
    except TypeError as exc:
        raise RenderError(str(exc)) from None


def contains(container: Any, item: Any) -> bool:
    """``item in container``: Python's ``in`` (a key of a mapping, a substring of a string...)."""
    try:
        return item in container
    except TypeError as exc:
        raise RenderError(str(exc)) from None


def dictsort(value: Any) -> list[tuple[Any, Any]]:
    """``value | dictsort``: the pairs sorted by key, case-insensitively (``A, a, b, big, Z``), stable for ties.

    Not a mapping: Python's "has no attribute 'items'" error; keys that cannot be compared
    (``'<' not supported between instances of 'str' and 'int'``) raise too.
    """
    if isinstance(value, Undefined):
        raise RenderError(value.message)
    try:
        pairs = value.items()
    except AttributeError as exc:
        raise RenderError(str(exc)) from None
    try:
        return sorted(pairs, key=lambda pair: pair[0].lower() if isinstance(pair[0], str) else pair[0])
    except TypeError as exc:
        raise RenderError(str(exc)) from None


def visible_text(content: Any) -> str:
    """A message's content as GLM's and MiniMax's templates write it (their ``visible_text``): a
    string as it is, else its text parts and strings joined, else ``str()``."""
    if isinstance(content, str):
        return content
    if is_iterable(content) and not is_mapping(content):
        parts = []
        for item in iterate(content):
            if is_mapping(item) and attr(item, "type") == "text":
                parts.append(string(attr(item, "text")))
            elif isinstance(item, str):
                parts.append(item)
        return "".join(parts)
    return string(content)


def value_text(value: Any) -> str:
    """An argument's value as a member that writes strings raw writes it: a string as it is,
    anything else as JSON (``tojson``)."""
    return value if isinstance(value, str) else tojson(value)
