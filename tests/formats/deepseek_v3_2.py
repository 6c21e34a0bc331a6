"""The ``deepseek_v3_2`` test profile: DSML calls (``<｜DSML｜invoke name="NAME">``, parameters whose heads
say whether the value is a string), DeepSeek's full-width role tokens and ``<think>`` reasoning."""

from __future__ import annotations

import itertools
import json
import re
from typing import Any

import strategies
from harness import linked_as_json
from hypothesis import assume
from hypothesis import strategies as st
from hypothesis.strategies import DrawFn

from codec import jinja
from codec.schema import violations
from formats import DEEP, PLAIN_TEXT, Adversarial, Decode, Message, N, Profile, RoundTrip, Tools
from formats.qwen3_coder import _tool

STOP = "<｜end▁of▁sentence｜>"
D = "｜DSML｜"
_CALL = f'<{D}function_calls>\n<{D}invoke name="f">\n'
_ARG = _CALL + f'<{D}parameter name="a" string="true">'
_END = f"</{D}parameter>\n</{D}invoke>\n</{D}function_calls>"


def _param(key: str, value: str, string: bool = True) -> str:
    return f'<{D}parameter name="{key}" string="{"true" if string else "false"}">{value}</{D}parameter>\n'


def _adversarial() -> dict[str, Adversarial]:
    one = _CALL + _param("a", "1", False) + f"</{D}invoke>\n</{D}function_calls>"
    texts = {
        "unterminated_value": _ARG + "x" * N,
        "value_of_less_than_signs": _ARG + "<" * N,
        "value_of_newlines": _ARG + "\n" * N + _END,
        "value_of_partial_closers": _ARG + f"</{D}param" * (N // 12),
        "value_of_invoke_closers": _ARG + f"</{D}invoke> x" * (N // 16) + _END,
        "unclosed_invoke_head": f'<{D}function_calls>\n<{D}invoke name="' + "x" * N,
        "unclosed_parameter_head": _CALL + f'<{D}parameter name="' + "x" * N,
        "partial_call_markers": f"<{D}function_calls" * (N // 21),
        "partial_stop_tokens": STOP[:-1] * (N // 20),
        "stop_tokens": STOP * (N // 21),
        "orphan_closers": f"</{D}function_calls>" * (N // 22),
        "many_calls": (one + "\n\n") * (N // 150) + STOP,
        "many_bare_invokes": (f'<{D}invoke name="f">\n' + _param("a", "1") + f"</{D}invoke>\n") * (N // 80),
        "many_broken_calls": (f"<{D}function_calls>\njunk\n</{D}function_calls>\n") * (N // 45),
        "many_parameters": _CALL + "".join(_param(f"k{i}", str(i), False) for i in range(N // 60)) + f"</{D}invoke>",
        "many_unclosed_parameters": _CALL + f'<{D}parameter name="a" string="true">1\n' * (N // 44),
        "many_drifted_closers": _CALL + f'<{D}parameter name="a" string="true">1</DSML|parameter>\n' * (N // 56),
        "long_reasoning": "<think>" + f"I think <{D}function_calls </think \n" * (N // 40),
        "deep_json_value": _CALL + f'<{D}parameter name="a" string="false">' + "[" * DEEP + "]" * DEEP + _END,
        "deep_wrapped_arguments": _CALL
        + f'<{D}parameter name="arguments" string="false">'
        + '{"k": ' * DEEP
        + "1"
        + "}" * DEEP
        + _END,
    }
    return {name: Adversarial(text) for name, text in texts.items()}


# --------------------------------------------------------------------------- round trip

_MARKERS = (f"<{D}", f"</{D}", STOP, "<think>", "</think>")
_CLOSER = re.compile(r"</[^<>\s]{0,16}parameter")


def _written(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def representable(value: Any) -> bool:
    """Whether the format carries ``value`` back: its text holds no DSML tag, no closer however
    spelled, no stop token (the template escapes nothing)."""
    text = _written(value)
    return not any(marker in text for marker in _MARKERS) and not _CLOSER.search(text)


def _text_ok(text: str) -> bool:
    return not any(marker in text for marker in _MARKERS)


@st.composite
def messages(draw: DrawFn, *, with_tools: bool) -> tuple[dict[str, Any], list[dict[str, Any]] | None]:
    """An assistant message with content, maybe reasoning, and 0-3 calls, and the tools it calls (or None)."""
    names = draw(st.lists(strategies.names(), min_size=1, max_size=3, unique=True))
    tools = [draw(_tool(name)) for name in names]
    content = draw(st.one_of(st.none(), strategies.texts().filter(_text_ok)))
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if draw(st.booleans()):
        message["reasoning_content"] = draw(strategies.texts().filter(lambda t: _text_ok(t) and t.strip("\n") == t))
        assume(message["reasoning_content"] and not (content or "").startswith("\n"))
    assume(not (content or "").lstrip(" \t\r\n").startswith("</think>"))
    if content and content.rstrip(" \t\r\n") != content:
        assume(content.rstrip("\n") == content and "\n" not in content[len(content.rstrip(" \t\r\n")) :])
    calls = []
    for _ in range(draw(st.sampled_from((0, 1, 1, 2, 3)))):
        tool = draw(st.sampled_from(tools))
        props = (tool["function"].get("parameters") or {}).get("properties")
        if props and with_tools:
            drawn = {k: draw(strategies.values(v)) for k, v in props.items() if draw(st.integers(0, 4))}
        else:
            drawn = draw(strategies.arguments())
        # A lone "arguments" holding an object is read as every argument (the wrapper models write).
        arguments = {k: v for k, v in drawn.items() if k != "arguments" and representable(v)}
        calls.append({"type": "function", "function": {"name": tool["function"]["name"], "arguments": arguments}})
        if with_tools:  # values that fit their schemas, or the parse reports them
            assume(not violations(arguments, tool["function"].get("parameters") or {}))
    if calls or draw(st.booleans()):
        message["tool_calls"] = calls
    return message, tools if with_tools else None


def expected(message: Message, tools: Tools) -> dict[str, Any]:
    """The content, the reasoning and the calls as given: each head says whether its value is a string."""
    calls = message.get("tool_calls") or []
    return {
        "content": message["content"] or "",
        "reasoning": message.get("reasoning_content") or "",
        "tool_calls": [{"name": c["function"]["name"], "arguments": c["function"]["arguments"]} for c in calls],
    }


# --------------------------------------------------------------------------- decode

#: Text the template writes around the parts of a prompt: a text holding one may read as other parts.
MARKUP = ("<｜", "｜>", "<think>", "</think>", "<result>", "</result>", "function_results>", "## Tools", "</functions>")


def _regular(messages: list[dict[str, Any]]) -> bool:
    """Whether every run of tool messages follows an assistant message with calls and answers each
    call (the template counts results against the calls: other layouts read back otherwise)."""
    i = 0
    while i < len(messages):
        if messages[i]["role"] == "tool":
            run = i
            while i < len(messages) and messages[i]["role"] == "tool":
                i += 1
            owner = messages[run - 1] if run else None
            if owner is None or owner["role"] != "assistant" or len(owner.get("tool_calls") or ()) != i - run:
                return False
        else:
            i += 1
    return True


def deepseek_normal_form(case: dict[str, Any], text: str) -> dict[str, Any] | None:
    """What ``decode(render(case))`` gives back, where the conversation is regular."""
    source = jinja.prepare_messages(case["messages"])
    if not _regular(source) or any(m["role"] == "developer" for m in source):
        return None
    variables = case["variables"]
    bos = variables.get("bos_token")
    if bos not in (None, "") and (not isinstance(bos, str) or not re.fullmatch(r"<[^<>\s/]{1,30}>", bos)):
        return None
    thinking = variables.get("thinking", variables.get("enable_thinking", False))
    tools = [
        {"type": "function", "function": t["function"]} for t in case["tools"] or () if t.get("type") == "function"
    ]
    systems = [m.get("content") or "" for m in source if m["role"] == "system"]
    if any(not isinstance(s, str) for s in systems):
        return None
    system = "\n\n".join(systems)
    first_turn = next((m["role"] for m in source if m["role"] in ("user", "tool", "assistant")), None)
    if system and not case["tools"] and first_turn == "assistant":
        return None  # an assistant message before any user writes no opener: its text joins the system text
    if not bos and re.match(r"<[^<>\s]{1,30}>", system):
        return None  # a leading tag of the system text reads as a bos_token
    if tools and system.startswith("\n\n"):
        return None  # the blank line reads as the one before the tools header
    out: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    last_user = max((i for i, m in enumerate(source) if m["role"] in ("user", "developer")), default=-1)
    ids = itertools.count()
    after_user = False
    for i, message in enumerate(source):
        role = message["role"]
        if role == "user":
            out.append({"role": "user", "content": message.get("content") or ""})
            after_user = True
        elif role == "tool":
            out.append({"role": "tool", "content": message.get("content") or ""})
        elif role == "assistant":
            content = message.get("content")
            shown = (content if isinstance(content, str) else str(content)) if content else None  # {{ content }}
            entry: dict[str, Any] = {"role": "assistant", "content": shown}
            reasoning = message.get("reasoning_content")
            if i > last_user and thinking and reasoning and (after_user or (out and out[-1]["role"] == "tool")):
                entry["reasoning_content"] = reasoning
            calls = message.get("tool_calls") or []
            if calls:
                entry["tool_calls"] = [
                    {"id": f"call_{next(ids)}", "type": "function", "function": dict(c["function"])} for c in calls
                ]
            out.append(entry)
            after_user = False
    if not out:
        out = [{"role": "system", "content": ""}]
    decoded_variables: dict[str, Any] = {}
    if bos:
        decoded_variables["bos_token"] = bos
    head_end = text.rfind("</functions>\n") + 13 if tools else 0
    if thinking and "<think>" in text[head_end:]:
        decoded_variables["thinking"] = True
    return {
        "messages": out,
        "tools": tools or None,
        "add_generation_prompt": case["add_generation_prompt"] and text.endswith(("<think>", "<think></think>")),
        "variables": decoded_variables,
    }


def texts(case: dict[str, Any]) -> list[str]:
    out = [str(m.get("content")) for m in case["messages"]]
    out += [str(m.get("reasoning_content")) for m in case["messages"]]
    for message in case["messages"]:
        for call in message.get("tool_calls") or []:
            out += [_written(v) for v in call["function"]["arguments"].values()] + [str(call)]
    out += [str(tool) for tool in case["tools"] or ()]
    out.append(str(case["variables"].get("bos_token")))
    return out


def decode_normal_form(case: dict[str, Any], text: str) -> dict[str, Any] | None:
    if any(mark in t for t in texts(case) for mark in MARKUP):
        return None
    found = deepseek_normal_form(case, text)
    return linked_as_json(found) if found is not None else None


PROFILE = Profile(
    markers=(
        f"<{D}function_calls>",
        f"</{D}function_calls>",
        f'<{D}invoke name="f">',
        f"</{D}invoke>",
        f'<{D}parameter name="a" string="true">',
        f"</{D}parameter>",
        STOP,
        "<think>",
        "</think>",
        "<｜Assistant｜>",
    ),
    snippets=(
        f'<{D}function_calls>\n<{D}invoke name="f">\n',
        f'<{D}parameter name="a" string="false">',
        f"</{D}parameter>\n",
        f"</{D}invoke>\n</{D}function_calls>",
        f'<{D}invoke name="',
        f'<{D}parameter name="',
        f'<{D}invoke name="f">\n' + _param("a", "1", False) + f"</{D}invoke>\n",
        f'<{D}invoke name="f"/>',
        '{"k": [1, true]}',
        "</DSML|parameter>",
        "</think>",
    ),
    call_closer=f"</{D}invoke>",
    plain_text=PLAIN_TEXT,
    broken_block=f"<{D}function_calls>\n<{D}invoke name=>\n</{D}function_calls>",
    adversarial=_adversarial,
    grammar_forbid=(),
    decode=Decode(normal_form=decode_normal_form),
    round_trip=RoundTrip(
        messages=lambda with_tools: messages(with_tools=with_tools), expected=expected, keeps_key_order=True
    ),
)
