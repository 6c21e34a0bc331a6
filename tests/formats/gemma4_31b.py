"""The ``gemma4_31b`` test profile: gemma4's replies (its profile, reused), Gemma 4 31B's prompts.

The decode normal form is gemma4's (``test_gemma4_decode.expected_decode``) wherever the two
templates write the same prompt; where the 31B template departs (its quirks G1-G3) this profile
does not model the conversation, and only rendering back is checked. G4, the empty thought after
the generation prompt, changes nothing that decodes.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import codec
from codec import jinja
from codec.format import link_tool_results
from codec.formats.gemma4 import content_text
from codec.formats.gemma4_31b import EMPTY_THOUGHT
from formats import Decode
from formats.gemma4 import PROFILE as GEMMA4

FMT = codec.get_format("gemma4_31b")
#: The schema keys a parameter may not be named after (G1).
SCHEMA_KEYS = ("description", "type", "properties", "required", "nullable")


def _names_a_schema_key(schema: Any) -> bool:
    """Whether a mapping anywhere in ``schema`` has a ``properties`` mapping with a key the template drops (G1)."""
    if isinstance(schema, list):
        return any(_names_a_schema_key(item) for item in schema)
    if not isinstance(schema, dict):
        return False
    properties = schema.get("properties")
    if isinstance(properties, dict) and any(key in SCHEMA_KEYS for key in properties):
        return True
    return any(_names_a_schema_key(value) for value in schema.values())


def departs(case: dict[str, Any]) -> bool:
    """Whether the 31B template writes ``case`` otherwise than gemma4's reference template (G1-G3)."""
    messages = jinja.prepare_messages(case["messages"])
    if _names_a_schema_key(case["tools"] or []):
        return True
    if messages[0].get("role") in ("system", "developer") and not isinstance(messages[0].get("content", ""), str):
        return True  # G2
    for index, message in enumerate(messages):
        answered = index + 1 < len(messages) and messages[index + 1].get("role") == "tool"
        closed = answered and message.get("role") == "assistant" and message.get("tool_calls")
        if closed and message.get("content") and not content_text(message["content"], "model")[0].strip():
            return True  # G3
    return False


def decode_normal_form(case: dict[str, Any], text: str) -> dict[str, Any] | None:
    """gemma4's normal form, for a case this template writes as gemma4's does."""
    from test_gemma4_decode import _dropped_messages_before_a_system_turn, _holds_markers, expected_decode

    if departs(case) or any("tool_responses" in message for message in case["messages"]):
        return None
    expected = expected_decode(case, text.removesuffix(EMPTY_THOUGHT))
    if _holds_markers(expected) or _dropped_messages_before_a_system_turn(expected):
        return None
    linked = codec.Conversation.model_validate(expected)
    link_tool_results(linked.messages)
    again = FMT.render(
        linked.messages, linked.tools, add_generation_prompt=linked.add_generation_prompt, **linked.variables
    )
    return {"tools": None, **(linked.model_dump(mode="python") if again == text else expected)}


PROFILE = dataclasses.replace(GEMMA4, decode=Decode(normal_form=decode_normal_form, dump_mode="python"))
