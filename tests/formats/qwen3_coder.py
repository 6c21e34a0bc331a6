"""The ``qwen3_coder`` test profile: XML calls (``<function=NAME>``, ``<parameter=KEY>``), values as raw text."""

from __future__ import annotations

from typing import Any

from formats import DEEP, PLAIN_TEXT, Adversarial, N, Profile

STOP = "<|im_end|>"
_CALL = "<tool_call>\n<function=f>\n"
_ARG = _CALL + "<parameter=a>\n"  # a call cut where the value of "a" starts
_END = "\n</parameter>\n</function>\n</tool_call>"


def _param(key: str, value: str) -> str:
    return f"<parameter={key}>\n{value}\n</parameter>\n"


def _tool(kind: str) -> list[dict[str, Any]]:
    props = {"a": {"type": kind}, "s": {"type": "string"}, "n": {"type": "integer"}}
    return [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": props}}}]


def _adversarial() -> dict[str, Adversarial]:
    one = _CALL + _param("a", "1") + "</function>\n</tool_call>"
    bare = "<function=f>\n" + _param("a", "1") + "</function>\n</tool_call>"
    texts = {
        "unterminated_value": _ARG + "x" * N,
        "value_of_unconfirmed_closers": _ARG + "\n</parameter>\nx" * (N // 15) + _END,
        "value_of_closers_then_spaces": _ARG + "\n</parameter>    x" * (N // 18) + _END,
        "value_of_partial_closers": _ARG + "\n</param" * (N // 8),
        "value_of_less_than_signs": _ARG + "<" * N,
        "value_of_newlines": _ARG + "\n" * N + _END,
        "value_of_other_markers": _ARG + "<tool_call></tool_call><|im_end|>" * (N // 33),
        "unclosed_function_head": "<tool_call>\n<function=" + "x" * N,
        "unclosed_parameter_head": _CALL + "<parameter=" + "x" * N,
        # Kept small: each '<function=' on a line without '>' costs a regex scan to the end of the
        # line that stream.work does not count: quadratic time (100 KB of them take ~4 s), a known bug.
        "function_heads_without_end": "<function=" * 1_000,
        "partial_function_markers": "<function" * (N // 9),
        "partial_call_markers": "<tool_call" * (N // 10),
        "partial_markers_after_newlines": "\n<tool_" * (N // 7),
        "stop_tokens": STOP * (N // 10),
        "orphan_closers": "</tool_call>" * (N // 12),
        "empty_blocks": "<tool_call>\n" * (N // 12),
        "many_calls": (one + "\n") * (N // 80) + STOP,
        "many_bare_calls": (bare + "\n") * (N // 70),
        "many_broken_calls": (_CALL + "junk\n</function>\n</tool_call>\n") * (N // 60),
        "many_parameters": _CALL + "".join(_param(f"k{i}", str(i)) for i in range(N // 30)) + "</function>",
        "many_duplicates": _CALL + _param("a", "x") * (N // 30) + "</function>",
    }
    out = {name: Adversarial(text) for name, text in texts.items()}
    # every '<parameter=' is refused once (a missing </parameter>) before the closer is inserted
    out["many_unclosed_parameters"] = Adversarial(_CALL + "<parameter=a>\n1\n" * (N // 16))
    # Values typed by a schema: long and deep containers, long strings and numbers.
    array, obj = _tool("array"), _tool("object")
    out["typed_long_array"] = Adversarial(_ARG + "[" + "1, " * (N // 3) + "1]" + _END, array)
    out["typed_long_python_list"] = Adversarial(_ARG + "[" + "'x', " * (N // 5) + "None]" + _END, array)
    out["typed_long_string"] = Adversarial(_CALL + "<parameter=s>\n" + "é" * N + _END, array)
    out["typed_long_integer"] = Adversarial(_CALL + "<parameter=n>\n" + "9" * 4_000 + _END, array)
    # past Python's int-to-str limit (4300 digits): must stay a string, not raise
    out["typed_huge_integer"] = Adversarial(_CALL + "<parameter=n>\n" + "9" * 5_000 + _END, array)
    out["typed_deep_tuple"] = Adversarial(_ARG + "(" * DEEP + ")" * DEEP + _END, array)
    out["typed_deep_array"] = Adversarial(_ARG + "[" * DEEP + "]" * DEEP + _END, array)
    out["typed_deep_unclosed_array"] = Adversarial(_ARG + "[" * DEEP + _END, array)
    out["typed_deep_object"] = Adversarial(_ARG + '{"k": ' * DEEP + "1" + "}" * DEEP + _END, obj)
    out["typed_deep_string_encoded"] = Adversarial(_ARG + '"' + "[" * DEEP + '"' + _END, obj)
    return out


PROFILE = Profile(
    markers=(
        "<tool_call>",
        "</tool_call>",
        "<function=f>",
        "</function>",
        "<parameter=a>",
        "</parameter>",
        STOP,
        "<|im_start|>",
    ),
    snippets=(
        "<tool_call>\n<function=f>\n",
        "<parameter=a>\n",
        "\n</parameter>\n",
        "</function>\n</tool_call>",
        "<function=",
        "<parameter=",
        "<function=f>\n<parameter=a>\n1\n</parameter>\n</function>",
        '{"k": [1, true]}',
        "['x', None]",
        "None",
        "True",
        "1e5",
        "0042",
    ),
    call_closer="</tool_call>",
    plain_text=PLAIN_TEXT,
    broken_block="<tool_call>\noops\n</tool_call>",
    adversarial=_adversarial,
    grammar_forbid=(),
)
