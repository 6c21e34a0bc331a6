"""Format-independent property tests, run for every registered format (hypothesis, derandomized).

* bad input: arbitrary text (junk, the format's markers and their fragments, slices of its golden
  replies), with or without tools, never raises in lenient mode and raises nothing but
  ``ParseError`` in strict mode, exactly when lenient parsing reports issues;
* chunking invariance: any chunking of arbitrary text, and of replies rendered from generated
  messages, gives exactly the whole parse, with append-only events that rebuild the message;
* truncation: every prefix of every golden reply parses without raising, and a call that is
  complete before the cut is kept unchanged;
* adversarial inputs (per format): complete, with the lexer's ``stream.work`` linear in the length.

What is particular to a format lives in its :class:`Profile` (markers, syntax snippets, plain text,
adversarial inputs); a registered format without one fails ``test_every_format_has_a_profile``.
Known parser bugs are ``xfail(strict=True)``, so that a fix shows up as XPASS: per adversarial input
(``Adversarial.xfail``, ``Profile.generic_xfail``) or per generic test (``Profile.test_xfail``). A bug
that a whole family of inputs hits (a crash on every reply cut inside reasoning) is instead left out
of the generic tests by ``Profile.known_bugs`` and reproduced by an xfail test of the format's module.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import pytest
import strategies
from harness import (
    CHUNK,
    WHOLE_WORK,
    WORK_SLACK,
    GoldenCase,
    assert_append_only,
    assert_streams_like,
    chunked_budget,
    examples,
    golden_formats,
    load_golden,
    parse_char_by_char,
    parse_chunked,
    parse_whole,
    run_chunks,
    split,
)
from hypothesis import assume, given
from hypothesis import strategies as st
from hypothesis.strategies import DrawFn

import codec
from codec.models import TextDelta, ToolCallEnd

FORMATS = codec.formats()


# --------------------------------------------------------------------------- per-format profiles


@dataclass(frozen=True)
class Adversarial:
    """One adversarial reply: its text, the tools to parse it with, and a known bug (xfail reason)."""

    text: str
    tools: list[dict[str, Any]] | None = None
    xfail: str | None = None
    raises: type[BaseException] | None = None  # what the known bug raises, if anything


@dataclass(frozen=True)
class Profile:
    """What the format-independent tests need to know about one format."""

    #: Whole markers of the format; their cut fragments are derived.
    markers: tuple[str, ...]
    #: Pieces of the format's call syntax (a call's start, a value's start, a whole small call...).
    snippets: tuple[str, ...]
    #: Marks the end of a call: in a golden reply holding exactly one per call, the k-th one ends call k.
    call_closer: str
    #: Text the stream must pass through at once (nothing in it can start a marker); None: not known yet.
    plain_text: str | None
    #: A call block the grammar rejects, kept as content (None: not known yet).
    broken_block: str | None
    adversarial: Callable[[], dict[str, Adversarial]] = field(repr=False, default=dict)
    #: Known bugs (xfail reasons) of the format on the adversarial inputs every format gets.
    generic_xfail: dict[str, str] = field(default_factory=dict)
    #: Known bugs (xfail reasons) of the format in a generic test, by the test's name without ``test_``
    #: (``"<name>/<golden case>"`` for the truncation tests, which run per golden case).
    test_xfail: dict[str, str] = field(default_factory=dict)
    #: Known parser bugs that whole families of inputs hit, as (reason, predicate on ``(text, prompt)``).
    #: The generic tests leave those inputs out, so that one known bug does not hide every other; a
    #: strict xfail test in the format's own module reproduces each bug (a fix shows up there as XPASS,
    #: and its entry here can then go).
    known_bugs: tuple[tuple[str, Callable[[str, str | None], bool]], ...] = field(repr=False, default=())


#: Size of the adversarial inputs: large enough that a quadratic cost dwarfs the linear budgets.
N = 40_000
_DEEP = 5_000  # well past the interpreter's recursion limit
IM_END = "<|im_end|>"
HERMES_OPEN, HERMES_CLOSE = "<tool_call>\n", "\n</tool_call>"
_HERMES_ARG = HERMES_OPEN + '{"name": "f", "arguments": {"a": '  # a call cut where the value of "a" starts


def _hermes_call(value: str) -> str:
    return _HERMES_ARG + value + "}}" + HERMES_CLOSE


def _hermes_adversarial() -> dict[str, Adversarial]:
    call = _hermes_call
    texts = {
        "deep_list_in_arguments": call("[" * _DEEP + "]" * _DEEP),
        "deep_object_in_arguments": call('{"k": ' * _DEEP + "1" + "}" * _DEEP),
        "deep_unclosed_in_arguments": _HERMES_ARG + "[" * _DEEP,
        "unterminated_string": _HERMES_ARG + '"' + "x" * N,
        "unterminated_string_with_markers": _HERMES_ARG + '"' + "</tool_call><|im_end|>" * (N // 22),
        "partial_call_markers": "<tool_call" * (N // 10),
        "partial_markers_after_newlines": "\n<tool_" * (N // 7),
        "braces_in_text": "{" * (N // 5),
        "braces_in_block": HERMES_OPEN + "{" * (N // 5),
        "quotes_in_block": HERMES_OPEN + '"' * N,
        "backslashes_odd": call('"' + "\\" * (N // 2 + 1) + '"'),
        "backslashes_even": call('"' + "\\" * (N // 2) + '"') + IM_END,
        "string_full_of_markers": call('"' + "</tool_call><tool_call>" * (N // 23) + '"'),
        "unclosed_reasoning": "<think>" + "pensando " * (N // 9),
        "many_calls": (call("1") + "\n") * (N // 60) + IM_END,
        "many_arguments": call("0, " + ", ".join(f'"k{i}": {i}' for i in range(N // 30))),
        "stop_tokens": IM_END * (N // 10),
        "python_literal_calls": (HERMES_OPEN + '{"name": "f", "arguments": {"a": True}}' + HERMES_CLOSE + "\n")
        * (N // 100),
        "empty_blocks": HERMES_OPEN * (N // 12),
    }
    return {name: Adversarial(text) for name, text in texts.items()}


_QWEN_CALL = "<tool_call>\n<function=f>\n"
_QWEN_ARG = _QWEN_CALL + "<parameter=a>\n"  # a call cut where the value of "a" starts
_QWEN_END = "\n</parameter>\n</function>\n</tool_call>"


def _qwen_param(key: str, value: str) -> str:
    return f"<parameter={key}>\n{value}\n</parameter>\n"


def _qwen_tool(kind: str) -> list[dict[str, Any]]:
    props = {"a": {"type": kind}, "s": {"type": "string"}, "n": {"type": "integer"}}
    return [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": props}}}]


def _qwen_adversarial() -> dict[str, Adversarial]:
    one = _QWEN_CALL + _qwen_param("a", "1") + "</function>\n</tool_call>"
    bare = "<function=f>\n" + _qwen_param("a", "1") + "</function>\n</tool_call>"
    texts = {
        "unterminated_value": _QWEN_ARG + "x" * N,
        "value_of_unconfirmed_closers": _QWEN_ARG + "\n</parameter>\nx" * (N // 15) + _QWEN_END,
        "value_of_closers_then_spaces": _QWEN_ARG + "\n</parameter>    x" * (N // 18) + _QWEN_END,
        "value_of_partial_closers": _QWEN_ARG + "\n</param" * (N // 8),
        "value_of_less_than_signs": _QWEN_ARG + "<" * N,
        "value_of_newlines": _QWEN_ARG + "\n" * N + _QWEN_END,
        "value_of_other_markers": _QWEN_ARG + "<tool_call></tool_call><|im_end|>" * (N // 33),
        "unclosed_function_head": "<tool_call>\n<function=" + "x" * N,
        "unclosed_parameter_head": _QWEN_CALL + "<parameter=" + "x" * N,
        # Kept small: each '<function=' on a line without '>' costs a regex scan to the end of the
        # line that stream.work does not count: quadratic time (100 KB of them take ~4 s), a known bug.
        "function_heads_without_end": "<function=" * 1_000,
        "partial_function_markers": "<function" * (N // 9),
        "partial_call_markers": "<tool_call" * (N // 10),
        "partial_markers_after_newlines": "\n<tool_" * (N // 7),
        "stop_tokens": IM_END * (N // 10),
        "orphan_closers": "</tool_call>" * (N // 12),
        "empty_blocks": "<tool_call>\n" * (N // 12),
        "many_calls": (one + "\n") * (N // 80) + IM_END,
        "many_bare_calls": (bare + "\n") * (N // 70),
        "many_broken_calls": (_QWEN_CALL + "junk\n</function>\n</tool_call>\n") * (N // 60),
        "many_parameters": _QWEN_CALL + "".join(_qwen_param(f"k{i}", str(i)) for i in range(N // 30)) + "</function>",
        "many_duplicates": _QWEN_CALL + _qwen_param("a", "x") * (N // 30) + "</function>",
    }
    out = {name: Adversarial(text) for name, text in texts.items()}
    # every '<parameter=' is refused once (a missing </parameter>) before the closer is inserted
    out["many_unclosed_parameters"] = Adversarial(_QWEN_CALL + "<parameter=a>\n1\n" * (N // 16))
    # Values typed by a schema: long and deep containers, long strings and numbers.
    array, obj = _qwen_tool("array"), _qwen_tool("object")
    out["typed_long_array"] = Adversarial(_QWEN_ARG + "[" + "1, " * (N // 3) + "1]" + _QWEN_END, array)
    out["typed_long_python_list"] = Adversarial(_QWEN_ARG + "[" + "'x', " * (N // 5) + "None]" + _QWEN_END, array)
    out["typed_long_string"] = Adversarial(_QWEN_CALL + "<parameter=s>\n" + "é" * N + _QWEN_END, array)
    out["typed_long_integer"] = Adversarial(_QWEN_CALL + "<parameter=n>\n" + "9" * 4_000 + _QWEN_END, array)
    # past Python's int-to-str limit (4300 digits): must stay a string, not raise
    out["typed_huge_integer"] = Adversarial(_QWEN_CALL + "<parameter=n>\n" + "9" * 5_000 + _QWEN_END, array)
    out["typed_deep_tuple"] = Adversarial(_QWEN_ARG + "(" * _DEEP + ")" * _DEEP + _QWEN_END, array)
    out["typed_deep_array"] = Adversarial(_QWEN_ARG + "[" * _DEEP + "]" * _DEEP + _QWEN_END, array)
    out["typed_deep_unclosed_array"] = Adversarial(_QWEN_ARG + "[" * _DEEP + _QWEN_END, array)
    out["typed_deep_object"] = Adversarial(_QWEN_ARG + '{"k": ' * _DEEP + "1" + "}" * _DEEP + _QWEN_END, obj)
    out["typed_deep_string_encoded"] = Adversarial(_QWEN_ARG + '"' + "[" * _DEEP + '"' + _QWEN_END, obj)
    return out


# ---- gemma4: <|tool_call>call:NAME{key:value,...}<tool_call|>, strings between <|"|> tokens
#: Size of the inputs made of many calls, which cost far more per character than text (events, salvage):
#: a quarter of N still puts quadratic work far over the linear budget.
_MANY = N // 4
G4_Q, G4_OPEN, G4_CLOSE, G4_TURN = '<|"|>', "<|tool_call>", "<tool_call|>", "<turn|>"
_G4_ARG = G4_OPEN + "call:f{a:"  # a call cut where the value of "a" starts


def _gemma4_call(value: str) -> str:
    return _G4_ARG + value + "}" + G4_CLOSE


def _gemma4_adversarial() -> dict[str, Adversarial]:
    call = _gemma4_call
    texts = {
        "unterminated_string": _G4_ARG + G4_Q + "x" * N,
        "unterminated_string_with_markers": _G4_ARG + G4_Q + "<tool_call|><turn|><|tool_call>" * (N // 31),
        "unterminated_json_string": _G4_ARG + '"' + "x" * N,
        "string_of_partial_quotes": call(G4_Q + '<|"' * (N // 3) + G4_Q),
        "partial_quotes_as_values": _G4_ARG + '<|"|' * (N // 4),
        "partial_call_markers": "<|tool_call" * (N // 11),
        "partial_markers_after_newlines": "\n<|tool_" * (N // 8),
        "bare_call_prefixes_on_lines": "\ncall:" * (N // 6),
        "prose_with_call_colon": "Please call: me, or call:back later.\n" * (N // 37),
        "unclosed_thought": "<|channel>thought\n" + "pensando " * (N // 9),
        "channel_markers": "<|channel><channel|>" * (N // 20),
        "stop_tokens": G4_TURN * (N // 7),
        "orphan_call_closers": G4_CLOSE * (N // 12),
        "deep_list": call("[" * _DEEP + "]" * _DEEP),
        "deep_object": call("{k:" * _DEEP + "1" + "}" * _DEEP),
        "deep_unclosed": _G4_ARG + "[" * _DEEP,
        "many_calls": (call("1") + "\n") * (_MANY // 25) + G4_TURN,
        "many_arguments": G4_OPEN + "call:f{" + ",".join(f"k{i}:{i}" for i in range(_MANY // 8)) + "}" + G4_CLOSE,
        "many_broken_calls": (G4_OPEN + "call:f{a:}" + G4_CLOSE + "\n") * (_MANY // 25),
        "bare_words": _G4_ARG + "word " * (N // 5) + "}" + G4_CLOSE,
    }
    return {name: Adversarial(text) for name, text in texts.items()}


# ---- the Python-list formats: [name(key=value, ...)]
_PY_ARG = "[f(a="  # a call cut where the value of "a" starts
#: Prose with brackets that open no call: citations, words, number lists, links.
_BRACKET_PROSE = "See [1], [note] and [a, b]; x[0] = [2] or [link](url). "


def _pythonic_adversarial(prefix: str, end: str, stop: str) -> dict[str, str]:
    """Inputs both Python-list formats get; ``prefix`` / ``end`` frame a call list (a fence, or nothing)."""

    def calls(body: str) -> str:
        return prefix + "[" + body + "]" + end

    return {
        "unterminated_string": prefix + _PY_ARG + '"' + "x" * N,
        "unterminated_single_quoted_string": prefix + _PY_ARG + "'" + "x" * N,
        "unterminated_string_with_markers": prefix + _PY_ARG + '"' + ("```" + stop + "[g(b=") * (N // 30),
        "unterminated_nested_string": prefix + _PY_ARG + '["' + "x" * N,
        "string_of_single_quotes": calls("f(a=" + "'" * N + ")"),
        "prose_with_brackets": _BRACKET_PROSE * (N // len(_BRACKET_PROSE)),
        "brackets_before_long_names": ("[" + "a" * 70 + " ") * (N // 72),
        "open_brackets": "[" * N,
        "open_calls": "[f(" * (N // 3),
        "calls_in_prose": "Try [f(x) or [g(y) later. " * (N // 25),
        "partial_stop_tokens": stop[:-1] * (N // len(stop)),
        "stop_tokens": stop * (N // len(stop)),
        "deep_list": calls("f(a=" + "[" * _DEEP + "]" * _DEEP + ")"),
        "deep_dict": calls("f(a=" + '{"k": ' * _DEEP + "1" + "}" * _DEEP + ")"),
        "deep_tuple": calls("f(a=" + "(" * _DEEP + ")" * _DEEP + ")"),
        "deep_unclosed": prefix + _PY_ARG + "[" * _DEEP,
        "many_calls": calls(", ".join(f"f{i}(a={i})" for i in range(_MANY // 12))),
        "many_arguments": calls("f(" + ", ".join(f"k{i}={i}" for i in range(_MANY // 8)) + ")"),
        "many_unseparated_arguments": calls("f(" + "".join(f'k{i}="v"' for i in range(_MANY // 8)) + ")"),
        "many_broken_calls": calls(", ".join("f(a=@)" for _ in range(_MANY // 8))),
        "many_unreadable_elements": calls(", ".join("oops" for _ in range(_MANY // 6))),
        "many_lists": (calls("f(a=1)") + "\n") * (_MANY // 12),
    }


_G3_FENCE, _G3_CLOSE, G3_STOP = "```tool_code\n", "\n```", "<end_of_turn>"


def _gemma3_adversarial() -> dict[str, Adversarial]:
    texts = _pythonic_adversarial(_G3_FENCE, _G3_CLOSE + G3_STOP, G3_STOP)
    texts |= {
        "backslashes_odd": _G3_FENCE + _PY_ARG + '"' + "\\" * (N // 2 + 1) + '")]',
        "backslashes_even": _G3_FENCE + _PY_ARG + '"' + "\\" * (N // 2) + '")]' + _G3_CLOSE + G3_STOP,
        "backticks": "`" * N,
        "partial_fence_openers": "```tool_cod" * (N // 11),
        "unclosed_fences": _G3_FENCE * (N // 13),
        "many_fences": (_G3_FENCE + "[f(a=1)]" + _G3_CLOSE + "\n") * (_MANY // 25) + G3_STOP,
        "bare_calls_in_fence": _G3_FENCE + "f(a=1)\n" * (_MANY // 7) + _G3_CLOSE,
    }
    return {name: Adversarial(text) for name, text in texts.items()}


DS_STOP = "<|end_of_sentence|>"


#: Snippets of Python values both Python-list formats' generated inputs are made of.
_PY_SNIPPETS = ("True", "null", "(", ")", "[", "]", "{", "}", ":", ",")


def _deepseek_adversarial() -> dict[str, Adversarial]:
    texts = _pythonic_adversarial("", DS_STOP, DS_STOP)
    # With raw strings, 'k0="v"k1="v"...' is one string waiting for its closing quote (a B6 case below).
    del texts["many_unseparated_arguments"]
    texts |= {
        "string_of_backslashes": _PY_ARG + '"' + "\\" * N + '")]' + DS_STOP,
        "think_closers": "</think>" * (N // 8),
        "think_openers_in_content": "x" + "<think>\n" * (N // 8),
        "reasoning_with_brackets": "<think>\n" + _BRACKET_PROSE * (N // len(_BRACKET_PROSE)) + "\n</think>\n\nok",
    }
    # A raw string: every '"' may close it, if ', NAME=' or ')' follows (a bounded lookahead).
    texts |= {
        "string_of_quotes": _PY_ARG + '"' * N + ")]",
        "string_of_almost_closers": _PY_ARG + '"' + '", b ' * (N // 5) + '")]' + DS_STOP,
        "string_of_long_almost_closers": _PY_ARG + '"' + ('", ' + "b" * 60 + " ") * (N // 64) + '")]',
        "json_document_in_string": _PY_ARG + '"' + '{"k": "v", "n": [1, "x"]}, ' * (N // 28) + '")]' + DS_STOP,
        "many_unseparated_arguments": "[f(" + "".join(f'k{i}="v"' for i in range(N // 8)) + ")]",
    }
    out = {name: Adversarial(text) for name, text in texts.items()}
    out["unclosed_reasoning"] = Adversarial("<think>\n" + "pensando " * (N // 9))
    return out


PROFILES: dict[str, Profile] = {
    "hermes": Profile(
        markers=("<tool_call>", "</tool_call>", IM_END, "<|im_start|>", "<think>", "</think>"),
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
        plain_text="Olá, tudo bem? Vou verificar isso agora mesmo",
        broken_block="<tool_call>\noops\n</tool_call>",
        adversarial=_hermes_adversarial,
    ),
    "qwen3_coder": Profile(
        markers=(
            "<tool_call>",
            "</tool_call>",
            "<function=f>",
            "</function>",
            "<parameter=a>",
            "</parameter>",
            IM_END,
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
        plain_text="Olá, tudo bem? Vou verificar isso agora mesmo",
        broken_block="<tool_call>\noops\n</tool_call>",
        adversarial=_qwen_adversarial,
    ),
    "gemma4": Profile(
        markers=(G4_OPEN, G4_CLOSE, "<call>", G4_TURN, "<|tool_response>", "<|channel>", "<channel|>", G4_Q),
        snippets=(
            "call:f{",
            "\ncall:f{",
            "call:f(",
            "call:",
            _gemma4_call(G4_Q + "x" + G4_Q),
            "<|channel>thought\n",
            "a:",
            "a=",
            G4_Q + "x" + G4_Q,
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
        call_closer=G4_CLOSE,
        plain_text="Olá, tudo bem? Vou verificar isso agora mesmo",
        broken_block=G4_OPEN + "call:f oops" + G4_CLOSE,
        adversarial=_gemma4_adversarial,
    ),
    "gemma3_tool_code": Profile(
        markers=(_G3_FENCE, _G3_CLOSE, "```", G3_STOP),
        snippets=("[f(", "f(", "[f(a=1)]", 'f(a="x"b=2)', ",g()", "a=", '"x"', "'x'", *_PY_SNIPPETS),
        call_closer=")",
        plain_text="Olá, tudo bem? Vou verificar isso agora mesmo",
        broken_block=_G3_FENCE + "oops" + _G3_CLOSE,
        adversarial=_gemma3_adversarial,
        known_bugs=(),
    ),
    "deepseek_pythonic": Profile(
        markers=(DS_STOP, "<think>", "</think>", "<|User|>", "<|Assistant|>"),
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
            *_PY_SNIPPETS,
        ),
        call_closer=")",
        plain_text="Olá, tudo bem? Vou verificar isso agora mesmo",
        # A call starts at its first argument or ')': a list whose call never starts is kept whole.
        broken_block="[oops(1)]",
        adversarial=_deepseek_adversarial,
        known_bugs=(),
    ),
}


#: What a format without a Profile gets: the generic checks, golden cases and rendered replies only.
DEFAULT_PROFILE = Profile(markers=(), snippets=(), call_closer="", plain_text=None, broken_block=None)


def profile(name: str) -> Profile:
    return PROFILES.get(name, DEFAULT_PROFILE)


def _params_for(test: str) -> list[Any]:
    """Every format as a parameter of the generic test ``test_<test>``, marked xfail (strict) where its
    Profile names a known bug in that test."""
    params = []
    for name in FORMATS:
        reason = profile(name).test_xfail.get(test)
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        params.append(pytest.param(name, marks=marks))
    return params


def hits_known_bug(name: str, text: str, prompt: str | None = None) -> bool:
    """Whether ``text`` hits a known parser bug of format ``name`` (see :attr:`Profile.known_bugs`)."""
    return any(hits(text, prompt) for _, hits in profile(name).known_bugs)


@cache
def adversarial(name: str) -> dict[str, Adversarial]:
    """The format's adversarial inputs, after those every format gets (plain text, newlines, '<',
    and its golden replies one after another)."""
    replies = "\n".join(case.text for case in golden(name) if not case.xfail)
    generic = {
        "plain_text": "Olá mundo, " * (N // 11),
        "newlines": "\n" * N,
        "less_than_signs": "<" * N,
    }
    if replies:
        generic["golden_replies_repeated"] = (replies + "\n") * (N // (len(replies) + 1) + 1)
    known = profile(name).generic_xfail
    return {**{k: Adversarial(v, xfail=known.get(k)) for k, v in generic.items()}, **profile(name).adversarial()}


def test_every_format_has_a_profile() -> None:
    """A new format runs the generic checks at once; its Profile and golden cases make them bite."""
    assert set(FORMATS) <= set(PROFILES), f"add a Profile for {sorted(set(FORMATS) - set(PROFILES))}"
    assert set(FORMATS) <= set(golden_formats()), f"add golden cases for {sorted(set(FORMATS) - set(golden_formats()))}"


# --------------------------------------------------------------------------- helpers


@contextmanager
def _nothing() -> Iterator[None]:
    yield


def check_strict(fmt: codec.Format, text: str, lenient: codec.ParseResult, **kwargs: Any) -> None:
    """Strict mode raises only ParseError, and does so exactly when lenient parsing reports issues."""
    try:
        strict = fmt.parse(text, strict=True, **kwargs)
    except codec.ParseError as exc:
        assert 0 <= exc.pos <= len(text)
        assert lenient.issues, f"strict mode raised {exc} but lenient parsing reports no issue"
        return
    assert not lenient.issues, f"strict mode accepted a reply with issues {[i.kind for i in lenient.issues]}"
    assert strict == lenient


@cache
def golden(name: str) -> tuple[GoldenCase, ...]:
    return tuple(load_golden(name))


@cache
def golden_tools(name: str) -> tuple[list[dict[str, Any]] | None, ...]:
    """None and every distinct tool list of the format's golden cases."""
    found: dict[str, list[dict[str, Any]]] = {}
    for case in golden(name):
        if case.tools is not None:
            found.setdefault(json.dumps(case.tools, sort_keys=True), case.tools)
    return (None, *found.values())


