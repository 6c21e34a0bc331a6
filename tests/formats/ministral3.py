"""The ``ministral3`` test profile: ``[THINK]...[/THINK]``, then ``[TOOL_CALLS]NAME[ARGS]{...}`` per call, ``</s>``."""

from __future__ import annotations

import json
from typing import Any

from harness import linked_as_json
from hypothesis import strategies as st

import codec
from codec import jinja
from formats import PLAIN_TEXT, Adversarial, Decode, Message, N, Profile, RoundTrip, Tools
from formats.hermes import arguments, decoded, message_texts, text_values, tool_names, tools_for
from formats.mistral_small3_2 import adversarial_texts

STOP = "</s>"
OPEN = "[TOOL_CALLS]"
THINK_OPEN, THINK_CLOSE = "[THINK]", "[/THINK]"
_ARG = OPEN + 'f[ARGS]{"a": '  # a call cut where the value of "a" starts
#: The markers of the format's prompts and replies.
MARKERS = (OPEN, "[ARGS]", THINK_OPEN, THINK_CLOSE, STOP, "[INST]", "[/INST]", "[SYSTEM_PROMPT]", "[TOOL_RESULTS]")
#: Text that makes a prompt read several ways that render the same: then only rendering back is checked.
AMBIGUOUS = (*MARKERS, "[/SYSTEM_PROMPT]", "[AVAILABLE_TOOLS]", "[/TOOL_RESULTS]", "[IMG]", "[CALL_ID]")


