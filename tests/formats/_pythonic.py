"""What the Python-list formats' profiles share (``gemma3_tool_code``, ``deepseek_pythonic``, ``lfm2``,
``llama4_pythonic``): calls written ``[name(key=value, ...)]``."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

import strategies
from hypothesis import assume
from hypothesis import strategies as st
from hypothesis.strategies import DrawFn

import codec
from codec import jinja
from codec.formats.gemma3_tool_code import Gemma3ToolCode
from codec.schema import tool_parameters, violations
from codec.wire._call_list_python import render_python, typed_arguments
from formats import DEEP, MANY, Message, N, RoundTrip, Tools

# --------------------------------------------------------------------------- adversarial inputs

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
        "code_in_brackets": "[f(x) for x in y] [open(p, mode='r')] [name(arg=value)] [g(k=True" * (N // 60),
        "brackets_before_long_keywords": ("[f(" + "k" * 15 + " " * 2 + "x ") * (N // 22),
        "brackets_before_many_blanks": ("[f(" + " " * 8 + "x ") * (N // 14),
        "long_names_before_code": ("[" + "n" * 40 + "(x) ") * (N // 46),
        "code_fences": "```python\nx = [f(a=1)]\n```\n" * (N // 28),
        "unclosed_code_fence": "```python\n" + "[f(a=1)] <" * (N // 10),
        "code_fence_openers": "```python " * (N // 10),
        "inline_code_calls": "`[f(a=1)]` and `[g(b='x')]` " * (N // 28),
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
        "many_nested_line_breaks": calls("f(a=[" + ", ".join('"x\ny"' for _ in range(MANY // 8)) + "])"),
        "many_numbers_out_of_range": calls("f(" + ", ".join(f"k{i}=1e999" for i in range(MANY // 12)) + ")"),
    }


#: Snippets of Python values both Python-list formats' generated inputs are made of.
SNIPPETS = ("True", "null", "(", ")", "[", "]", "{", "}", ":", ",")


# --------------------------------------------------------------------------- round trip

GEMMA3 = codec.get_format("gemma3_tool_code")
CORRECTED = Gemma3ToolCode(corrected=True)
DEEPSEEK = codec.get_format("deepseek_pythonic")
LFM2 = codec.get_format("lfm2")
LLAMA4 = codec.get_format("llama4_pythonic")
G3_STOP, DS_STOP, LFM2_STOP, L4_STOP = "<end_of_turn>", "<|end_of_sentence|>", "<|im_end|>", "<|eot|>"
FENCE = "```tool_code\n"

# --------------------------------------------------------------------------- what each format can carry

#: A keyword or tool name as the grammar reads it (``NAME``): an ASCII letter or ``_``, then word characters,
#: ``-`` and ``.``.
_NAME = re.compile(r"[A-Za-z_][\w\-.]*")
_WS = r"[ \t\r\n]"
_KEYWORD = r"[A-Za-z_][\w\-.]{0,15}(?![\w\-.])"
_OPENS = rf"{_WS}{{0,4}}[A-Za-z_][\w\-.]{{0,31}}{_WS}{{0,4}}\("
#: What a call someone meant starts with after its ``(`` (past the bounds, a call too).
_ATTEMPT = (
    rf"(?:{_WS}{{0,8}}\)|{_WS}{{0,8}}{_KEYWORD}{_WS}{{0,2}}=(?!=)(?:{_WS}{{0,2}}(?:True|False|None|true|false|null)"
    rf"|{_WS}{{0,2}}(?![A-Za-z_ \t\r\n])|{_WS}{{3}})|{_WS}{{0,8}}[A-Za-z_][\w\-.]{{16}}"
    rf"|{_WS}{{0,8}}{_KEYWORD}{_WS}{{3}}|{_WS}{{9}})"
)
#: Where a ``[`` opens a call list (the grammars' free-text lookahead): ``[``, a name of up to 64 characters,
#: ``(``; with a name of up to 32, only where a call someone meant follows (:data:`_ATTEMPT`).
_CALL_START = re.compile(
    rf"\[(?={_WS}{{0,4}}[A-Za-z_][\w\-.]{{0,63}}{_WS}{{0,4}}\()(?:(?!{_OPENS})|(?={_OPENS}{_ATTEMPT}))"
)
#: Where a deepseek raw string closes: a ``"`` followed by ``, NAME=``, ``,)`` or a ``)`` that no ``"`` follows
#: (RAW_STRING's lookahead).
_RAW_CLOSE = re.compile(
    r'"(?=[ \t\r\n]{0,16}(?:,[ \t\r\n]{0,16}(?:[A-Za-z_][\w\-.]{0,63}[ \t\r\n]{0,16}=|\))|\)(?![ \t\r\n]{0,16}")))'
)
#: A key that glues onto a number written just before it when nothing separates them (``a=1e1=2``).
_EXPONENT_KEY = re.compile(r"[eE][+-]?\d")


def key_ok(key: str) -> bool:
    """A keyword both formats carry: a ``NAME``. Keywords are written bare (``key=value``), so a key
    holding a space, ``=``, ``:``, a quote..., an empty key, or one starting with a digit, ``-`` or a
    non-ASCII letter (``été``) cannot be read back."""
    return _NAME.fullmatch(key) is not None


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def seed_args_ok(arguments: dict[str, Any]) -> bool:
    """Gemma 3's seed writes keyword arguments with no separator (G1): a key like ``e1`` or ``E-5`` right
    after a number reads as the number's exponent (``a=1e1=2``), which the text cannot tell apart."""
    pairs = list(arguments.items())
    return not any(_is_number(value) and _EXPONENT_KEY.match(key) for (_, value), (key, _) in pairwise(pairs))


