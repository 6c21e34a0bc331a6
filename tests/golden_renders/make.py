"""Regenerate the golden renders from the reference templates in ../shared/seeds.

    python tests/golden_renders/make.py [FORMAT ...]
    python tests/golden_renders/make.py --record [FORMAT ...]

A FORMAT is a registered name, or ``module:Class`` for a format not registered yet (e.g.
``codec.formats.gemma4:Gemma4``).

Each case is a readable conversation (``<case>.json``) and what the reference template renders
for it (``<case>.txt``), or, where the template raises, the reason in the JSON's ``error``.
Run it only when a case is added: the files are the record the renderers are tested against.

``templates.json`` beside this file records, per format, the template the renders come from: its
path under ../shared, its sha256, and the transformers version installed when it was recorded
(``codec.jinja`` renders the template; tests/test_jinja.py checks it against that transformers).
Every run writes its formats' entries. ``--record`` writes them without touching the renders,
and only after checking that the template on disk still renders every case as committed (it
names the cases that differ otherwise); tests/test_golden_templates.py fails when a template
differs from its record.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.metadata
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, tzinfo
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

import codec  # noqa: E402
from codec import jinja  # noqa: E402
from codec._compare import template_messages  # noqa: E402
from codec.errors import RenderError  # noqa: E402

SEEDS = HERE.parents[2] / "shared" / "seeds"
#: The day a template's clock (``strftime_now``) says while the renders are made, so that they do
#: not change from one day to the next; and per format, the variables that stand for the clock in
#: its renderer, given in each of its cases so that the renderer writes that day too.
PINNED_DAY = datetime(2026, 1, 15, 9, 30)
CLOCK_VARIABLES: dict[str, dict[str, Any]] = {
    "gpt_oss": {"current_date": "2026-01-15"},
    "mistral_small3_2": {"current_date": "2026-01-15"},
}
#: Where each format's template is recorded (see the module docstring).
RECORD = HERE / "templates.json"

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "City name, e.g. São Paulo"},
                "days": {"type": "integer", "description": "Forecast days"},
                "unit": {"type": "string", "enum": ["c", "f"]},
            },
            "required": ["city"],
        },
    },
}
SEARCH = {
    "type": "function",
    "function": {
        "name": "search",
        "description": "Search the web.",
        "parameters": {
            "type": "object",
            "properties": {
                "query": {"type": "string"},
                "filters": {"type": "object", "properties": {"lang": {"type": "string"}}},
                "limit": {"type": ["integer", "null"]},
            },
            "required": ["query"],
        },
    },
}


def call(id_: str, name: str, arguments: Any) -> dict[str, Any]:
    return {"id": id_, "type": "function", "function": {"name": name, "arguments": arguments}}


SYSTEM = {"role": "system", "content": "You are a helpful assistant."}
USER = {"role": "user", "content": "What's the weather in Paris and in São Paulo?"}
CALLS = {
    "role": "assistant",
    "content": "",
    "tool_calls": [
        call("call_1", "get_weather", {"city": "Paris", "days": 3}),
        call("call_2", "get_weather", {"city": 'São "Paulo"\nline2 \\ end', "unit": "c"}),
    ],
}
RESULTS = [
    {"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": "Sunny, 22°C"},
    {"role": "tool", "tool_call_id": "call_2", "name": "get_weather", "content": "Rain, 18°C"},
]
ANSWER = {"role": "assistant", "content": "Paris is sunny (22°C); São Paulo has rain (18°C)."}

CASES: dict[str, dict[str, Any]] = {
    "plain_chat": {"messages": [USER, ANSWER], "tools": None, "add_generation_prompt": False},
    "system_and_prompt": {"messages": [SYSTEM, USER], "tools": None, "add_generation_prompt": True},
    "tools_no_system": {"messages": [USER], "tools": [WEATHER, SEARCH], "add_generation_prompt": True},
    "tools_with_system": {"messages": [SYSTEM, USER], "tools": [WEATHER], "add_generation_prompt": True},
    "full_tool_round": {
        "messages": [SYSTEM, USER, CALLS, *RESULTS, ANSWER],
        "tools": [WEATHER],
        "add_generation_prompt": False,
    },
    "content_with_call": {
        "messages": [
            USER,
            {
                "role": "assistant",
                "content": "Let me check.",
                "tool_calls": [call("c1", "search", {"query": "a</tool_call>b", "filters": {}, "limit": None})],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "nothing found"},
        ],
        "tools": [SEARCH],
        "add_generation_prompt": True,
    },
    "values_of_every_type": {
        "messages": [
            USER,
            {
                "role": "assistant",
                "tool_calls": [
                    call(
                        "c1",
                        "f",
                        {
                            "b": 1,
                            "A": 2.0,
                            "a": 1e20,
                            "Z": -0.5,
                            "flag": False,
                            "n": None,
                            "big": 12345678901234567890,
                            "emp": "",
                            "lst": [],
                            "obj": {},
                        },
                    )
                ],
            },
        ],
        "tools": None,
        "add_generation_prompt": False,
    },
    "string_arguments": {
        "messages": [USER, {"role": "assistant", "tool_calls": [call("c1", "get_weather", '{"city": "Paris"}')]}],
        "tools": [WEATHER],
        "add_generation_prompt": False,
    },
    "reasoning_and_thinking": {
        "messages": [
            USER,
            {"role": "assistant", "reasoning_content": "I should call the tool.", "tool_calls": CALLS["tool_calls"]},
            *RESULTS,
        ],
        "tools": [WEATHER],
        "add_generation_prompt": True,
        "variables": {"enable_thinking": True},
    },
    "tool_message_first": {
        "messages": [{"role": "tool", "tool_call_id": "x", "content": "orphan result"}, USER],
        "tools": None,
        "add_generation_prompt": True,
    },
    "later_system_message": {
        "messages": [SYSTEM, USER, ANSWER, {"role": "system", "content": "Be brief."}, USER],
        "tools": None,
        "add_generation_prompt": True,
    },
    "whitespace_content": {
        "messages": [
            {"role": "user", "content": "  Hi  "},
            {"role": "assistant", "content": "  ", "tool_calls": [call("c1", "noop", {})]},
        ],
        "tools": None,
        "add_generation_prompt": False,
    },
    "list_system_content_with_tools": {
        "messages": [{"role": "system", "content": [{"type": "text", "text": "Sys"}]}, USER],
        "tools": [WEATHER],
        "add_generation_prompt": True,
    },
    # schema keys beyond name/type/description, list-typed "type", no description, blank system text
    "schema_details": {
        "messages": [{"role": "system", "content": " \n "}, USER],
        "tools": [
            SEARCH,
            {
                "type": "function",
                "function": {
                    "name": "convert",
                    "strict": True,
                    "parameters": {
                        "type": "object",
                        "properties": {
                            "amount": {"type": "number", "description": "  Amount.\n", "minimum": 0, "default": 1.0},
                            "to": {"type": "string", "enum": ["EUR", "BRL"], "title": "Target"},
                            "note": {"type": ["string", "null"]},
                            "raw": True,
                        },
                        "required": ["amount", "to"],
                        "additionalProperties": False,
                    },
                },
            },
            {"name": "ping", "description": "\tBare function object, no wrapper. "},
        ],
        "add_generation_prompt": True,
    },
    # text parts joined, surrounding whitespace trimmed everywhere, content glued to a call
    "content_parts_and_trimming": {
        "messages": [
            {"role": "system", "content": "\n  Be precise.  \n"},
            {"role": "user", "content": [{"type": "text", "text": "  Part one, "}, {"type": "text", "text": "two.\n"}]},
            {
                "role": "assistant",
                "content": "\n<think>\nhmm\n</think>\n\nChecking.  \n",
                "tool_calls": [call("c1", "get_weather", {"city": "Paris"}), call("c2", "noop", {})],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "\n  Sunny  \n"},
            {"role": "tool", "tool_call_id": "c2", "content": [{"type": "text", "text": "ok"}]},
            {"role": "user", "content": "  Thanks!  "},
        ],
        "tools": None,
        "add_generation_prompt": True,
    },
    "image_content": {
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "What is this?"},
                    {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}},
                ],
            }
        ],
        "tools": None,
        "add_generation_prompt": True,
    },
    # thinking on; reasoning kept only on the tool-calling message after the last user turn
    "thinking_reasoning_after_last_user": {
        "messages": [
            SYSTEM,
            USER,
            {
                "role": "assistant",
                "reasoning_content": "Old reasoning, before the last user turn.",
                "tool_calls": [call("call_0", "get_weather", {"city": "Lyon"})],
            },
            {"role": "tool", "tool_call_id": "call_0", "content": "Cloudy"},
            {"role": "assistant", "reasoning_content": "No call here.", "content": "Lyon is cloudy."},
            {"role": "user", "content": "And Paris?"},
            {
                "role": "assistant",
                "reasoning_content": "I should call the tool.",
                "content": "<|channel>thought\nhidden<channel|>Checking.",
                "tool_calls": [call("call_1", "get_weather", {"city": "Paris", "days": 3})],
            },
        ],
        "tools": [WEATHER],
        "add_generation_prompt": True,
        "variables": {"enable_thinking": True, "bos_token": "<bos>"},
    },
    # a result is named by the call with its tool_call_id, else by its own name (a message without
    # tool_call_id matches a call without id); assistant-side results fall back to "unknown"
    "tool_response_names": {
        "messages": [
            USER,
            {
                "role": "assistant",
                "tool_calls": [
                    call("call_1", "get_weather", {"city": "Paris"}),
                    {"type": "function", "function": {"name": "search", "arguments": {"query": "rain"}}},
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "name": "wrong_name", "content": "Sunny"},
            {"role": "tool", "tool_call_id": "call_9", "name": "lookup", "content": [{"type": "text", "text": "a"}]},
            {"role": "tool", "name": "other", "content": '{"hits": 0}'},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [call("call_2", "get_weather", {"city": "Rome"})],
                "tool_responses": [{"response": {"temp": 15, "Sky": "clear", "n": None}}, {"name": "x", "response": 7}],
            },
        ],
        "tools": None,
        "add_generation_prompt": True,
    },
    # a tool's response schema (closed only by an object type), a tool without parameters
    "response_schema": {
        "messages": [USER],
        "tools": [
            {
                "type": "function",
                "function": {
                    **WEATHER["function"],
                    "response": {"type": "object", "description": "Temperature and sky."},
                },
            },
            {
                "type": "function",
                "function": {"name": "now", "description": "Current time.", "response": {"type": "string"}},
            },
            {"type": "function", "function": {"name": "ping"}},
        ],
        "add_generation_prompt": True,
    },
    # list type, anyOf, integer enum, object without properties, array of objects, nullable, nesting
    "declaration_quirks": {
        "messages": [USER],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "book",
                    "description": "Book a table.",
                    "parameters": {
                        "type": "object",
                        "properties": {
                            "size": {"type": ["integer", "null"], "description": "Party size"},
                            "when": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
                            "level": {"type": "integer", "enum": [1, 2, 3]},
                            "Mode": {"type": "string", "enum": ["fast", "slow"], "nullable": True},
                            "cfg": {"type": "object", "description": "cfg", "additionalProperties": {"type": "string"}},
                            "guests": {
                                "type": "array",
                                "items": {
                                    "type": "object",
                                    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
                                    "required": ["name"],
                                },
                            },
                            "tags": {"type": "array", "items": {"type": ["string", "null"], "enum": ["a", "b"]}},
                            "where": {
                                "type": "object",
                                "properties": {"city": {"type": "string"}, "zip": {"type": "string"}},
                                "required": ["city"],
                            },
                        },
                        "required": ["size", "when"],
                    },
                },
            }
        ],
        "add_generation_prompt": True,
    },
    # assistant messages separated only by tool messages (one model turn), then two in a row
    "consecutive_assistants": {
        "messages": [
            USER,
            {"role": "assistant", "tool_calls": [call("c1", "get_weather", {"city": "Paris"})]},
            {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
            {"role": "assistant", "content": "And Rome:", "tool_calls": [call("c2", "get_weather", {"city": "Rome"})]},
            {"role": "tool", "tool_call_id": "c2", "content": "rain"},
            {"role": "assistant", "content": "Paris is sunny, Rome rainy."},
            {"role": "assistant", "content": "Anything else?"},
        ],
        "tools": [WEATHER],
        "add_generation_prompt": True,
    },
    # one call answered by one result (a round Gemma 3 accepts), content next to the call, a new question
    "single_tool_round": {
        "messages": [
            SYSTEM,
            USER,
            {
                "role": "assistant",
                "content": "Let me check.",
                "tool_calls": [call("call_1", "get_weather", {"city": "Paris", "days": 3, "unit": "c"})],
            },
            RESULTS[0],
            {"role": "assistant", "content": "Paris is sunny (22°C)."},
            {"role": "user", "content": "And tomorrow?"},
        ],
        "tools": [WEATHER, SEARCH],
        "add_generation_prompt": True,
    },
    # two system messages in a row before the first user turn, with tools
    "multiple_system_messages": {
        "messages": [
            {"role": "system", "content": "First system."},
            {"role": "system", "content": "Second system."},
            USER,
        ],
        "tools": [WEATHER],
        "add_generation_prompt": True,
    },
    # thinking off: reasoning inline in content (no reasoning_content), reasoning after the last
    # query, a mapping tool result
    "thinking_disabled": {
        "messages": [
            USER,
            {"role": "assistant", "content": "<think>\nhidden\n</think>\n\nIt is sunny."},
            {"role": "user", "content": "And Rome?"},
            {
                "role": "assistant",
                "reasoning_content": "\nNeed the Rome forecast.\n",
                "tool_calls": [call("call_1", "get_weather", {"city": "Rome"})],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": {"temp": 18, "sky": "rain"}},
            {"role": "assistant", "reasoning_content": "Summarize.", "content": "Rome: rain, 18°C."},
        ],
        "tools": [WEATHER],
        "add_generation_prompt": True,
        "variables": {"enable_thinking": False},
    },
    # image parts in two user messages
    "images": {
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Compare "},
                    {"type": "image"},
                    {"type": "text", "text": " and "},
                    {"type": "image"},
                ],
            },
            {"role": "assistant", "content": "Two cats."},
            {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "And this one?"}]},
        ],
        "tools": None,
        "add_generation_prompt": True,
        "variables": {"bos_token": "<bos>"},
    },
}


#: Cases of one format only, for what its template does that the shared cases do not show.
#: Cases of both Llama 3 templates: two calls in one turn (which they refuse), the tools in the
#: system turn with the date and bos_token given.
LLAMA_TWO_CALLS: dict[str, Any] = {
    "messages": [
        USER,
        {
            "role": "assistant",
            "tool_calls": [call("c1", "get_weather", {"city": "Paris"}), call("c2", "get_weather", {"city": "Rio"})],
        },
    ],
    "tools": [WEATHER],
    "add_generation_prompt": True,
}
LLAMA_TOOLS_IN_THE_SYSTEM_TURN: dict[str, Any] = {
    "messages": [SYSTEM, USER],
    "tools": [WEATHER],
    "add_generation_prompt": True,
    "variables": {"tools_in_user_message": False, "date_string": "02 Dec 2026", "bos_token": "<|begin_of_text|>"},
}

FORMAT_CASES: dict[str, dict[str, dict[str, Any]]] = {
    # gemma4_31b: parameters named after schema keys left out (G1), system parts printed (G2), an
    # answered turn with a blank content closed (G3), the generation prompt's thought with thinking on (G4)
    "gemma4_31b": {
        "gemma4_31b_schema_key_parameters": {
            "messages": [USER],
            "tools": [
                {
                    "type": "function",
                    "function": {
                        "name": "classify",
                        "description": "Classify a thing.",
                        "parameters": {
                            "type": "object",
                            "properties": {
                                "type": {"type": "string", "description": "The kind."},
                                "description": {"type": "string"},
                                "label": {"type": "object", "properties": {"required": {"type": "boolean"}}},
                            },
                            "required": ["type"],
                        },
                    },
                }
            ],
            "add_generation_prompt": True,
        },
        "gemma4_31b_system_parts_and_blank_answered_turn": {
            "messages": [
                {"role": "system", "content": [{"type": "text", "text": "Be brief."}]},
                USER,
                {"role": "assistant", "content": " ", "tool_calls": [call("c1", "get_weather", {"city": "Paris"})]},
                {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
                {"role": "user", "content": "Thanks."},
            ],
            "tools": [WEATHER],
            "add_generation_prompt": True,
        },
        "gemma4_31b_thinking_enabled": {
            "messages": [USER],
            "tools": None,
            "add_generation_prompt": True,
            "variables": {"enable_thinking": True},
        },
    },
    # gemma4_31b_interleaved: declarations with literal leading commas (I1), tool results as tool turns
    # (I2), every turn closed (I3), reasoning closed without a line break (I4), legacy results that end
    # a turn, continued by the next calls, and a generation prompt that is only the empty thought (I5)
    "gemma4_31b_interleaved": {
        "interleaved_declaration_layout": {
            "messages": [USER],
            "tools": [
                {
                    "type": "function",
                    "function": {
                        "name": "book",
                        "description": "Book a trip.",
                        "parameters": {
                            "type": "object",
                            "properties": {
                                "stops": {"type": "array", "items": {"type": "string"}},
                                "when": {"type": "object", "properties": {"day": {"type": "string", "enum": ["mon"]}}},
                                "who": {
                                    "type": "object",
                                    "description": "The traveller.",
                                    "nullable": True,
                                    "properties": {"name": {"type": "string"}},
                                    "required": ["name"],
                                },
                            },
                            "required": ["stops"],
                        },
                    },
                }
            ],
            "add_generation_prompt": True,
        },
        "interleaved_tool_turns_and_reasoning": {
            "messages": [
                USER,
                {
                    "role": "assistant",
                    "content": "",
                    "reasoning_content": "Two cities.",
                    "tool_calls": [call("c1", "get_weather", {"city": "Paris"})],
                },
                {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
                {"role": "assistant", "content": "Paris is sunny."},
            ],
            "tools": [WEATHER],
            "add_generation_prompt": True,
        },
        "interleaved_legacy_results_continued": {
            "messages": [
                USER,
                {
                    "role": "assistant",
                    "tool_calls": [call("c1", "get_weather", {"city": "Paris"})],
                    "tool_responses": [{"name": "get_weather", "response": {"sky": "sunny"}}],
                },
                {"role": "assistant", "tool_calls": [call("c2", "get_weather", {"city": "São Paulo"})]},
                {
                    "role": "assistant",
                    "tool_responses": [{"name": "get_weather", "response": "rain"}],
                },
            ],
            "tools": [WEATHER],
            "add_generation_prompt": True,
        },
    },
    # mistral_nemo: ids of nine characters (the template raises otherwise), the system message in the
    # last user turn only, the tools before the last user message (and an equal earlier one), an empty
    # list of tools, results printed as they are, eos_token after each assistant turn (the tokenizer's
    # where none is given)
    "mistral_nemo": {
        "nemo_full_tool_round": {
            "messages": [
                {"role": "system", "content": "Answer briefly."},
                USER,
                {
                    "role": "assistant",
                    "content": "Not written.",
                    "tool_calls": [
                        call("a1B2c3D4e", "get_weather", {"city": "Paris"}),
                        call("Zx9Yw8Vu7", "get_weather", '{"city": "São Paulo", "days": 2}'),
                    ],
                },
                {"role": "tool", "tool_call_id": "a1B2c3D4e", "content": '{"sky": "sunny"}'},
                {"role": "tool", "tool_call_id": "Zx9Yw8Vu7", "content": "rain"},
                {"role": "assistant", "content": "Sunny in Paris, rain in São Paulo."},
                {"role": "user", "content": "Thanks!"},
            ],
            "tools": [WEATHER, SEARCH],
            "add_generation_prompt": True,
            "variables": {"bos_token": "<s>", "eos_token": "</s>"},
        },
        "nemo_system_dropped_after_an_answer": {
            "messages": [
                {"role": "system", "content": "Dropped: the last message is no user message."},
                USER,
                {"role": "assistant", "content": "Sunny."},
            ],
            "tools": None,
            "add_generation_prompt": False,
            "variables": {"bos_token": "<s>", "eos_token": "</s>"},
        },
        "nemo_tools_before_equal_user_messages": {
            "messages": [
                {"role": "user", "content": "Again?"},
                {"role": "assistant", "content": "Yes."},
                {"role": "user", "content": "Again?"},
            ],
            "tools": [],
            "add_generation_prompt": True,
            "variables": {"bos_token": "<s>"},
        },
        "nemo_id_of_eight_characters": {
            "messages": [
                USER,
                {"role": "assistant", "tool_calls": [call("a1B2c3D4", "get_weather", {"city": "Paris"})]},
            ],
            "tools": [WEATHER],
            "add_generation_prompt": False,
            "variables": {"eos_token": "</s>"},
        },
        "nemo_eos_token_of_the_tokenizer": {
            "messages": [USER, {"role": "assistant", "content": "Sunny."}],
            "tools": None,
            "add_generation_prompt": False,
        },
        "nemo_eos_token_given": {
            "messages": [USER, {"role": "assistant", "content": "Sunny."}],
            "tools": None,
            "add_generation_prompt": False,
            "variables": {"eos_token": "<|end|>"},
        },
        "nemo_roles_not_alternating": {
            "messages": [USER, {"role": "user", "content": "And tomorrow?"}],
            "tools": None,
            "add_generation_prompt": True,
        },
    },
    # granite4: the default system prompt where the system text is empty (G1), documents and
    # available_tools (G2), string arguments written as they are (G5), tool results in a user turn (G6)
    "granite4": {
        "granite_empty_system_message": {
            "messages": [{"role": "system", "content": ""}, USER],
            "tools": None,
            "add_generation_prompt": True,
        },
        "granite_documents_and_tools": {
            "messages": [SYSTEM, USER],
            "tools": [WEATHER],
            "add_generation_prompt": True,
            "variables": {"documents": [{"doc_id": 1, "title": "Lisbon", "text": "Lisbon is sunny in June."}]},
        },
        "granite_available_tools": {
            "messages": [USER],
            "tools": None,
            "add_generation_prompt": True,
            "variables": {"available_tools": [WEATHER]},
        },
        "granite_string_arguments_and_results": {
            "messages": [
                USER,
                {
                    "role": "assistant",
                    "content": "Checking.",
                    "tool_calls": [call("c1", "get_weather", '{"city":"Paris"}')],
                },
                {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
                {"role": "tool", "tool_call_id": "c1", "content": "warm"},
            ],
            "tools": [WEATHER],
            "add_generation_prompt": True,
        },
    },
    # llama3_1: the tools in the first user message (L3) or in the system turn, built-in tools and
    # their Python calls ended by <|eom_id|> (L2, L5), the date and bos_token variables (L1), tool
    # results as JSON string literals (L6), and the template's two errors (L3, L5)
    "llama3_1": {
        "llama_tools_in_the_system_turn": LLAMA_TOOLS_IN_THE_SYSTEM_TURN,
        "llama_builtin_tools": {
            "messages": [
                USER,
                {"role": "assistant", "tool_calls": [call("c1", "brave_search", {"query": "weather in Paris"})]},
                {"role": "ipython", "content": "sunny"},
                {"role": "assistant", "tool_calls": [call("c2", "get_weather", {"city": "Paris"})]},
                {"role": "tool", "tool_call_id": "c2", "content": "18 °C"},
            ],
            "tools": [WEATHER],
            "add_generation_prompt": True,
            "variables": {"builtin_tools": ["brave_search", "code_interpreter", "wolfram_alpha"]},
        },
        "llama_custom_tools": {
            "messages": [USER],
            "tools": None,
            "add_generation_prompt": True,
            "variables": {"custom_tools": [SEARCH]},
        },
        "llama_two_calls_in_one_turn": LLAMA_TWO_CALLS,
        "llama_tools_without_a_user_message": {
            "messages": [SYSTEM],
            "tools": [WEATHER],
            "add_generation_prompt": True,
        },
    },
    # llama3_2: the date given (T1), builtin_tools not read (T2), tools in the system turn (L3)
    "llama3_2": {
        "llama_tools_in_the_system_turn": LLAMA_TOOLS_IN_THE_SYSTEM_TURN,
        "llama3_2_builtin_tools_not_read": {
            "messages": [USER, {"role": "assistant", "tool_calls": [call("c1", "brave_search", {"query": "Paris"})]}],
            "tools": [WEATHER],
            "add_generation_prompt": True,
            "variables": {"builtin_tools": ["brave_search"]},
        },
        "llama_two_calls_in_one_turn": LLAMA_TWO_CALLS,
    },
    # lfm2: reasoning after the last user message only, or everywhere with preserve_thinking (L4);
    # content parts with an image (L3); Python values and an empty call list (L5); the tag moved
    # after the calls (L6); a later system message as an ordinary turn (L1)
    "lfm2": {
        "lfm2_thinking_and_preserve_thinking": {
            "messages": [
                USER,
                {"role": "assistant", "content": "<think>old</think> Sunny.", "reasoning_content": "Old."},
                {"role": "user", "content": "And Rome?"},
                {"role": "assistant", "content": "Checking.", "reasoning_content": "Rome next."},
            ],
            "tools": None,
            "add_generation_prompt": False,
            "variables": {"preserve_thinking": True, "bos_token": "<|startoftext|>"},
        },
        "lfm2_python_values_and_parts": {
            "messages": [
                {"role": "system", "content": [{"type": "text", "text": "Be brief."}]},
                {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "Where?"}]},
                {
                    "role": "assistant",
                    "content": "CONTINUE_FINAL_MESSAGE_TAG ",
                    "tool_calls": [
                        call("c1", "get_weather", {"city": "Paris", "days": 2, "ok": True, "none": None}),
                        call("c2", "search", {"query": "it", "opts": {"k": [1, "x"]}, "tags": ["a", 1.5]}),
                    ],
                },
                {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
                {"role": "assistant", "content": "", "tool_calls": []},
                {"role": "system", "content": "Later."},
            ],
            "tools": [WEATHER],
            "add_generation_prompt": True,
        },
    },
    # llama4_pythonic: the default system prompt with tools (T2), a system text with tools, every value
    # "%s"-formatted (T4), string arguments iterated (T4), tool results as JSON (T5), custom_tools (T1)
    "llama4_pythonic": {
        "llama4_default_system_prompt": {
            "messages": [USER],
            "tools": [WEATHER],
            "add_generation_prompt": True,
        },
        "llama4_values_and_results": {
            "messages": [
                {"role": "system", "content": [{"type": "text", "text": "  Be brief.  "}]},
                {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": " Where? "}]},
                {
                    "role": "assistant",
                    "content": [{"type": "text", "text": " Checking. "}],
                    "tool_calls": [
                        call("c1", "get_weather", {"city": "Paris", "days": 2, "ok": True, "none": None}),
                        call("c2", "search", {"opts": {"k": [1, "x"]}, "tags": ["a", 1.5]}),
                    ],
                },
                {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
                {
                    "role": "tool",
                    "tool_call_id": "c2",
                    "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
                },
                {"role": "assistant", "tool_calls": [call("c3", "search", '{"q": 1}')]},
                {"role": "user", "content": "ok", "tool_calls": [call("c4", "search", {"q": 1})]},
            ],
            "tools": [WEATHER],
            "add_generation_prompt": True,
        },
        "llama4_custom_tools_and_empty_system": {
            "messages": [{"role": "system", "content": "   "}, USER],
            "tools": None,
            "add_generation_prompt": True,
            "variables": {"custom_tools": [WEATHER], "bos_token": "<|begin_of_text|>"},
        },
    },
    # gpt_oss: the system message's variables (O1), a developer message (O2), declarations (O3, O4),
    # only the first call written and its analysis message kept or dropped (O5), the last turn's
    # reasoning without a generation prompt (O6), results named by the last call (O7)
    "gpt_oss": {
        "gpt_oss_variables": {
            "messages": [{"role": "developer", "content": "Answer in French."}, USER],
            "tools": None,
            "add_generation_prompt": True,
            "variables": {
                "reasoning_effort": "high",
                "model_identity": "You are a weather bot.",
                "builtin_tools": ["browser", "python"],
            },
        },
        "gpt_oss_declarations": {
            "messages": [USER],
            "tools": [
                {
                    "type": "function",
                    "function": {
                        "name": "book",
                        "description": "Book a table.",
                        "parameters": {
                            "type": "object",
                            "properties": {
                                "size": {"type": "integer", "description": "Party size", "default": 2},
                                "when": {
                                    "oneOf": [
                                        {"type": "string", "description": "a date"},
                                        {"type": "integer", "default": 0},
                                    ]
                                },
                                "mode": {"type": "string", "enum": ["fast", "slow"], "default": "fast"},
                                "note": {"type": "string", "nullable": True},
                                "tags": {"type": "array", "items": {"type": "string"}},
                                "guests": {
                                    "type": "array",
                                    "items": {
                                        "type": "object",
                                        "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
                                        "required": ["name"],
                                    },
                                },
                                "where": {"type": ["string", "null"]},
                                "extra": {"type": "object"},
                            },
                            "required": ["size", "when"],
                        },
                    },
                },
                {"type": "function", "function": {"name": "ping", "description": "Ping."}},
            ],
            "add_generation_prompt": True,
        },
        "gpt_oss_reasoning_kept_until_an_answer": {
            "messages": [
                USER,
                {
                    "role": "assistant",
                    "reasoning_content": "Two cities: first Paris.",
                    "tool_calls": CALLS["tool_calls"],
                },
                RESULTS[0],
                {
                    "role": "assistant",
                    "content": "Now São Paulo.",
                    "tool_calls": [call("call_3", "get_weather", {"city": "São Paulo"})],
                },
                RESULTS[1],
            ],
            "tools": [WEATHER],
            "add_generation_prompt": True,
        },
        "gpt_oss_last_turn_for_training": {
            "messages": [USER, {"role": "assistant", "reasoning_content": "Easy.", "content": "Sunny."}],
            "tools": None,
            "add_generation_prompt": False,
            "variables": {"reasoning_effort": "low"},
        },
    },
    # qwen2_5: the default system prompt (and a system message that is it), arguments given as a JSON
    # string written as a JSON string literal
    "qwen2_5": {
        "qwen2_5_default_system_prompt": {
            "messages": [
                {"role": "system", "content": "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."},
                USER,
            ],
            "tools": None,
            "add_generation_prompt": True,
        },
        "qwen2_5_string_arguments": {
            "messages": [
                USER,
                {"role": "assistant", "content": "", "tool_calls": [call("c1", "get_weather", '{"city": "Paris"}')]},
                {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
            ],
            "tools": [WEATHER],
            "add_generation_prompt": True,
        },
    },
    # qwq: reasoning cut from the turns before the last, a content cut to nothing before calls, the
    # generation prompt's think block left open
    "qwq": {
        "qwq_reasoning_cut_before_the_last": {
            "messages": [
                USER,
                {
                    "role": "assistant",
                    "content": "<think>\nTwo cities.\n</think>\n\n",
                    "tool_calls": [call("c1", "get_weather", {"city": "Paris"})],
                },
                {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
                {"role": "assistant", "content": "<think>\nDone.\n</think>\n\nParis is sunny."},
            ],
            "tools": [WEATHER],
            "add_generation_prompt": False,
        },
        "qwq_thinking_enabled": {
            "messages": [SYSTEM, USER],
            "tools": None,
            "add_generation_prompt": True,
            "variables": {"enable_thinking": True},
        },
    },
    # glm4_6: reasoning shown only after the last user message (else an empty think block), thinking
    # turned off (/nothink on user turns, the generation prompt's empty think block), tool results
    # as a list (each opening <|observation|> again), arguments that are not a mapping
    "glm4_6": {
        "glm4_6_reasoning_after_last_user": {
            "messages": [
                SYSTEM,
                {"role": "user", "content": "Hi!"},
                {"role": "assistant", "content": "Hello!", "reasoning_content": "Dropped: before the last user."},
                USER,
                {
                    "role": "assistant",
                    "content": "",
                    "reasoning_content": "  Two cities.  ",
                    "tool_calls": CALLS["tool_calls"],
                },
                *RESULTS,
                {"role": "assistant", "content": "<think>Inline.</think>\nParis is sunny, São Paulo rainy."},
            ],
            "tools": [WEATHER],
            "add_generation_prompt": False,
        },
        "glm4_6_thinking_disabled": {
            "messages": [USER, {"role": "assistant", "content": "Sure."}, {"role": "user", "content": "Go/nothink"}],
            "tools": None,
            "add_generation_prompt": True,
            "variables": {"enable_thinking": False},
        },
        "glm4_6_tool_results_as_a_list": {
            "messages": [
                USER,
                {"role": "assistant", "tool_calls": [call("c1", "get_weather", {"city": "Paris", "days": 2})]},
                {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
                {"role": "tool", "content": [{"output": "rain"}, "wind"]},
            ],
            "tools": [WEATHER],
            "add_generation_prompt": True,
        },
        "glm4_6_string_arguments": {
            "messages": [USER, {"role": "assistant", "tool_calls": [call("c1", "get_weather", '{"city": "Paris"}')]}],
            "tools": [WEATHER],
            "add_generation_prompt": False,
        },
    },
    # glm4_7: the same conversations without line breaks, reasoning kept in every turn with
    # clear_thinking=False, the generation prompt's think block opened or (thinking off) closed
    "glm4_7": {
        "glm4_7_reasoning_after_last_user": {
            "messages": [
                SYSTEM,
                {"role": "user", "content": "Hi!"},
                {"role": "assistant", "content": "Hello!", "reasoning_content": "Dropped: before the last user."},
                USER,
                {
                    "role": "assistant",
                    "content": "",
                    "reasoning_content": "  Two cities.  ",
                    "tool_calls": CALLS["tool_calls"],
                },
                *RESULTS,
                {"role": "assistant", "content": "<think>Inline.</think>Paris is sunny, São Paulo rainy."},
            ],
            "tools": [WEATHER],
            "add_generation_prompt": True,
        },
        "glm4_7_clear_thinking_off": {
            "messages": [
                {"role": "user", "content": "Hi!"},
                {"role": "assistant", "content": "Hello!", "reasoning_content": "Kept: clear_thinking is off."},
                USER,
            ],
            "tools": None,
            "add_generation_prompt": True,
            "variables": {"clear_thinking": False},
        },
        "glm4_7_thinking_disabled": {
            "messages": [USER],
            "tools": None,
            "add_generation_prompt": True,
            "variables": {"enable_thinking": False},
        },
        "glm4_7_string_arguments": {
            "messages": [USER, {"role": "assistant", "tool_calls": [call("c1", "get_weather", '{"city": "Paris"}')]}],
            "tools": [WEATHER],
            "add_generation_prompt": False,
        },
    },
    # qwen3_5: think blocks after the last query only (F4), scalars via str() and lists as JSON (F5),
    # numbered pictures (F1), a tool result written by hand is no query (F3), thinking off (F7)
    "qwen3_5": {
        "qwen3_5_reasoning_after_last_query": {
            "messages": [
                SYSTEM,
                {"role": "user", "content": "Hi!"},
                {"role": "assistant", "content": "Hello!", "reasoning_content": "Dropped: before the last query."},
                USER,
                {
                    "role": "assistant",
                    "content": "Checking.",
                    "reasoning_content": "Two cities.",
                    "tool_calls": [
                        call("c1", "get_weather", {"city": "Paris", "days": 3}),
                        call("c2", "f", {"flag": True, "n": None, "x": 1.5, "lst": [1, "a"], "obj": {"k": False}}),
                    ],
                },
                *RESULTS,
                {"role": "user", "content": "<tool_response>\nby hand\n</tool_response>"},
                {"role": "assistant", "content": "<think>\nInline.\n</think>\n\nParis is sunny."},
            ],
            "tools": [WEATHER],
            "add_generation_prompt": False,
        },
        "qwen3_5_thinking_disabled_with_pictures": {
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "Compare "},
                        {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}},
                        {"type": "image"},
                        {"type": "video"},
                    ],
                }
            ],
            "tools": None,
            "add_generation_prompt": True,
            "variables": {"enable_thinking": False, "add_vision_id": True},
        },
    },
    # nemotron3: the history's reasoning cut (N5) or kept (truncate_history_thinking off), a turn's
    # empty think block glued to the calls for content that is no text (N4), thinking off (N8)
    "nemotron3": {
        "nemotron3_history_reasoning_cut": {
            "messages": [
                SYSTEM,
                USER,
                {
                    "role": "assistant",
                    "content": "Checking.",
                    "reasoning_content": "Two cities.",
                    "tool_calls": [call("c1", "get_weather", {"city": "Paris", "days": 3, "metric": True})],
                },
                RESULTS[0],
                {"role": "assistant", "content": "<think>\nInline.\n</think>\nParis is sunny."},
                {"role": "user", "content": "And Rome?"},
                {"role": "assistant", "content": [{"type": "text", "text": "x"}], "tool_calls": CALLS["tool_calls"]},
            ],
            "tools": [WEATHER],
            "add_generation_prompt": True,
        },
        "nemotron3_history_reasoning_kept": {
            "messages": [
                USER,
                {"role": "assistant", "content": "Hello!", "reasoning_content": "Kept: truncation is off."},
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "Again?"},
            ],
            "tools": None,
            "add_generation_prompt": True,
            "variables": {"truncate_history_thinking": False, "enable_thinking": False},
        },
    },
    # seed_oss: tools documented in Python with returns (S2), a budget of 0 and its generation prompt,
    # another budget's interval (S3), the JSON tool list, an assistant turn left open (S4)
    "seed_oss": {
        "seed_oss_zero_budget": {
            "messages": [
                USER,
                {"role": "assistant", "reasoning_content": "Two cities.", "tool_calls": CALLS["tool_calls"]},
                *RESULTS,
                {"role": "assistant", "content": "  "},
                {"role": "user", "content": "Thanks."},
            ],
            "tools": [
                {
                    "type": "function",
                    "function": {
                        **WEATHER["function"],
                        "returns": {"type": "object", "properties": {"temp": {"type": "number", "description": "C"}}},
                    },
                }
            ],
            "add_generation_prompt": True,
            "variables": {"thinking_budget": 0},
        },
        "seed_oss_budget_and_json_tools": {
            "messages": [SYSTEM, USER],
            "tools": [WEATHER, SEARCH],
            "add_generation_prompt": True,
            "variables": {"thinking_budget": 3000, "use_json_tooldef": True},
        },
    },
    # qwen3: every assistant turn needs a content; reasoning shows only after the last user query
    "qwen3": {
        "qwen3_reasoning_after_last_query": {
            "messages": [
                SYSTEM,
                {"role": "user", "content": "Hi!"},
                {"role": "assistant", "content": "Hello!", "reasoning_content": "Dropped: before the last query."},
                USER,
                {
                    "role": "assistant",
                    "content": "",
                    "reasoning_content": "Two cities.",
                    "tool_calls": CALLS["tool_calls"],
                },
                *RESULTS,
                {"role": "assistant", "content": "<think>\nInline.\n</think>\n\nParis is sunny, São Paulo rainy."},
            ],
            "tools": [WEATHER],
            "add_generation_prompt": False,
        },
        "qwen3_thinking_disabled": {
            "messages": [USER],
            "tools": None,
            "add_generation_prompt": True,
            "variables": {"enable_thinking": False},
        },
        "qwen3_tool_result_written_by_hand": {
            "messages": [
                USER,
                {
                    "role": "assistant",
                    "content": "Checking.",
                    "tool_calls": [call("c1", "get_weather", {"city": "Paris"})],
                },
                {"role": "user", "content": "<tool_response>\nSunny\n</tool_response>"},
                {"role": "assistant", "content": "Sunny in Paris.", "reasoning_content": "After a result: shown."},
            ],
            "tools": [WEATHER],
            "add_generation_prompt": True,
        },
    },
    # deepseek_v3_1: thinking opens the generation prompt's reasoning; content after tool results is
    # written whole, elsewhere the text before its first </think> is dropped; a prefix message
    "deepseek_v3_1": {
        "deepseek_v3_1_thinking": {
            "messages": [SYSTEM, USER],
            "tools": [WEATHER],
            "add_generation_prompt": True,
            "variables": {"thinking": True, "bos_token": "<｜begin▁of▁sentence｜>"},
        },
        "deepseek_v3_1_think_closers_in_content": {
            "messages": [
                SYSTEM,
                USER,
                {
                    "role": "assistant",
                    "content": "Let me check.",
                    "tool_calls": [call("c1", "get_weather", {"city": "Paris"})],
                },
                {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
                {"role": "assistant", "content": "Kept</think>whole."},
                {"role": "user", "content": "And now?"},
                {"role": "assistant", "content": "Dropped</think>Paris is sunny."},
                {"role": "system", "content": "Be brief."},
            ],
            "tools": [WEATHER],
            "add_generation_prompt": False,
        },
        "deepseek_v3_1_string_arguments_and_prefix": {
            "messages": [
                USER,
                {"role": "assistant", "content": "", "tool_calls": [call("c1", "get_weather", '{"city":"Paris"}')]},
                {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
                USER,
                {"role": "assistant", "content": "Sunny", "prefix": True},
            ],
            "tools": [WEATHER],
            "add_generation_prompt": False,
            "variables": {"thinking": True},
        },
    },
    # functiongemma: system and developer messages as user turns listing the tools (F3), every value
    # str()-ed between <escape> (F4), content beside calls dropped (F4), None content (F6), a tool
    # result without a name (F7), a role the template drops (F8)
    "functiongemma": {
        "functiongemma_system_and_developer_list_the_tools": {
            "messages": [SYSTEM, {"role": "developer", "content": "Answer briefly."}, USER],
            "tools": [WEATHER, {"type": "function", "function": {"name": "now", "parameters": {}}}],
            "add_generation_prompt": True,
        },
        "functiongemma_values_through_str": {
            "messages": [
                USER,
                {
                    "role": "assistant",
                    "content": "Checking.",
                    "tool_calls": [
                        call("c1", "search", {"query": "rain", "limit": 3, "exact": True, "filters": {"k": [1, None]}}),
                        call("c2", "get_weather", {"city": "São Paulo", "ratio": 1.5}),
                    ],
                },
                {"role": "tool", "tool_call_id": "c1", "content": "[]"},
                {"role": "tool", "tool_call_id": "c2", "name": "get_weather", "content": "rain"},
                {"role": "assistant", "content": None},
                {"role": "ipython", "content": "dropped"},
            ],
            "tools": [WEATHER, SEARCH],
            "add_generation_prompt": False,
        },
    },
}


#: Variables every case of a format is rendered with: a template that writes today's date by
#: default (llama3_2) is given one, so that its renders are the same on any day.
FORMAT_VARIABLES: dict[str, dict[str, Any]] = {"llama3_2": {"date_string": "26 Jul 2024"}}


def load(spec: str) -> codec.Format:
    """A registered format by name, or ``module:Class`` instantiated (for a format not registered yet)."""
    if ":" in spec:
        module, _, cls = spec.partition(":")
        fmt: codec.Format = getattr(importlib.import_module(module), cls)()
        return fmt
    return codec.get_format(spec)


def template_path(fmt: codec.Format) -> Path:
    """The reference template of ``fmt``: in ../shared/seeds, or ../shared/templates for a prompt variant."""
    path = SEEDS / fmt.reference_template
    if not path.is_file():
        path = SEEDS.parent / "templates" / fmt.reference_template  # a prompt variant's real-world template
    return path.resolve()  # "seeds/../templates/x.jinja" is recorded as "templates/x.jinja"


def sha256(path: Path) -> str:
    """The sha256 of a file's bytes, in hex."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


