"""Safe decoding of Python-style literals, as models write them in place of JSON.

``python_literal`` accepts what ``ast.literal_eval`` accepts for data (strings with either quote,
numbers, True/False/None, lists, tuples, dicts, signed numbers) and also the JSON spellings
``true``/``false``/``null``, which models mix in freely. Tuples become lists. Anything else
(names, calls, operators) raises ``ValueError``; so does input nested too deeply to decode.
"""

from __future__ import annotations

import ast
import json
import math
import warnings
from collections.abc import Callable
from typing import Any

_NAMES = {"true": True, "false": False, "null": None, "True": True, "False": False, "None": None}


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number out of range: {text}")
    return value


def _no_constant(text: str) -> Any:
    raise ValueError(f"{text} is not JSON")


#: JSON decoders without NaN/Infinity and without numbers that overflow to infinity; the lax one
#: also takes raw control characters (a raw newline) inside strings.
JSON_DECODER = json.JSONDecoder(parse_float=_finite, parse_constant=_no_constant)
LAX_JSON_DECODER = json.JSONDecoder(strict=False, parse_float=_finite, parse_constant=_no_constant)


class UnusualJSON(ValueError):
    """A repeated key: JSON that a fast path leaves to the grammar's rules, which report it."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        raise UnusualJSON("repeated key")
    return out


#: The strict decoder that also refuses repeated keys: what a grammar's JSON rules read the same
#: way (they report a repeated key), so a fast path may decode with it in C.
PLAIN_JSON_DECODER = json.JSONDecoder(object_pairs_hook=_unique_keys, parse_float=_finite, parse_constant=_no_constant)


def _text_encoder() -> Callable[[Any], str]:
    """``json.dumps(value, ensure_ascii=False)`` for values decoded from text, which cannot hold
    themselves: the C encoder is built once, without the cycle check (``dumps`` builds one per
    call, most of its cost for a call's arguments). Where that encoder is missing or differs, a
    kept ``JSONEncoder`` does the same work in Python."""
    kept = json.JSONEncoder(ensure_ascii=False)
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:
        return kept.encode
    try:
        encode = make(None, kept.default, json.encoder.encode_basestring, None, ": ", ", ", False, False, True)
        probe = {"a": [1, 2.5, True, None, 'é\n"'], "b": {}}
        if "".join(encode(probe, 0)) != json.dumps(probe, ensure_ascii=False):
            return kept.encode
    except Exception:  # another signature: keep to the public API
        return kept.encode
    return lambda value: "".join(encode(value, 0))


#: ``json.dumps(value, ensure_ascii=False)`` for a value decoded from text: how argument JSON is written.
json_text = _text_encoder()


def json_value(text: str, *, strict: bool = True) -> Any:
    """``json.loads`` with :data:`JSON_DECODER` (or the lax one)."""
    try:
        return (JSON_DECODER if strict else LAX_JSON_DECODER).decode(text)
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None


def number_literal(text: str) -> int | float:
    """A number as written (``42``, ``-0.5``, ``1e+20``): an int unless it has a point or an
    exponent; ValueError for one that overflows to infinity."""
    if "." in text or "e" in text or "E" in text:
        return _finite(text)
    return int(text)


def nesting(value: Any) -> int:
    """How deep ``value`` nests lists and dicts (0 for a scalar), without recursion."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            deepest = max(deepest, depth)
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            deepest = max(deepest, depth)
            stack.extend((v, depth + 1) for v in item)
    return deepest


#: What builds a dict from its ``(key, value)`` pairs, in the order written (``json``'s
#: ``object_pairs_hook``).
PairsHook = Callable[[list[tuple[str, Any]]], Any]


def python_literal(text: str, *, object_pairs_hook: PairsHook = dict) -> Any:
    """Decode a Python (or JSON) literal; raises ``ValueError`` for anything that is not data.

    ``object_pairs_hook`` builds each dict from its pairs, a repeated key included (as ``json``'s
    hook of that name: by default the last value is kept)."""
    try:
        with warnings.catch_warnings():  # "invalid escape sequence" and the like: the text is data
            warnings.simplefilter("ignore")
            node = ast.parse(text.strip(), mode="eval").body
    except (SyntaxError, MemoryError, RecursionError, ValueError) as exc:
        raise ValueError(f"not a literal: {exc}") from None
    try:
        return _value(node, object_pairs_hook)
    except RecursionError:
        raise ValueError("literal nested too deeply") from None


def python_calls(text: str, *, object_pairs_hook: PairsHook = dict) -> list[tuple[str, list[tuple[str, Any]]]]:
    """Decode a Python call, or a list of them, whose arguments are keyword arguments of literal
    values (``get_weather(city="Paris")``, ``brave_search.call(query="x")``, ``[f(a=1), g()]``):
    each call's dotted name and its arguments in order; raises ``ValueError`` for anything else."""
    try:
        with warnings.catch_warnings():  # as python_literal
            warnings.simplefilter("ignore")
            node = ast.parse(text.strip(), mode="eval").body
    except (SyntaxError, MemoryError, RecursionError, ValueError) as exc:
        raise ValueError(f"not a call: {exc}") from None
    nodes = node.elts if isinstance(node, ast.List) else [node]
    try:
        return [_call(item, object_pairs_hook) for item in nodes]
    except RecursionError:
        raise ValueError("call nested too deeply") from None


def _call(node: ast.AST, hook: PairsHook) -> tuple[str, list[tuple[str, Any]]]:
    if not isinstance(node, ast.Call) or node.args:
        raise ValueError("not a call with keyword arguments only")
    parts: list[str] = []
    func = node.func
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if not isinstance(func, ast.Name):
        raise ValueError("a call's function is no dotted name")
    parts.append(func.id)
    arguments = []
    for keyword in node.keywords:
        if keyword.arg is None:
            raise ValueError("** unpacking is not a literal")
        arguments.append((keyword.arg, _value(keyword.value, hook)))
    return ".".join(reversed(parts)), arguments


def _value(node: ast.AST, hook: PairsHook) -> Any:
    if isinstance(node, ast.Constant) and isinstance(node.value, (str, int, float, bool, type(None))):
        if isinstance(node.value, float) and not math.isfinite(node.value):
            raise ValueError("number out of range")
        return node.value
    if isinstance(node, ast.Name) and node.id in _NAMES:
        return _NAMES[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        operand = _value(node.operand, hook)
        if isinstance(operand, (int, float)) and not isinstance(operand, bool):
            return -operand if isinstance(node.op, ast.USub) else operand
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_value(item, hook) for item in node.elts]
    if isinstance(node, ast.Dict):
        pairs: list[tuple[str, Any]] = []
        for key, item in zip(node.keys, node.values, strict=True):
            if key is None:
                raise ValueError("** unpacking is not a literal")
            k = _value(key, hook)
            if not isinstance(k, str):
                raise ValueError("object keys must be strings")
            pairs.append((k, _value(item, hook)))
        return hook(pairs)
    raise ValueError(f"{type(node).__name__} is not a literal")
