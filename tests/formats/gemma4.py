"""The ``gemma4`` test profile: ``<|tool_call>call:NAME{key:value,...}<tool_call|>``, strings between
``<|"|>`` tokens."""

from __future__ import annotations

from formats import DEEP, MANY, PLAIN_TEXT, Adversarial, N, Profile

Q, OPEN, CLOSE, TURN = '<|"|>', "<|tool_call>", "<tool_call|>", "<turn|>"
_ARG = OPEN + "call:f{a:"  # a call cut where the value of "a" starts


def _call(value: str) -> str:
    return _ARG + value + "}" + CLOSE


def _adversarial() -> dict[str, Adversarial]:
    call = _call
    texts = {
        "unterminated_string": _ARG + Q + "x" * N,
        "unterminated_string_with_markers": _ARG + Q + "<tool_call|><turn|><|tool_call>" * (N // 31),
        "unterminated_json_string": _ARG + '"' + "x" * N,
        "string_of_partial_quotes": call(Q + '<|"' * (N // 3) + Q),
        "partial_quotes_as_values": _ARG + '<|"|' * (N // 4),
        "partial_call_markers": "<|tool_call" * (N // 11),
        "partial_markers_after_newlines": "\n<|tool_" * (N // 8),
        "bare_call_prefixes_on_lines": "\ncall:" * (N // 6),
        "prose_with_call_colon": "Please call: me, or call:back later.\n" * (N // 37),
        "unclosed_thought": "<|channel>thought\n" + "pensando " * (N // 9),
        "channel_markers": "<|channel><channel|>" * (N // 20),
        "stop_tokens": TURN * (N // 7),
        "orphan_call_closers": CLOSE * (N // 12),
        "deep_list": call("[" * DEEP + "]" * DEEP),
        "deep_object": call("{k:" * DEEP + "1" + "}" * DEEP),
        "deep_unclosed": _ARG + "[" * DEEP,
        "many_calls": (call("1") + "\n") * (MANY // 25) + TURN,
        "many_arguments": OPEN + "call:f{" + ",".join(f"k{i}:{i}" for i in range(MANY // 8)) + "}" + CLOSE,
        "many_broken_calls": (OPEN + "call:f{a:}" + CLOSE + "\n") * (MANY // 25),
        "bare_words": _ARG + "word " * (N // 5) + "}" + CLOSE,
    }
    return {name: Adversarial(text) for name, text in texts.items()}


PROFILE = Profile(
    markers=(OPEN, CLOSE, "<call>", TURN, "<|tool_response>", "<|channel>", "<channel|>", Q),
    snippets=(
        "call:f{",
        "\ncall:f{",
        "call:f(",
        "call:",
        _call(Q + "x" + Q),
        "<|channel>thought\n",
        "a:",
        "a=",
        Q + "x" + Q,
        '"x"',
        "{",
        "}",
        "(",
        ")",
        "[",
        "]",
        ",",
        "None",
        "1e+20",
    ),
    call_closer=CLOSE,
    plain_text=PLAIN_TEXT,
    broken_block=OPEN + "call:f oops" + CLOSE,
    adversarial=_adversarial,
    grammar_forbid=(),
)
