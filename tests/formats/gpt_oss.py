"""The ``gpt_oss`` test profile: Harmony messages, calls addressed ``to=functions.NAME``."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

from formats import DEEP, MANY, Adversarial, Decode, Message, N, Profile, RoundTrip, Tools
from formats.hermes import decoded, json_values, text_values, tool_names, tools_for

START, END, RETURN, CALL = "<|start|>", "<|end|>", "<|return|>", "<|call|>"
CHANNEL, MESSAGE, CONSTRAIN = "<|channel|>", "<|message|>", "<|constrain|>"
TOKENS = (START, END, RETURN, CALL, CHANNEL, MESSAGE, CONSTRAIN)
HEAD = CHANNEL + "commentary to=functions.f " + CONSTRAIN + "json" + MESSAGE
_ARG = HEAD + '{"a": '  # a call cut where the value of "a" starts


def _call(value: str) -> str:
    return _ARG + value + "}" + CALL


def _adversarial() -> dict[str, Adversarial]:
    call = _call
    later = START + "assistant"
    texts = {
        "deep_list_in_arguments": call("[" * DEEP + "]" * DEEP),
        "deep_object_in_arguments": call('{"k": ' * DEEP + "1" + "}" * DEEP),
        "deep_unclosed_in_arguments": _ARG + "[" * DEEP,
        "unterminated_string": _ARG + '"' + "x" * N,
        "unterminated_string_with_markers": _ARG + '"' + (CALL + END + START) * (N // 25),
        "partial_markers": "<|chan" * (N // 6),
        "partial_markers_in_a_body": CHANNEL + "final" + MESSAGE + "<|ret" * (N // 5),
        "many_messages": (later + CHANNEL + "analysis" + MESSAGE + "x" + END) * (N // 40),
        "many_calls": (later + call("1")) * (N // 80),
        "many_arguments": call("0, " + ", ".join(f'"k{i}": {i}' for i in range(N // 30))),
        "stop_tokens": RETURN * (N // 10),
        "headers_without_messages": (CHANNEL + "analysis ") * (N // 20),
        "recipients_without_messages": (CHANNEL + "commentary to=functions.f ") * (N // 36),
        "call_bodies_that_are_not_json": (later + HEAD + "print(1)" + CALL) * (MANY // 70),
        "stripped_switches": "analysisx" + "assistantfinaly" * (N // 15),
        "stripped_partial_switches": "analysisx" + "assistantfin" * (N // 12),
        "stripped_calls": "analysisx" + 'assistantcommentary to=functions.f json{"a": 1}' * (MANY // 47),
        "role_words_repeated": START + "assistant " * (N // 10),
        "braces_in_a_body": CHANNEL + "final" + MESSAGE + "{" * (N // 2),
    }
    return {name: Adversarial(text) for name, text in texts.items()}


# --------------------------------------------------------------------------- round trip


def text_ok(text: str) -> bool:
    """Text a message's body can carry: none of the family's tokens (nothing is escaped)."""
    return not any(token in text for token in TOKENS)


bodies = text_values().filter(text_ok)


@st.composite
def assistant_messages(draw: st.DrawFn) -> dict[str, Any]:
    """An assistant message with optional content and reasoning, and at most one call (a
    generation holds one: the model stops at its closer)."""
    message: dict[str, Any] = {"role": "assistant", "content": draw(st.one_of(st.none(), st.just(""), bodies))}
    if draw(st.booleans()):
        message["reasoning_content"] = draw(bodies)
    if draw(st.booleans()):
        args = draw(st.dictionaries(text_values(), json_values(), max_size=4))
        encoded: Any = json.dumps(args, ensure_ascii=draw(st.booleans())) if draw(st.integers(0, 3)) == 0 else args
        message["tool_calls"] = [{"id": "x0", "type": "function", "function": {"name": draw(tool_names), "arguments": encoded}}]
    return message


def expected(message: Message, tools: Tools) -> dict[str, Any]:
    """The content, the reasoning (its message is the reply's first), the call."""
    calls = message.get("tool_calls") or []
    return {
        "content": message.get("content") or "",
        "reasoning": message.get("reasoning_content") or "",
        "tool_calls": [
            {"name": c["function"]["name"], "arguments": decoded(c["function"]["arguments"])} for c in calls
        ],
    }


def _messages(with_tools: bool) -> st.SearchStrategy[tuple[Message, Tools]]:
    return assistant_messages().map(lambda message: (message, tools_for(message) if with_tools else None))


# --------------------------------------------------------------------------- decode


def decode_normal_form(case: dict[str, Any], text: str) -> dict[str, Any] | None:
    """What ``decode(render(case))`` gives back (see :mod:`tests.test_gpt_oss_decode`)."""
    from gpt_oss_normal_form import normal_form

    return normal_form(case, text)


PROFILE = Profile(
    markers=(*TOKENS, "analysis", "commentary", "final", "to=functions.", "assistant", "assistantfinal"),
    snippets=(
        HEAD,
        '{"a": 1}',
        CHANNEL + "final" + MESSAGE,
        CHANNEL + "analysis" + MESSAGE,
        START + "assistant to=functions.f" + CHANNEL + "commentary json" + MESSAGE,
        "{",
        "}",
        "[",
        "]",
        ":",
        ",",
        '"',
    ),
    call_closer=CALL,
    # (no "a": in a reply decoded without its special tokens, "assistant" may start inside text)
    plain_text="Olá, tudo bem? Vou ver isso logo",
    broken_block=CHANNEL + "commentary to=functions.f " + CONSTRAIN + "json" + MESSAGE + "oops" + CALL,
    adversarial=_adversarial,
    grammar_forbid=(),
    round_trip=RoundTrip(messages=_messages, expected=expected, keeps_key_order=True),
    decode=Decode(normal_form=decode_normal_form),
)
