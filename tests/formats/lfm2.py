"""The ``lfm2`` test profile: Python-list calls between tool-call tokens, single-quoted strings, ChatML turns."""

from __future__ import annotations

import itertools
from typing import Any

from codec import jinja
from codec.formats.lfm2 import CFM_TAG, parse_content
from formats import MANY, PLAIN_TEXT, Adversarial, Decode, N, Profile
from formats._pythonic import ARG, BRACKET_PROSE, SNIPPETS, adversarial, expected_calls, linked, round_trip

OPEN, CLOSE, STOP = "<|tool_call_start|>", "<|tool_call_end|>", "<|im_end|>"


def _adversarial() -> dict[str, Adversarial]:
    texts = adversarial(OPEN, CLOSE + STOP, STOP)
    texts |= {
        "single_quoted_backslashes": OPEN + ARG + "'" + "\\" * (N // 2) + "')]" + CLOSE,
        "single_quotes_in_strings": OPEN + ARG + "'" + "it's " * (N // 5) + "')]" + CLOSE + STOP,
        "python_lists": OPEN + "[f(a=[" + ", ".join("'x', True, None" for _ in range(MANY // 18)) + "])]" + CLOSE,
        "unclosed_blocks": OPEN * (N // len(OPEN)),
        "partial_openers": OPEN[:-1] * (N // len(OPEN)),
        "think_closers": "</think>" * (N // 8),
        "reasoning_with_brackets": "<think>" + BRACKET_PROSE * (N // len(BRACKET_PROSE)) + "</think>ok",
    }
    out = {name: Adversarial(text) for name, text in texts.items()}
    out["unclosed_reasoning"] = Adversarial("<think>" + "pensando " * (N // 9))
    return out


# --------------------------------------------------------------------------- decode


def _text(content: Any) -> str:
    return content if isinstance(content, str) else parse_content(content)


def lfm2_expected(case: dict[str, Any]) -> dict[str, Any]:
    """What ``decode(render(case))`` gives for LFM2, rule by rule (L1-L6)."""
    messages = jinja.prepare_messages(case["messages"])
    tools = case["tools"] or None
    out: list[dict[str, Any]] = []
    if messages[0]["role"] == "system":  # L1: only messages[0]
        text = _text(messages[0]["content"]) if messages[0].get("content") else ""
        messages = messages[1:]
        if text:
            out.append({"role": "system", "content": text})
    if tools and not out:  # L2: the tools alone make a system turn
        out.append({"role": "system"})
    last_user = max((i for i, m in enumerate(messages) if m["role"] == "user"), default=-1)
    ids = itertools.count()
    for index, message in enumerate(messages):
        role = message["role"]
        if role != "assistant":
            out.append({"role": role, "content": _text(message["content"]) if message.get("content") else ""})
            continue
        shows = index > last_user
        assistant: dict[str, Any] = {"role": "assistant"}
        if shows and "thinking" in message:  # L4
            assistant["reasoning_content"] = message["thinking"]
        content = _text(message["content"]) if "content" in message else ""
        if not shows and "</think>" in content:
            content = content.split("</think>")[-1].strip()
        calls = message.get("tool_calls")
        if calls is not None:
            assistant["tool_calls"] = expected_calls(calls, ids, strings="empty")
        if content or calls is None:
            assistant["content"] = content
        out.append(assistant)
    bos = case["variables"].get("bos_token")
    return {
        "messages": out or [{"role": "system", "content": ""}],
        "tools": tools,
        "add_generation_prompt": case["add_generation_prompt"],
        "variables": {"bos_token": bos} if bos else {},
    }


#: Markup a text may hold that makes the prompt read otherwise (a turn, reasoning, calls, the tools block).
MARKUP = ("<|im_start|>", "<|im_end|>", "<think>", "</think>", OPEN, CLOSE, "List of tools: [", CFM_TAG)


def lfm2_reads_otherwise(case: dict[str, Any]) -> bool:
    """A text holds LFM2's markup, or a string argument a quote that the call may go on after."""
    for message in case["messages"]:
        content = message.get("content")
        texts = [content] if isinstance(content, str) else []
        if isinstance(content, list):
            texts += [str(part.get("text")) for part in content if isinstance(part, dict)]
        texts += [message[key] for key in jinja.REASONING_KEYS if isinstance(message.get(key), str)]
        if any(piece in text for text in texts for piece in MARKUP):
            return True
        for call in message.get("tool_calls") or ():
            arguments = call["function"]["arguments"]
            values = arguments.values() if isinstance(arguments, dict) else ()
            if any(isinstance(value, str) and "'" in value for value in values):
                return True
    return False


def decode_normal_form(case: dict[str, Any], text: str) -> dict[str, Any] | None:
    return None if lfm2_reads_otherwise(case) else linked(lfm2_expected(case))


PROFILE = Profile(
    markers=(OPEN, CLOSE, STOP, "<think>", "</think>", "<|im_start|>"),
    snippets=(OPEN + "[f(", "[f(a=1)]", "[f(a='", "', b=", "')", '"x"', "'x'", "<think>x</think>", "a=", *SNIPPETS),
    call_closer=")",
    plain_text=PLAIN_TEXT,
    broken_block=OPEN + "oops" + CLOSE,
    adversarial=_adversarial,
    grammar_forbid=(),
    decode=Decode(normal_form=decode_normal_form, dump_mode="python"),
    round_trip=round_trip("lfm2"),
)