# --------------------------------------------------------------------------- bad input

_chars = st.characters(codec="utf-8")  # every code point but the surrogates
#: Junk any format may meet: quotes, escapes, brackets, literals, whitespace, control and wide characters.
JUNK = (
    '"',
    "'",
    "\\",
    "\\n",
    "\\u00e9",
    "{",
    "}",
    "[",
    "]",
    "(",
    ")",
    "<",
    ">",
    "|",
    "/",
    "=",
    ":",
    ",",
    "true",
    "True",
    "None",
    "null",
    "1",
    "-",
    "1e400",
    "NaN",
    " ",
    "\n",
    "\r\n",
    "\t",
    "\x00",
    "\u2028",
    "é",
    "🙂",
    "x",
)


def _cuts(markers: tuple[str, ...]) -> list[str]:
    """Every marker's proper prefixes and suffixes (a marker cut by a chunk boundary or a truncation)."""
    return sorted(
        {m[:k] for m in markers for k in range(1, len(m))} | {m[k:] for m in markers for k in range(1, len(m))}
    )


@cache
def bad_texts(name: str) -> st.SearchStrategy[str]:
    """Arbitrary replies for format ``name``: junk, its markers and their fragments, its call syntax,
    and slices of its golden replies."""
    markers = profile(name).markers
    texts = [case.text for case in golden(name) if case.text]

    @st.composite
    def golden_slice(draw: DrawFn) -> str:
        text = draw(st.sampled_from(texts))
        start = draw(st.integers(0, len(text) - 1))
        return text[start : start + draw(st.integers(1, 60))]

    pieces = st.sampled_from(JUNK + markers + profile(name).snippets + tuple(_cuts(markers)))
    options = [pieces, pieces, st.text(_chars, max_size=3)] + ([golden_slice()] if texts else [])
    piece = st.one_of(*options)
    return st.lists(piece, max_size=30).map("".join)