#: A backslash escape that a deepseek string's escaped reading takes (ESC_STRING).
_ESCAPE = re.compile(r'\\(?:["\\nrt]|u[0-9a-fA-F]{4})')


def raw_string_ok(text: str) -> bool:
    """A deepseek top-level string the format carries: written ``"`` + value + ``"`` with nothing escaped
    (D1), it ends at the first ``"`` followed by ``, NAME=``, ``,)`` or a ``)`` that no ``"`` follows, so a
    value holding ``", b=``, ``",)`` or ``") x`` ends early. The value's own closing quote always follows
    it, so the test looks at the value and that quote. A value holding what reads as a JSON escape
    (``\\n``, ``\\"``, ``\\\\``...) may be read as escaped text, which wins where it reads (it is what
    models mean by it), so it does not come back either. Nested strings are JSON and carry anything."""
    # (the added quote, followed by nothing, never closes)
    return _RAW_CLOSE.search(text + '"') is None and _ESCAPE.search(text) is None


def _gemma3_content_ok(text: str, with_calls: bool, with_reasoning: bool) -> bool:
    """Gemma 3 content: dropped beside calls (G6, so anything goes there); otherwise trimmed (the
    generated content is trimmed first) and without what starts markup, as nothing is escaped:
    ``<end_of_turn>``, a ```` ```tool_code ```` fence opener, or ``[NAME(`` (a bare call list)."""
    if with_calls:
        return True
    return (
        text == text.strip() and G3_STOP not in text and "```tool_code" not in text and _CALL_START.search(text) is None
    )


#: A markdown code fence with a language tag, and its closer (the grammars' CODE_OPEN and CODE_CLOSE).
_CODE_OPEN = re.compile(r"```[ \t]{0,16}(?!tool_code)[A-Za-z0-9_+\-.#]{1,32}[ \t]{0,16}(?=\r?\n)")
_CODE_CLOSE = re.compile(r"\n {0,3}```")


def ends_in_code_fence(text: str) -> bool:
    """Whether ``text`` ends inside a code fence it opens (``...```python\\nx = 1``): what follows it is code."""
    i = 0
    while (opener := _CODE_OPEN.search(text, i)) is not None:
        closer = _CODE_CLOSE.search(text, opener.end())
        if closer is None:
            return True
        i = closer.end()
    return False


def _deepseek_content_ok(text: str, with_calls: bool, with_reasoning: bool) -> bool:
    """DeepSeek content, written as is (never trimmed, glued before the calls, D4). Excluded:
    ``<|end_of_sentence|>`` (the stop token), ``[NAME(`` (a call list), ``</think>`` (the renderer
    splits content there, D7); ``<think>`` at the start (after blanks) when there is no reasoning (it
    opens reasoning); a line break at the start after reasoning (``</think>`` swallows the line
    breaks that follow it, as the template writes ``</think>\\n\\n``); before calls, an unclosed code
    fence (the calls would be code in it)."""
    return (
        DS_STOP not in text
        and _CALL_START.search(text) is None
        and "</think>" not in text
        and not (not with_reasoning and text.lstrip(" \t\r\n").startswith("<think>"))
        and not (with_reasoning and text.startswith("\n"))
        and not (with_calls and ends_in_code_fence(text))
    )


