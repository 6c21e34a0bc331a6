"""JSON-schema checking of tool-call arguments (the subset that tool definitions use).

Supported keywords: ``type`` (a name or a list of names), ``nullable``, ``enum``, ``const``,
``properties``, ``required``, ``additionalProperties`` (``false`` or a schema), ``items``,
``anyOf``, ``oneOf`` and ``allOf``. Other keywords are ignored: a checker that guessed at them
would report problems that are not there.

Type names are read as tools really write them (:data:`TYPE_NAMES`), in any case: ``"int"``,
``"float"``, ``"bool"``, ``"str"``, ``"dict"``, ``"list"``... A name that is none of them is
ignored, as an unknown keyword is.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from codec.literals import json_value, nesting, python_literal

_TYPE_CHECKS = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: (isinstance(v, int) and not isinstance(v, bool)) or (isinstance(v, float) and v.is_integer()),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
}


def tool_parameters(tool: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The parameters schema of an OpenAI tool dict (``{"type": "function", "function": {...}}``) or a bare function."""
    function = tool.get("function", tool)
    if type(function) is not dict and not isinstance(function, Mapping):
        return None
    params = function.get("parameters")
    return params if type(params) is dict or isinstance(params, Mapping) else None


def tool_name(tool: Mapping[str, Any]) -> str | None:
    """The function name of an OpenAI tool dict, or None."""
    function = tool.get("function", tool)
    name = function.get("name") if type(function) is dict or isinstance(function, Mapping) else None
    return name if isinstance(name, str) else None


def _show(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=repr)
    return text if len(text) <= 40 else text[:37] + "..."


#: The JSON type each spelling of a type name stands for (compared lower-cased): JSON Schema's own
#: names, and those of programming languages that tool definitions use in their place.
TYPE_NAMES = {
    **dict.fromkeys(("string", "str", "text"), "string"),
    **dict.fromkeys(
        ("integer", "int", "long", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64"),
        "integer",
    ),
    **dict.fromkeys(("number", "float", "double", "decimal", "float32", "float64"), "number"),
    **dict.fromkeys(("boolean", "bool"), "boolean"),
    **dict.fromkeys(("object", "dict", "map"), "object"),
    **dict.fromkeys(("array", "list", "tuple"), "array"),
    **dict.fromkeys(("null", "none"), "null"),
}


def _type_name(declared: str) -> str:
    """The JSON type a type name stands for (:data:`TYPE_NAMES`), or the name itself where it is none."""
    return TYPE_NAMES.get(declared) or TYPE_NAMES.get(declared.strip().lower(), declared)


def _types(schema: Mapping[str, Any]) -> list[str]:
    """The JSON types ``type`` (and ``nullable``) name, spelled the JSON Schema way; unknown names
    are kept as they are (no check knows them)."""
    declared = schema.get("type")
    if isinstance(declared, str):
        types = [_type_name(declared)]
    elif isinstance(declared, list):
        types = []
        for name in declared:
            if isinstance(name, str):
                kind = _type_name(name)
                if kind not in types:
                    types.append(kind)
    else:
        return []
    if types and schema.get("nullable") is True and "null" not in types:
        types.append("null")
    return types


def violations(value: Any, schema: Any, path: str = "") -> list[str]:
    """Human-readable reasons why ``value`` does not satisfy ``schema`` (empty when it does)."""
    if type(schema) is not dict and not isinstance(schema, Mapping):
        return []
    where = path or "arguments"
    # (Membership first: most schemas have none of these, and this runs for every value of a call.)
    if "anyOf" in schema or "oneOf" in schema or "allOf" in schema:
        for key in ("anyOf", "oneOf"):
            options = schema.get(key)
            if isinstance(options, list) and options and all(violations(value, o, path) for o in options):
                return [f"{where}: {_show(value)} matches none of the {key} alternatives"]
        all_of = schema.get("allOf")
        if isinstance(all_of, list):
            for option in all_of:
                found = violations(value, option, path)
                if found:
                    return found
    declared = schema.get("type")
    if type(declared) is str and schema.get("nullable") is not True:
        # (One type name, as most schemas write it: what _types makes of it, without the list.)
        kind = _type_name(declared)
        check = _TYPE_CHECKS.get(kind)
        if check is not None and not check(value):
            return [f"{where}: expected {kind}, got {_show(value)}"]
    elif declared is not None:
        types = _types(schema)
        known = [t for t in types if t in _TYPE_CHECKS]
        if known and not any(_TYPE_CHECKS[t](value) for t in known):
            return [f"{where}: expected {' or '.join(known)}, got {_show(value)}"]
    if "enum" in schema and isinstance(schema["enum"], list) and value not in schema["enum"]:
        return [f"{where}: {_show(value)} is not one of {_show(schema['enum'])}"]
    if "const" in schema and value != schema["const"]:
        return [f"{where}: expected {_show(schema['const'])}, got {_show(value)}"]
    if isinstance(value, dict):
        return _object_violations(value, schema, path)
    if isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        return [p for i, item in enumerate(value) for p in violations(item, schema["items"], f"{path}[{i}]")]
    return []


_NO_PROPERTIES: Mapping[str, Any] = {}
#: Type names as schemas spell them most, and the Python type whose values (of exactly that type)
#: their checks always take.
_PLAIN_TYPES: dict[str, type] = {
    "string": str,
    "integer": int,
    "number": float,
    "boolean": bool,
    "object": dict,
    "array": list,
    "null": type(None),
}


def _object_violations(value: dict[str, Any], schema: Mapping[str, Any], path: str) -> list[str]:
    found: list[str] = []
    props = schema.get("properties")
    if props is None or (type(props) is not dict and not isinstance(props, Mapping)):
        props = _NO_PROPERTIES
    required = schema.get("required")
    if isinstance(required, list):
        for name in required:
            if isinstance(name, str) and name not in value:
                found.append(f"{path + '.' if path else ''}{name}: required argument missing")
    extra = schema.get("additionalProperties", True)
    if not props and extra is True:
        return found  # (any value fits: the common ``{"type": "object"}``)
    for key, item in value.items():
        if key in props:
            prop = props[key]
            if type(prop) is dict and len(prop) == 1:
                # A schema of one type name, as most properties are, and a value of exactly the
                # Python type that name's check takes: it fits (nothing else in violations() can
                # apply), found without a call; the path is spelled only for a value to check.
                declared = prop.get("type")
                if type(declared) is str and _PLAIN_TYPES.get(declared) is type(item):
                    continue
            found += violations(item, prop, f"{path}.{key}" if path else key)
            continue
        sub = f"{path}.{key}" if path else key
        if extra is False:
            found.append(f"{sub}: unknown argument")
        elif isinstance(extra, Mapping):
            found += violations(item, extra, sub)
    return found


_INTEGER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.0+)?")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")


