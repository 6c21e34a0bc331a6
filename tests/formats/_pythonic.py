"""What the two Python-list formats' profiles share (``gemma3_tool_code``, ``deepseek_pythonic``): calls
written ``[name(key=value, ...)]``."""

from __future__ import annotations

from formats import DEEP, MANY, N

ARG = "[f(a="  # a call cut where the value of "a" starts
#: Prose with brackets that open no call: citations, words, number lists, links.
BRACKET_PROSE = "See [1], [note] and [a, b]; x[0] = [2] or [link](url). "


def adversarial(prefix: str, end: str, stop: str) -> dict[str, str]:
    """Inputs both Python-list formats get; ``prefix`` / ``end`` frame a call list (a fence, or nothing)."""

    def calls(body: str) -> str:
        return prefix + "[" + body + "]" + end

    return {
        "unterminated_string": prefix + ARG + '"' + "x" * N,
        "unterminated_single_quoted_string": prefix + ARG + "'" + "x" * N,
        "unterminated_string_with_markers": prefix + ARG + '"' + ("```" + stop + "[g(b=") * (N // 30),
        "unterminated_nested_string": prefix + ARG + '["' + "x" * N,
        "string_of_single_quotes": calls("f(a=" + "'" * N + ")"),
        "prose_with_brackets": BRACKET_PROSE * (N // len(BRACKET_PROSE)),
        "brackets_before_long_names": ("[" + "a" * 70 + " ") * (N // 72),
        "open_brackets": "[" * N,
        "open_calls": "[f(" * (N // 3),
        "calls_in_prose": "Try [f(x) or [g(y) later. " * (N // 25),
        "partial_stop_tokens": stop[:-1] * (N // len(stop)),
        "stop_tokens": stop * (N // len(stop)),
        "deep_list": calls("f(a=" + "[" * DEEP + "]" * DEEP + ")"),
        "deep_dict": calls("f(a=" + '{"k": ' * DEEP + "1" + "}" * DEEP + ")"),
        "deep_tuple": calls("f(a=" + "(" * DEEP + ")" * DEEP + ")"),
        "deep_unclosed": prefix + ARG + "[" * DEEP,
        "many_calls": calls(", ".join(f"f{i}(a={i})" for i in range(MANY // 12))),
        "many_arguments": calls("f(" + ", ".join(f"k{i}={i}" for i in range(MANY // 8)) + ")"),
        "many_unseparated_arguments": calls("f(" + "".join(f'k{i}="v"' for i in range(MANY // 8)) + ")"),
        "many_broken_calls": calls(", ".join("f(a=@)" for _ in range(MANY // 8))),
        "many_unreadable_elements": calls(", ".join("oops" for _ in range(MANY // 6))),
        "many_lists": (calls("f(a=1)") + "\n") * (MANY // 12),
    }


#: Snippets of Python values both Python-list formats' generated inputs are made of.
SNIPPETS = ("True", "null", "(", ")", "[", "]", "{", "}", ":", ",")