_sizes = st.lists(st.integers(1, 8), min_size=1, max_size=6)


@pytest.mark.parametrize("name", FORMATS)
@examples(60)
@given(data=st.data())
def test_arbitrary_text_never_raises(name: str, data: st.DataObject) -> None:
    fmt = codec.get_format(name)
    text = data.draw(bad_texts(name), label="text")
    assume(not hits_known_bug(name, text))
    tools = data.draw(st.sampled_from(golden_tools(name)), label="tools")
    lenient = fmt.parse(text, tools=tools)
    check_strict(fmt, text, lenient, tools=tools)


@pytest.mark.parametrize("name", FORMATS)
@examples(60)
@given(data=st.data())
def test_arbitrary_text_streams_like_it_parses(name: str, data: st.DataObject) -> None:
    fmt = codec.get_format(name)
    text = data.draw(bad_texts(name), label="text")
    assume(not hits_known_bug(name, text))
    tools = data.draw(st.sampled_from(golden_tools(name)), label="tools")
    sizes = data.draw(_sizes, label="sizes")
    whole = fmt.parse(text, tools=tools)
    run = parse_chunked(fmt, text, sizes, tools=tools)
    assert_streams_like(run, whole)
    with pytest.raises(codec.ParseError) if whole.issues else _nothing():
        parse_chunked(fmt, text, sizes, tools=tools, strict=True)


