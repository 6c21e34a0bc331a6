"""The ``kimi_k2`` test profile: ``functions.NAME:IDX<|tool_call_argument_begin|>{...}`` calls in a section."""

from __future__ import annotations

import json
from typing import Any

from harness import linked_as_json
from hypothesis import strategies as st

import codec
from formats import DEEP, MANY, PLAIN_TEXT, Adversarial, Decode, Message, N, Profile, RoundTrip, Tools
from formats.hermes import arguments, expected, message_texts, text_values, tool_names, tools_for

EOS = "<|im_end|>"
SECTION_BEGIN, SECTION_END = "<|tool_calls_section_begin|>", "<|tool_calls_section_end|>"
CALL_BEGIN, CALL_END, ARGS = "<|tool_call_begin|>", "<|tool_call_end|>", "<|tool_call_argument_begin|>"
MEDIA = "<|media_start|>image<|media_content|><|media_pad|><|media_end|>\n"
HEADERS = {
    "system": "<|im_system|>system<|im_middle|>",
    "user": "<|im_user|>user<|im_middle|>",
    "assistant": "<|im_assistant|>assistant<|im_middle|>",
    "tool": "<|im_system|>tool<|im_middle|>",
}
#: Every marker the template writes, and reasoning's.
MARKERS = (
    SECTION_BEGIN,
    SECTION_END,
    CALL_BEGIN,
    CALL_END,
    ARGS,
    EOS,
    "<|im_system|>",
    "<|im_user|>",
    "<|im_assistant|>",
    "<|im_middle|>",
    "<|media_start|>",
    "## Return of ",
    "<think>",
    "</think>",
)
_ARG = SECTION_BEGIN + CALL_BEGIN + "functions.f:0" + ARGS + '{"a": '  # a call cut where the value of "a" starts


def _call(value: str, index: int = 0) -> str:
    return CALL_BEGIN + f"functions.f:{index}" + ARGS + '{"a": ' + value + "}" + CALL_END


