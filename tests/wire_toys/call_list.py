"""A toy ``call_list`` member: a bare Python list of calls before a stop token of its own, reasoning
between markers of its own, JSON values, ``", "`` between calls and between arguments::

    <|think|>
    reasoning
    <|/think|>

    [get_weather(city="Paris", days=3), noop()]<|finish|>

(A member whose list is in a block, ``<|calls|>[...]<|/calls|>``, is ``test_pythonic_parse.py``'s: the
kit's test of a reply cut short cuts two characters, which there cut the block's closer, not a call.)
"""

from __future__ import annotations

from typing import Any

from codec.wire import WireSpec
from wire_toys import WEATHER, call

SPEC = WireSpec(
    "call_list",
    stop="<|finish|>",
    reasoning=("<|think|>", "<|/think|>"),
    arguments="python",
    values="json",
    separator=", ",
    argument_separator=", ",
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
                },
                "required": ["path", "text"],
            },
        },
    },
]


#: (Calls come without content: a grammar of ``tool_choice="required"`` lets reasoning, not text, come first.)
MESSAGES: list[dict[str, Any]] = [
    {"role": "assistant", "content": "It is sunny in Paris, 22 °C."},
    {"role": "assistant", "content": "Prose with [brackets] and <b>markup</b>, but no call."},
    {"role": "assistant", "content": "", "tool_calls": [call("get_weather", {"city": "Paris", "days": 3})]},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            call("get_weather", {"city": 'São "Paulo"'}),
            call(
                "write_file",
                {
                    "path": "notes/a [1].md",
                    "text": 'line one\nline "two", <a href="x">link</a> f(a=1)]\n\tend',
                    "options": {"mode": "w", "tags": ["x", "y, z"], "backup": False},
                },
            ),
        ],
    },
    {
        "role": "assistant",
        "content": "",
        "reasoning_content": "The user wants the weather; get_weather takes a city.",
        "tool_calls": [call("get_weather", {"city": "Rome", "days": 1})],
    },
    {"role": "assistant", "content": "No call needed.", "reasoning_content": "Nothing to look up."},
]