def _lfm2_content_ok(text: str, with_calls: bool, with_reasoning: bool) -> bool:
    """LFM2 content, written as is after the reasoning and before the calls. Excluded: the stop token, the
    calls' opener, ``[NAME(`` (a call list), ``</think>`` (it ends reasoning); ``<think>`` at the start
    (after blanks) when there is no reasoning (it opens reasoning); line breaks at the start after
    reasoning (``</think>`` takes those after it); before calls, an unclosed code fence (the calls would
    be code in it) and the tag the template moves after the calls (L6)."""
    return (
        LFM2_STOP not in text
        and "<|tool_call_start|>" not in text
        and _CALL_START.search(text) is None
        and "</think>" not in text
        and not (not with_reasoning and text.lstrip(" \t\r\n").startswith("<think>"))
        and not (with_reasoning and text.startswith("\n"))
        and not (with_calls and (ends_in_code_fence(text) or text.endswith("CONTINUE_FINAL_MESSAGE_TAG ")))
    )


def _lfm2_reasoning_ok(text: str) -> bool:
    """LFM2 reasoning, written ``<think>`` + reasoning + ``</think>``: without ``</think>``, and without a
    line break at either end (the family reads one there as the markers' layout)."""
    return "</think>" not in text and not text.startswith("\n") and not text.endswith("\n")


def _llama4_content_ok(text: str, with_calls: bool, with_reasoning: bool) -> bool:
    """Llama 4 content, written as is before the calls. Excluded: the stop token, ``[NAME(`` (a call list),
    the code-interpreter tags (read around a list), a ``{`` at the start, blanks aside (a JSON call
    object there is read as a call); before calls, an unclosed code fence."""
    return (
        L4_STOP not in text
        and not text.lstrip(" \t\r\n").startswith("{")
        and _CALL_START.search(text) is None
        and "<|python_start|>" not in text
        and "<|python_end|>" not in text
        and not (with_calls and ends_in_code_fence(text))
    )


def _llama4_args_ok(arguments: dict[str, Any]) -> bool:
    """Every Llama 4 value is written ``"`` + ``str(value)`` + ``"`` with nothing escaped: its text must
    read back as a raw string does (:func:`raw_string_ok`)."""
    return all(raw_string_ok(render_python(value, "python_str")[1:-1]) for value in arguments.values())


@dataclass(frozen=True)
class Spec:
    """One Python-list format as these tests see it."""

    fmt: codec.Format
    #: Whether a top-level string argument comes back (nested strings are JSON in both formats).
    string_ok: Callable[[str], bool]
    #: Whether a whole argument dict comes back (beyond its keys and strings).
    args_ok: Callable[[dict[str, Any]], bool]
    content_ok: Callable[[str, bool, bool], bool]
    #: Content as the reply keeps it, given the message content (None: dropped) and whether there are calls.
    expected_content: Callable[[str | None, bool], str]
    #: Reasoning as the reply keeps it ("" when the format drops it).
    expected_reasoning: Callable[[str], str]
    reasoning_ok: Callable[[str], bool]
    #: The stop token after a reply with calls.
    stop: str
    #: Whether generated content is trimmed first (a template that trims it: content with blanks at
    #: either end does not come back).
    strips_content: bool = True
    #: Whether every value is written as text and comes back typed by the tool's schema (Llama 4).
    typed: bool = False


def _gemma3_spec(fmt: codec.Format, *, seed: bool) -> Spec:
    return Spec(
        fmt=fmt,
        string_ok=lambda text: True,  # tojson: every string is JSON-escaped
        args_ok=seed_args_ok if seed else (lambda arguments: True),
        content_ok=_gemma3_content_ok,
        expected_content=lambda content, with_calls: "" if with_calls else (content or "").strip(),
        expected_reasoning=lambda reasoning: "",  # the template ignores reasoning (G8)
        reasoning_ok=lambda text: True,
        stop=G3_STOP,
    )


