"""The ``hermes3`` test profile: hermes' replies (its profile, reused), Hermes 3 ``tool_use`` prompts.

The reply side is hermes' own, so everything but the decode normal form is hermes' profile. Also
here: :func:`tool_conversations`, generated conversations made to fit what the template renders
(tools always given, with descriptions and parameters, types it can write), so that parity and
decode see mostly prompts rather than the template's errors.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
from typing import Any

import strategies
from harness import linked_as_json
from hypothesis import strategies as st

from codec import jinja
from formats import Decode
from formats.hermes import PROFILE as HERMES
from formats.hermes import message_texts

#: What decode puts where the prompt shows that messages it does not render were there.
UNSHOWN = {"role": "developer", "content": ""}
#: Text that makes a prompt read several ways that render the same: then only rendering back is checked.
AMBIGUOUS = (
    "<|im_start|>",
    "<|im_end|>",
    "<tool_response>",
    "</tool_response>",
    "<tool_call>",
    '"parameters": ',
    "</tools>",
    "Returns:",
    '{"type": "function"',
)
#: Return schemas (the ``return`` key the template reads), each of a type decode reads back.
RETURNS = (
    {"type": "integer"},
    {"type": "string", "description": "The answer."},
    {"type": "object", "description": "Fields:\n  a, b"},
    {"type": "array"},
)

# --------------------------------------------------------------------------- conversations


def _without_null(schema: Any) -> Any:
    """``schema`` with ``"null"`` taken out of its types (the template recurses without end on it)."""
    if isinstance(schema, list):
        return [_without_null(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {key: _without_null(value) for key, value in schema.items()}
    kind = out.get("type")
    if kind == "null":
        out["type"] = "string"
    elif isinstance(kind, list):
        out["type"] = [t for t in kind if t != "null"] or "string"
    return out


@st.composite
def tool_conversations(draw: st.DrawFn) -> dict[str, Any]:
    """The seeds' generated conversations, mostly made renderable by this template.

    Four times in five: tools are given (``[]`` or 1-3), each with a description and parameters,
    ``null`` types left out, sometimes a ``return`` schema; content parts are joined into text, missing
    content is empty.
    The fifth is left as drawn, errors and all.
    """
    case = draw(st.one_of(strategies.conversations(), strategies.conversations(content_parts=True)))
    if not draw(st.integers(0, 4)):
        return dict(case)
    tools = case["tools"]
    if tools is None:
        tools = draw(st.one_of(st.just([]), strategies.tools()))
    fitted = []
    for tool in json.loads(json.dumps(tools)):
        function = tool["function"]
        function.setdefault("description", draw(strategies.texts(3)))
        function.setdefault("parameters", draw(strategies.object_schemas()))
        function["parameters"] = _without_null(function["parameters"])
        if draw(st.integers(0, 3)) == 0:
            function["return"] = draw(st.sampled_from(RETURNS))
        fitted.append(tool if draw(st.integers(0, 4)) else function)  # a bare function object writes the same
    messages = []
    for message in case["messages"]:
        content = message.get("content")
        if isinstance(content, list):
            message = {**message, "content": "".join(part.get("text", "") for part in content)}
        elif content is None and message["role"] != "tool":
            message = {**message, "content": ""}
        messages.append(message)
    return {**case, "tools": fitted, "messages": messages}


# --------------------------------------------------------------------------- decode


def _arguments(arguments: Any) -> Any:
    """Arguments as they read back: an object as given; a string as that object where ``tojson`` writes
    it so, else as the string."""
    if not isinstance(arguments, str):
        return arguments
    try:
        value = json.loads(arguments)
    except ValueError:
        return arguments
    return value if isinstance(value, dict) and jinja.tojson(value) == arguments else arguments


def _python_return(returns: Any) -> dict[str, Any]:
    kinds = {"integer": "integer", "string": "string", "object": "object", "array": "array"}
    out: dict[str, Any] = {"type": kinds[returns["type"]]}
    if "description" in returns:
        out["description"] = returns["description"]
    return out


def _tool(tool: dict[str, Any]) -> dict[str, Any]:
    function = tool.get("function", tool)
    parameters = function["parameters"]
    out: dict[str, Any] = {"name": function["name"], "description": function["description"]}
    if "return" in function:
        out["return"] = _python_return(function["return"])
    out["parameters"] = parameters if parameters.get("properties") else {}
    return {"type": "function", "function": out}


def hermes3_normal_form(case: dict[str, Any]) -> tuple[dict[str, Any], list[str | None]]:
    """What ``decode(render(case))`` gives back, and each call's arguments where they come back as text."""
    given = jinja.prepare_messages(case["messages"])
    ids = itertools.count()
    raw: list[str | None] = []
    messages: list[dict[str, Any]] = []
    for i, message in enumerate(given):
        role = message.get("role")
        if role == "tool":
            if i and given[i - 1].get("role") != "tool" and (not messages or messages[-1]["role"] == "tool"):
                messages.append(UNSHOWN)  # an opener with nothing before it, or a second group of results
            content = message.get("content")
            messages.append({"role": "tool", "content": "" if content is None else str(content)})
        elif role == "assistant" and "tool_calls" in message:
            calls = []
            for call in message["tool_calls"]:
                function = call.get("function", call)
                arguments = _arguments(function["arguments"])
                raw.append(arguments if isinstance(arguments, str) else None)
                calls.append(
                    {
                        "id": f"call_{next(ids)}",
                        "type": "function",
                        "function": {"name": str(function["name"]), "arguments": {} if raw[-1] else arguments},
                    }
                )
            messages.append({"role": "assistant", "content": None, "tool_calls": calls})
        elif role in ("user", "system", "assistant"):
            messages.append({"role": role, "content": message["content"]})
    if messages and messages[-1]["role"] == "tool" and given[-1].get("role") != "tool":
        messages.append(UNSHOWN)  # results not last, with nothing written after them
    bos = case["variables"].get("bos_token", "")
    return {
        "messages": messages or [UNSHOWN],
        "tools": [_tool(tool) for tool in case["tools"]],
        "add_generation_prompt": case["add_generation_prompt"],
        "variables": {"bos_token": bos} if bos else {},
    }, raw


def _texts(case: dict[str, Any]) -> list[str]:
    found = message_texts(case)
    for tool in case["tools"] or ():
        function = tool.get("function", tool)
        parameters = json.dumps(function.get("parameters"), ensure_ascii=False)
        found += [str(function.get("name")), str(function.get("description")), parameters]
    return found


def decode_normal_form(case: dict[str, Any], text: str) -> dict[str, Any] | None:
    if any(marker in found for found in _texts(case) for marker in AMBIGUOUS):
        return None
    expected, raw = hermes3_normal_form(case)
    out = linked_as_json(expected)
    calls = (call for message in out["messages"] for call in message.get("tool_calls") or ())
    for call, arguments in zip(calls, raw, strict=True):
        if arguments is not None:  # kept as the text the template pasted
            call["function"]["arguments"] = arguments
    return out


PROFILE = dataclasses.replace(HERMES, decode=Decode(normal_form=decode_normal_form))
