"""The ``seed_oss`` test profile: XML calls inside ``<seed:tool_call>``, values inline and via ``str()``,
``<seed:think>`` reasoning, the prompts of Seed-OSS's template."""

from __future__ import annotations

import itertools
from typing import Any

from harness import linked_as_json
from hypothesis import strategies as st

from codec import jinja
from codec.formats.seed_oss import SeedOss
from formats import PLAIN_TEXT, Adversarial, Decode, Message, N, Profile, RoundTrip, Tools
from formats import qwen3_coder as coder
from formats import qwen3_coder_official as official

STOP = "<seed:eos>"
_CALL = "<seed:tool_call>\n<function=f>\n"
_ARG = _CALL + "<parameter=a>"

# --------------------------------------------------------------------------- round trip


def _carried(message: Message, tools: Tools) -> bool:
    """Whether every value of the message's calls can come back: inline values keep no blank at either
    end (the tags' own line breaks take them), and hold no markup that ends them or the call."""
    for call in message.get("tool_calls") or []:
        for value in call["function"]["arguments"].values():
            text = official.written(value)
            if text != text.strip() or not text:
                return False
            if any(mark in text for mark in ("<parameter=", "</parameter>", "</function>", STOP, "<seed:")):
                return False
    content = message.get("content") or ""
    return "<seed:" not in content


def messages(with_tools: bool) -> st.SearchStrategy[tuple[Message, Tools]]:
    return coder.messages(with_tools=with_tools).filter(lambda pair: _carried(*pair))


def expected(message: Message, tools: Tools) -> dict[str, Any]:
    """The content (trimmed; a line break after it, before the calls' blank line), no reasoning, values typed
    by the tools (the written text without)."""
    calls = message.get("tool_calls") or []
    out = []
    for call in calls:
        name, arguments = call["function"]["name"], call["function"]["arguments"]
        typed = {
            k: v if coder.declared(coder._schema_of(tools, name, k)) else official.written(v)
            for k, v in arguments.items()
        }
        out.append({"name": name, "arguments": typed})
    content = message["content"] or ""
    return {"content": content + "\n" if content and calls else content, "reasoning": "", "tool_calls": out}


def _adversarial() -> dict[str, Adversarial]:
    one = _CALL + "<parameter=a>1</parameter>\n</function>\n</seed:tool_call>"
    texts = {
        "unterminated_value": _ARG + "x" * N,
        "value_of_partial_closers": _ARG + "</param" * (N // 8),
        "many_calls": (one + "\n") * (N // 70) + STOP,
        "long_reasoning_with_reflections": "<seed:think>"
        + "<seed:cot_budget_reflect>used 1</seed:cot_budget_reflect> x </seed:cot_budget_reflect>" * (N // 90),
        "unclosed_reasoning": "<seed:think>" + "a <seed:tool_call" * (N // 17),
        "partial_call_markers": "<seed:tool_" * (N // 11),
        "stop_tokens": STOP * (N // 10),
    }
    return {name: Adversarial(text) for name, text in texts.items()}


# --------------------------------------------------------------------------- decode

MARKUP = ("<seed:", "Function:\ndef", "工具调用", "Tool List:", "</parameter>", "You are an intelligent assistant")


def seed_oss_normal_form(case: dict[str, Any]) -> dict[str, Any] | None:
    """What ``decode(render(case))`` gives back, for conversations without tools (None with them: the
    template documents them in Python, which reads back as schemas of its own)."""
    if case["tools"]:
        return None
    variables = {k: v for k, v in case["variables"].items() if k == "thinking_budget" and v != -1}
    ids = itertools.count()
    messages: list[dict[str, Any]] = []
    for message in jinja.prepare_messages(case["messages"]):
        if message["role"] != "assistant":
            messages.append({"role": message["role"], "content": message.get("content")})
            continue
        out: dict[str, Any] = {"role": "assistant"}
        content = message.get("content")
        content = content.strip() if isinstance(content, str) else ""
        calls = message.get("tool_calls") or []
        if calls:
            out["content"] = content or None
            out["tool_calls"] = [
                {
                    "id": f"call_{next(ids)}",
                    "type": "function",
                    "function": {
                        "name": call["function"]["name"],
                        "arguments": {k: official.read_back(v, None) for k, v in call["function"]["arguments"].items()},
                    },
                }
                for call in calls
            ]
        elif content:
            out["content"] = content
        reasoning = message.get("reasoning_content")
        if isinstance(reasoning, str) and reasoning.strip():
            out["reasoning_content"] = reasoning.strip()
        messages.append(out)
    return {
        "messages": messages,
        "tools": None,
        "add_generation_prompt": case["add_generation_prompt"],
        "variables": variables,
    }


def texts(case: dict[str, Any]) -> list[str]:
    out = [
        str(m.get(key)) for m in case["messages"] for key in ("content", "reasoning_content", "reasoning", "thinking")
    ]
    for message in case["messages"]:
        for call in message.get("tool_calls") or []:
            arguments = call["function"]["arguments"]
            out += [official.written(v) for v in arguments.values()] if isinstance(arguments, dict) else [arguments]
    return out


def decode_normal_form(case: dict[str, Any], text: str) -> dict[str, Any] | None:
    if any(mark in t for t in texts(case) for mark in MARKUP):
        return None
    form = seed_oss_normal_form(case)
    return None if form is None else linked_as_json(form)


PROFILE = Profile(
    markers=(
        "<seed:tool_call>",
        "</seed:tool_call>",
        "<function=f>",
        "</function>",
        "<parameter=a>",
        "</parameter>",
        "<seed:think>",
        "</seed:think>",
        "<seed:cot_budget_reflect>",
        "</seed:cot_budget_reflect>",
        STOP,
        "<seed:bos>",
    ),
    snippets=(
        "<seed:tool_call>\n<function=f>\n",
        "<parameter=a>",
        "</parameter>\n",
        "</function>\n</seed:tool_call>",
        "<function=f>\n<parameter=a>1</parameter>\n</function>",
        "{'k': [1, True]}",
        "None",
        "True",
    ),
    call_closer="</seed:tool_call>",
    plain_text=PLAIN_TEXT,
    broken_block="<seed:tool_call>\n<function=\noops\n</seed:tool_call>",
    adversarial=_adversarial,
    grammar_forbid=(),
    decode=Decode(normal_form=decode_normal_form),
    round_trip=RoundTrip(messages=messages, expected=expected, keeps_key_order=True, fmt=SeedOss()),
)