# --------------------------------------------------------------------------- rendered replies


@st.composite
def rendered_replies(draw: DrawFn, name: str) -> tuple[str, list[dict[str, Any]] | None]:
    """A reply that ``render_reply`` writes for a generated assistant message, and the tools to parse it with."""
    tools = draw(st.one_of(st.none(), strategies.tools()))
    message: dict[str, Any] = {"role": "assistant", "content": draw(st.one_of(st.none(), strategies.texts()))}
    if draw(st.integers(0, 3)):
        message["tool_calls"] = draw(strategies.tool_calls(tools, string_arguments=False))
    return codec.get_format(name).render_reply(message), tools


@pytest.mark.parametrize("name", FORMATS)
@examples(60)
@given(data=st.data())
def test_rendered_replies_stream_like_they_parse(name: str, data: st.DataObject) -> None:
    fmt = codec.get_format(name)
    reply, tools = data.draw(rendered_replies(name), label="reply")
    sizes = data.draw(st.one_of(st.just([1]), st.lists(st.integers(1, 16), min_size=1, max_size=8)), label="sizes")
    whole = fmt.parse(reply, tools=tools)
    run = parse_chunked(fmt, reply, sizes, tools=tools)
    assert_streams_like(run, whole)


# --------------------------------------------------------------------------- truncation


