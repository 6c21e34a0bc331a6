"""The ``qwen3_coder_official`` test profile: ``qwen3_coder``'s replies, with non-string values written via ``str()``
(the official template's ``string`` filter), and prompts of the official Qwen3-Coder template."""

from __future__ import annotations

import itertools
from typing import Any

from harness import linked_as_json
from hypothesis import strategies as st

from codec import jinja
from codec.formats.qwen3_coder import DEFAULT_SYSTEM
from codec.formats.qwen3_coder_official import Qwen3CoderOfficial
from codec.literals import python_literal
from codec.schema import declared_types, type_text
from formats import Decode, Message, Profile, RoundTrip, Tools
from formats import qwen3_coder as base

STOP = "<|im_end|>"

# --------------------------------------------------------------------------- round trip


def written(value: Any) -> str:
    """A value as the official template writes it: strings raw, the rest through Python ``str()``."""
    return value if isinstance(value, str) else str(value)


def _carried(message: Message, tools: Tools) -> bool:
    """Whether every value of the message's calls can come back (see ``qwen3_coder.representable``,
    for the text ``str()`` writes)."""
    for call in message.get("tool_calls") or []:
        for value in call["function"]["arguments"].values():
            text = written(value)
            if "<parameter=" in text or "</function>" in text or STOP in text:
                return False
    return True


def messages(with_tools: bool) -> st.SearchStrategy[tuple[Message, Tools]]:
    return base.messages(with_tools=with_tools).filter(lambda pair: _carried(*pair))


def expected(message: Message, tools: Tools) -> dict[str, Any]:
    """The content, no reasoning, values typed by the tools (the written text without).

    The template writes a blank line between content and calls; the reply grammar takes one line break
    as the separator (``qwen3_coder``'s), so the content comes back ending in the other.
    """
    calls = message.get("tool_calls") or []
    content = message["content"] or ""
    out = []
    for call in calls:
        name, arguments = call["function"]["name"], call["function"]["arguments"]
        typed = {k: v if base.declared(base._schema_of(tools, name, k)) else written(v) for k, v in arguments.items()}
        out.append({"name": name, "arguments": typed})
    return {"content": content + "\n" if content and calls else content, "reasoning": "", "tool_calls": out}


# --------------------------------------------------------------------------- decode

#: Text the template writes around the parts of a prompt: a text holding one may read as other parts.
MARKUP = ("<|im_", "<tool_call>", "<tool_response>", "</parameter>\n<parameter=", "You have access to the following")


def as_str_of(raw: str) -> Any:
    """The non-string value whose ``str()`` is ``raw``, else ``raw``."""
    try:
        value = python_literal(raw)
    except (ValueError, RecursionError):
        return raw
    return value if not isinstance(value, str) and str(value) == raw else raw


def read_back(value: Any, schema: Any) -> Any:
    raw = written(value)
    if declared_types(schema):
        typed, problem = type_text(raw, schema)
        if problem is None and written(typed) == raw:
            return typed
    return as_str_of(raw)


def extra_back(value: Any) -> Any:
    """A property's ``<key>value</key>``: a mapping as JSON, the rest via ``str()``, as read back."""
    if isinstance(value, dict):
        return value
    raw = written(value)
    if raw.startswith("{"):
        try:
            import json

            got = json.loads(raw)
        except ValueError:
            got = None
        if isinstance(got, dict) and jinja.tojson(got) == raw:
            return got
    got = as_str_of(raw)
    return raw if isinstance(got, dict) else got


def required_back(value: Any) -> list[Any] | None:
    if isinstance(value, (list, tuple)) and value:
        return [item if isinstance(item, str) else as_str_of(str(item)) for item in value]
    return None


