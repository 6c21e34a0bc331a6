"""The ``glm4_7`` test profile: glm4_6's replies written without line breaks, GLM-4.7's prompts."""

from __future__ import annotations

import dataclasses
import itertools
import json
from typing import Any

from harness import linked_as_json

from formats import Decode, RoundTrip
from formats.glm4_6 import MARKUP, _reasoning, expected, messages, visible
from formats.glm4_6 import PROFILE as GLM4_6
from formats.hermes import message_texts
from formats.qwen3_coder import read_back


def glm4_7_normal_form(case: dict[str, Any]) -> dict[str, Any] | None:
    """What ``decode(render(case))`` gives back, or None where the case is one this does not model."""
    tools = json.loads(json.dumps(case["tools"])) if case["tools"] else None
    schemas = {t["function"]["name"]: t["function"].get("parameters") or {} for t in tools or () if "function" in t}
    variables = case["variables"]
    keep = "clear_thinking" in variables and not variables["clear_thinking"]
    raw = case["messages"]
    last_user = max((i for i, m in enumerate(raw) if m["role"] == "user"), default=-1)
    ids = itertools.count()
    out: list[dict[str, Any]] = []
    for i, message in enumerate(raw):
        role = message["role"]
        if role in ("system", "user"):
            out.append({"role": role, "content": visible(message.get("content"))})
        elif role == "assistant":
            reasoning = _reasoning(message)
            if reasoning is not None and not isinstance(reasoning, str):
                return None
            entry: dict[str, Any] = {"role": "assistant", "content": visible(message.get("content")).strip() or None}
            calls = []
            for call in message.get("tool_calls") or []:
                function = call.get("function") or call
                properties = (schemas.get(function["name"]) or {}).get("properties") or {}
                arguments = {k: read_back(v, properties.get(k)) for k, v in function["arguments"].items()}
                calls.append(
                    {
                        "id": f"call_{next(ids)}",
                        "type": "function",
                        "function": {"name": function["name"], "arguments": arguments},
                    }
                )
            if calls:
                entry["tool_calls"] = calls
            if (keep or i > last_user) and reasoning:
                entry["reasoning_content"] = reasoning.strip() or " "
            out.append(entry)
        elif role == "tool" and isinstance(message.get("content"), str):
            out.append({"role": "tool", "content": message["content"]})
        else:
            return None
    gen = case["add_generation_prompt"]
    decoded_variables: dict[str, Any] = {}
    if gen and "enable_thinking" in variables and not variables["enable_thinking"]:
        decoded_variables["enable_thinking"] = False
    last = out[-1] if out else None
    if not gen and last is not None and last["role"] == "assistant" and len(last) == 2 and last["content"] is None:
        out.pop()  # <|assistant|></think> at the end reads as the generation prompt with thinking off
        gen, decoded_variables = True, {"enable_thinking": False}
        if not out:  # a prompt of no message: one stands for them
            out.append({"role": "developer", "content": ""})
    new_last_user = max((i for i, m in enumerate(out) if m["role"] == "user"), default=-1)
    if any("reasoning_content" in m for m in out[:new_last_user]):
        decoded_variables["clear_thinking"] = False
    return {"messages": out, "tools": tools, "add_generation_prompt": gen, "variables": decoded_variables}


def decode_normal_form(case: dict[str, Any], text: str) -> dict[str, Any] | None:
    if any(marker in t for t in message_texts(case) for marker in MARKUP):
        return None
    if any(isinstance(m.get("content"), list) and m["role"] == "tool" for m in case["messages"]):
        return None
    form = glm4_7_normal_form(case)
    return None if form is None else linked_as_json(form)


PROFILE = dataclasses.replace(
    GLM4_6,
    snippets=(
        "<tool_call>f<arg_key>a</arg_key>",
        "<arg_value>",
        "</arg_value>",
        "</tool_call>",
        "<tool_call>f<arg_key>a</arg_key><arg_value>1</arg_value></tool_call>",
        "<tool_call>fa</arg_key><arg_value>1</arg_value></tool_call>",
        "</think>",
        '{"k": [1, true]}',
        "['x', None]",
        "02134",
    ),
    broken_block="<tool_call>fk</arg_key><arg_value>1</arg_value></tool_call>",
    decode=Decode(normal_form=decode_normal_form),
    round_trip=RoundTrip(
        messages=lambda with_tools: messages(with_tools=with_tools), expected=expected, keeps_key_order=True
    ),
    round_trip_variants={},
)
