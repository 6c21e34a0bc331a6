"""The ``qwen3_5`` test profile: ``qwen3_coder``'s replies with scalars written via ``str()`` (mappings and lists
as JSON), and the prompts of Qwen3.5's template (a think block after the last query)."""

from __future__ import annotations

import itertools
import json
from typing import Any

from harness import linked_as_json
from hypothesis import strategies as st

from codec import jinja
from codec.formats.qwen3_5 import Qwen3_5
from codec.literals import python_literal
from codec.schema import declared_types, type_text
from formats import Decode, Message, Profile, RoundTrip, Tools
from formats import qwen3_coder as base

STOP = "<|im_end|>"

# --------------------------------------------------------------------------- round trip


def written(value: Any) -> str:
    """A value as the template writes it: strings raw, mappings and lists as JSON, the rest via ``str()``."""
    if isinstance(value, str):
        return value
    if isinstance(value, (dict, list, tuple)):
        return jinja.tojson(value)
    return str(value)


def _carried(message: Message, tools: Tools) -> bool:
    """Whether every value of the message's calls can come back (``qwen3_coder.representable``, for the text
    this template writes)."""
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
    as the separator, so the content comes back ending in the other.
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
MARKUP = (
    "<|im_",
    "<tool_call>",
    "<tool_response>",
    "</tool_response>",
    "</parameter>",
    "<think>",
    "</think>",
    "<|vision",
)
#: What the template writes for the tools: a system text that starts so reads as part of the block.
TOOLS_HEAD = "# Tools"


def read_back(value: Any, schema: Any) -> Any:
    """The value a call's written text reads as: by the schema where that is written the same, else the
    mapping or list whose JSON it is, else the scalar whose ``str()`` it is, else the text."""
    raw = written(value)
    if declared_types(schema):
        typed, problem = type_text(raw, schema)
        if problem is None and written(typed) == raw:
            return typed
    if raw[:1] in ("{", "["):
        try:
            got = json.loads(raw)
        except ValueError:
            return raw
        return got if isinstance(got, (dict, list)) and jinja.tojson(got) == raw else raw
    try:
        got = python_literal(raw)
    except (ValueError, RecursionError):
        return raw
    return got if not isinstance(got, (str, dict, list, tuple)) and str(got) == raw else raw


def text_of(content: Any) -> str | None:
    """A message's content as the template writes it (trimmed, parts joined); None where it holds a picture."""
    if isinstance(content, list):
        if any(not isinstance(part, dict) or part.get("type") != "text" for part in content):
            return None
        content = "".join(part["text"] for part in content)
    return (content or "").strip()


def _is_query(message: dict[str, Any]) -> bool:
    text = text_of(message.get("content")) or ""
    return message["role"] == "user" and not (text.startswith("<tool_response>") and text.endswith("</tool_response>"))


def qwen3_5_normal_form(case: dict[str, Any]) -> dict[str, Any] | None:
    """What ``decode(render(case))`` gives back (None where a content holds a picture)."""
    tools = case["tools"] or None
    schemas = {
        tool["function"]["name"]: tool["function"].get("parameters") for tool in tools or () if "function" in tool
    }
    source = jinja.prepare_messages(case["messages"])  # reasoning under its other keys is reasoning_content
    query = max((i for i, m in enumerate(source) if _is_query(m)), default=-1)
    ids = itertools.count()
    messages: list[dict[str, Any]] = []
    for index, message in enumerate(source):
        content = text_of(message.get("content"))
        if content is None:
            return None
        if message["role"] != "assistant":
            messages.append({"role": message["role"], "content": content})
            continue
        reasoning = message.get("reasoning_content")
        if isinstance(reasoning, str):
            reasoning = reasoning.strip()
        elif "</think>" in content:
            reasoning = content.split("</think>")[0].rstrip("\n").split("<think>")[-1].lstrip("\n").strip()
            content = content.split("</think>")[-1].lstrip("\n")
        out: dict[str, Any] = {"role": "assistant", "content": content or None}
        calls = message.get("tool_calls") or []
        if calls:
            out["tool_calls"] = []
        for call in calls:
            name, arguments = call["function"]["name"], call["function"]["arguments"]
            properties = (schemas.get(name) or {}).get("properties") or {}
            arguments = {
                k: read_back(v, properties.get(k) if isinstance(properties, dict) else None)
                for k, v in arguments.items()
            }
            out["tool_calls"].append(
                {"id": f"call_{next(ids)}", "type": "function", "function": {"name": name, "arguments": arguments}}
            )
        if index > query:
            out["reasoning_content"] = reasoning or ""
        elif "</think>" in content:
            out["reasoning_content"] = ""
        messages.append(out)
    # With tools, an empty system text is not written; a tool message after it tells it was there.
    empty_system = tools and messages and messages[0]["role"] == "system" and not messages[0]["content"]
    if empty_system and (len(messages) == 1 or messages[1]["role"] != "tool"):
        messages = messages[1:]
    variables = (
        {"enable_thinking": False}
        if case["add_generation_prompt"] and case["variables"].get("enable_thinking") is False
        else {}
    )
    return {
        "messages": messages,
        "tools": tools,
        "add_generation_prompt": case["add_generation_prompt"],
        "variables": variables,
    }


def texts(case: dict[str, Any]) -> list[str]:
    out = [str(m.get("content")) for m in case["messages"]]
    out += [str(m.get(key)) for m in case["messages"] for key in ("reasoning_content", "reasoning", "thinking")]
    for message in case["messages"]:
        for call in message.get("tool_calls") or []:
            arguments = call["function"]["arguments"]
            out += [written(v) for v in arguments.values()] if isinstance(arguments, dict) else [str(arguments)]
    return out


def decode_normal_form(case: dict[str, Any], text: str) -> dict[str, Any] | None:
    if any(mark in t for t in texts(case) for mark in MARKUP) or any(
        t.strip().startswith(TOOLS_HEAD) for t in texts(case)
    ):
        return None
    form = qwen3_5_normal_form(case)
    return None if form is None else linked_as_json(form)


PROFILE = Profile(
    markers=(*base.PROFILE.markers, "<think>", "</think>"),
    snippets=(*base.PROFILE.snippets, "\n</think>\n\n", "True", "None", "1.5"),
    call_closer=base.PROFILE.call_closer,
    plain_text=base.PROFILE.plain_text,
    broken_block=base.PROFILE.broken_block,
    adversarial=base.PROFILE.adversarial,
    grammar_forbid=base.PROFILE.grammar_forbid,
    decode=Decode(normal_form=decode_normal_form),
    round_trip=RoundTrip(messages=messages, expected=expected, keeps_key_order=True, fmt=Qwen3_5()),
)
