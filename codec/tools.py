"""Tool definitions in the shapes users have, read as the one shape codec works with.

Every function that takes ``tools`` (``render``, ``parse``, ``stream``, ``grammar`` and the
export functions, the ``codec`` command, the :class:`~codec.models.Tool` model) reads them with
:func:`normalize_tools`, so that a shape is taken, or refused, the same way everywhere:

- OpenAI Chat Completions' ``{"type": "function", "function": {"name": ..., "description": ...,
  "parameters": {...}}}`` (``type`` may be left out), the shape chat templates read: kept as it
  is, the same object, so that a prompt renders byte for byte as the template writes it;
- a bare function ``{"name": ..., "description": ..., "parameters": {...}}``, which templates
  read as it is (``tool.function if tool.function is defined else tool``): kept as it is too;
- the Responses API's flat ``{"type": "function", "name": ..., "description": ..., "parameters":
  {...}, "strict": ...}``: its keys but ``type`` moved into ``function``, in their order;
- Anthropic's ``{"name": ..., "description": ..., "input_schema": {...}}`` (``type`` left out or
  ``"custom"``): ``input_schema`` becomes ``parameters``; ``cache_control``, a caching directive
  of Anthropic's API that no model sees, is left out.

A tool that is no mapping raises :class:`TypeError`; anything else raises
:class:`~codec.errors.ToolError`, naming the tool's index and what is wrong: a mapping of none of
these shapes, a tool that is not a function (``{"type": "web_search"}``), a name that is not a
non-empty string, parameters that are not an object.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel

from codec.errors import ToolError

__all__ = ["SHAPES", "normalize_tool", "normalize_tools"]

#: The shapes :func:`normalize_tools` takes, as its errors spell them.
SHAPES = (
    '{"type": "function", "function": {"name": ..., "parameters": {...}}} (OpenAI chat), '
    '{"type": "function", "name": ..., "parameters": {...}} (Responses API) or '
    '{"name": ..., "input_schema": {...}} (Anthropic)'
)
#: Keys of an Anthropic tool that are directives to Anthropic's API, not part of the tool.
_API_ONLY = frozenset({"cache_control"})


def normalize_tools(tools: Iterable[Any] | None, *, named: bool = False) -> list[Any] | None:
    """``tools`` in OpenAI chat shape or as bare functions (:mod:`codec.tools` says which shapes
    are read), or None for None.

    A tool already in one of those shapes is passed on as the same object (not copied: parsing reads
    tools on every call); pydantic models are dumped first. Raises :class:`~codec.errors.ToolError`
    naming ``tools[i]`` for a tool in no shape read here, and :class:`TypeError` for one that is no
    mapping or model, or for ``tools`` that is not a list.

    A tool in OpenAI's own shape is passed on with whatever fields it has (a template writes what it
    is given, and decode gives such a tool back as declared) unless ``named``: where a tool's name
    and schema are needed (a grammar of its calls), their types are checked too."""
    if tools is None:
        return None
    if isinstance(tools, (str, bytes, Mapping)) or not isinstance(tools, Iterable):
        raise TypeError(f"tools must be a list of tools, not {_kind(tools)}")
    return [normalize_tool(tool, index, named=named) for index, tool in enumerate(tools)]


def normalize_tool(tool: Any, index: int | None = None, *, named: bool = False) -> Any:
    """One tool in OpenAI chat shape (see :func:`normalize_tools`); ``index`` names it in an error."""
    if isinstance(tool, BaseModel):
        tool = tool.model_dump(mode="python")
    where = f"tools[{index}]: " if index is not None else ""
    if not isinstance(tool, Mapping):
        raise TypeError(f"{where}tools must be JSON-schema mappings or pydantic models, not {_kind(tool)}")
    kind = tool.get("type", "function")
    function = tool.get("function")
    if isinstance(function, BaseModel):  # Tool(function=Function(...)): read as its fields, kept as given
        function = function.model_dump(mode="python")
    if "function" in tool:
        if kind != "function":
            raise ToolError(f"{where}a tool with a function has type 'function', not {kind!r}")
        if not isinstance(function, Mapping):
            raise ToolError(f"{where}function must be an object, not {_kind(function)}")
        if named:
            _check_function(function, where, "function.")
        return tool
    if "name" in tool and ("input_schema" in tool or kind == "custom"):
        _check_function(tool, where, "", schema_key="input_schema")
        function = {("parameters" if key == "input_schema" else key): value for key, value in tool.items()}
        return {"type": "function", "function": {k: v for k, v in function.items() if k not in _API_ONLY | {"type"}}}
    if "name" in tool and "type" not in tool:  # a bare function: templates read it as it is (tojson writes it so)
        _check_function(tool, where, "")
        return tool
    if "name" in tool:
        if kind != "function":
            raise ToolError(f"{where}type {kind!r} is not a function tool; codec reads function tools only")
        _check_function(tool, where, "")
        return {"type": "function", "function": {key: value for key, value in tool.items() if key != "type"}}
    if kind != "function":
        raise ToolError(f"{where}type {kind!r} is not a function tool; codec reads function tools only")
    keys = ", ".join(repr(key) for key in tool) or "none"
    raise ToolError(f"{where}not a tool in any shape codec reads (its keys: {keys}); expected {SHAPES}")


def _check_function(function: Mapping[str, Any], where: str, prefix: str, schema_key: str = "parameters") -> None:
    """Refuse a function whose name, description or parameters schema is of the wrong type."""
    name = function.get("name")
    if not isinstance(name, str) or not name:
        shown = "missing" if name is None else repr(name)
        raise ToolError(f"{where}{prefix}name must be a non-empty string ({shown})")
    description = function.get("description")
    if description is not None and not isinstance(description, str):
        raise ToolError(f"{where}{prefix}description of {name!r} must be a string, not {_kind(description)}")
    schema = function.get(schema_key)
    if schema is not None and not isinstance(schema, Mapping):
        raise ToolError(f"{where}{prefix}{schema_key} of {name!r} must be a JSON schema object, not {_kind(schema)}")


def _kind(value: Any) -> str:
    """What ``value`` is, in the words of JSON where it is JSON."""
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean", int: "a number", float: "a number"}
    if value is None:
        return "null"
    return names.get(type(value), f"a {type(value).__name__}")
