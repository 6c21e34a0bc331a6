"""A toy ``harmony`` member: messages ``<|begin|>bot<|chan|>NAME<|msg|>...<|stop|>`` on the channels
``thought``, ``tools`` and ``answer``, calls addressed ``@fn.NAME`` and ended by ``<|invoke|>``,
the content type after ``<|ctype|>``, the reply's last message ended by ``<|done|>``; replies
decoded without their special tokens read too."""

from __future__ import annotations

from typing import Any

from codec.wire import WireSpec
from wire_toys import WEATHER, call

SPEC = WireSpec(
    "harmony",
    block=("<|begin|>", "<|stop|>"),
    stop="<|done|>",
    call=("@", "<|invoke|>"),
    name=("fn.", ""),
    header=("<|chan|>", "<|ctype|>", "<|msg|>", "bot"),
    channels=("thought", "tools", "answer"),
    special_tokens=("<|begin|>", "<|stop|>", "<|done|>", "<|invoke|>", "<|chan|>", "<|ctype|>", "<|msg|>"),
    recover=("stripped_tokens",),
)

TOOLS: list[dict[str, Any]] = [
    WEATHER,
    {
        "type": "function",
        "function": {
            "name": "save_note",
            "description": "Save a note.",
            "parameters": {
                "type": "object",
                "properties": {
                    "title": {"type": "string"},
                    "tags": {"type": "array", "items": {"type": "string"}},
                    "meta": {"type": "object", "properties": {"pinned": {"type": "boolean"}}},
                },
                "required": ["title"],
            },
        },
    },
]

MESSAGES: list[dict[str, Any]] = [
    {"role": "assistant", "content": "Plain text, with <b>markup</b>, a line\n<break>, 2 < 3 and <|x|>."},
    {"role": "assistant", "content": "", "tool_calls": [call("get_weather", {"city": "Paris", "days": 3})]},
    {
        "role": "assistant",
        "content": "Let me save it.",
        "reasoning_content": "The user wants a note; a <chan> is no token.",
        "tool_calls": [
            call(
                "save_note",
                {"title": 'say "hi"\n<invoke> and <done> as text', "tags": ["a", ""], "meta": {"pinned": True}},
            )
        ],
    },
    {"role": "assistant", "content": "It is sunny.", "reasoning_content": "Answer now."},
    {"role": "assistant", "content": 'A JSON example: {"city": "Paris"} and @fn.get_weather in prose.'},
]
