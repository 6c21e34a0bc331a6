"""The ``deepseek_v3_1`` test profile: ``NAME<｜tool▁sep｜>{...}`` calls between DeepSeek's tool tokens."""

from __future__ import annotations

import itertools
import json
from typing import Any

from harness import linked_as_json
from hypothesis import strategies as st

import codec
from formats import DEEP, MANY, PLAIN_TEXT, Adversarial, Decode, Message, N, Profile, RoundTrip, Tools
from formats.hermes import arguments, expected, message_texts, text_values, tool_names, tools_for

BOS = "<｜begin▁of▁sentence｜>"
EOS = "<｜end▁of▁sentence｜>"
CALLS_BEGIN, CALLS_END = "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>"
CALL_BEGIN, CALL_END, SEP = "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>", "<｜tool▁sep｜>"
#: Every marker the template writes, and DeepSeek V3.2's DSML opener.
MARKERS = (
    CALLS_BEGIN,
    CALLS_END,
    CALL_BEGIN,
    CALL_END,
    SEP,
    EOS,
    "<｜User｜>",
    "<｜Assistant｜>",
    "<｜tool▁output▁begin｜>",
    "<｜tool▁output▁end｜>",
    "<think>",
    "</think>",
    "<｜DSML｜function_calls>",
)
_ARG = CALLS_BEGIN + CALL_BEGIN + "f" + SEP + '{"a": '  # a call cut where the value of "a" starts


def _call(value: str) -> str:
    return CALL_BEGIN + "f" + SEP + '{"a": ' + value + "}" + CALL_END


