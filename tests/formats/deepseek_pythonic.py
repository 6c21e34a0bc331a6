"""The ``deepseek_pythonic`` test profile: Python-list calls with unescaped strings, DeepSeek's role tokens."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from typing import Any

from codec import jinja
from codec.wire.call_list import STRING_END
from formats import MANY, PLAIN_TEXT, Adversarial, Decode, N, Profile
from formats._pythonic import (
    ARG,
    BRACKET_PROSE,
    SNIPPETS,
    adversarial,
    expected_calls,
    linked,
    message_texts,
    round_trip,
)

STOP = "<|end_of_sentence|>"


def _adversarial() -> dict[str, Adversarial]:
    texts = adversarial("", STOP, STOP)
    # With raw strings, 'k0="v"k1="v"...' is one string waiting for its closing quote (a B6 case below).
    del texts["many_unseparated_arguments"]
    texts |= {
        "string_of_backslashes": ARG + '"' + "\\" * N + '")]' + STOP,
        "think_closers": "</think>" * (N // 8),
        "think_openers_in_content": "x" + "<think>\n" * (N // 8),
        "reasoning_with_brackets": "<think>\n" + BRACKET_PROSE * (N // len(BRACKET_PROSE)) + "\n</think>\n\nok",
    }
    # A raw string: every '"' may close it, if ', NAME=' or ')' follows (a bounded lookahead).
    texts |= {
        "string_of_quotes": ARG + '"' * N + ")]",
        "string_of_almost_closers": ARG + '"' + '", b ' * (N // 5) + '")]' + STOP,
        "string_of_long_almost_closers": ARG + '"' + ('", ' + "b" * 60 + " ") * (N // 64) + '")]',
        "string_of_quoted_parens": ARG + '"' + 'x")"' * (N // 4) + '")]' + STOP,
        "string_of_trailing_commas": ARG + '"' + '", x' * (N // 4) + '",)]' + STOP,
        # A string whose escaped reading (ESC_STRING) may win: followed while it is undecided.
        "unterminated_escaped_string": ARG + '"' + '\\n\\t\\"' * (N // 6),
        "escaped_string_of_raw_closers": ARG + '"' + '\\"), x=' * (N // 7),
        "escaped_string_of_inner_quotes": ARG + '"' + '\\n"x ' * (N // 5) + '")]' + STOP,
        "many_escaped_strings": "[f(" + ", ".join(f'k{i}="a\\nb"' for i in range(MANY // 10)) + ")]" + STOP,
        "json_document_in_string": ARG + '"' + '{"k": "v", "n": [1, "x"]}, ' * (N // 28) + '")]' + STOP,
        "many_unseparated_arguments": "[f(" + "".join(f'k{i}="v"' for i in range(N // 8)) + ")]",
    }
    out = {name: Adversarial(text) for name, text in texts.items()}
    out["unclosed_reasoning"] = Adversarial("<think>\n" + "pensando " * (N // 9))
    return out


# --------------------------------------------------------------------------- decode

TOOL_RESULT_PREFIXES = ("tool_response", "<tool_response>")


def deepseek_text(content: Any) -> str:
    """A message's text as written: a string as is (never trimmed), else its text parts joined."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "".join(part["text"] for part in content if part.get("type") == "text")


def last_query(messages: list[dict[str, Any]]) -> int:
    """The index of the last user message that is not a tool result by its text (D8), else the last index."""
    for index in range(len(messages) - 1, -1, -1):
        content = messages[index].get("content")
        is_result = isinstance(content, str) and content.startswith(TOOL_RESULT_PREFIXES)
        if messages[index]["role"] == "user" and not is_result:
            return index
    return len(messages) - 1


def deepseek_assistant(message: dict[str, Any], shows_think: bool, ids: Iterator[int]) -> tuple[dict[str, Any], bool]:
    """An assistant message as it comes back, and whether its turn is plain (no think block written)."""
    content, reasoning = message.get("content"), message.get("reasoning_content")
    if reasoning is None:  # D7: the template cuts the content at its last </think>, then takes the
        reasoning = ""  # reasoning from what is left
        if isinstance(content, str) and "</think>" in content:
            content = content.split("</think>")[-1].lstrip("\n")
            reasoning = content.split("</think>")[0].rstrip("\n").split("<think>")[-1].lstrip("\n")
    out: dict[str, Any] = {"role": "assistant"}
    text = deepseek_text(content)
    plain = not (shows_think and reasoning)
    if not plain:  # D8: written only after the last query; its surrounding line breaks are lost
        out["reasoning_content"] = reasoning.strip("\n")
    elif "</think>" in text:  # the reasoning comes back set, so that the template keeps this content whole
        out["reasoning_content"] = ""
    calls = message.get("tool_calls")
    if calls:  # D3: an empty list writes nothing
        out["tool_calls"] = expected_calls(calls, ids, strings="empty")
    out["content"] = text or (None if calls else "")
    return {key: value for key, value in out.items() if value is not None}, plain


