"""The ``nemotron3`` test profile: qwen3_5's replies (its profile's pieces), a line break after every call, and the
prompts of Nemotron 3's template (a system turn always, ``<think></think>`` before an assistant's text)."""

from __future__ import annotations

import itertools
from typing import Any

from harness import linked_as_json

from codec import jinja
from codec.formats.nemotron3 import Nemotron3
from formats import Decode, Message, Profile, RoundTrip, Tools
from formats import qwen3_5 as base
from formats import qwen3_coder as coder

# --------------------------------------------------------------------------- round trip


def expected(message: Message, tools: Tools) -> dict[str, Any]:
    """The content (trimmed, as the template writes it), no reasoning (the empty think block), values typed
    by the tools (the written text without); the line breaks after the content and after each call are layout."""
    calls = message.get("tool_calls") or []
    out = []
    for call in calls:
        name, arguments = call["function"]["name"], call["function"]["arguments"]
        typed = {
            k: v if coder.declared(coder._schema_of(tools, name, k)) else base.written(v) for k, v in arguments.items()
        }
        out.append({"name": name, "arguments": typed})
    return {"content": message["content"] or "", "reasoning": "", "tool_calls": out}


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
    "# Tools",
)


def nemotron3_normal_form(case: dict[str, Any]) -> dict[str, Any] | None:
    """What ``decode(render(case))`` gives back, for conversations without tools whose contents are text
    and whose assistants hold no reasoning (None for the others: then only the rendering back is checked)."""
    if case["tools"] or "truncate_history_thinking" in case["variables"]:
        return None
    source = jinja.prepare_messages(case["messages"])
    if any(not isinstance(m.get("content", ""), str) for m in source):
        return None
    if any(str(m.get("reasoning_content") or "").strip() for m in source):
        return None
    loop = source[1:] if source[0]["role"] == "system" else source
    last_user = max((i for i, m in enumerate(loop) if m["role"] == "user"), default=-1)
    ids = itertools.count()
    messages: list[dict[str, Any]] = []
    if source[0]["role"] == "system" and (
        source[0].get("content") or (len(source) > 1 and source[1]["role"] == "system")
    ):
        messages.append({"role": "system", "content": source[0]["content"]})
    for index, message in enumerate(loop):
        content = message.get("content", "")
        if message["role"] != "assistant":
            messages.append({"role": message["role"], "content": content})
            continue
        if index < last_user and content != content.lstrip():
            return None  # the history's cut trims it: read back with truncate_history_thinking off
        out: dict[str, Any] = {"role": "assistant", "content": content.rstrip() or None}
        calls = message.get("tool_calls") or []
        if calls:
            out["tool_calls"] = [
                {
                    "id": f"call_{next(ids)}",
                    "type": "function",
                    "function": {
                        "name": call["function"]["name"],
                        "arguments": {k: base.read_back(v, None) for k, v in call["function"]["arguments"].items()},
                    },
                }
                for call in calls
            ]
        messages.append(out)
    if not messages:
        messages = [{"role": "system", "content": ""}]
    thinking = case["variables"].get("enable_thinking", True)
    variables = {"enable_thinking": False} if case["add_generation_prompt"] and not thinking else {}
    return {
        "messages": messages,
        "tools": None,
        "add_generation_prompt": case["add_generation_prompt"],
        "variables": variables,
    }


def decode_normal_form(case: dict[str, Any], text: str) -> dict[str, Any] | None:
    if any(mark in t for t in base.texts(case) for mark in MARKUP):
        return None
    form = nemotron3_normal_form(case)
    return None if form is None else linked_as_json(form)


PROFILE = Profile(
    markers=base.PROFILE.markers,
    snippets=(*base.PROFILE.snippets, "<think></think>", "</tool_call>\n<|im_end|>"),
    call_closer=base.PROFILE.call_closer,
    plain_text=base.PROFILE.plain_text,
    broken_block=base.PROFILE.broken_block,
    adversarial=base.PROFILE.adversarial,
    grammar_forbid=base.PROFILE.grammar_forbid,
    decode=Decode(normal_form=decode_normal_form),
    round_trip=RoundTrip(messages=base.messages, expected=expected, keeps_key_order=True, fmt=Nemotron3()),
)
