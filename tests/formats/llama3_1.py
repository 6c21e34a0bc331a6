"""The ``llama3_1`` test profile: bare JSON calls (``{"name": ..., "parameters": ...}``) that are the
whole reply, ``<|python_tag|>`` and Python calls after it, ``<|eot_id|>`` / ``<|eom_id|>``."""

from __future__ import annotations

import itertools
import json
from typing import Any

from harness import linked_as_json
from hypothesis import strategies as st

from codec import jinja
from formats import DEEP, MANY, PLAIN_TEXT, Adversarial, Decode, Message, N, Profile, RoundTrip, Tools
from formats import hermes as base

EOT, EOM, TAG = "<|eot_id|>", "<|eom_id|>", "<|python_tag|>"
_ARG = '{"name": "f", "parameters": {"a": '  # a call cut where the value of "a" starts


def _call(value: str) -> str:
    return _ARG + value + "}}"


def _adversarial() -> dict[str, Adversarial]:
    call = _call
    texts = {
        "deep_list_in_arguments": call("[" * DEEP + "]" * DEEP),
        "deep_object_in_arguments": call('{"k": ' * DEEP + "1" + "}" * DEEP),
        "deep_unclosed_in_arguments": _ARG + "[" * DEEP,
        "unterminated_string": _ARG + '"' + "x" * N,
        "unterminated_string_with_markers": _ARG + '"' + (EOT + TAG) * (N // 24),
        "python_tags": TAG * (N // 14),
        "partial_python_tags": "<|python_ta" * (N // 11),
        "python_tags_opening_objects": (TAG + "{") * (N // 15),
        "braces_in_text": "{" * (N // 5),
        "quotes_after_a_head": '{"name"' + '"' * N,
        "many_bare_calls": (call("1") + "; ") * (MANY // 38) + EOT,
        "many_tagged_calls": (TAG + call("1")) * (MANY // 50) + EOM,
        "semicolons_after_a_call": call("1") + ";" * N,
        "object_then_text": call("1") + " e " * (N // 3),
        "stop_tokens": EOT * (N // 10),
        "eom_tokens": EOM * (N // 10),
        "python_call_never_closed": TAG + 'f(a="' + "x" * N,
        "python_call_of_many_arguments": TAG + "f(" + ", ".join(f"k{i}={i}" for i in range(N // 12)) + ")" + EOM,
        "python_list_of_many_calls": TAG + "[" + "f(a=1), " * (MANY // 8) + "]" + EOT,
        "deep_parentheses_in_a_python_call": TAG + "f(a=" + "(" * DEEP + ")" * DEEP + ")",
        "builtin_call_of_quotes": TAG + 'brave_search.call(query="' + '\\"' * (N // 2) + '")' + EOM,
        "backslashes_odd": call('"' + "\\" * (N // 2 + 1) + '"'),
        "backslashes_even": call('"' + "\\" * (N // 2) + '"') + EOT,
    }
    return {name: Adversarial(text) for name, text in texts.items()}


# --------------------------------------------------------------------------- round trip


def content_ok(text: str) -> bool:
    """Content the format can carry: none of its markers, nothing that reads as calls at its start."""
    return not any(marker in text for marker in (EOT, EOM, TAG)) and not text.lstrip(" \t\r\n").startswith(("{", "["))


contents = st.one_of(st.none(), st.just(""), base.text_values().filter(content_ok))


@st.composite
def assistant_messages(draw: st.DrawFn) -> dict[str, Any]:
    """An OpenAI assistant message: content, or one call (arguments as a dict or a JSON string)."""
    message: dict[str, Any] = {"role": "assistant", "content": draw(contents)}
    if draw(st.booleans()):
        args = draw(base.arguments())
        encoded: Any = json.dumps(args, ensure_ascii=draw(st.booleans())) if draw(st.integers(0, 3)) == 0 else args
        function = {"name": draw(base.tool_names), "arguments": encoded}
        message["tool_calls"] = [{"id": "x0", "type": "function", "function": function}]
    return message


def expected(message: Message, tools: Tools) -> dict[str, Any]:
    """What the reply parses to: the content where there is no call (a call is the whole reply), the call."""
    got = base.expected(message, tools)
    return {**got, "content": "" if got["tool_calls"] else got["content"]}


def _messages(with_tools: bool) -> st.SearchStrategy[tuple[Message, Tools]]:
    return assistant_messages().map(lambda message: (message, base.tools_for(message) if with_tools else None))


# --------------------------------------------------------------------------- decode

#: Text that makes a prompt read several ways that render the same: then only rendering back is checked.
AMBIGUOUS = (
    "<|start_header_id|>",
    "<|end_header_id|>",
    EOT,
    EOM,
    '"parameters": ',
    "Given the following functions",
    "You have access to the following functions",
    "Today Date:",
)


def _trimmed(content: Any) -> str:
    return "" if content is None else str(content).strip()


def llama_normal_form(case: dict[str, Any], date: str | None = None) -> dict[str, Any] | None:
    """What ``decode(render(case))`` gives back for a conversation without the template's own
    variables (``tools_in_user_message``, ``builtin_tools``, ``custom_tools``; ``date_string`` where
    ``date`` is None); ``date``: the date a Llama 3.2 prompt gives back where none is given."""
    if any(marker in text for text in base.message_texts(case) for marker in AMBIGUOUS):
        return None
    own = {"tools_in_user_message", "custom_tools"} | ({"date_string", "builtin_tools"} if date is None else set())
    if set(case["variables"]) & own:
        return None  # (tests/test_llama3_1.py reads those back)
    given = jinja.prepare_messages(case["messages"])
    tools = case["tools"]
    messages: list[dict[str, Any]] = []
    system = ""
    if given[0].get("role") == "system":
        system, given = _trimmed(given[0].get("content")), given[1:]
    if tools is not None and given:  # the tools go into the first message after the system one, as a user turn
        first_user = {"role": "user", "content": _trimmed(given[0].get("content"))}
        given = given[1:]
    else:
        first_user = None
    if system or (first_user is None and given and given[0].get("role") == "system"):
        messages.append({"role": "system", "content": system})
    if first_user is not None:
        messages.append(first_user)
    ids = itertools.count()
    raw: list[Any] = []
    for message in given:
        role = message.get("role")
        if role in ("tool", "ipython"):
            messages.append({"role": "tool", "content": message.get("content")})
        elif "tool_calls" in message:
            function = message["tool_calls"][0]["function"]
            raw.append(function["arguments"])
            arguments = {} if isinstance(function["arguments"], str) else function["arguments"]
            call = {"id": f"call_{next(ids)}", "type": "function", "function": {**function, "arguments": arguments}}
            messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        else:
            messages.append({"role": role, "content": _trimmed(message.get("content"))})
    bos = case["variables"].get("bos_token")
    variables = {"bos_token": bos} if bos else {}
    if date is not None:
        variables["date_string"] = case["variables"].get("date_string", date)
    out = linked_as_json(
        {
            "messages": messages,
            "tools": tools,
            "add_generation_prompt": case["add_generation_prompt"],
            "variables": variables,
        }
    )
    calls = (call for message in out["messages"] for call in message.get("tool_calls") or ())
    for call, arguments in zip(calls, raw, strict=True):
        if isinstance(arguments, str):  # written as a JSON string literal, read back as that string
            call["function"]["arguments"] = arguments
    return out


def decode_normal_form(case: dict[str, Any], text: str) -> dict[str, Any] | None:
    return llama_normal_form(case)


PROFILE = Profile(
    markers=(TAG, EOT, EOM, "<|start_header_id|>", "<|end_header_id|>"),
    snippets=(
        '{"name": "f", "parameters": {"a": 1}}',
        '{"name": "f"',
        '"name"',
        '"parameters"',
        '"arguments"',
        '"type": "function"',
        'brave_search.call(query="x")',
        "f(a=1)",
        "; ",
        "{",
        "}",
        "[",
        "]",
        ":",
        ",",
    ),
    call_closer="",  # a bare call ends where the reply says it is whole: its stop token or its end
    plain_text=PLAIN_TEXT,
    broken_block=TAG + "{oops}",
    adversarial=_adversarial,
    grammar_forbid=(),
    round_trip=RoundTrip(messages=_messages, expected=expected, keeps_key_order=True),
    decode=Decode(normal_form=decode_normal_form),
    test_xfail={
        "golden_render_decodes_to_its_normal_form/thinking_disabled": "a tool result given as a mapping is written "
        "as a JSON object (L6), which no message's content holds: decode refuses it",
    },
)
