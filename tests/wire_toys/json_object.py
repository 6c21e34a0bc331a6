"""A toy ``json_object`` member: JSON call objects ``{"tool": NAME, "args": {...}}`` (``input``
tolerated for ``args``) between ``<call>`` and ``</call>``, reasoning between ``<reason>`` and
``</reason>``, turns ended by ``<|end|>``; of hermes' recoveries of other models' shapes, only
bare call objects that are the whole reply."""

from __future__ import annotations

from typing import Any

from codec.wire import WireSpec
from wire_toys import call

SPEC = WireSpec(
    "json_object",
    call=("<call>", "</call>"),
    stop="<|end|>",
    reasoning=("<reason>", "</reason>"),
    name=('"tool"', ""),
    arguments_keys=("args", "input"),
    separator="\n",
    recover=("unwrapped_calls",),
)

TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "search",
            "description": "Search the web.",
            "parameters": {
                "type": "object",
                "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
                "required": ["query"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "save_note",
            "description": "Save a note with tags and metadata.",
            "parameters": {
                "type": "object",
                "properties": {
                    "title": {"type": "string"},
                    "body": {"type": "string"},
                    "tags": {"type": "array", "items": {"type": "string"}},
                    "meta": {
                        "type": "object",
                        "properties": {
                            "pinned": {"type": "boolean"},
                            "score": {"type": "number"},
                            "parent": {"type": ["string", "null"]},
                        },
                    },
                },
                "required": ["title", "body"],
            },
        },
    },
]


MESSAGES: list[dict[str, Any]] = [
    {"role": "assistant", "content": "Plain text, with <b>markup</b>, a line\n<break> and 2 < 3."},
    {"role": "assistant", "content": "", "tool_calls": [call("search", {"query": "wire kit", "limit": 3})]},
    {
        "role": "assistant",
        "content": "Two calls:",
        "tool_calls": [
            call("search", {"query": 'say "hi"\nthen </call> and <|end|>'}),
            call(
                "save_note",
                {
                    "title": "Nested",
                    "body": "line one\nline two\t<call>{}</call>",
                    "tags": ["a", "b \\ c", ""],
                    "meta": {"pinned": True, "score": -1.5e-3, "parent": None},
                },
            ),
        ],
    },
    {
        "role": "assistant",
        "content": "Let me look.\n",
        "tool_calls": [call("save_note", {"title": "ünïcødé ✓", "body": '{"json": [1, 2]}', "tags": []})],
    },
    {"role": "assistant", "content": 'No calls here; a JSON example: {"tool": "search", "args": {}}'},
    # hermes' shapes of other models' calls are not this member's: text, as written
    {
        "role": "assistant",
        "content": 'A fence:\n```json\n{"tool": "search", "args": {}}\n```\n<tool>{"tool": "f", "args": {}}</tool>',
    },
]
