"""The ``gemma4`` test profile: ``<|tool_call>call:NAME{key:value,...}<tool_call|>``, strings between
``<|"|>`` tokens."""

from __future__ import annotations

import re
from typing import Any

import strategies
from hypothesis import assume
from hypothesis import strategies as st
from hypothesis.strategies import DrawFn

from codec.schema import violations
from formats import DEEP, MANY, PLAIN_TEXT, Adversarial, Decode, Message, N, Profile, RoundTrip, Tools

Q, OPEN, CLOSE, TURN = '<|"|>', "<|tool_call>", "<tool_call|>", "<turn|>"
RESPONSE, THOUGHT, CHANNEL_CLOSE = "<|tool_response>", "<|channel>thought\n", "<channel|>"
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
        # strings: which <|"|>, quote or brace closes one is decided by a bounded lookahead
        "unopened_string": _ARG + "word, {x} " * (N // 10) + Q + "}" + CLOSE,
        "unopened_string_never_closed": _ARG + "line\n" * (N // 5),
        "unquoted_arguments": _ARG + "x,k:" * (N // 4) + "}",
        "quote_tokens_in_a_string": call(Q + ("x" + Q) * (N // 6) + ")"),
        "quote_tokens_back_to_back": call(Q + Q * (N // 5)),
        "quotes_and_braces_in_a_string": call(Q + "\"'}) ," * (N // 6) + Q),
        "quote_closers_undecided": call(Q + '" } <tool_call' * (N // 14) + Q),
        "mixed_quotes_unclosed": _ARG + "'" + "x" * N,
        "mixed_quotes_long": _ARG + '"' + "x, " * (N // 3) + Q + "}" + CLOSE,
        "literals_followed_by_text": _ARG + "true 1 None " * (N // 12) + Q + "}" + CLOSE,
        "arguments_without_commas": _ARG + (Q + "x" + Q + "k:") * (N // 13) + "1}" + CLOSE,
        # call:NAME{ inside a line of prose: read as a call only for a declared tool
        "inline_calls_on_one_line": "See " + "call:f{a:1} " * (MANY // 12),
        "inline_call_heads": "See " + "call:f{" * (N // 7),
        "inline_call_on_a_long_line": "See call:f{a:" + "y" * N,
        "call_prefixes": "a cal c ca call " * (N // 16),
    }
    declared = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
    with_tools = {"inline_calls_on_one_line", "inline_call_heads", "inline_call_on_a_long_line"}
    found = {name: Adversarial(text) for name, text in texts.items()}
    found |= {f"{name}_declared": Adversarial(texts[name], tools=declared) for name in sorted(with_tools)}
    return found


# --------------------------------------------------------------------------- what the format can carry

#: A bare key or tool name as the grammar reads it (``NAME``).
_NAME = re.compile(r"\w[\w\-.]*")
#: Where ``call:NAME{`` / ``call:NAME(`` may start a call: at the start of the text or of a line, and
#: anywhere when NAME is a declared tool.
_BARE_CALL = re.compile(r"call:[A-Za-z_][\w\-.]*[{(]")
#: Where a call ends, for the lookahead that decides whether a quote or a brace ends a string.
_CALL_END = r"[ \t\r\n]{0,2}(?:<tool_call\|>|<\|tool_response>|<turn\|>|<\|tool_call>|<call>|call:)"
#: A quote, or a brace, that a string value may not hold: what follows it reads as the end of the call.
_ENDS_A_STRING = re.compile(rf"""["'](?:[ \t\r\n]{{0,2}}[}})])?{_CALL_END}|[}})]{_CALL_END}""")


def string_ok(text: str) -> bool:
    """A string value the format carries: anything but ``<|"|>``, and quotes or braces followed by
    what ends a call.

    Strings are pasted raw between ``<|"|>`` tokens with no escape mechanism (FORMATS.md Q1). A
    ``<|"|>`` inside one is read as text where structure does not follow it, and reported
    (``quote_in_string``), or ends it where structure follows (``a<|"|>,b:1`` reads as ``a``). A
    ``"`` or ``'`` followed by the end of the call (``"}<tool_call|>``) closes a string opened with
    ``<|"|>`` (``mixed_quotes``), and so does a ``}`` followed by it (``missing_close_quote``).
    """
    return Q not in text and _ENDS_A_STRING.search(text) is None


def key_ok(key: str) -> bool:
    """A key the format carries: an identifier, ASCII letter or ``_`` first, then word characters, ``-``, ``.``.

    Call arguments and their nested objects are written with bare keys (the template's
    ``escape_keys=False``; only declarations quote them), so a key holding a space, ``:``, ``,``,
    a brace, a quote... or an empty key cannot be read back. A key starting with a digit or ``-``
    would lex as a number. A key starting with a non-ASCII letter (``é``) was not read (a parser bug
    since fixed, golden case ``gemma4/keys_starting_with_non_ascii_letters``): this exclusion can go.
    """
    return _NAME.fullmatch(key) is not None


def value_ok(value: Any) -> bool:
    """Every string in ``value`` passes :func:`string_ok` and every object key :func:`key_ok`."""
    if isinstance(value, str):
        return string_ok(value)
    if isinstance(value, list):
        return all(value_ok(v) for v in value)
    if isinstance(value, dict):
        return all(key_ok(k) and value_ok(v) for k, v in value.items())
    return True


#: Markers that end content wherever they are (the grammar's TEXT stops at them).
_CONTENT_MARKERS = (OPEN, "<call>", CLOSE, TURN, RESPONSE, "<|channel>", CHANNEL_CLOSE)


def content_ok(text: str) -> bool:
    """Content the format carries unchanged. Excluded, because nothing is escaped:

    * surrounding whitespace: the renderer trims content (as the template does; generated content
      is trimmed before this check, so this only documents it);
    * ``<|tool_call>``, ``<call>`` (a call opener), ``<tool_call|>`` (a stray closer, dropped),
      ``<turn|>`` / ``<|tool_response>`` (the stop tokens);
    * ``<|channel>`` and ``<channel|>``: the renderer strips ``<|channel>...<channel|>`` blocks from
      content, and a lone ``<channel|>`` as well;
    * ``call:NAME{`` or ``call:NAME(`` at the start of the content or of a line: a bare call, a
      real-world deviation the parser accepts (FORMATS.md §2.8.3); anywhere else, a call when NAME
      is a declared tool (a reply decoded with its special tokens stripped);
    * any ``call:`` at the very start (where the content starts the reply or follows ``<channel|>``):
      taken as a bare call even without braces (a parser bug since fixed, golden cases
      ``gemma4/content_starting_with_call_colon_*``): this exclusion can go.
    """
    return (
        text == text.strip()
        and not text.startswith("call:")
        and not any(marker in text for marker in _CONTENT_MARKERS)
        and _BARE_CALL.search(text) is None
    )


def reasoning_ok(text: str) -> bool:
    """Reasoning the format carries unchanged. Excluded:

    * reasoning that ends with a newline: ``<channel|>`` swallows one newline before it (the
      template writes reasoning back as ``...\\n<channel|>``, so that newline is markup);
    * ``<channel|>``: it ends the channel;
    * ``<|tool_call>`` / ``<call>``: a call opened while the channel is still open closes it
      (a real-world deviation, FORMATS.md §2.8.5);
    * the stop tokens ``<turn|>`` / ``<|tool_response>``: today they are read as reasoning text, but
      a model that ends its turn without closing the channel writes exactly that, so they should
      end the turn (they do now: golden cases ``gemma4/*_ends_an_unclosed_thought``).

    Surrounding whitespace is kept (the renderer does not trim reasoning), and so is text that
    looks like other markers (``<tool_call|>``, ``<|channel>``, ``call:f{`` at a line start...).
    """
    return not text.endswith("\n") and not any(m in text for m in (CHANNEL_CLOSE, OPEN, "<call>", TURN, RESPONSE))


# --------------------------------------------------------------------------- strategies

#: Keys beyond ``strategies.names()``: '-' and '.', non-ASCII word characters, and bad keys
#: (spaces, punctuation, leading digits, empty) that :func:`key_ok` must filter out.
_keys = st.one_of(
    strategies.names(),
    st.sampled_from(("a-b", "x.y", "a.b-c_d", "preço", "日付", "über", "1a", "a b", "", "-x", "a:b", "None", "true")),
)
#: Tool names with '-' and '.' as well (MCP-style).
_tool_names = st.one_of(strategies.names(), st.sampled_from(("my-tool", "mcp.fs.read_file", "a.b-c")))
#: Strings made of what a Gemma string must carry verbatim: backslashes, quotes, newlines, separators,
#: brackets, the format's markers and pieces of its string delimiter.
_RAW_PIECES = (
    "\\",
    '"',
    "'",
    "\n",
    "\r\n",
    "{",
    "}",
    "[",
    "]",
    ",",
    ":",
    "=",
    " ",
    "é",
    "🙂",
    "\\n",
    "<",
    "<|",
    '<|"|',
)
_MARKER_PIECES = ("<tool_call|>", "<turn|>", "<|tool_response>", "<channel|>", "call:f{", "\ncall:g(", "None", "1e+20")
_raw_strings = st.lists(st.sampled_from(_RAW_PIECES + _MARKER_PIECES), max_size=10).map("".join)
reasonings = strategies.texts(6).filter(reasoning_ok)
_contents = st.one_of(st.none(), strategies.texts(6).map(str.strip).filter(content_ok))


def _clean(arguments: dict[str, Any]) -> dict[str, Any]:
    """``arguments`` without the entries the format cannot carry (see :func:`value_ok`)."""
    return {k: v for k, v in arguments.items() if key_ok(k) and value_ok(v)}


@st.composite
def _free_arguments(draw: DrawFn) -> dict[str, Any]:
    """Arguments without a schema: free JSON values (unicode, quotes, backslashes, newlines, braces, big
    ints, floats, None, nested lists and objects) under identifier keys and odd ones."""
    arguments = draw(strategies.arguments())
    values = st.one_of(strategies.json_values(6), _raw_strings, st.lists(_raw_strings, max_size=3))
    arguments.update(draw(st.dictionaries(_keys, values, max_size=3)))
    return _clean(arguments)


@st.composite
def messages(draw: DrawFn, *, with_tools: bool) -> tuple[dict[str, Any], list[dict[str, Any]] | None]:
    """An assistant message with content, sometimes reasoning, and 0-3 calls; and the tools it calls (or None).

    With tools, arguments fit each tool's schema (values drawn from it, nested values checked); without,
    they are free.
    """
    tools = draw(strategies.tools()) if with_tools else None
    message: dict[str, Any] = {"role": "assistant", "content": draw(_contents)}
    reasoning = draw(st.one_of(st.none(), reasonings))
    if reasoning is not None:
        message[draw(st.sampled_from(("reasoning", "reasoning_content")))] = reasoning
    calls = []
    for _ in range(draw(st.sampled_from((1, 0, 1, 2, 3, 2)))):
        if tools:
            function = draw(st.sampled_from(tools))["function"]
            name, parameters = function["name"], function.get("parameters")
            arguments = _clean(draw(strategies.arguments(parameters)))
            assume(not violations(arguments, parameters or {}))
        else:
            name, arguments = draw(_tool_names), draw(_free_arguments())
        calls.append({"type": "function", "function": {"name": name, "arguments": arguments}})
    if calls or draw(st.booleans()):
        message["tool_calls"] = calls
    return message, tools


def reasoning_of(message: dict[str, Any]) -> str:
    return message.get("reasoning") or message.get("reasoning_content") or ""


def expected(message: Message, tools: Tools) -> dict[str, Any]:
    """What the reply parses to: the content, the reasoning, the calls as they are (values typed as written)."""
    calls = message.get("tool_calls") or []
    return {
        "content": message["content"] or "",
        "reasoning": reasoning_of(message),
        "tool_calls": [{"name": c["function"]["name"], "arguments": c["function"]["arguments"]} for c in calls],
    }


def decode_normal_form(case: dict[str, Any], text: str) -> dict[str, Any] | None:
    """What decode gives back. The normal form lives beside the gemma4 decode tests in
    ``test_gemma4_decode.py``, which read the decoder's own helpers to compute it."""
    from test_gemma4_decode import normal_form

    return normal_form(case, text)


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
        # the deviations around quote tokens, and calls inside a line of prose
        "x" + Q,
        "'x",
        '"',
        Q + Q,
        " call:f{a:b}",
        " call:search{",
        "c",
        "cal",
    ),
    call_closer=CLOSE,
    plain_text=PLAIN_TEXT,
    broken_block=OPEN + "call:f oops" + CLOSE,
    adversarial=_adversarial,
    grammar_forbid=(),
    decode=Decode(normal_form=decode_normal_form, dump_mode="python"),
    # the template sorts keys (case-insensitively): arguments are compared as dicts, with their types
    round_trip=RoundTrip(
        messages=lambda with_tools: messages(with_tools=with_tools), expected=expected, keeps_key_order=False
    ),
)
