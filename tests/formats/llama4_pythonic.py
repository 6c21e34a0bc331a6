"""The ``llama4_pythonic`` test profile: bare Python-list calls, every value quoted, Llama 4's header turns."""

from __future__ import annotations

import itertools
from typing import Any

from codec import jinja
from codec.formats.llama4_pythonic import DEFAULT_SYSTEM, SYSTEM_TOOLS, part_texts
from codec.schema import tool_parameters
from codec.wire._call_list_python import render_python, typed_arguments
from codec.wire.call_list import STRING_END
from formats import MANY, PLAIN_TEXT, Adversarial, Decode, N, Profile
from formats._pythonic import ARG, SNIPPETS, adversarial, linked, round_trip

STOP = "<|eot|>"
TAG_OPEN, TAG_CLOSE = "<|python_start|>", "<|python_end|>"


def _adversarial() -> dict[str, Adversarial]:
    texts = adversarial("", STOP, STOP)
    del texts["many_unseparated_arguments"]  # (with raw strings one string waiting for its quote, as deepseek's)
    texts |= {
        "string_of_quotes": ARG + '"' * N + ")]",
        "string_of_almost_closers": ARG + '"' + '", b ' * (N // 5) + '")]' + STOP,
        "many_quoted_numbers": "[f(" + ", ".join(f'k{i}="{i}"' for i in range(MANY // 10)) + ")]" + STOP,
        "python_tags": (TAG_OPEN + '[f(a="1")]' + TAG_CLOSE) * (MANY // 30),
        "unclosed_python_tags": TAG_OPEN * (N // len(TAG_OPEN)),
        "partial_python_tags": TAG_OPEN[:-1] * (N // len(TAG_OPEN)),
    }
    return {name: Adversarial(text) for name, text in texts.items()}


# --------------------------------------------------------------------------- decode


def _typed_calls(calls: list[dict[str, Any]], ids: Any, tools: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """Calls as they come back: every value written as text, typed by the declared tools (T4)."""
    declared = {tool["function"]["name"]: tool for tool in tools or ()}
    out = []
    for call in calls:
        function = call.get("function", call)
        tool = declared.get(function["name"])
        written = {key: render_python(value, "python_str")[1:-1] for key, value in function["arguments"].items()}
        arguments = typed_arguments(written, tool_parameters(tool) if tool is not None else None)
        out.append(
            {
                "id": f"call_{next(ids)}",
                "type": "function",
                "function": {"name": function["name"], "arguments": arguments},
            }
        )
    return out


def _result(content: Any) -> Any:
    """A tool result's content as it comes back (T5): a string, else its text parts (one: its text)."""
    if isinstance(content, str):
        return content
    parts = [part["text"] for part in content if part.get("type") == "text"] if isinstance(content, list) else []
    return parts[0] if len(parts) == 1 else [{"type": "text", "text": text} for text in parts]


def llama4_expected(case: dict[str, Any]) -> dict[str, Any]:
    """What ``decode(render(case))`` gives for Llama 4 pythonic, rule by rule (T1-T5)."""
    messages = jinja.prepare_messages(case["messages"])
    tools = case["tools"] or None
    out: list[dict[str, Any]] = []
    if messages[0]["role"] == "system":
        content = messages[0]["content"]
        # T2: a content list's first part's text (none, as the template reads an image part, is empty)
        text = (content if isinstance(content, str) else content[0].get("text", "")).strip()
        messages = messages[1:]
        if text:
            out.append({"role": "system", "content": text})
        else:  # T2: an empty system text writes nothing, the tools with it
            tools = None
            # A second system message then writes the first system turn: read as the first one's
            # unless its text could not be (T2 writes it trimmed, and never empty).
            if messages and messages[0]["role"] == "system":
                written = part_texts(messages[0].get("content", ""), trimmed=True)
                if not written or written != written.strip():
                    out.append({"role": "system", "content": ""})
    ids = itertools.count()
    for message in messages:
        role, calls = message["role"], message.get("tool_calls")
        if not (role in ("tool", "ipython") or calls):
            out.append({"role": role, "content": part_texts(message.get("content", ""), trimmed=True)})
        elif calls:
            if role == "assistant":
                content = part_texts(message.get("content", ""), trimmed=False)
                assistant: dict[str, Any] = {"role": "assistant", "tool_calls": _typed_calls(calls, ids, tools)}
                if content:
                    assistant["content"] = content
                out.append(assistant)
        else:
            out.append({"role": "tool", "content": _result(message.get("content"))})
    bos = case["variables"].get("bos_token")
    return {
        "messages": out or [{"role": "system", "content": ""}],
        "tools": tools,
        "add_generation_prompt": case["add_generation_prompt"],
        "variables": {"bos_token": bos} if bos else {},
    }


MARKUP = ("<|header_start|>", "<|header_end|>", STOP, SYSTEM_TOOLS.strip(), DEFAULT_SYSTEM[:40], "[")


def llama4_reads_otherwise(case: dict[str, Any]) -> bool:
    """A text holds Llama 4's markup or a bracket, a string argument a quote, or arguments are a string."""
    for message in case["messages"]:
        content = message.get("content")
        texts = [content] if isinstance(content, str) else []
        if isinstance(content, list):
            texts += [str(part.get("text")) for part in content if isinstance(part, dict)]
        if any(piece in text for text in texts for piece in MARKUP):
            return True
        for call in message.get("tool_calls") or ():
            arguments = call.get("function", call).get("arguments")
            if not isinstance(arguments, dict):
                return True
            if any('"' in render_python(value, "python_str")[1:-1] for value in arguments.values()):
                return True
    return False


def decode_normal_form(case: dict[str, Any], text: str) -> dict[str, Any] | None:
    return None if llama4_reads_otherwise(case) else linked(llama4_expected(case))


PROFILE = Profile(
    markers=(STOP, TAG_OPEN, TAG_CLOSE, "<|header_start|>"),
    snippets=("[f(", "[f(a=1)]", '[f(a="', '", b=', '")', '"x"', '"7"', "a=", TAG_OPEN, *SNIPPETS),
    call_closer=")",
    plain_text=PLAIN_TEXT,
    broken_block="[oops(a=@)]",
    adversarial=_adversarial,
    grammar_forbid=(STRING_END,),
    decode=Decode(normal_form=decode_normal_form, dump_mode="python"),
    round_trip=round_trip("llama4_pythonic"),
)
