"""The ``gemma3_tool_code`` test profile: Python-list calls, optionally in a ```` ```tool_code ```` fence."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

from codec.formats.gemma3_tool_code import TOOLS_PROMPT as GEMMA3_TOOLS_PROMPT
from formats import MANY, PLAIN_TEXT, Adversarial, Decode, N, Profile
from formats._pythonic import ARG, CORRECTED, SNIPPETS, adversarial, expected_calls, linked, message_texts, round_trip

FENCE, CLOSE, STOP = "```tool_code\n", "\n```", "<end_of_turn>"


def _adversarial() -> dict[str, Adversarial]:
    texts = adversarial(FENCE, CLOSE + STOP, STOP)
    texts |= {
        "backslashes_odd": FENCE + ARG + '"' + "\\" * (N // 2 + 1) + '")]',
        "backslashes_even": FENCE + ARG + '"' + "\\" * (N // 2) + '")]' + CLOSE + STOP,
        "backticks": "`" * N,
        "partial_fence_openers": "```tool_cod" * (N // 11),
        "many_line_breaks_in_strings": FENCE + "[f(" + "".join(f'k{i}="a\nb"' for i in range(MANY // 10)) + ")]",
        # Quotes inside a string that may or may not close it (the call goes on after them or not).
        "string_of_inner_quotes": FENCE + ARG + '"' + 'x "y" ' * (N // 6) + '")]' + CLOSE + STOP,
        "unterminated_string_of_inner_quotes": FENCE + ARG + '"' + 'a"b' * (N // 3),
        "string_of_almost_closers": FENCE + ARG + '"' + ('"' + "b" * 60 + " ") * (N // 62) + '")]' + CLOSE,
        "string_of_quoted_parens": FENCE + ARG + '"' + 'x")"' * (N // 4) + '")]' + CLOSE,
        "many_printed_calls": FENCE + "print(f(a=1))\n" * (MANY // 14) + CLOSE,
        "nested_prints": FENCE + "print(" * (N // 6),
        "inline_fence_openers": "the ```tool_code``` fence " * (N // 26),
        "unclosed_fences": FENCE * (N // 13),
        "many_fences": (FENCE + "[f(a=1)]" + CLOSE + "\n") * (MANY // 25) + STOP,
        "bare_calls_in_fence": FENCE + "f(a=1)\n" * (MANY // 7) + CLOSE,
    }
    return {name: Adversarial(text) for name, text in texts.items()}


# --------------------------------------------------------------------------- decode


def gemma3_text(content: Any) -> str:
    """A user or assistant message's text as written: trimmed; text parts trimmed and joined, images as tokens (G8)."""
    if isinstance(content, str):
        return content.strip()
    if not isinstance(content, list):
        return ""
    kinds = {"image": lambda part: "<start_of_image>", "text": lambda part: part["text"].strip()}
    return "".join(kinds[part["type"]](part) for part in content if part.get("type") in kinds)


def gemma3_message(message: dict[str, Any], ids: Iterator[int]) -> dict[str, Any]:
    """A message as it comes back from its own turn."""
    role = message["role"]
    if role == "assistant" and "tool_calls" in message:  # G6: the content next to calls is dropped
        return {"role": role, "tool_calls": expected_calls(message["tool_calls"], ids, strings="kept")}
    if role in ("user", "assistant"):  # reasoning is never written (G8)
        return {"role": role, "content": gemma3_text(message.get("content"))}
    if role == "tool":  # a tool result: its trimmed text in a fence; no id or name (G8)
        return {"role": role, "content": str(message.get("content", "")).strip()}
    return {"role": role}  # any other role: a turn of its name, without its content (G6)


def gemma3_system_split(prefix: str, first: dict[str, Any]) -> list[dict[str, Any]]:
    """The system prefix (text + blank line, no tools block) and the first turn's message, as they come back.

    Nothing marks where the system text ends (G4). A tool result or calls after it show it; else
    the system text reads as the start of the turn's text where that text can hold it (no
    surrounding whitespace), and otherwise ends at the first blank line after which it can.
    """
    if first["role"] == "tool" or "tool_calls" in first:
        return [{"role": "system", "content": prefix[:-2]}, first]
    has_text = first["role"] in ("user", "assistant")
    body = prefix + first.get("content", "")
    if has_text and body == body.strip():
        return [{**first, "content": body}]
    blank = body.find("\n\n")
    while blank >= 0:
        rest = body[blank + 2 :]
        if (rest == rest.strip()) if has_text else not rest:
            return [{"role": "system", "content": body[:blank]}, {**first, "content": rest} if has_text else first]
        blank = body.find("\n\n", blank + 1)
    raise AssertionError("a rendered first turn always splits")


def gemma3_expected(case: dict[str, Any]) -> dict[str, Any]:
    """What ``decode(render(case))`` gives for Gemma 3 (both variants), rule by rule."""
    messages = case["messages"]
    bos = case["variables"].get("bos_token")
    variables = {"bos_token": bos} if bos else {}  # the only variable the template writes
    system = messages[0] if messages[0]["role"] == "system" else None  # G4: only messages[0] counts
    turns = messages[1:] if system is not None else messages
    expected: dict[str, Any] = {"tools": None, "add_generation_prompt": case["add_generation_prompt"]}
    if not turns:  # a lone system message writes nothing at all (G4)
        return {**expected, "messages": [{"role": "system", "content": ""}], "variables": variables}
    ids = itertools.count()
    out = [gemma3_message(message, ids) for message in turns]
    if system is not None:
        content = system["content"]
        text = content if isinstance(content, str) else content[0]["text"]  # G4: a list's first part
        if case["tools"] is not None:  # the tools block marks the system text's end
            expected["tools"] = case["tools"]
            out.insert(0, {"role": "system", "content": text})
        else:
            out[:1] = gemma3_system_split(text + "\n\n", out[0])
    return {**expected, "messages": out, "variables": variables}


GEMMA3_MARKUP = ("<end_of_turn>\n", "```tool_response\n", "```tool_code\n", GEMMA3_TOOLS_PROMPT)


def gemma3_reads_otherwise(case: dict[str, Any]) -> bool:
    """A text holds turn or fence markup, so the prompt has other readings (one is chosen, documented)."""
    return any(markup in text for text in message_texts(case) for markup in GEMMA3_MARKUP)


def decode_normal_form(case: dict[str, Any], text: str) -> dict[str, Any] | None:
    return None if gemma3_reads_otherwise(case) else linked(gemma3_expected(case))


PROFILE = Profile(
    markers=(FENCE, CLOSE, "```", STOP),
    snippets=("[f(", "f(", "[f(a=1)]", 'f(a="x"b=2)', ",g()", "a=", '"x"', "'x'", *SNIPPETS),
    call_closer=")",
    plain_text=PLAIN_TEXT,
    broken_block=FENCE + "oops" + CLOSE,
    adversarial=_adversarial,
    grammar_forbid=(),
    decode=Decode(normal_form=decode_normal_form, dump_mode="python"),
    decode_variants={"corrected": Decode(normal_form=decode_normal_form, dump_mode="python", fmt=CORRECTED)},
    round_trip=round_trip("gemma3_tool_code"),
    round_trip_variants={"corrected": round_trip("gemma3_corrected")},
)
