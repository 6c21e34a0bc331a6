"""The ``gpt_oss`` test profile: Harmony messages, calls addressed ``to=functions.NAME``."""

from __future__ import annotations

import itertools
import json
from typing import Any

from harness import linked_as_json
from hypothesis import strategies as st

from codec import jinja
from codec.formats import gpt_oss
from codec.models import FunctionCall
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
    """An assistant message with optional content and reasoning, and up to two calls (a generation
    holds one, the model stopping at its closer: more are written as several turns write them)."""
    message: dict[str, Any] = {"role": "assistant", "content": draw(st.one_of(st.none(), st.just(""), bodies))}
    if draw(st.booleans()):
        message["reasoning_content"] = draw(bodies)
    calls = []
    for i in range(draw(st.integers(0, 2))):
        args = draw(st.dictionaries(text_values(), json_values(), max_size=4))
        encoded: Any = json.dumps(args, ensure_ascii=draw(st.booleans())) if draw(st.integers(0, 3)) == 0 else args
        calls.append({"id": f"x{i}", "type": "function", "function": {"name": draw(tool_names), "arguments": encoded}})
    if calls:
        message["tool_calls"] = calls
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


#: What decode puts where the prompt shows that a message it does not render stood.
UNSHOWN = {"role": "developer", "content": ""}


def _written_parameter(spec: Any, required: Any) -> str:
    """A parameter's type and default as the declarations write them (O3, O4)."""
    text = gpt_oss.typescript_type(spec, required)
    if isinstance(spec, dict) and "default" in spec:
        default = spec["default"]
        if spec.get("enum"):
            text += ", // default: " + default
        elif spec.get("oneOf"):
            text += "// default: " + default
        else:
            text += ", // default: " + jinja.tojson(default)
    return text


def _tool(declared: dict[str, Any]) -> dict[str, Any]:
    """A tool as decode reads its declaration back."""
    function = declared["function"]
    out: dict[str, Any] = {"name": function["name"], "description": function["description"]}
    parameters = function.get("parameters")
    if parameters and parameters.get("properties"):
        required = parameters.get("required") or []
        properties = {}
        for name, spec in parameters["properties"].items():
            schema = gpt_oss._parameter(_written_parameter(spec, required))
            description = spec.get("description") if isinstance(spec, dict) else None
            properties[name] = {"description": description, **schema} if description else schema
        out["parameters"] = {"type": "object", "properties": properties}
        names = [name for name in properties if name in required]
        if names:
            out["parameters"]["required"] = names
    return {"type": "function", "function": out}


def _variables(case: dict[str, Any]) -> dict[str, Any]:
    given = case["variables"]
    out: dict[str, Any] = {}
    if "model_identity" in given and given["model_identity"] != gpt_oss.DEFAULT_IDENTITY:
        out["model_identity"] = given["model_identity"]
    out["current_date"] = given.get("current_date", gpt_oss.today())
    if "reasoning_effort" in given and given["reasoning_effort"] != gpt_oss.DEFAULT_EFFORT:
        out["reasoning_effort"] = given["reasoning_effort"]
    if given.get("builtin_tools"):
        out["builtin_tools"] = [n for n in ("browser", "python") if n in given["builtin_tools"]] or [""]
    return out


def gpt_oss_normal_form(case: dict[str, Any], text: str) -> dict[str, Any] | None:
    """What ``decode(render(case))`` gives back: the developer message as a system message, later
    system messages gone, each call message's first call with its analysis text as reasoning, the
    last answer's reasoning, tool results as their JSON reads; None where a result is an object
    (decode keeps it unvalidated) or a text holds the format's tokens."""
    if any(token in text for token in TOKENS for text in message_texts(case)):
        return None
    messages = jinja.prepare_messages(case["messages"])
    first = messages[0]
    out: list[Any] = []
    if first.get("role") in ("developer", "system"):
        if first.get("content"):
            out.append({"role": "system", "content": str(first["content"])})
        messages = messages[1:]
    ids = itertools.count()
    for i, message in enumerate(messages):
        role = message.get("role")
        if role == "assistant" and "tool_calls" in message:
            later_final = any(m.get("role") == "assistant" and "tool_calls" not in m for m in messages[i + 1 :])
            call = message["tool_calls"][0]
            function = call.get("function") or call
            entry: dict[str, Any] = {"role": "assistant", "content": None}
            shown = message.get("content") or message.get("thinking")
            if shown and not later_final:
                entry["reasoning_content"] = shown
            arguments = function["arguments"]
            called: Any = {"name": function["name"], "arguments": arguments}
            if isinstance(arguments, str):
                called = FunctionCall.model_construct(name=function["name"], arguments=arguments)
            entry["tool_calls"] = [{"id": f"call_{next(ids)}", "type": "function", "function": called}]
            out.append(entry)
        elif role == "assistant":
            entry = {"role": "assistant", "content": message.get("content")}
            if i == len(messages) - 1 and not case["add_generation_prompt"] and "thinking" in message:
                entry["reasoning_content"] = message["thinking"]
            out.append(entry)
        elif role == "tool":
            content = json.loads(jinja.tojson(message.get("content")))
            if not isinstance(content, str | list):
                return None
            out.append({"role": "tool", "content": content})
        elif role == "user":
            out.append({"role": "user", "content": message.get("content")})
    last = out[-1] if out else None
    answer = isinstance(last, dict) and last["role"] == "assistant" and "tool_calls" not in last
    if answer and not case["add_generation_prompt"] and not text.endswith(gpt_oss.RETURN):
        out.append(dict(UNSHOWN))
    return linked_as_json(
        {
            "messages": out or [dict(UNSHOWN)],
            "tools": [_tool(tool) for tool in case["tools"]] if case["tools"] else None,
            "add_generation_prompt": case["add_generation_prompt"],
            "variables": _variables(case),
        }
    )


def message_texts(case: dict[str, Any]) -> list[str]:
    """The texts of a conversation's messages and tools (where the format's tokens could hide)."""
    return [json.dumps(case["messages"], ensure_ascii=False), json.dumps(case["tools"] or [], ensure_ascii=False)]


def decode_normal_form(case: dict[str, Any], text: str) -> dict[str, Any] | None:
    return gpt_oss_normal_form(case, text)


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
