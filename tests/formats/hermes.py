"""The ``hermes`` test profile: JSON calls between ``<tool_call>`` tags, ChatML's stop token."""

from __future__ import annotations

import itertools
import json
import re
from typing import Any

from harness import linked_as_json
from hypothesis import strategies as st

from formats import DEEP, MANY, PLAIN_TEXT, Adversarial, Decode, Message, N, Profile, RoundTrip, Tools

STOP = "<|im_end|>"
OPEN, CLOSE = "<tool_call>\n", "\n</tool_call>"
_ARG = OPEN + '{"name": "f", "arguments": {"a": '  # a call cut where the value of "a" starts


def _call(value: str) -> str:
    return _ARG + value + "}}" + CLOSE


def adversarial(stop: str = STOP) -> dict[str, Adversarial]:
    """The adversarial inputs of hermes' reply syntax, ended by ``stop`` (granite4 writes another)."""
    call = _call
    texts = {
        "deep_list_in_arguments": call("[" * DEEP + "]" * DEEP),
        "deep_object_in_arguments": call('{"k": ' * DEEP + "1" + "}" * DEEP),
        "deep_unclosed_in_arguments": _ARG + "[" * DEEP,
        "unterminated_string": _ARG + '"' + "x" * N,
        "unterminated_string_with_markers": _ARG + '"' + ("</tool_call>" + stop) * (N // (12 + len(stop))),
        "partial_call_markers": "<tool_call" * (N // 10),
        "partial_markers_after_newlines": "\n<tool_" * (N // 7),
        "braces_in_text": "{" * (N // 5),
        "braces_in_block": OPEN + "{" * (N // 5),
        "quotes_in_block": OPEN + '"' * N,
        "backslashes_odd": call('"' + "\\" * (N // 2 + 1) + '"'),
        "backslashes_even": call('"' + "\\" * (N // 2) + '"') + stop,
        "string_full_of_markers": call('"' + "</tool_call><tool_call>" * (N // 23) + '"'),
        "unclosed_reasoning": "<think>" + "pensando " * (N // 9),
        "many_calls": (call("1") + "\n") * (N // 60) + stop,
        "many_arguments": call("0, " + ", ".join(f'"k{i}": {i}' for i in range(N // 30))),
        "stop_tokens": stop * (N // len(stop)),
        "python_literal_calls": (OPEN + '{"name": "f", "arguments": {"a": True}}' + CLOSE + "\n") * (N // 100),
        "empty_blocks": OPEN * (N // 12),
        # calls in other models' shapes: fences, other tags, <function=NAME>, a bare reply
        "fence_openers": "\n```json\n" * (N // 9),
        "fences_starting_like_calls": '\n```json\n{"name"' * (N // 16),
        "fence_never_closed": '```json\n{"name": "f", "arguments": {"a": "' + "x" * N,
        "fence_never_closed_then_lines": '```json\n{"name": "f", "arguments": {"a": 1}}\n' + "texto\n" * (N // 6),
        "backticks_after_newlines": "\n`" * (N // 2),
        "tags_without_calls": "<tool>" * (N // 6),
        "tags_starting_like_calls": '<tool>{"name": ' * (N // 15),
        "tags_opened_inside_strings": '<tool>{"name": "\\"' * (N // 17),
        "functions_opened_inside_strings": '<function=f>{"a": "\\"' * (N // 20),
        "function_name_never_closed": "<function=" + "x" * N,
        "function_openers": "<function=f>" * (N // 12),
        "partial_tags": "<too" * (N // 4),
        "tag_full_of_quotes": '<tool>{"name"' + '"' * N,
        "bare_reply_never_closed": '{"name": "f", "arguments": {"a": "' + "x" * N,
        "bare_reply_of_many_objects": ('{"name": "f", "arguments": {"a": 1}}\n') * (MANY // 37),
        "bare_object_then_text": '{"name": "f", "arguments": {"a": 1}}' + " e " * (N // 3),
        "tool_call_named_in_prose": "a tag <tool_call> e " * (N // 20),
        "list_in_a_block": OPEN + "[" + '{"name": "f", "arguments": {}}, ' * (MANY // 32) + "{}]" + CLOSE,
        "list_with_junk_elements": OPEN + "[" + '{"name": "f", "arguments": {}}, "x", ' * (MANY // 37) + "1]" + CLOSE,
        "fences_in_blocks": (OPEN + '```json\n{"name": "f", "arguments": {}}\n```' + CLOSE + "\n") * (MANY // 60),
    }
    return {name: Adversarial(text) for name, text in texts.items()}


# --------------------------------------------------------------------------- round trip

#: Text that looks like markup: the format's markers, their fragments, escapes and JSON syntax.
MARKER_TEXT = (
    "<tool_call>",
    "</tool_call>",
    "<|im_end|>",
    "<|im_start|>",
    "<think>",
    "</think>",
    '{"name": "f", "arguments": {}}',
    "\\",
    '"',
    "'",
    "\\n",
    "\\u00e9",
    "\\ud83d",
    "\n",
    "\r\n",
    "\t",
    "\x00",
    "\x1f",
    "\u2028",
    "é",
    "日本語",
    "🙂",
    "{",
    "}",
    "[",
    "]",
    ": ",
    ", ",
)
CHARS = st.characters(codec="utf-8")  # every code point but the surrogates


def text_values(max_pieces: int = 6) -> st.SearchStrategy[str]:
    """Strings with unicode, quotes, backslashes, newlines and marker text."""
    piece = st.one_of(st.sampled_from(MARKER_TEXT), st.text(CHARS, max_size=8))
    return st.lists(piece, max_size=max_pieces).map("".join)


def json_values(strings: st.SearchStrategy[str] | None = None) -> st.SearchStrategy[Any]:
    """JSON values as OpenAI arguments hold them: big ints, finite floats, nested lists and dicts."""
    strings = strings if strings is not None else text_values()
    scalars = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(10**40), max_value=10**40),
        st.floats(allow_nan=False, allow_infinity=False),
        strings,
    )
    return st.recursive(
        scalars,
        lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(strings, inner, max_size=4)),
        max_leaves=12,
    )


def arguments(strings: st.SearchStrategy[str] | None = None) -> st.SearchStrategy[dict[str, Any]]:
    strings = strings if strings is not None else text_values()
    return st.dictionaries(strings, json_values(strings), max_size=5)


tool_names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_.\-]{0,20}", fullmatch=True)


#: Content that may read as calls in another model's shape (a code fence, another tag,
#: ``<function=NAME>``), or, at the start of the reply, as call objects without ``<tool_call>``.
SHAPES = re.compile(r"```|<function[= ]|<(?:tool|tools|response|json|xml|JSON|function_call)>")


def content_ok(text: str) -> bool:
    """Content the format can carry: no markers, no leading reasoning block (the format cannot escape
    them), nothing that may read as calls in another model's shape."""
    lead = text.lstrip(" \t\r\n")
    return (
        "<tool_call>" not in text
        and STOP not in text
        and not lead.startswith(("<think>", "{", "["))
        and not SHAPES.search(text)
    )


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


def _schema(value: Any) -> dict[str, Any]:
    if value is None:
        return {"type": "null"}
    if isinstance(value, bool):
        return {"type": "boolean"}
    if isinstance(value, int):
        return {"type": "integer"}
    if isinstance(value, float):
        return {"type": "number"}
    if isinstance(value, str):
        return {"type": "string"}
    if isinstance(value, list):
        return {"type": "array"}
    return {"type": "object"}


def decoded(arguments: Any) -> dict[str, Any]:
    return json.loads(arguments) if isinstance(arguments, str) else arguments


def tools_for(message: dict[str, Any]) -> list[dict[str, Any]]:
    """Tools that declare every called function with a schema its arguments satisfy."""
    calls = message.get("tool_calls") or []
    seen: dict[str, list[dict[str, Any]]] = {}
    for call in calls:
        seen.setdefault(call["function"]["name"], []).append(decoded(call["function"]["arguments"]))
    tools = []
    for name, all_args in seen.items():
        params: dict[str, Any] = {"type": "object"}
        if len(all_args) == 1:
            params["properties"] = {k: _schema(v) for k, v in all_args[0].items()}
            params["required"] = list(all_args[0])
        tools.append({"type": "function", "function": {"name": name, "parameters": params}})
    return tools


def expected(message: Message, tools: Tools) -> dict[str, Any]:
    """What the reply parses to: the content, no reasoning (the reply does not write it), the calls with
    their arguments decoded."""
    calls = message.get("tool_calls") or []
    return {
        "content": message["content"] or "",
        "reasoning": "",
        "tool_calls": [
            {"name": c["function"]["name"], "arguments": decoded(c["function"]["arguments"])} for c in calls
        ],
    }


def _messages(with_tools: bool) -> st.SearchStrategy[tuple[Message, Tools]]:
    return assistant_messages().map(lambda message: (message, tools_for(message) if with_tools else None))


# --------------------------------------------------------------------------- decode

#: The roles the template renders; a message of any other role leaves no trace in the prompt.
SHOWN_ROLES = ("system", "user", "assistant", "tool")
#: What decode puts where the prompt shows that messages it does not render were there.
UNSHOWN = {"role": "developer", "content": ""}
#: Sequences the template writes between the parts of a prompt: a text holding one reads as two parts.
SEPARATORS = ("<|im_end|>\n<|im_start|>", "</tool_response>\n<tool_response>", "<tool_call>\n{")


def message_texts(case: dict[str, Any]) -> list[str]:
    """The texts a conversation's messages give a template: each content, each call's name and arguments."""
    found = [str(m.get("content")) for m in case["messages"]]
    for message in case["messages"]:
        for call in message.get("tool_calls") or ():
            function = call.get("function", call)
            found += [str(function.get("name")), str(function.get("arguments"))]
    return found


def text_of(content: Any) -> str:
    # The template writes string content as it is and any other content (parts, None) as nothing.
    return content if isinstance(content, str) else ""


def call_block(call: dict[str, Any]) -> str:
    """A call as the template writes it: name and arguments text inserted as they are."""
    function = call["function"]
    arguments = function["arguments"]
    text = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
    return f'<tool_call>\n{{"name": "{function["name"]}", "arguments": {text}}}\n</tool_call>'


def reads_back(call: dict[str, Any]) -> bool:
    """Whether a call's arguments are written as ``tojson`` writes their object (only then is the block a call)."""
    arguments = call["function"]["arguments"]
    return not isinstance(arguments, str) or json.dumps(json.loads(arguments), ensure_ascii=False) == arguments


def assistant_normal_form(message: dict[str, Any], ids: itertools.count[int]) -> dict[str, Any]:
    calls = message.get("tool_calls") or []
    # A call block that would not be written the same from its decoded arguments (arguments given
    # as a JSON string spelled otherwise, e.g. ASCII-escaped) stays text: with it, everything
    # before it is content too (the template writes content first).
    kept = max((i + 1 for i, call in enumerate(calls) if not reads_back(call)), default=0)
    content = text_of(message.get("content"))
    content = "\n".join(([content] if content else []) + [call_block(call) for call in calls[:kept]])
    out: dict[str, Any] = {"role": "assistant", "content": content or None}  # empty content reads as None
    if calls[kept:]:
        # Ids are not in the prompt: call_0, call_1... across the conversation.
        out["tool_calls"] = [
            {"id": f"call_{next(ids)}", "type": "function", "function": call["function"]} for call in calls[kept:]
        ]
    return out


def hermes_normal_form(case: dict[str, Any]) -> dict[str, Any]:
    """What ``decode(render(case))`` gives back."""
    tools = case["tools"] or None  # an empty list of tools renders as none
    ids = itertools.count()
    messages: list[dict[str, Any]] = []
    unshown = False  # messages the template does not render since the last one it does
    for message in case["messages"]:
        role = message["role"]
        if role not in SHOWN_ROLES:
            unshown = True
            continue
        if role == "tool" and unshown and messages and messages[-1]["role"] == "tool":
            messages.append(UNSHOWN)  # results either side of them are two turns: one stands for them
        unshown = False
        if role == "assistant":
            messages.append(assistant_normal_form(message, ids))
        else:  # reasoning, tool_call_id and name are not in the prompt
            messages.append({"role": role, "content": text_of(message.get("content"))})
    first_role = case["messages"][0]["role"]
    if tools and messages and messages[0]["role"] == "system" and first_role != "system":
        messages.insert(0, UNSHOWN)  # a system message the tools header does not hold came after some
    return {
        "messages": messages or [UNSHOWN],  # a prompt of unrendered messages only: one stands for them
        "tools": tools,
        "add_generation_prompt": case["add_generation_prompt"],
        "variables": {},  # the template reads no variable
    }


def texts(case: dict[str, Any]) -> list[str]:
    return [m["content"] for m in case["messages"] if isinstance(m.get("content"), str)]


def decode_normal_form(case: dict[str, Any], text: str) -> dict[str, Any] | None:
    if any(sep in t for t in texts(case) for sep in SEPARATORS):
        return None
    return linked_as_json(hermes_normal_form(case))


PROFILE = Profile(
    markers=(
        "<tool_call>",
        "</tool_call>",
        STOP,
        "<|im_start|>",
        "<think>",
        "</think>",
        # the openers and closers of calls in other models' shapes
        "\n```json\n",
        "\n```",
        "<tool>",
        "</tool>",
        "<function_call>",
        "<function=f>",
        '<function name="f">',
        "</function>",
    ),
    snippets=(
        '{"name": "f", "arguments": {"a": 1}}',
        "[{'name': 'f', 'arguments': {}}]",
        '{"name": "f"',
        "'name'",
        '{"name": "f", "arguments": {"a": ',
        '"name"',
        '"arguments"',
        '"parameters"',
        '"f"',
        "{",
        "}",
        "[",
        "]",
        ":",
        ",",
    ),
    call_closer="</tool_call>",
    plain_text=PLAIN_TEXT,
    broken_block="<tool_call>\noops\n</tool_call>",
    adversarial=adversarial,
    grammar_forbid=(),
    round_trip=RoundTrip(messages=_messages, expected=expected, keeps_key_order=True),
    decode=Decode(normal_form=decode_normal_form),
)
