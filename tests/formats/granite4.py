"""The ``granite4`` test profile: hermes' JSON calls ended by ``<|end_of_text|>``, Granite 4.0's prompts.

The reply syntax is hermes' with another stop token and no reasoning, so the markers, adversarial
inputs and round trip are hermes' with that token; the decode normal form is Granite's own.
"""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any

from harness import linked_as_json

from codec import jinja
from formats import Decode
from formats import hermes as base
from formats.hermes import PROFILE as HERMES
from formats.hermes import SHOWN_ROLES, UNSHOWN, message_texts

STOP = "<|end_of_text|>"
#: The system prompt the template writes where the system text would be empty.
DEFAULT_SYSTEM = "You are a helpful assistant. Please ensure responses are professional, accurate, and safe."
#: Text that makes a prompt read several ways that render the same: then only rendering back is checked.
AMBIGUOUS = (
    "<|end_of_text|>\n<|start_of_role|>",
    "<tool_response>",
    "</tool_response>",
    "<tool_call>\n{",
    "<tools>",
    "<documents>",
    DEFAULT_SYSTEM,
)


def _messages(with_tools: bool) -> Any:
    """hermes' generated messages, less those whose content holds Granite's stop token."""
    return HERMES.round_trip.messages(with_tools).filter(lambda pair: STOP not in (pair[0].get("content") or ""))


def content_text(content: Any) -> str:
    """A message's content as the template reads it: its string, or its text parts one line apart."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(part["text"] for part in content if isinstance(part, dict) and part.get("type") == "text")
    return ""


def granite_normal_form(case: dict[str, Any]) -> dict[str, Any] | None:
    """What ``decode(render(case))`` gives back; None where a text holds markup the prompt would read otherwise."""
    if any(marker in text for text in message_texts(case) for marker in AMBIGUOUS):
        return None
    given = jinja.prepare_messages(case["messages"])
    variables = case["variables"]
    tools = variables.get("available_tools") or case["tools"] or None  # available_tools stands for tools
    ids = itertools.count()
    messages: list[dict[str, Any]] = []
    first = given[0]
    if first.get("role") == "system":
        system = content_text(first.get("content"))
        if tools or system not in ("", DEFAULT_SYSTEM):
            messages.append({"role": "system", "content": system})
        given = given[1:]
    head = len(messages)
    unshown = False
    for message in given:
        role = message.get("role")
        if role not in SHOWN_ROLES:
            unshown = True
            continue
        if role == "tool" and unshown and messages and messages[-1]["role"] == "tool":
            messages.append(UNSHOWN)  # results either side of them are two turns: one stands for them
        unshown = False
        content = content_text(message.get("content"))
        if role == "assistant":
            messages.append(base.assistant_normal_form({**message, "content": content}, ids))
        else:
            if role == "system" and len(messages) == head == 0:
                messages.append(UNSHOWN)  # else it would read as the first turn's system message
            messages.append({"role": role, "content": content})
    return linked_as_json(
        {
            "messages": messages or [UNSHOWN],
            "tools": tools,
            "add_generation_prompt": case["add_generation_prompt"],
            "variables": {"documents": variables["documents"]} if variables.get("documents") else {},
        }
    )


def decode_normal_form(case: dict[str, Any], text: str) -> dict[str, Any] | None:
    return granite_normal_form(case)


PROFILE = dataclasses.replace(
    HERMES,
    markers=tuple(
        {base.STOP: STOP, "<|im_start|>": "<|start_of_role|>"}.get(marker, marker)
        for marker in HERMES.markers
        if "think" not in marker
    ),
    adversarial=lambda: base.adversarial(STOP),
    round_trip=dataclasses.replace(HERMES.round_trip, messages=_messages),
    decode=Decode(normal_form=decode_normal_form),
)