def _adversarial() -> dict[str, Adversarial]:
    texts = {
        **adversarial_texts(_ARG, "[TOOL_CALLS]f[ARGS]{[/THINK]"),
        "unclosed_reasoning": THINK_OPEN + "hmm " * (N // 4),
        "reasoning_closers": THINK_CLOSE * (N // 8),
        "reasoning_openers": THINK_OPEN * (N // 7),
    }
    return {name: Adversarial(text) for name, text in texts.items()}


# --------------------------------------------------------------------------- round trip


def content_ok(text: str) -> bool:
    """Content the format can carry: no marker of its replies."""
    return not any(marker in text for marker in (OPEN, "[ARGS]", THINK_OPEN, THINK_CLOSE, STOP))


def reasoning_ok(text: str) -> bool:
    """Reasoning the format can carry: no marker, no line break at its edges (layout beside the markers)."""
    return content_ok(text) and not text.startswith(("\n", "\r\n")) and not text.endswith("\n")


contents = st.one_of(st.none(), st.just(""), text_values().filter(content_ok))
reasonings = st.one_of(st.none(), text_values().filter(lambda t: bool(t) and reasoning_ok(t)))


@st.composite
def assistant_messages(draw: st.DrawFn) -> dict[str, Any]:
    """An OpenAI assistant message with optional reasoning and content and 0-4 calls (arguments as
    dicts or JSON strings)."""
    calls = []
    for index in range(draw(st.integers(0, 4))):
        args = draw(arguments())
        encoded: Any = args
        if draw(st.integers(0, 3)) == 0:  # OpenAI sends arguments as a JSON string
            encoded = json.dumps(args, ensure_ascii=draw(st.booleans()))
        calls.append(
            {"id": f"call_{index}", "type": "function", "function": {"name": draw(tool_names), "arguments": encoded}}
        )
    message: dict[str, Any] = {"role": "assistant", "content": draw(contents)}
    reasoning = draw(reasonings)
    if reasoning is not None:
        message["reasoning_content"] = reasoning
        if (message["content"] or "").startswith(("\n", "\r\n")):
            message["content"] = message["content"].lstrip("\r\n")  # layout after the reasoning closer
    if calls or draw(st.booleans()):
        message["tool_calls"] = calls
    return message


def expected(message: Message, tools: Tools) -> dict[str, Any]:
    """What the reply parses to: the reasoning, the content, the calls with their arguments decoded."""
    calls = message.get("tool_calls") or []
    content = message["content"] or ""  # as it is: without a section around the calls, nothing is layout
    return {
        "content": content,
        "reasoning": message.get("reasoning_content") or "",
        "tool_calls": [
            {"name": c["function"]["name"], "arguments": decoded(c["function"]["arguments"])} for c in calls
        ],
    }


def _messages(with_tools: bool) -> st.SearchStrategy[tuple[Message, Tools]]:
    return assistant_messages().map(lambda message: (message, tools_for(message) if with_tools else None))


# --------------------------------------------------------------------------- decode


def _user_text(content: Any) -> str:
    """User content as the template writes it: a string, or its text parts and ``[IMG]`` (two sorted by type)."""
    if isinstance(content, str):
        return content
    blocks = sorted(content, key=lambda b: b["type"].lower()) if len(content) == 2 else content
    return "".join(part["text"] if part["type"] == "text" else "[IMG]" for part in blocks)


def _text(content: Any) -> str:
    """System or assistant content as the template writes it: a string, or its text (and thinking) parts."""
    if content is None or isinstance(content, str):
        return content or ""
    return "".join(part["text"] if part["type"] == "text" else f"[THINK]{part['thinking']}[/THINK]" for part in content)


def _function(function: dict[str, Any]) -> Any:
    """A call's function as decode gives it: an object's arguments as written by ``tojson``, else
    (a string of them, written as it is) that text."""
    arguments = function["arguments"]
    if isinstance(arguments, str):
        text = arguments or "{}"
        try:
            value = json.loads(text)
        except ValueError:
            value = None
        if not isinstance(value, dict) or jinja.tojson(value) != text:
            return codec.FunctionCall.model_construct(name=function["name"], arguments=text)
        arguments = value
    return {"name": function["name"], "arguments": arguments}


def _normal_form(case: dict[str, Any], text: str) -> dict[str, Any] | None:
    """What ``decode(render(case))`` gives back, or None where the prompt reads several ways."""
    if any(marker in piece for piece in message_texts(case) for marker in AMBIGUOUS):
        return None
    messages = jinja.prepare_messages(case["messages"])
    tools = jinja.prepare_tools(case["tools"])
    eos = case["variables"].get("eos_token", STOP)
    out: list[dict[str, Any]] = []
    loop = messages
    if messages and messages[0].get("role") == "system":
        loop = messages[1:]
        out.append({"role": "system", "content": _text(messages[0].get("content"))})
    ids = 0
    for message in loop:
        role = message.get("role")
        if role == "user":
            out.append({"role": "user", "content": _user_text(message["content"])})
        elif role == "assistant":
            if out and out[-1]["role"] == "assistant":
                return None  # two assistant turns in a row: where one ends reads several ways
            content: Any = _text(message.get("content")) or None
            if content is None and not message.get("tool_calls"):
                content = [{"type": "text", "text": ""}]  # an answer of nothing, as the template takes it
            item: dict[str, Any] = {"role": "assistant", "content": content}
            if message.get("tool_calls"):
                item["tool_calls"] = []
                for call in message["tool_calls"]:
                    item["tool_calls"].append(
                        {"id": f"call{ids:05d}", "type": "function", "function": _function(call["function"])}
                    )
                    ids += 1
            out.append(item)
        else:
            out.append({"role": "tool", "content": str(message.get("content", ""))})
    if not eos or any(m["role"] == "assistant" and eos in (m["content"] or "") for m in out):
        return None  # the turns' end reads as their content's
    answers = [m for m in out if m["role"] == "assistant"]
    if answers and eos != STOP and not any(m.get("tool_calls") for m in answers):
        return None  # no turn of calls shows where a turn's text ends and another eos_token starts (T9)
    variables: dict[str, Any] = {}
    if case["variables"].get("bos_token"):
        variables["bos_token"] = case["variables"]["bos_token"]
    if any(m["role"] == "assistant" for m in out) and eos != STOP:
        variables["eos_token"] = eos
    return linked_as_json(
        {"messages": out, "tools": tools or None, "add_generation_prompt": False, "variables": variables}
    )


PROFILE = Profile(
    markers=MARKERS,
    snippets=(
        '[TOOL_CALLS]f[ARGS]{"a": 1}',
        "[TOOL_CALLS]f[ARGS]",
        "[THINK]x[/THINK]",
        '{"a": ',
        '"f"',
        "{",
        "}",
        ":",
        ",",
    ),
    call_closer="}",
    plain_text=PLAIN_TEXT,
    broken_block="[TOOL_CALLS]f[ARGS]oops",
    adversarial=_adversarial,
    grammar_forbid=(),
    round_trip=RoundTrip(messages=_messages, expected=expected, keeps_key_order=True),
    decode=Decode(normal_form=_normal_form),
)