def deepseek_expected(case: dict[str, Any]) -> dict[str, Any]:
    """What ``decode(render(case))`` gives for DeepSeek-pythonic, rule by rule."""
    messages = jinja.prepare_messages(case["messages"])  # reasoning under any key is reasoning_content
    thinking = case["variables"].get("enable_thinking")
    systems = [message["content"] for message in messages if message["role"] == "system"]
    out: list[dict[str, Any]] = []
    if systems and systems[-1]:  # D6: only the last system message, first, its content through str()
        out.append({"role": "system", "content": str(systems[-1])})
    query, ids, plain_turns, in_text_run = last_query(messages), itertools.count(), 0, False
    for index, message in enumerate(messages):
        role = message["role"]
        if role == "user":
            out.append({"role": "user", "content": deepseek_text(message.get("content"))})
        elif role == "assistant":
            assistant, plain = deepseek_assistant(message, index > query, ids)
            out.append(assistant)
            plain_turns += plain
        elif role == "tool":
            content = message["content"]
            opens_run = index == 0 or messages[index - 1]["role"] != "tool"
            if opens_run:  # a run right after a run (a dropped message between) reads as a user's text (D5)
                in_text_run = bool(out) and out[-1]["role"] == "tool"
            if in_text_run:
                line = '{ "output": ' + json.dumps(content, ensure_ascii=False) + " }\n"
                if opens_run:
                    out.append({"role": "user", "content": "tool_response\n"})
                out[-1]["content"] += line
            else:  # tool results carry no id or name
                out.append({"role": "tool", "content": content})
        # D6: developer messages (any other role) are dropped
    add_generation_prompt = case["add_generation_prompt"]
    last = out[-1] if out else {}
    if add_generation_prompt:  # D8: the generation prompt shows enable_thinking
        variables = {} if thinking is None else {"enable_thinking": thinking}
    elif last.get("role") == "assistant" and last.get("content") == "" and len(last) == 2:
        # An empty last answer writes `<|Assistant|>` (`</think>` with thinking off): the generation prompt.
        out.pop()
        add_generation_prompt = True
        variables = {"enable_thinking": False} if thinking is False else {}
    else:  # only a plain assistant turn shows it, and only when it is false
        variables = {"enable_thinking": False} if thinking is False and plain_turns else {}
    images = sum(
        part.get("type") == "image"
        for message in messages
        if message["role"] == "user" and isinstance(message.get("content"), list)
        for part in message["content"]
    )
    users = [message for message in out if message["role"] == "user"]
    if images:  # all images are written before the BOS: they come back in the first user message
        text = users[0]["content"]
        users[0]["content"] = [{"type": "image"}] * images + ([{"type": "text", "text": text}] if text else [])
    tools = case["tools"] or None  # D6: an empty list writes nothing
    return {
        "messages": out or [{"role": "system", "content": ""}],
        "tools": tools,
        "add_generation_prompt": add_generation_prompt,
        "variables": variables,
    }


def deepseek_reads_otherwise(case: dict[str, Any]) -> bool:
    """A text holds role or think markup, or a string argument the quote and ``,``/``)`` that may end it."""
    markup = ("<|User|>", "<|Assistant|>", "<think>\n", "\n</think>\n\n", '", ', '")', "]<|end_of_sentence|>")
    if any(piece in text for text in message_texts(case) for piece in markup):
        return True
    # Content parts are written joined and never cut at '</think>' as string content is (D7): one holding it
    # reads as a think block's end.
    if any(
        message["role"] == "assistant"
        and isinstance(message.get("content"), list)
        and "</think>" in deepseek_text(message["content"])
        for message in case["messages"]
    ):
        return True
    # A text that is only markup the generation prompt also writes, or a reasoning of nothing but line breaks.
    return any(text in ("<think>", "</think>") or (text and not text.strip("\n")) for text in message_texts(case))


def decode_normal_form(case: dict[str, Any], text: str) -> dict[str, Any] | None:
    return None if deepseek_reads_otherwise(case) else linked(deepseek_expected(case))


PROFILE = Profile(
    markers=(STOP, "<think>", "</think>", "<|User|>", "<|Assistant|>"),
    snippets=(
        "[f(",
        "[f(a=1)]",
        '[f(a="',
        '", b=',
        '")',
        '"x"',
        "'x'",
        "<think>\nx\n</think>\n\n",
        "a=",
        *SNIPPETS,
    ),
    call_closer=")",
    plain_text=PLAIN_TEXT,
    # A call starts at its first argument or ')': a list whose call never starts is kept whole.
    broken_block="[oops(a=@)]",
    adversarial=_adversarial,
    grammar_forbid=(STRING_END,),
    decode=Decode(normal_form=decode_normal_form, dump_mode="python"),
    round_trip=round_trip("deepseek_pythonic"),
)
