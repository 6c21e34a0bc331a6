"""A toy ``gemma4`` member: ``<start_call>call:NAME{key:<q>text<q>,n:3}<end_call>``, strings between
``<q>`` tokens, reasoning in ``<think>...</think>``, a turn ended by ``<|end|>`` (its calls too: no closer of
their own); none of Gemma 4's recoveries."""

from __future__ import annotations

from typing import Any

from codec.wire import WireSpec
from wire_toys import WEATHER, call

SPEC = WireSpec(
    "gemma4",
    call=("<start_call>", "<end_call>"),
    stop="<|end|>",
    reasoning=("<think>", "</think>"),
    arguments="quoted",
    values="quoted",
    quote="<q>",
    special_tokens=("<start_call>", "<end_call>", "<q>", "<|end|>"),
)

TOOLS: list[dict[str, Any]] = [
    WEATHER,
    {
        "type": "function",
        "function": {
            "name": "write_file",
            "description": "Write a file.",
            "parameters": {
                "type": "object",
                "properties": {
                    "path": {"type": "string"},
                    "text": {"type": "string"},
                    "options": {
                        "type": "object",
                        "properties": {
                            "mode": {"type": "string"},
                            "tags": {"type": "array", "items": {"type": "string"}},
                            "size": {"type": "number"},
                            "backup": {"type": "boolean"},
                            "owner": {"type": ["string", "null"]},
                        },
                    },
                },
                "required": ["path", "text"],
            },
        },
    },
]


#: Keys as the family writes them, sorted case-insensitively (a message with its keys in another
#: order comes back sorted: the last entry). Messages with calls have no content: the grammar of
#: tool_choice="required" has none before the calls.
MESSAGES: list[dict[str, Any]] = [
    {"role": "assistant", "content": "It is sunny in Paris."},
    {"role": "assistant", "content": "Plain text with {braces}, [brackets] and a call: in it."},
    {
        "role": "assistant",
        "reasoning_content": "The user wants the weather.",
        "content": "",
        "tool_calls": [call("get_weather", {"city": "Paris", "days": 3})],
    },
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            call("get_weather", {"city": "Zürich"}),
            call(
                "write_file",
                {
                    "options": {"backup": False, "mode": "w", "owner": None, "size": 1.5, "tags": ["a", "b,c"]},
                    "path": "notes/a b.txt",
                    "text": "She said \"hi\",\nthen <b>left</b> {at once} & wrote 'x'.",
                },
            ),
        ],
    },
    {"role": "assistant", "reasoning_content": "Nothing to call.", "content": "Hello!"},
    {
        "message": {
            "role": "assistant",
            "reasoning_content": "Two at once.",
            "content": "",
            "tool_calls": [call("get_weather", {"days": 2, "city": "Oslo"}), call("get_weather", {"city": "Rome"})],
        },
        "expected": {
            "content": "",
            "reasoning": "Two at once.",
            "tool_calls": [
                {"name": "get_weather", "arguments": {"city": "Oslo", "days": 2}},
                {"name": "get_weather", "arguments": {"city": "Rome"}},
            ],
        },
    },
]