def _adversarial() -> dict[str, Adversarial]:
    call = _call
    texts = {
        "deep_list_in_arguments": CALLS_BEGIN + call("[" * DEEP + "]" * DEEP),
        "deep_object_in_arguments": CALLS_BEGIN + call('{"k": ' * DEEP + "1" + "}" * DEEP),
        "deep_unclosed_in_arguments": _ARG + "[" * DEEP,
        "unterminated_string": _ARG + '"' + "x" * N,
        "unterminated_string_with_markers": _ARG + '"' + (CALL_END + EOS) * (N // 40),
        "partial_markers": "<｜tool▁call" * (N // 12),
        "section_openers": CALLS_BEGIN * (N // 21),
        "call_openers": CALL_BEGIN * (N // 20),
        "names_never_ended": CALLS_BEGIN + CALL_BEGIN + "x" * N,
        "braces_in_text": "{" * (N // 5),
        "quotes_in_block": _ARG + '"' * N,
        "backslashes_odd": CALLS_BEGIN + call('"' + "\\" * (N // 2 + 1) + '"'),
        "backslashes_even": CALLS_BEGIN + call('"' + "\\" * (N // 2) + '"') + CALLS_END + EOS,
        "string_full_of_markers": CALLS_BEGIN + call('"' + (CALL_END + CALL_BEGIN) * (N // 40) + '"'),
        "unclosed_reasoning": "<think>" + "pensando " * (N // 9),
        "reasoning_closers": "</think>" * (N // 8),
        "many_calls": CALLS_BEGIN + call("1") * (N // 45) + CALLS_END + EOS,
        "many_sections": (CALLS_BEGIN + call("1") + CALLS_END) * (MANY // 70) + EOS,
        "many_arguments": CALLS_BEGIN + call("0, " + ", ".join(f'"k{i}": {i}' for i in range(N // 30))),
        "stop_tokens": EOS * (N // 21),
        "stray_closers": (CALL_END + CALLS_END + SEP) * (N // 60),
        "dsml_openers": "<｜DSML｜function_calls>" * (N // 23),
        "string_arguments": (CALLS_BEGIN + CALL_BEGIN + "f" + SEP + '"{\\"a\\": 1}"' + CALL_END) * (MANY // 50),
    }
    return {name: Adversarial(text) for name, text in texts.items()}


# --------------------------------------------------------------------------- round trip


def content_ok(text: str) -> bool:
    """Content the format can carry: no marker (the format cannot escape them) and no leading reasoning."""
    return not any(marker in text for marker in MARKERS)


contents = st.one_of(st.none(), st.just(""), text_values().filter(content_ok))


@st.composite
def assistant_messages(draw: st.DrawFn) -> dict[str, Any]:
    """An OpenAI assistant message with optional content and 0-4 calls (arguments as dicts or JSON strings)."""
    calls = []
    for _ in range(draw(st.integers(0, 4))):
        args = draw(arguments())
        encoded: Any = args
        if draw(st.integers(0, 3)) == 0:  # OpenAI sends arguments as a JSON string
            encoded = json.dumps(args, ensure_ascii=draw(st.booleans()))
        calls.append(
            {"id": f"x{len(calls)}", "type": "function", "function": {"name": draw(tool_names), "arguments": encoded}}
        )
    message: dict[str, Any] = {"role": "assistant", "content": draw(contents)}
    if calls or draw(st.booleans()):
        message["tool_calls"] = calls
    return message


def _messages(with_tools: bool) -> st.SearchStrategy[tuple[Message, Tools]]:
    return assistant_messages().map(lambda message: (message, tools_for(message) if with_tools else None))


# --------------------------------------------------------------------------- decode

RENDERED = ("user", "assistant", "tool")


def _function(name: str, arguments: Any) -> Any:
    """A call's function as decode gives it: its arguments an object, or (kept as text, unvalidated)
    text that is no object's JSON as codec writes it."""
    if isinstance(arguments, str):
        try:
            value = json.loads(arguments)
        except ValueError:
            value = None
        if not isinstance(value, dict) or json.dumps(value, ensure_ascii=False) != arguments:
            return codec.FunctionCall.model_construct(name=name, arguments=arguments)
        arguments = value
    return {"name": name, "arguments": arguments}


def deepseek_normal_form(case: dict[str, Any]) -> dict[str, Any] | None:
    """What ``decode(render(case))`` gives back, or None where it reads otherwise but renders alike."""
    variables = case["variables"]
    bos = variables.get("bos_token", "")
    system = "\n\n".join(m["content"] for m in case["messages"] if m["role"] == "system")
    head = ("" if bos == BOS else str(bos)) + system
    shown = [m for m in case["messages"] if m["role"] in RENDERED]
    if shown and shown[0]["role"] == "assistant" and head:
        return None  # the system text reads as the assistant's content
    messages: list[dict[str, Any]] = [{"role": "system", "content": head}] if head else []
    ids = itertools.count()
    last_user = thinking = False
    for message in shown:
        role = message["role"]
        if role == "assistant":
            calls = message.get("tool_calls")
            if isinstance(calls, list):
                out: dict[str, Any] = {"role": "assistant", "content": message["content"] if calls else None}
                out["tool_calls"] = [
                    {
                        "id": f"call_{next(ids)}",
                        "type": "function",
                        "function": _function(c["function"]["name"], c["function"]["arguments"]),
                    }
                    for c in calls
                ]
            else:
                out = {"role": "assistant", "content": message["content"]}
                if last_user and message.get("prefix") and variables.get("thinking"):
                    out["prefix"] = True
                    thinking = True
            messages.append(out)
        else:
            messages.append({"role": role, "content": message["content"]})
        last_user = role == "user"
    if not messages:
        messages.append({"role": "developer", "content": ""})
    shown_variables: dict[str, Any] = {"bos_token": BOS} if bos == BOS else {}
    generation = bool(case["add_generation_prompt"]) and last_user
    if thinking or (generation and variables.get("thinking")):
        shown_variables["thinking"] = True
    return {"messages": messages, "tools": None, "add_generation_prompt": generation, "variables": shown_variables}


def decode_normal_form(case: dict[str, Any], text: str) -> dict[str, Any] | None:
    if any(marker in t for t in message_texts(case) for marker in MARKERS):
        return None
    found = deepseek_normal_form(case)
    if found is None:
        return None
    # A decoded call keeps arguments that are no object's JSON as text: compared as JSON data.
    return linked_as_json(found)


PROFILE = Profile(
    markers=MARKERS,
    snippets=(
        CALL_BEGIN + "f" + SEP + '{"a": 1}' + CALL_END,
        CALL_BEGIN + "f" + SEP,
        '{"a": ',
        '"a"',
        "f",
        "{",
        "}",
        "[",
        "]",
        ":",
        ",",
    ),
    call_closer=CALL_END,
    plain_text=PLAIN_TEXT,
    broken_block=CALLS_BEGIN + CALL_BEGIN + "f" + SEP + "oops" + CALL_END + CALLS_END,
    adversarial=_adversarial,
    grammar_forbid=(),
    round_trip=RoundTrip(messages=_messages, expected=expected, keeps_key_order=True),
    decode=Decode(normal_form=decode_normal_form),
)