SPECS: dict[str, Spec] = {
    "gemma3_tool_code": _gemma3_spec(GEMMA3, seed=True),
    "gemma3_corrected": _gemma3_spec(CORRECTED, seed=False),
    "deepseek_pythonic": Spec(
        fmt=DEEPSEEK,
        string_ok=raw_string_ok,
        args_ok=lambda arguments: True,
        content_ok=_deepseek_content_ok,
        expected_content=lambda content, with_calls: content or "",
        # think_block strips the reasoning's surrounding line breaks
        expected_reasoning=lambda reasoning: reasoning.strip("\n"),
        # '</think>' ends the reasoning
        reasoning_ok=lambda text: "</think>" not in text,
        stop=DS_STOP,
        strips_content=False,
    ),
    "lfm2": Spec(
        fmt=LFM2,
        string_ok=lambda text: "'" not in text and "\\" not in text,
        args_ok=lambda arguments: True,
        content_ok=_lfm2_content_ok,
        expected_content=lambda content, with_calls: content or "",
        expected_reasoning=lambda reasoning: reasoning,
        reasoning_ok=_lfm2_reasoning_ok,
        stop=LFM2_STOP,
        strips_content=False,
    ),
    "llama4_pythonic": Spec(
        fmt=LLAMA4,
        string_ok=raw_string_ok,
        args_ok=_llama4_args_ok,
        content_ok=_llama4_content_ok,
        expected_content=lambda content, with_calls: content or "",
        expected_reasoning=lambda reasoning: "",  # the template writes no reasoning
        reasoning_ok=lambda text: True,
        stop=L4_STOP,
        strips_content=False,
        typed=True,
    ),
}
NAMES = list(SPECS)


def arguments_ok(spec: Spec, arguments: dict[str, Any]) -> bool:
    return (
        all(key_ok(key) for key in arguments)
        and all(spec.string_ok(value) for value in arguments.values() if isinstance(value, str))
        and spec.args_ok(arguments)
    )


# --------------------------------------------------------------------------- strategies

#: Keywords beyond ``strategies.names()``: '-' and '.', a non-ASCII letter after the first, keywords that
#: look like literals, and bad ones (spaces, punctuation, leading digit or '-', empty, non-ASCII first).
_keys = st.one_of(
    strategies.names(),
    st.sampled_from(
        ("a-b", "x.y", "preço", "e1", "E5", "e", "e-1", "None", "true", "False", "日付", "1a", "a b", "", "-x", "a=b")
    ),
)
#: Tool names with '-' and '.' as well (MCP-style).
_tool_names = st.one_of(strategies.names(), st.sampled_from(("my-tool", "mcp.fs.read_file", "a.b-c", "None")))
#: What a string value must carry verbatim: quotes, backslashes, line breaks, brackets, separators,
#: the formats' markers, and the pieces that make a deepseek raw string end early.
RAW_PIECES = (
    '"',
    "'",
    "\\",
    '\\"',
    "\\n",
    "\n",
    "\r\n",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    ",",
    ", b=",
    "=",
    " ",
    "é",
    "🙂",
    '", b=',
    '")',
    '" )',
    "```",
    FENCE,
    G3_STOP,
    DS_STOP,
    "<think>",
    "</think>",
    "[f(a=1)]",
    "True",
    "null",
    "1e+20",
)
_raw_strings = st.lists(st.sampled_from(RAW_PIECES), max_size=8).map("".join)
_values = st.one_of(
    strategies.json_values(6),
    _raw_strings,
    st.lists(_raw_strings, max_size=3),
    st.dictionaries(_raw_strings, _raw_strings, max_size=2),
)


@st.composite
def _free_arguments(draw: DrawFn, spec: Spec) -> dict[str, Any]:
    """Arguments without a schema: free JSON values and raw strings under odd keys, then cleaned of what
    the format cannot carry (see :func:`arguments_ok`), entry by entry in order."""
    drawn = draw(strategies.arguments())
    drawn.update(draw(st.dictionaries(_keys, _values, max_size=4)))
    arguments: dict[str, Any] = {}
    for key, value in drawn.items():
        if arguments_ok(spec, {**arguments, key: value}):
            arguments[key] = value
    return arguments


