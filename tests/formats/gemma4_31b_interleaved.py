"""The ``gemma4_31b_interleaved`` test profile: gemma4's replies (its profile, reused), the prompts of
Gemma 4 31B's interleaved template.

The decode normal form is this template's own (I2-I4 of its module): every message is a turn of its
own, tool results included, closed by ``<turn|>``. It is modelled for conversations of text messages
without ``tool_responses``, parameters named after schema keys (G1) or a system message of parts (G2);
for the others only rendering back is checked.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import codec
from codec import jinja
from codec.format import link_tool_results
from codec.formats.gemma4 import content_text
from formats import Decode
from formats.gemma4 import PROFILE as GEMMA4
from formats.gemma4_31b import _names_a_schema_key

_ROLES = ("user", "assistant", "system", "developer", "tool")


def _texts_only(message: dict[str, Any]) -> bool:
    """Whether ``message`` is one this profile models: a known role, text content, no legacy results."""
    content = message.get("content")
    parts = isinstance(content, list) and all(isinstance(p, dict) and p.get("type") == "text" for p in content)
    thought = message.get("reasoning_content")
    return (
        message.get("role") in _ROLES
        and (content is None or isinstance(content, str) or parts)
        and "tool_responses" not in message
        and (thought is None or isinstance(thought, str))
    )


def _assistant(message: dict[str, Any], after_last_user: bool, ids: list[int]) -> dict[str, Any] | None:
    calls = message.get("tool_calls") or []
    text = content_text(message.get("content"), "model")[0]
    out: dict[str, Any] = {"role": "assistant", "content": text if text or not calls else None}
    thought = message.get("reasoning_content")
    if thought and after_last_user and calls:  # I4
        out["reasoning_content"] = thought
    if calls:
        out["tool_calls"] = []
        for call in calls:
            arguments = call["function"]["arguments"]
            if not isinstance(arguments, dict):
                return None  # pasted raw (Q10): read back as the prompt allows
            function = {"name": call["function"]["name"], "arguments": arguments}
            out["tool_calls"].append({"id": f"call_{len(ids)}", "type": "function", "function": function})
            ids.append(len(ids))
    return out


def decode_normal_form(case: dict[str, Any], text: str) -> dict[str, Any] | None:
    """What decoding gives for a case of text messages: each message as its turn shows it (I2, I3)."""
    from test_gemma4_decode import _holds_markers, _tool

    messages = jinja.prepare_messages(case["messages"])
    tools = case["tools"] or None
    if not messages or not all(_texts_only(message) for message in messages) or _names_a_schema_key(tools or []):
        return None
    variables = case["variables"]
    thinking = bool(variables.get("enable_thinking"))
    first_is_system = messages[0]["role"] in ("system", "developer")
    if first_is_system and not isinstance(messages[0].get("content"), str):
        return None  # printed as Python's text (G2)
    rest = messages[1:] if first_is_system else messages
    roles = [message["role"] for message in rest]
    last_user = max((i for i, role in enumerate(roles) if role == "user"), default=-1)
    out: list[dict[str, Any]] = []
    if thinking or tools or first_is_system:
        system = messages[0]["content"].strip() if first_is_system else ""
        if system or not (thinking or tools) or (not rest or roles[0] in ("system", "developer")):
            out.append({"role": "system", "content": system})
    elif not rest:
        return None
    ids: list[int] = []
    for i, message in enumerate(rest):
        if roles[i] == "assistant":
            back = _assistant(message, i > last_user, ids)
            if back is None:
                return None
            out.append(back)
        else:
            out.append({"role": roles[i], "content": content_text(message.get("content"), roles[i])[0]})
    expected: dict[str, Any] = {
        "messages": out,
        "add_generation_prompt": bool(case["add_generation_prompt"]),
        "variables": {
            **({"bos_token": variables["bos_token"]} if variables.get("bos_token") else {}),
            **({"enable_thinking": True} if thinking else {}),
        },
    }
    if tools:
        expected["tools"] = [_tool(tool) for tool in tools]
    if _holds_markers(expected):
        return None
    linked = codec.Conversation.model_validate(expected)
    link_tool_results(linked.messages)  # as decoding does: a tool turn writes neither name nor id
    return {"tools": None, **linked.model_dump(mode="python")}


PROFILE = dataclasses.replace(GEMMA4, decode=Decode(normal_form=decode_normal_form, dump_mode="python"))
