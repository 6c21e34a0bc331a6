"""The ``deepseek_pythonic`` test profile: Python-list calls with unescaped strings, DeepSeek's role tokens."""

from __future__ import annotations

from codec.formats.deepseek_pythonic import STRING_END
from formats import PLAIN_TEXT, Adversarial, N, Profile
from formats._pythonic import ARG, BRACKET_PROSE, SNIPPETS, adversarial, round_trip

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
        "json_document_in_string": ARG + '"' + '{"k": "v", "n": [1, "x"]}, ' * (N // 28) + '")]' + STOP,
        "many_unseparated_arguments": "[f(" + "".join(f'k{i}="v"' for i in range(N // 8)) + ")]",
    }
    out = {name: Adversarial(text) for name, text in texts.items()}
    out["unclosed_reasoning"] = Adversarial("<think>\n" + "pensando " * (N // 9))
    return out


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
    broken_block="[oops(1)]",
    adversarial=_adversarial,
    grammar_forbid=(STRING_END,),
    round_trip=round_trip("deepseek_pythonic"),
)