@st.composite
def messages(draw: DrawFn, name: str, *, with_tools: bool) -> tuple[dict[str, Any], list[dict[str, Any]] | None]:
    """An assistant message with 0-3 calls, content (sometimes), reasoning (sometimes), and its tools (or None).

    With tools, arguments fit each tool's schema; without, they are free. Only what the format carries
    is drawn (the exclusions of its :class:`Spec`).
    """
    spec = SPECS[name]
    tools = draw(strategies.tools()) if with_tools else None
    calls = []
    for _ in range(draw(st.sampled_from((1, 0, 1, 2, 3, 2)))):
        if tools:
            function = draw(st.sampled_from(tools))["function"]
            tool_name, parameters = function["name"], function.get("parameters")
            arguments = draw(strategies.arguments(parameters))
            assume(arguments_ok(spec, arguments) and not violations(arguments, parameters or {}))
        else:
            tool_name, arguments = draw(_tool_names), draw(_free_arguments(spec))
        calls.append({"type": "function", "function": {"name": tool_name, "arguments": arguments}})
    reasoning = draw(st.one_of(st.none(), strategies.texts(5)))
    assume(reasoning is None or spec.reasoning_ok(reasoning))
    content = draw(st.one_of(st.none(), strategies.texts(6)))
    if content is not None and spec.strips_content:
        content = content.strip()
    assume(content is None or spec.content_ok(content, bool(calls), bool(reasoning)))
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if reasoning is not None:
        message["reasoning_content"] = reasoning
    if calls:
        message["tool_calls"] = calls
    return message, tools


def round_trip(name: str) -> RoundTrip:
    """The round trip of the Python-list format ``name`` of :data:`SPECS`."""
    spec = SPECS[name]

    def arguments(call: dict[str, Any], tools: Tools) -> dict[str, Any]:
        given: dict[str, Any] = call["function"]["arguments"]
        if not spec.typed:
            return given
        declared = {tool["function"]["name"]: tool for tool in tools or ()}
        tool = declared.get(call["function"]["name"])
        written = {key: render_python(value, "python_str")[1:-1] for key, value in given.items()}
        return typed_arguments(written, tool_parameters(tool) if tool is not None else None)

    def expected(message: Message, tools: Tools) -> dict[str, Any]:
        calls = message.get("tool_calls") or []
        return {
            "content": spec.expected_content(message["content"], bool(calls)),
            "reasoning": spec.expected_reasoning(message.get("reasoning_content") or ""),
            "tool_calls": [{"name": c["function"]["name"], "arguments": arguments(c, tools)} for c in calls],
        }

    return RoundTrip(
        messages=lambda with_tools: messages(name, with_tools=with_tools),
        expected=expected,
        keeps_key_order=False,
        fmt=spec.fmt,
    )


# --------------------------------------------------------------------------- decode


def linked(expected: dict[str, Any]) -> dict[str, Any]:
    """``expected`` with each tool result given the id and name of the call it answers, in call order, as
    decode links them (the prompts of both formats carry neither, so linking never changes a rendering)."""
    calls: list[dict[str, Any]] = []
    for message in expected["messages"]:
        if message["role"] != "tool":
            calls = list(message.get("tool_calls") or []) if message["role"] == "assistant" else []
        elif calls:
            call = calls.pop(0)
            message.setdefault("tool_call_id", call["id"])
            message.setdefault("name", call["function"]["name"])
    return expected


def message_texts(case: dict[str, Any]) -> Iterator[str]:
    """Every text a case's messages hold: contents, text parts, reasoning, top-level string arguments."""
    for message in case["messages"]:
        content = message.get("content")
        if isinstance(content, str):
            yield content
        elif isinstance(content, list):
            yield from (part["text"] for part in content if isinstance(part.get("text"), str))
        for key in jinja.REASONING_KEYS:
            if isinstance(message.get(key), str):
                yield message[key]
        for call in message.get("tool_calls") or ():
            arguments = call["function"]["arguments"]
            if isinstance(arguments, dict):
                yield from (value for value in arguments.values() if isinstance(value, str))


def expected_calls(calls: list[dict[str, Any]], ids: Iterator[int], *, strings: str) -> list[dict[str, Any]]:
    """Calls as they come back: ids ``call_0``, ``call_1``... across the conversation (no prompt carries them).

    ``strings``: what JSON-string ``arguments`` come back as: ``"kept"`` (Gemma 3 writes their
    characters, G7) or ``"empty"`` (DeepSeek renders only ``""``, as ``f()``).
    """
    out = []
    for call in calls:
        arguments = call["function"]["arguments"]
        if isinstance(arguments, str):
            arguments = arguments if strings == "kept" and arguments else {}
        function = {"name": call["function"]["name"], "arguments": arguments}
        out.append({"id": f"call_{next(ids)}", "type": "function", "function": function})
    return out