class _PinnedClock(datetime):
    """``datetime`` whose ``now()`` is :data:`PINNED_DAY`."""

    @classmethod
    def now(cls, tz: tzinfo | None = None) -> _PinnedClock:
        return cls.fromtimestamp(PINNED_DAY.timestamp(), tz)


@contextmanager
def pinned_clock() -> Iterator[None]:
    """Templates rendered inside see :data:`PINNED_DAY` as the time."""
    saved = jinja.datetime  # type: ignore[attr-defined]
    jinja.datetime = _PinnedClock  # type: ignore[attr-defined]
    try:
        yield
    finally:
        jinja.datetime = saved  # type: ignore[attr-defined]


def rendered_cases(fmt: codec.Format, template: str) -> dict[str, tuple[dict[str, Any], str | None]]:
    """Each case of ``fmt`` as written to its ``.json``, and what ``template`` renders for it (None: it raises)."""
    out: dict[str, tuple[dict[str, Any], str | None]] = {}
    for case_name, case in {**CASES, **FORMAT_CASES.get(fmt.name, {})}.items():
        case = {"variables": {}, **case}
        case["variables"] = {**FORMAT_VARIABLES.get(fmt.name, {}), **case["variables"]}
        case["variables"] = {**case["variables"], **CLOCK_VARIABLES.get(fmt.name, {})}
        # (the template is given the tokenizer's variables where the case gives none, as the format's renderer)
        kwargs = {"add_generation_prompt": case["add_generation_prompt"], **fmt.template_variables(case["variables"])}
        try:
            messages = template_messages(jinja.prepare_messages(case["messages"]), fmt.template_arguments)
            with pinned_clock():
                text = jinja.render_template(template, messages, jinja.prepare_tools(case["tools"]), **kwargs)
        except RenderError as exc:
            out[case_name] = ({**case, "error": str(exc)}, None)
        else:
            out[case_name] = (case, text)
    return out