def _truncation_params(test: str) -> list[Any]:
    """Every golden case that is not a known parser bug, marked xfail (strict) where the format's Profile
    names a known bug of ``test_<test>`` on that case (``test_xfail["<test>/<case>"]``)."""
    params = []
    for name in FORMATS:
        for case in golden(name):
            if case.xfail:
                continue
            reason = profile(name).test_xfail.get(f"{test}/{case.name}")
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            params.append(pytest.param(case, id=case.id, marks=marks))
    return params


@pytest.mark.parametrize("case", _truncation_params("every_truncation_never_raises"))
def test_every_truncation_never_raises(case: GoldenCase) -> None:
    fmt = codec.get_format(case.format)
    closer = profile(case.format).call_closer
    full = fmt.parse(case.text, **case.kwargs())
    # When the reply holds exactly one closer per call, the k-th closer ends the k-th call.
    closers_end_calls = bool(closer) and case.text.count(closer) == len(full.tool_calls)
    for cut in range(len(case.text) + 1):
        prefix = case.text[:cut]
        if hits_known_bug(case.format, prefix, case.prompt):
            continue
        lenient = fmt.parse(prefix, **case.kwargs())
        check_strict(fmt, prefix, lenient, **case.kwargs())
        if closers_end_calls:
            done = prefix.count(closer)
            assert lenient.tool_calls[:done] == full.tool_calls[:done], f"a complete call changed at cut {cut}"


