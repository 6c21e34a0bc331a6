"""A toy ``arg_pairs`` member: calls between markers of its own, key and value tags of its own, the
tags written on lines of their own, a stop token and reasoning markers of its own::

    <reason>reasoning</reason>
    <invoke_call>get_weather
    <k>city</k>
    <v>Paris</v>
    <k>days</k>
    <v>3</v>
    </invoke_call><|done|>

(glm4_6 writes GLM's tags so, glm4_7 without the line breaks.)
"""

from __future__ import annotations

from typing import Any

from codec.wire import WireSpec
from wire_toys import WEATHER, call

SPEC = WireSpec(
    "arg_pairs",
    call=("<invoke_call>", "</invoke_call>"),
    stop="<|done|>",
    reasoning=("<reason>", "</reason>"),
    arguments="tagged",
    parameter=("<k>", "</k>", "</v>"),
    values="text",
    separator="\n",
    argument_separator="\n",
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
                            "backup": {"type": "boolean"},
                        },
                    },
                    "lines": {"type": "array", "items": {"type": "integer"}},
                },
                "required": ["path"],
            },
        },
    },
    {"type": "function", "function": {"name": "noop", "parameters": {"type": "object", "properties": {}}}},
]


#: (Calls come without content: a grammar of ``tool_choice="required"`` lets reasoning, not text, come first.)
MESSAGES: list[dict[str, Any]] = [
    {"role": "assistant", "content": "Hello! How can I help?"},
    {"role": "assistant", "content": "Tags like <b>bold</b> and a < b stay text."},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [call("get_weather", {"city": "São Paulo", "days": 3})],
    },
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            call("get_weather", {"city": "Paris"}),
            call(
                "write_file",
                {
                    "path": 'notes/a "quoted" name.txt',
                    "text": "line one\n  <b>indented</b> line, 'single' and \"double\" quotes\nlast line\n",
                    "options": {"mode": "w", "tags": ["a", 'b "c"'], "backup": True},
                    "lines": [1, 2, 3],
                },
            ),
        ],
    },
    {"role": "assistant", "content": "", "tool_calls": [call("noop", {})]},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [call("write_file", {"path": "0042", "text": "A tag <k>, a <v> and <invoke_call> are text."})],
    },
]
