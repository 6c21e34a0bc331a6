"""The ``gemma3_tool_code`` test profile: Python-list calls, optionally in a ```` ```tool_code ```` fence."""

from __future__ import annotations

from formats import MANY, PLAIN_TEXT, Adversarial, N, Profile
from formats._pythonic import ARG, SNIPPETS, adversarial, round_trip

FENCE, CLOSE, STOP = "```tool_code\n", "\n```", "<end_of_turn>"


def _adversarial() -> dict[str, Adversarial]:
    texts = adversarial(FENCE, CLOSE + STOP, STOP)
    texts |= {
        "backslashes_odd": FENCE + ARG + '"' + "\\" * (N // 2 + 1) + '")]',
        "backslashes_even": FENCE + ARG + '"' + "\\" * (N // 2) + '")]' + CLOSE + STOP,
        "backticks": "`" * N,
        "partial_fence_openers": "```tool_cod" * (N // 11),
        "unclosed_fences": FENCE * (N // 13),
        "many_fences": (FENCE + "[f(a=1)]" + CLOSE + "\n") * (MANY // 25) + STOP,
        "bare_calls_in_fence": FENCE + "f(a=1)\n" * (MANY // 7) + CLOSE,
    }
    return {name: Adversarial(text) for name, text in texts.items()}


PROFILE = Profile(
    markers=(FENCE, CLOSE, "```", STOP),
    snippets=("[f(", "f(", "[f(a=1)]", 'f(a="x"b=2)', ",g()", "a=", '"x"', "'x'", *SNIPPETS),
    call_closer=")",
    plain_text=PLAIN_TEXT,
    broken_block=FENCE + "oops" + CLOSE,
    adversarial=_adversarial,
    grammar_forbid=(),
    round_trip=round_trip("gemma3_tool_code"),
    round_trip_variants={"corrected": round_trip("gemma3_corrected")},
)