def property_normal_form(schema: Any) -> dict[str, Any]:
    if not isinstance(schema, dict):
        return {}
    out: dict[str, Any] = {}
    if "type" in schema:
        out["type"] = schema["type"]
    if "description" in schema:
        out["description"] = str(schema["description"]).strip()
    for key, value in schema.items():
        if key and key not in ("type", "description", "enum", "required") and value is not None:
            tag = key.replace("-", "_").replace(" ", "_").replace("$", "") if any(c in key for c in "- $") else key
            out[tag] = extra_back(value)
    required = required_back(schema.get("required"))
    if required is not None:
        out["required"] = required
    return out


def tool_normal_form(tool: dict[str, Any]) -> dict[str, Any]:
    function = tool.get("function", tool)
    out: dict[str, Any] = {"name": function["name"]}
    description = str(function.get("description", "")).strip()
    if description:
        out["description"] = description
    parameters = function.get("parameters") or {}
    properties = {k: property_normal_form(v) for k, v in (parameters.get("properties") or {}).items()}
    out["parameters"] = {"type": "object", "properties": properties}
    required = required_back(parameters.get("required"))
    if required is not None:
        out["parameters"]["required"] = required
    if "return" in function:
        out["return"] = function["return"] if isinstance(function["return"], dict) else extra_back(function["return"])
    return {"type": "function", "function": out}


def _has_calls(message: dict[str, Any]) -> bool:
    return message["role"] == "assistant" and bool(message.get("tool_calls"))


def official_normal_form(case: dict[str, Any]) -> dict[str, Any]:
    """What ``decode(render(case))`` gives back."""
    tools = [tool_normal_form(tool) for tool in case["tools"]] if case["tools"] else None
    schemas = {tool["function"]["name"]: tool["function"]["parameters"] for tool in tools or ()}
    ids = itertools.count()
    source = list(case["messages"])
    if source[0]["role"] == "system" and source[0].get("content") is None:
        source = source[1:]  # a first system message without content is not written
    messages: list[dict[str, Any]] = []
    for message in source:
        content = message.get("content")
        if _has_calls(message):
            text = content.strip() if isinstance(content, str) else ""
            calls = []
            for call in message["tool_calls"]:
                name, arguments = call["function"]["name"], call["function"]["arguments"]
                properties = (schemas.get(name) or {}).get("properties", {})
                arguments = {k: read_back(v, properties.get(k)) for k, v in arguments.items()}
                calls.append(
                    {"id": f"call_{next(ids)}", "type": "function", "function": {"name": name, "arguments": arguments}}
                )
            messages.append({"role": "assistant", "content": text or None, "tool_calls": calls})
        elif message["role"] == "tool":
            messages.append({"role": "tool", "content": "" if content is None else str(content)})
        else:
            messages.append({"role": message["role"], "content": content})
    if tools and messages and messages[0]["role"] == "system" and messages[0]["content"] == DEFAULT_SYSTEM:
        messages = messages[1:] or messages  # the default text with tools reads as no system message
    return {
        "messages": messages,
        "tools": tools,
        "add_generation_prompt": case["add_generation_prompt"],
        "variables": {},
    }


def texts(case: dict[str, Any]) -> list[str]:
    out = [str(m.get("content")) for m in case["messages"]]
    for message in case["messages"]:
        for call in message.get("tool_calls") or []:
            out += [written(v) for v in call["function"]["arguments"].values()]
    for tool in case["tools"] or []:
        out.append(str(tool))
    return out


def decode_normal_form(case: dict[str, Any], text: str) -> dict[str, Any] | None:
    if not text or any(mark in t for t in texts(case) for mark in MARKUP):
        return None
    return linked_as_json(official_normal_form(case))


PROFILE = Profile(
    markers=base.PROFILE.markers,
    snippets=base.PROFILE.snippets,
    call_closer=base.PROFILE.call_closer,
    plain_text=base.PROFILE.plain_text,
    broken_block=base.PROFILE.broken_block,
    adversarial=base.PROFILE.adversarial,
    grammar_forbid=base.PROFILE.grammar_forbid,
    decode=Decode(normal_form=decode_normal_form),
    round_trip=RoundTrip(messages=messages, expected=expected, keeps_key_order=True, fmt=Qwen3CoderOfficial()),
)