def declared_types(schema: Any) -> list[str]:
    """The JSON types a schema allows, in declaration order (``anyOf``/``oneOf`` flattened)."""
    if type(schema) is not dict and not isinstance(schema, Mapping):
        return []
    types = _types(schema)
    if "anyOf" in schema or "oneOf" in schema:
        for key in ("anyOf", "oneOf"):
            options = schema.get(key)
            if isinstance(options, list):
                for option in options:
                    types += [t for t in declared_types(option) if t not in types]
    if not types and isinstance(schema.get("enum"), list) and all(isinstance(v, str) for v in schema["enum"]):
        types = ["string"]
    return types


def _decode_container(raw: str, kind: type) -> Any:
    value: Any = _NO_VALUE
    for decode in (json_value, python_literal):
        try:
            value = decode(raw)
        except ValueError:
            continue
        if isinstance(value, str):  # encoded twice
            try:
                value = json_value(value)
            except ValueError:
                continue
        if isinstance(value, kind):
            break
    if not isinstance(value, kind) or nesting(value) > MAX_VALUE_DEPTH:
        raise ValueError("not a " + kind.__name__)
    return value


_NO_VALUE = object()
#: Deepest nesting accepted in a decoded object or array value.
MAX_VALUE_DEPTH = 200


def _typed(raw: str, kind: str) -> Any:
    """``raw`` read as JSON type ``kind``; ValueError when it is not one."""
    if kind == "string":
        return raw
    text = raw.strip()
    if kind == "integer" and _INTEGER.fullmatch(text):
        return int(text.split(".")[0])
    if kind == "number" and _NUMBER.fullmatch(text):
        if _INTEGER.fullmatch(text) and "." not in text:
            return int(text)
        value = float(text)
        if value - value != 0:
            raise ValueError("number out of range")
        return value
    if kind == "boolean" and text.lower() in ("true", "false"):
        return text.lower() == "true"
    if kind == "null" and text in ("null", "None"):
        return None
    if kind == "object":
        return _decode_container(text, dict)
    if kind == "array":
        return _decode_container(text, list)
    raise ValueError(f"not {kind}")


def type_text(raw: str, schema: Any) -> tuple[Any, str | None]:
    """Type a raw text value (Qwen3-Coder's parameters) by its JSON schema: ``(value, problem)``.

    Without a schema, or with one that names no type, the text stays a string. A nullable
    parameter reads ``null``/``None`` as null; otherwise each declared type is tried in order
    (a string type keeps the text exactly: ``"0042"`` stays a string). Integers are exact at
    any size; objects and arrays are JSON, else Python literals. A value that fits no declared
    type stays a string and ``problem`` says why, except ``null``/``None`` where no declared type
    takes it: that is null (what the model meant: no value), and ``problem`` says it was not allowed.
    """
    types = declared_types(schema)
    if not types:
        return raw, None
    nulls = raw.strip() in ("null", "None")
    if "null" in types and nulls:
        return None, None
    for kind in types:
        if kind == "null":
            continue
        try:
            return _typed(raw, kind), None
        except ValueError:
            continue
    if nulls:
        return None, f"null where the schema allows {' or '.join(types)}, read as null"
    shown = raw if len(raw) <= 40 else raw[:37] + "..."
    return raw, f"{shown!r} is not {' or '.join(types)}; kept as text"