def make(fmt: codec.Format) -> None:
    """Write every case of :data:`CASES` as rendered by ``fmt``'s reference template into ``<fmt.name>/``."""
    path = template_path(fmt)
    folder = HERE / fmt.name
    folder.mkdir(exist_ok=True)
    cases = rendered_cases(fmt, path.read_text(encoding="utf-8"))
    for case_name, (case, text) in cases.items():
        out = folder / f"{case_name}.txt"
        if text is None:
            out.unlink(missing_ok=True)
        else:
            out.write_text(text, encoding="utf-8")
        (folder / f"{case_name}.json").write_text(
            json.dumps(case, ensure_ascii=False, indent=2) + "\n", encoding="utf-8"
        )
    record(fmt, path)
    print(f"{fmt.name}: {len(cases)} cases in {folder}")


def differences(fmt: codec.Format, path: Path) -> list[str]:
    """The cases whose committed render (or error) is not what the template at ``path`` gives."""
    folder = HERE / fmt.name
    differ = []
    for case_name, (case, text) in rendered_cases(fmt, path.read_text(encoding="utf-8")).items():
        out = folder / f"{case_name}.txt"
        committed = out.read_text(encoding="utf-8") if out.is_file() else None
        spec = folder / f"{case_name}.json"
        written = json.loads(spec.read_text(encoding="utf-8")) if spec.is_file() else None
        if committed != text or written is None or _recursion(written) != _recursion(case):
            differ.append(case_name)
    return differ


