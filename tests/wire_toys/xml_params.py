"""A toy ``xml_params`` member: calls between markers of its own, function and argument tags of its
own, values written inline (as Seed-OSS writes them, not on lines of their own), a stop token and
reasoning markers of its own::

    <reason>
    reasoning
    </reason>

    <invoke_tool>
    <fn=get_weather>
    <arg=city>Paris</arg>
    <arg=days>3</arg>
    </fn>
    </invoke_tool><|end|>

(qwen3_coder is the member whose values are on lines of their own.) Inline, a string value's first
line break and its last one, with the blanks after it, are the tags' layout: such strings come
back without them, which the entries with an ``expected`` say.
"""

from __future__ import annotations

from typing import Any

from codec.wire import WireSpec
from wire_toys import WEATHER, call

SPEC = WireSpec(
    "xml_params",
    call=("<invoke_tool>", "</invoke_tool>"),
    stop="<|end|>",
    reasoning=("<reason>", "</reason>"),
    name=("<fn=", ">"),
    arguments="tagged",
    parameter=("<arg=", ">", "</arg>"),
    values="text",
    separator="\n",
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
                    "text": "line one\n  <b>indented</b> line, 'single' and \"double\" quotes\nlast line",
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
        "tool_calls": [
            call("write_file", {"path": "doc.md", "text": "A tag the tool lacks, <arg=mode>, and <fn=x> are text."})
        ],
    },
    {
        "message": {
            "role": "assistant",
            "content": "",
            "tool_calls": [call("write_file", {"path": "x", "text": "\nbody\n"})],
        },
        "expected": {
            "content": "",
            "reasoning": "",
            "tool_calls": [{"name": "write_file", "arguments": {"path": "x", "text": "body"}}],
        },
    },
]
