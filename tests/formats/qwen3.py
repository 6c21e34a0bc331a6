"""The ``qwen3`` test profile: hermes' replies (its profile's pieces), the Qwen3 prompt's decode normal form."""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any

from harness import linked_as_json
from hypothesis import strategies as st

from codec import jinja
from formats import Decode, Message, Profile, RoundTrip, Tools
from formats.hermes import PROFILE as HERMES
from formats.hermes import SEPARATORS, SHOWN_ROLES, UNSHOWN, call_block, content_ok, reads_back, text_values
from formats.hermes import expected as hermes_expected

#: Text that the Qwen3 template or its decode reads as markup (think blocks, hand-written tool results).
QWEN3_MARKUP = (*SEPARATORS, "<think>", "</think>", "<tool_response>", "</tool_response>")


def _last_query(messages: list[dict[str, Any]]) -> int:
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        content = message.get("content")
        if message.get("role") == "user" and not (
            content.startswith("<tool_response>") and content.endswith("</tool_response>")
        ):
            return index
    return len(messages) - 1


def _assistant(message: dict[str, Any], thinks: bool, ids: itertools.count[int]) -> dict[str, Any]:
    """An assistant message as decode gives it back (its text holds no think markup)."""
    content = message["content"]
    reasoning = message.get("reasoning_content") or ""
    calls = message.get("tool_calls") or []
    shown = content.lstrip("\n") if thinks else content
    kept = max((i + 1 for i, call in enumerate(calls) if not reads_back(call)), default=0)
    if kept:  # unreadable blocks, and what comes before them, are content
        shown = "\n".join(([shown] if content else []) + [call_block(call) for call in calls[:kept]])
    elif calls and content and not shown:
        shown = "\n"  # content that was only newlines: its "\n" before the calls is still written
    out: dict[str, Any] = {"role": "assistant", "content": shown}
    if thinks:
        out["reasoning_content"] = reasoning.strip("\n")
    if calls[kept:]:
        out["tool_calls"] = [
            {"id": f"call_{next(ids)}", "type": "function", "function": call["function"]} for call in calls[kept:]
        ]
    return out


def qwen3_normal_form(case: dict[str, Any]) -> dict[str, Any]:
    """What ``decode(render(case))`` gives back, for a case whose texts hold no :data:`QWEN3_MARKUP`."""
    original = jinja.prepare_messages(case["messages"])  # reasoning under its other keys is reasoning_content
    query, last = _last_query(original), len(original) - 1
    ids = itertools.count()
    messages: list[dict[str, Any]] = []
    unshown = False
    for index, message in enumerate(original):
        role = message["role"]
        if role not in SHOWN_ROLES:
            unshown = True
            continue
        if role == "tool" and unshown and messages and messages[-1]["role"] == "tool":
            messages.append(UNSHOWN)
        unshown = False
        if role == "assistant":
            thinks = index > query and (index == last or bool(message.get("reasoning_content")))
            messages.append(_assistant(message, thinks, ids))
            if index > query and not thinks and all(m["role"] not in SHOWN_ROLES for m in original[index + 1 :]):
                messages.append(UNSHOWN)  # the only reading of a last turn without its think block
        else:
            messages.append({"role": role, "content": message.get("content", "")})
    tools = case["tools"] or None
    if tools and messages and messages[0]["role"] == "system" and original[0]["role"] != "system":
        messages.insert(0, UNSHOWN)
    thinking_off = case["add_generation_prompt"] and case["variables"].get("enable_thinking") is False
    return {
        "messages": messages or [UNSHOWN],
        "tools": tools,
        "add_generation_prompt": case["add_generation_prompt"],
        "variables": {"enable_thinking": False} if thinking_off else {},
    }


def _texts(case: dict[str, Any]) -> list[Any]:
    messages = jinja.prepare_messages(case["messages"])
    return [m.get("content") for m in messages] + [m.get("reasoning_content") for m in messages]


def _empty_block(case: dict[str, Any]) -> bool:
    """Whether a turn before the last has reasoning of newlines only: its empty think block reads as content."""
    messages = jinja.prepare_messages(case["messages"])
    query = _last_query(messages)
    return any(
        index > query and (m.get("reasoning_content") or "x").strip("\n") == ""
        for index, m in enumerate(messages[:-1])
        if m["role"] == "assistant"
    )


def decode_normal_form(case: dict[str, Any], text: str) -> dict[str, Any] | None:
    if _empty_block(case):
        return None
    texts = _texts(case)
    if any(t is not None and not isinstance(t, str) for t in texts):
        return None  # a tool result printed from parts: not what this profile models
    if any(mark in t for t in texts if t for mark in QWEN3_MARKUP):
        return None
    return linked_as_json(qwen3_normal_form(case))


# --------------------------------------------------------------------------- round trip with reasoning

#: Reasoning the reply carries whole: no think or call markup, no newline at either end (the block trims them).
reasonings = text_values().filter(
    lambda text: text.strip("\n") == text and text != "" and content_ok(text) and "think>" not in text
)


def _with_reasoning(with_tools: bool) -> st.SearchStrategy[tuple[Message, Tools]]:
    def add(pair: tuple[Message, Tools], reasoning: str) -> tuple[Message, Tools]:
        message, tools = pair
        content = message["content"]
        if content and content[0].isspace():  # the content after the block is read without its leading blanks
            content = None
        return {**message, "content": content, "reasoning_content": reasoning}, tools

    return st.builds(add, HERMES.round_trip.messages(with_tools), reasonings)


def _expected_with_reasoning(message: Message, tools: Tools) -> dict[str, Any]:
    return {**hermes_expected(message, tools), "reasoning": message["reasoning_content"]}


PROFILE = dataclasses.replace(
    HERMES,
    decode=Decode(normal_form=decode_normal_form),
    round_trip_variants={
        "reasoning": RoundTrip(messages=_with_reasoning, expected=_expected_with_reasoning, keeps_key_order=True)
    },
)
assert isinstance(PROFILE, Profile)