def _recursion(case: dict[str, Any]) -> dict[str, Any]:
    """``case`` with a recursion error's reason cut to its start: its tail (where Python ran out of
    stack) varies with the interpreter and the depth it ran out at."""
    reason = "maximum recursion depth exceeded"
    if str(case.get("error", "")).startswith(reason):
        return {**case, "error": reason}
    return case


def record(fmt: codec.Format, path: Path) -> None:
    """Write ``fmt``'s entry of :data:`RECORD`: its template's path under ../shared, sha256 and the
    transformers version (None when it is not installed); the other formats' entries are kept."""
    entries = json.loads(RECORD.read_text(encoding="utf-8")) if RECORD.is_file() else {}
    try:
        transformers: str | None = importlib.metadata.version("transformers")
    except importlib.metadata.PackageNotFoundError:
        transformers = None
    entries[fmt.name] = {
        "template": path.relative_to(SEEDS.parent.resolve()).as_posix(),
        "sha256": sha256(path),
        "renderer": "codec.jinja",
        "transformers": transformers,
    }
    RECORD.write_text(json.dumps(dict(sorted(entries.items())), indent=2) + "\n", encoding="utf-8")


def main(argv: list[str]) -> None:
    only_record = "--record" in argv
    specs = [arg for arg in argv if arg != "--record"]
    for spec in specs or codec.formats():
        fmt = load(spec)
        if not only_record:
            make(fmt)
            continue
        path = template_path(fmt)
        differ = differences(fmt, path)
        if differ:
            sys.exit(f"{fmt.name}: {path} does not render {', '.join(differ)} as committed: regenerate instead")
        record(fmt, path)
        print(f"{fmt.name}: recorded {path.name} ({sha256(path)[:12]}...)")


if __name__ == "__main__":
    main(sys.argv[1:])
