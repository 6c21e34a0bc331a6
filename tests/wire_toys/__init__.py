"""Toy members of the wire families, one module per family (see test_wire_kit.py): each defines
``SPEC``, ``TOOLS`` and ``MESSAGES``; the pieces they share are here."""

from __future__ import annotations

from typing import Any

#: The tool every toy but json_object's calls first.
WEATHER: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
            "required": ["city"],
        },
    },
}


def call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """An OpenAI tool call (without an id: the parse gives ``call_0``, ``call_1``...)."""
    return {"type": "function", "function": {"name": name, "arguments": arguments}}
