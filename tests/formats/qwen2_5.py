"""The ``qwen2_5`` test profile: hermes' replies (its profile, reused), Qwen2.5's prompts.

The reply side is hermes' own, so everything but the decode normal form is hermes' profile. The
normal form is written for Qwen2.5 and QwQ at once (:func:`qwen_normal_form`: what sets them
apart is given as arguments), since their templates differ only where ``qwq``'s module says.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable
from typing import Any

from harness import linked_as_json

from codec import jinja
from formats import Decode
from formats.hermes import PROFILE as HERMES
from formats.hermes import SEPARATORS, SHOWN_ROLES, UNSHOWN, message_texts

#: Qwen2.5's default system prompt, written where a conversation has none.
DEFAULT_SYSTEM = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."
#: Text that makes a prompt read several ways that render the same: then only rendering back is checked.
AMBIGUOUS = (*SEPARATORS, '", "arguments": ', "<tool_response>", "</tool_response>", "# Tools")

#: ``shown(content, is_last)``: the content an assistant turn writes.
Shown = Callable[[Any, bool], Any]


def _as_written(content: Any, is_last: bool) -> Any:
    return content


def _call(call: dict[str, Any], ids: itertools.count[int], raw: list[str | None]) -> dict[str, Any]:
    function = call.get("function", call)
    arguments = function["arguments"]
    raw.append(arguments if isinstance(arguments, str) else None)
    return {
        "id": f"call_{next(ids)}",
        "type": "function",
        "function": {"name": str(function["name"]), "arguments": {} if raw[-1] is not None else arguments},
    }


def qwen_normal_form(
    case: dict[str, Any], *, unwritten: str | None, shown: Shown, empty: str | None
) -> tuple[dict[str, Any], list[str | None]] | None:
    """What ``decode(render(case))`` gives back (None where this does not model it), and each call's
    arguments where they come back as the text they were given as.

    ``unwritten``: the first system text that reads as no system message (the default prompt;
    None: ``''``, only with tools); ``shown``: the content an assistant turn writes; ``empty``:
    what an empty content before calls reads as.
    """
    given = jinja.prepare_messages(case["messages"])
    tools = case["tools"] or None
    for message in given:
        calls = message.get("tool_calls") or []
        if message.get("role") != "tool" and not isinstance(message.get("content", ""), str):
            return None  # printed as its Python text, or an error: not modelled here
        if any(not isinstance(call.get("function", call).get("arguments"), dict | str) for call in calls):
            return None
    ids = itertools.count()
    raw: list[str | None] = []
    messages: list[dict[str, Any]] = []
    unshown = False
    last = len(given) - 1
    for index, message in enumerate(given):
        role = message["role"]
        if role not in SHOWN_ROLES:
            unshown = True
            continue
        if role == "tool" and unshown and messages and messages[-1]["role"] == "tool":
            messages.append(UNSHOWN)
        unshown = False
        content = message.get("content")
        calls = message.get("tool_calls") or []
        if role == "assistant" and calls:
            text = shown(content, index == last) if content else None
            out: dict[str, Any] = {"role": "assistant", "content": text or ("\n" if content else empty)}
            out["tool_calls"] = [_call(call, ids, raw) for call in calls]
            messages.append(out)
        elif role == "assistant":
            messages.append({"role": "assistant", "content": shown(content, index == last)})
        elif role == "tool":
            messages.append({"role": "tool", "content": "" if content is None else str(content)})
        else:
            messages.append({"role": role, "content": content})
    first_system = given[0]["role"] == "system"
    written = unwritten if unwritten is not None else "" if tools else None
    if first_system and messages[0]["content"] == written:
        messages.pop(0)
        first_system = False
    if messages and messages[0]["role"] == "system" and not first_system and (written is not None):
        # A later system message, which must not become the first: that one is written otherwise
        # (inside the tools header, or instead of the default prompt). With neither, both read alike.
        messages.insert(0, UNSHOWN)
    thinking = case["add_generation_prompt"] and bool(case["variables"].get("enable_thinking"))
    return {
        "messages": messages or [UNSHOWN],
        "tools": tools,
        "add_generation_prompt": case["add_generation_prompt"],
        "variables": {"enable_thinking": True} if thinking else {},
    }, raw


def normal_form_of(
    case: dict[str, Any], *, unwritten: str | None, shown: Shown, empty: str | None
) -> dict[str, Any] | None:
    """:func:`qwen_normal_form` as decode dumps it, string arguments as the text they were."""
    if any(marker in text for text in message_texts(case) for marker in AMBIGUOUS):
        return None
    got = qwen_normal_form(case, unwritten=unwritten, shown=shown, empty=empty)
    if got is None:
        return None
    expected, raw = got
    out = linked_as_json(expected)
    calls = (call for message in out["messages"] for call in message.get("tool_calls") or ())
    for call, arguments in zip(calls, raw, strict=True):
        if arguments is not None:
            call["function"]["arguments"] = arguments
    return out


def decode_normal_form(case: dict[str, Any], text: str) -> dict[str, Any] | None:
    if case["variables"].get("enable_thinking"):
        case = {**case, "variables": {}}  # the template reads no variable
    return normal_form_of(case, unwritten=DEFAULT_SYSTEM, shown=_as_written, empty=None)


PROFILE = dataclasses.replace(HERMES, decode=Decode(normal_form=decode_normal_form))
