"""A toy ``named_json`` member: ``<<call>>fn.NAME#ID<<args>>{...}<</call>>`` per call (the id
written, the call's id ``fn.NAME#ID``), in a ``<<calls>>...<</calls>>`` section, reasoning between
``<<think>>`` and ``<</think>>``, turns ended by ``<<end>>``."""

from __future__ import annotations

from typing import Any

from codec.wire import WireSpec
from wire_toys import WEATHER, call

SPEC = WireSpec(
    "named_json",
    block=("<<calls>>", "<</calls>>"),
    call=("<<call>>", "<</call>>"),
    name=("fn.", "<<args>>"),
    call_id=("#", "fn.{name}#{id}"),
    stop="<<end>>",
    reasoning=("<<think>>", "<</think>>"),
)

TOOLS: list[dict[str, Any]] = [
    WEATHER,
    {
        "type": "function",
        "function": {
            "name": "save.note",
            "description": "Save a note.",
            "parameters": {
                "type": "object",
                "properties": {"title": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}}},
                "required": ["title"],
            },
        },
    },
]

MESSAGES: list[dict[str, Any]] = [
    {"role": "assistant", "content": "Plain text, with <b>markup</b>, << and >> and 2 < 3."},
    {"role": "assistant", "content": "", "tool_calls": [call("get_weather", {"city": "Paris", "days": 3})]},
    {
        "role": "assistant",
        "content": "Two calls:",
        "tool_calls": [
            call("get_weather", {"city": 'say "hi"\nthen <</call>> and <<end>>'}),
            call("save.note", {"title": "ünïcødé ✓ <<call>>x<<args>>{}", "tags": ["a", "b \\ c", ""]}),
        ],
    },
    {"role": "assistant", "content": 'No calls; an example: get_weather {"city": "x"} and <<call and {"a": 1}'},
]