def _adversarial() -> dict[str, Adversarial]:
    call = _call
    texts = {
        "deep_list_in_arguments": SECTION_BEGIN + call("[" * DEEP + "]" * DEEP),
        "deep_object_in_arguments": SECTION_BEGIN + call('{"k": ' * DEEP + "1" + "}" * DEEP),
        "deep_unclosed_in_arguments": _ARG + "[" * DEEP,
        "unterminated_string": _ARG + '"' + "x" * N,
        "unterminated_string_with_markers": _ARG + '"' + (CALL_END + EOS) * (N // 30),
        "partial_markers": "<|tool_call" * (N // 11),
        "section_openers": SECTION_BEGIN * (N // 28),
        "names_never_ended": SECTION_BEGIN + CALL_BEGIN + "functions." + "x" * N,
        "ids_never_ended": SECTION_BEGIN + CALL_BEGIN + "functions.f:" + "1" * N,
        "braces_in_text": "{" * (N // 5),
        "backslashes_odd": SECTION_BEGIN + call('"' + "\\" * (N // 2 + 1) + '"'),
        "backslashes_even": SECTION_BEGIN + call('"' + "\\" * (N // 2) + '"') + SECTION_END + EOS,
        "string_full_of_markers": SECTION_BEGIN + call('"' + (CALL_END + CALL_BEGIN) * (N // 40) + '"'),
        "unclosed_reasoning": "<think>" + "pensando " * (N // 9),
        "many_calls": SECTION_BEGIN + "".join(call("1", i % 10) for i in range(N // 60)) + SECTION_END + EOS,
        "many_arguments": SECTION_BEGIN + call("0, " + ", ".join(f'"k{i}": {i}' for i in range(N // 30))),
        "stop_tokens": EOS * (N // 10),
        "stray_closers": (CALL_END + SECTION_END + ARGS) * (N // 70),
        "bare_counters": (SECTION_BEGIN + CALL_BEGIN + "0" + ARGS + '{"a": 1}' + CALL_END) * (MANY // 80),
    }
    return {name: Adversarial(text) for name, text in texts.items()}


# --------------------------------------------------------------------------- round trip


def content_ok(text: str) -> bool:
    """Content the format can carry: no marker (the format cannot escape them)."""
    return not any(marker in text for marker in MARKERS)


contents = st.one_of(st.none(), st.just(""), text_values().filter(content_ok))
ids = st.one_of(st.just("x"), st.integers(0, 99).map(str))


@st.composite
def assistant_messages(draw: st.DrawFn) -> dict[str, Any]:
    """An OpenAI assistant message with optional content and 0-4 calls, ids in Kimi's shape or not."""
    calls = []
    for _ in range(draw(st.integers(0, 4))):
        args = draw(arguments())
        encoded: Any = args
        if draw(st.integers(0, 3)) == 0:  # OpenAI sends arguments as a JSON string
            encoded = json.dumps(args, ensure_ascii=draw(st.booleans()))
        name = draw(tool_names.filter(lambda n: ":" not in n))
        written = draw(ids)
        call_id = f"functions.{name}:{written}" if written.isdigit() else f"call_{len(calls)}"
        calls.append({"id": call_id, "type": "function", "function": {"name": name, "arguments": encoded}})
    message: dict[str, Any] = {"role": "assistant", "content": draw(contents)}
    if calls or draw(st.booleans()):
        message["tool_calls"] = calls
    return message


def _messages(with_tools: bool) -> st.SearchStrategy[tuple[Message, Tools]]:
    return assistant_messages().map(lambda message: (message, tools_for(message) if with_tools else None))


# --------------------------------------------------------------------------- decode


def _printed(value: Any) -> str:
    """What ``{{ value }}`` prints (an absent value: nothing)."""
    return "" if value is None else value if isinstance(value, str) else str(value)


def _content(content: Any) -> str:
    if isinstance(content, str):
        return content
    if content is None:
        return ""
    out = []
    for part in content:
        image = part.get("type") == "image" or "image" in part or "image_url" in part
        out.append(MEDIA if image else _printed(part.get("text")))
    return "".join(out)


def _function(name: str, arguments: Any) -> Any:
    if isinstance(arguments, str):
        return codec.FunctionCall.model_construct(name=name, arguments=arguments)
    return {"name": name, "arguments": arguments}


def kimi_normal_form(case: dict[str, Any]) -> dict[str, Any]:
    """What ``decode(render(case))`` gives back."""
    messages: list[dict[str, Any]] = []
    if case["messages"][0]["role"] != "system":
        messages.append({"role": "system", "content": "You are a helpful assistant"})
    for message in case["messages"]:
        role = message["role"] if message["role"] in HEADERS else "developer"
        calls = message.get("tool_calls")
        if role == "assistant" and calls:
            content = message.get("content")
            messages.append(
                {
                    "role": "assistant",
                    "content": _printed(content) if content else None,
                    "tool_calls": [
                        {
                            "id": f"functions.{c['function']['name']}:{i}",
                            "type": "function",
                            "function": _function(c["function"]["name"], c["function"]["arguments"]),
                        }
                        for i, c in enumerate(calls)
                    ],
                }
            )
        elif role == "tool":
            out: dict[str, Any] = {"role": "tool", "content": _printed(message.get("content"))}
            if message.get("tool_call_id"):
                out["tool_call_id"] = message["tool_call_id"]
            messages.append(out)
        else:
            messages.append({"role": role, "content": _content(message.get("content"))})
    return {
        "messages": messages,
        "tools": case["tools"] or None,
        "add_generation_prompt": case["add_generation_prompt"],
        "variables": {},
    }


def decode_normal_form(case: dict[str, Any], text: str) -> dict[str, Any] | None:
    texts = [*message_texts(case), *(str(m.get("tool_call_id")) for m in case["messages"])]
    if any(marker in t or "\\n" in t for t in texts for marker in MARKERS):
        return None
    # Results are linked to their calls only where that renders the same: where each names its call.
    if any(m["role"] == "tool" and not m.get("tool_call_id") for m in case["messages"]):
        return None
    return linked_as_json(kimi_normal_form(case))


PROFILE = Profile(
    markers=MARKERS,
    snippets=(
        CALL_BEGIN + "functions.f:0" + ARGS + '{"a": 1}' + CALL_END,
        CALL_BEGIN + "functions.f:0" + ARGS,
        "functions.f:0",
        '{"a": ',
        '"a"',
        "{",
        "}",
        "[",
        "]",
        ":",
        ",",
    ),
    call_closer=CALL_END,
    plain_text=PLAIN_TEXT,
    broken_block=SECTION_BEGIN + CALL_BEGIN + "oops" + CALL_END + SECTION_END,
    adversarial=_adversarial,
    grammar_forbid=(),
    round_trip=RoundTrip(messages=_messages, expected=expected, keeps_key_order=True),
    decode=Decode(normal_form=decode_normal_form),
)