@pytest.mark.parametrize("case", _truncation_params("a_call_the_stream_finished_survives_truncation"))
def test_a_call_the_stream_finished_survives_truncation(case: GoldenCase) -> None:
    """Once the stream has sent a call's ToolCallEnd, a reply cut at that point still gives that call."""
    fmt = codec.get_format(case.format)
    stream = fmt.stream(**case.kwargs())
    ended: list[tuple[int, ToolCallEnd]] = []
    for fed, char in enumerate(case.text, 1):
        ended += [(fed, e) for e in stream.feed(char) if isinstance(e, ToolCallEnd)]
    for fed, end in ended:
        for cut in range(fed, len(case.text) + 1, max(1, (len(case.text) - fed) // 8)):
            if hits_known_bug(case.format, case.text[:cut], case.prompt):
                continue
            calls = fmt.parse(case.text[:cut], **case.kwargs()).tool_calls
            assert calls[end.index] == end.call, f"call {end.index} (ended after {fed} chars) changed at cut {cut}"


# --------------------------------------------------------------------------- lossless


@pytest.mark.parametrize("name", _params_for("rejected_block_is_kept_verbatim"))
def test_rejected_block_is_kept_verbatim(name: str) -> None:
    fmt = codec.get_format(name)
    block = profile(name).broken_block
    if block is None:
        pytest.skip(f"{name} has no Profile.broken_block")
    text = "Sure.\n" + block
    result = fmt.parse(text)
    assert [i.kind for i in result.issues] == ["invalid_tool_call"]
    assert result.content == text


# --------------------------------------------------------------------------- adversarial inputs, linear work


def _adversarial_params() -> list[Any]:
    params = []
    for name in FORMATS:
        for key, entry in adversarial(name).items():
            marks = [pytest.mark.xfail(strict=True, reason=entry.xfail, raises=entry.raises)] if entry.xfail else []
            params.append(pytest.param(name, key, id=f"{name}/{key}", marks=marks))
    return params


@pytest.mark.parametrize(("name", "key"), _adversarial_params())
def test_adversarial_input_completes_in_linear_work(name: str, key: str) -> None:
    fmt = codec.get_format(name)
    entry = adversarial(name)[key]
    text, tools = entry.text, entry.tools
    whole = parse_whole(fmt, text, tools=tools)
    assert whole.work <= WHOLE_WORK * len(text) + WORK_SLACK, f"whole parse: work {whole.work} for {len(text)} chars"
    chunked = parse_chunked(fmt, text, CHUNK, tools=tools)
    assert chunked.work <= chunked_budget(fmt, len(text)), f"{CHUNK}-char chunks: work {chunked.work}"
    assert chunked.result == whole.result
    assert_append_only(chunked.events, chunked.result)
    with pytest.raises(codec.ParseError) if whole.result.issues else _nothing():
        fmt.parse(text, tools=tools, strict=True)


@pytest.mark.parametrize("name", FORMATS)
def test_work_counter_grows_with_the_input(name: str) -> None:
    """Guard for the linear-work assertions: the counter must really count the characters lexed."""
    fmt = codec.get_format(name)
    small, big = "a" * 1_000, "a" * 10_000
    assert parse_whole(fmt, small).work >= len(small)
    assert parse_chunked(fmt, big, 4).work >= len(big)


# --------------------------------------------------------------------------- streaming basics


@pytest.mark.parametrize("name", _params_for("text_that_cannot_start_a_marker_is_not_held_back"))
def test_text_that_cannot_start_a_marker_is_not_held_back(name: str) -> None:
    stream = codec.get_format(name).stream()
    text = profile(name).plain_text
    if text is None:
        pytest.skip(f"{name} has no Profile.plain_text")
    events = stream.feed(text)
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == text


@pytest.mark.parametrize("name", FORMATS)
def test_run_chunks_accepts_any_iterable(name: str) -> None:
    """Harness self-check: chunks from a generator, empty chunks and char-by-char all agree."""
    fmt = codec.get_format(name)
    if not golden(name):
        pytest.skip(f"{name} has no golden cases")
    case = max(golden(name), key=lambda c: (len(c.expected["tool_calls"]), -len(c.expected["issues"])))
    whole = fmt.parse(case.text, **case.kwargs())
    assert whole.tool_calls
    assert run_chunks(fmt, iter(split(case.text, [0, 5, 0, 2])), **case.kwargs()).result == whole
    assert parse_char_by_char(fmt, case.text, **case.kwargs()).result == whole
