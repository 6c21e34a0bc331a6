"""The ``hermes`` test profile: JSON calls between ``<tool_call>`` tags, ChatML's stop token."""

from __future__ import annotations

from formats import DEEP, PLAIN_TEXT, Adversarial, N, Profile

STOP = "<|im_end|>"
OPEN, CLOSE = "<tool_call>\n", "\n</tool_call>"
_ARG = OPEN + '{"name": "f", "arguments": {"a": '  # a call cut where the value of "a" starts


def _call(value: str) -> str:
    return _ARG + value + "}}" + CLOSE


def _adversarial() -> dict[str, Adversarial]:
    call = _call
    texts = {
        "deep_list_in_arguments": call("[" * DEEP + "]" * DEEP),
        "deep_object_in_arguments": call('{"k": ' * DEEP + "1" + "}" * DEEP),
        "deep_unclosed_in_arguments": _ARG + "[" * DEEP,
        "unterminated_string": _ARG + '"' + "x" * N,
        "unterminated_string_with_markers": _ARG + '"' + "</tool_call><|im_end|>" * (N // 22),
        "partial_call_markers": "<tool_call" * (N // 10),
        "partial_markers_after_newlines": "\n<tool_" * (N // 7),
        "braces_in_text": "{" * (N // 5),
        "braces_in_block": OPEN + "{" * (N // 5),
        "quotes_in_block": OPEN + '"' * N,
        "backslashes_odd": call('"' + "\\" * (N // 2 + 1) + '"'),
        "backslashes_even": call('"' + "\\" * (N // 2) + '"') + STOP,
        "string_full_of_markers": call('"' + "</tool_call><tool_call>" * (N // 23) + '"'),
        "unclosed_reasoning": "<think>" + "pensando " * (N // 9),
        "many_calls": (call("1") + "\n") * (N // 60) + STOP,
        "many_arguments": call("0, " + ", ".join(f'"k{i}": {i}' for i in range(N // 30))),
        "stop_tokens": STOP * (N // 10),
        "python_literal_calls": (OPEN + '{"name": "f", "arguments": {"a": True}}' + CLOSE + "\n") * (N // 100),
        "empty_blocks": OPEN * (N // 12),
    }
    return {name: Adversarial(text) for name, text in texts.items()}


PROFILE = Profile(
    markers=("<tool_call>", "</tool_call>", STOP, "<|im_start|>", "<think>", "</think>"),
    snippets=(
        '{"name": "f", "arguments": {"a": 1}}',
        '{"name": "f", "arguments": {"a": ',
        '"name"',
        '"arguments"',
        '"parameters"',
        '"f"',
        "{",
        "}",
        "[",
        "]",
        ":",
        ",",
    ),
    call_closer="</tool_call>",
    plain_text=PLAIN_TEXT,
    broken_block="<tool_call>\noops\n</tool_call>",
    adversarial=_adversarial,
    grammar_forbid=(),
)
