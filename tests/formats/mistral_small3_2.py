"""The ``mistral_small3_2`` test profile: ``[TOOL_CALLS]NAME[CALL_ID]ID[ARGS]{...}`` per call, ``</s>``."""

from __future__ import annotations

import json
from datetime import date
from typing import Any

from harness import linked_as_json
from hypothesis import strategies as st

from codec import jinja
from formats import DEEP, MANY, PLAIN_TEXT, Adversarial, Decode, Message, N, Profile, RoundTrip, Tools
from formats.hermes import arguments, decoded, message_texts, text_values, tool_names, tools_for
from formats.mistral_nemo import ids

STOP = "</s>"
OPEN = "[TOOL_CALLS]"
_HEAD = OPEN + "f[CALL_ID]abc123xyz[ARGS]"
_ARG = _HEAD + '{"a": '  # a call cut where the value of "a" starts


def adversarial_texts(arg: str, markers: str) -> dict[str, str]:
    """The adversarial inputs of the ``[TOOL_CALLS]NAME...[ARGS]{...}`` formats: ``arg`` is a call
    cut where the value of ``"a"`` starts, ``markers`` a run of the format's reply markers."""

    def call(value: str) -> str:
        return arg + value + "}"

    return {
        "deep_list_in_arguments": call("[" * DEEP + "]" * DEEP),
        "deep_object_in_arguments": call('{"k": ' * DEEP + "1" + "}" * DEEP),
        "deep_unclosed_in_arguments": arg + "[" * DEEP,
        "unterminated_string": arg + '"' + "x" * N,
        "unterminated_string_with_markers": arg + '"' + "[TOOL_CALLS]</s>" * (N // 16),
        "partial_call_markers": "[TOOL_CALL" * (N // 10),
        "call_openers": OPEN * (N // 12),
        "names_never_ended": OPEN + "x" * N,
        "backslashes_odd": call('"' + "\\" * (N // 2 + 1) + '"'),
        "backslashes_even": call('"' + "\\" * (N // 2) + '"') + STOP,
        "string_full_of_markers": call('"' + markers * (N // len(markers)) + '"'),
        "many_calls": call("1") * (MANY // len(call("1"))) + STOP,
        "many_arguments": call("0, " + ", ".join(f'"k{i}": {i}' for i in range(N // 30))),
        "stop_tokens": STOP * (N // 4),
    }


def _adversarial() -> dict[str, Adversarial]:
    texts = adversarial_texts(_ARG, "[TOOL_CALLS]f[ARGS]{")
    return {name: Adversarial(text) for name, text in texts.items()}


# --------------------------------------------------------------------------- round trip


def content_ok(text: str) -> bool:
    """Content the format can carry: no call opener, no stop token."""
    return OPEN not in text and STOP not in text


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
            {"id": draw(ids), "type": "function", "function": {"name": draw(tool_names), "arguments": encoded}}
        )
    message: dict[str, Any] = {"role": "assistant", "content": draw(contents)}
    if calls or draw(st.booleans()):
        message["tool_calls"] = calls
    return message


def expected(message: Message, tools: Tools) -> dict[str, Any]:
    """What the reply parses to: the content, the calls with their arguments decoded."""
    calls = message.get("tool_calls") or []
    content = message["content"] or ""  # as it is: without a section around the calls, nothing is layout
    return {
        "content": content,
        "reasoning": "",
        "tool_calls": [
            {"name": c["function"]["name"], "arguments": decoded(c["function"]["arguments"])} for c in calls
        ],
    }


def _messages(with_tools: bool) -> st.SearchStrategy[tuple[Message, Tools]]:
    return assistant_messages().map(lambda message: (message, tools_for(message) if with_tools else None))


#: Text that makes a prompt read several ways that render the same: then only rendering back is checked.
AMBIGUOUS = ("[INST]", "[/INST]", "[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]", "[AVAILABLE_TOOLS]", OPEN, "[TOOL_RESULTS]")
AMBIGUOUS += ("[/TOOL_RESULTS]", "[TOOL_CONTENT]", "[CALL_ID]", "[ARGS]", "[IMG]")


def _text(content: Any) -> Any:
    """Content as the template writes it: a string, or its text parts and ``[IMG]``."""
    if content is None or isinstance(content, str):
        return content or ""
    return "".join(part["text"] if part["type"] == "text" else "[IMG]" for part in content)


def _normal_form(case: dict[str, Any], text: str) -> dict[str, Any] | None:
    """What ``decode(render(case))`` gives back, or None where the prompt reads several ways."""
    if any(marker in piece for piece in message_texts(case) for marker in AMBIGUOUS):
        return None
    messages = jinja.prepare_messages(case["messages"])
    tools = jinja.prepare_tools(case["tools"])
    out: list[dict[str, Any]] = []
    loop = messages
    if messages and messages[0].get("role") == "system":
        content = messages[0]["content"]
        out.append({"role": "system", "content": content if isinstance(content, str) else content[0]["text"]})
        loop = messages[1:]
    eos = case["variables"].get("eos_token", STOP)
    content_turns = call_turns = 0
    for message in loop:
        role = message.get("role")
        if role == "system":
            content = message["content"]
            out.append({"role": "system", "content": content if isinstance(content, str) else content[0]["text"]})
        elif role == "user":
            out.append({"role": "user", "content": _text(message.get("content"))})
        elif role == "assistant" and message.get("tool_calls"):
            calls = [{"id": c["id"], "type": "function", "function": c["function"]} for c in message["tool_calls"]]
            call_turns += 1
            out.append({"role": "assistant", "content": None, "tool_calls": calls})
        elif role == "assistant":
            if out and out[-1].get("tool_calls"):
                return None  # the answer right after the calls: where eos_token ends reads several ways
            content_turns += 1
            out.append({"role": "assistant", "content": _text(message.get("content"))})
        else:
            content = message.get("content")
            if isinstance(content, dict) and "content" in content:
                content = content["content"]
            out.append({"role": "tool", "content": str(content), "tool_call_id": message["tool_call_id"]})
    if content_turns and not call_turns and eos != STOP:
        return None  # the turns' end reads as their content's
    users = any(m["role"] == "user" for m in out)
    if tools is not None:  # S4: an earlier user text like the last one, with no tools before it, as a part
        originals = [m for m in loop if m.get("role") == "user"]
        given = [m for m in out if m["role"] == "user"]
        for original, read in zip(originals[:-1], given[:-1], strict=True):
            if original != originals[-1] and read["content"] == given[-1]["content"]:
                read["content"] = [{"type": "text", "text": read["content"]}]
    variables: dict[str, Any] = {}
    if loop is messages:  # the default system prompt, with its day
        variables["current_date"] = case["variables"].get("current_date") or date.today().isoformat()
    if case["variables"].get("bos_token"):
        variables["bos_token"] = case["variables"]["bos_token"]
    if (content_turns or call_turns) and eos != STOP:
        variables["eos_token"] = eos
    return linked_as_json(
        {
            "messages": out,
            "tools": tools if users and tools is not None else None,
            "add_generation_prompt": False,
            "variables": variables,
        }
    )


PROFILE = Profile(
    markers=(OPEN, "[CALL_ID]", "[ARGS]", STOP, "[INST]", "[/INST]", "[SYSTEM_PROMPT]", "[TOOL_RESULTS]"),
    snippets=(
        '[TOOL_CALLS]f[CALL_ID]abc123xyz[ARGS]{"a": 1}',
        "[TOOL_CALLS]f[ARGS]",
        "[CALL_ID]abc123xyz",
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
