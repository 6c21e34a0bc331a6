"""``seed_oss``: ByteDance Seed-OSS's prompts and replies: XML calls in ``<seed:tool_call>``, ``<seed:think>``.

Reference template: ``ByteDance-Seed-OSS.jinja`` (``../shared/templates/families/seed_oss``, llama.cpp's
copy). Replies are the ``xml_params`` family's with markers of their own: calls between
``<seed:tool_call>`` and ``</seed:tool_call>``, values written inline (no line break around them),
non-strings through Python's ``str()``, reasoning between ``<seed:think>`` and ``</seed:think>``
(the budget reflections the model writes inside it, ``<seed:cot_budget_reflect>...``, are reasoning
text, their closers too), and ``<seed:eos>`` to end the turn::

    <seed:think>The user wants the weather.<seed:cot_budget_reflect>I have used 12 tokens, and there are
    500 tokens remaining for use.</seed:cot_budget_reflect></seed:think>
    Let me check.

    <seed:tool_call>
    <function=get_weather>
    <parameter=city>Paris</parameter>
    <parameter=days>3</parameter>
    </function>
    </seed:tool_call><seed:eos>

Quirks of the template, reproduced by the renderer and cited by ID below:

* S1. The template sets its own special tokens (``<seed:bos>``, ``<seed:eos>``): the ``bos_token``
  and ``eos_token`` variables change nothing. A turn is ``<seed:bos>ROLE\\n`` + content + ``<seed:eos>``,
  content joined with ``+`` (untrimmed; a missing one raises, a list of parts too).
* S2. A first system message is the system turn's text; with tools and none, the text is "You are
  Doubao, ...". The tools follow: each ``function`` tool as a Python signature and docstring
  (types as ``str``/``int``/``bool``/``list``/``Any``, each argument marked ``[必填]`` required or
  ``[选填]`` optional, the ``returns`` properties), or with ``use_json_tooldef`` the tools as one JSON
  list; then the call instructions. A tool without ``parameters.properties`` raises.
* S3. ``thinking_budget`` (-1, unlimited, by default): 0 adds a system turn asking for no thinking and
  a generation prompt whose think block holds one budget reflection; another value adds a system turn
  stating the budget and the reflection interval (the first of 0, 128, 256, 512, 512, 1024, 1024 for
  a budget up to 0, 512, 1024, 2048, 4096, 8192, 16384; 1024 past it).
* S4. An assistant turn is ``<seed:bos>assistant``, then ``\\n<seed:think>REASONING</seed:think>``
  (reasoning trimmed, when it trims to something), then with calls ``\\nCONTENT\\n`` (trimmed, when it
  trims to something) and each call ``\\n<seed:tool_call>\\n<function=NAME>\\n`` + per argument
  ``<parameter=KEY>VALUE</parameter>\\n`` + ``</function>\\n</seed:tool_call>``, then ``<seed:eos>``;
  without calls ``\\nCONTENT<seed:eos>`` when the content trims to something, else nothing more: the
  turn is not closed.
* S5. Values: strings raw, anything else through ``str()`` (``True``, ``None``, ``{'a': 1}``);
  arguments given as text raise ``Can only get item pairs from a mapping.``.
* S6. The generation prompt is ``<seed:bos>assistant\\n``.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Iterator
from typing import Any

from codec.errors import ParseError, RenderError, parse_error_at
from codec.format import Format, Functions
from codec.formats._decode import assistant_message, expect, expected_error, trailing_blocks
from codec.formats._render import (
    attr,
    concat,
    contains,
    defined,
    is_iterable,
    is_mapping,
    lookup,
    string,
    subscript,
    tojson,
    trim,
)
from codec.formats.qwen3_coder_official import argument
from codec.literals import PLAIN_JSON_DECODER
from codec.models import Conversation
from codec.wire import WireSpec, compile_spec
from codec.wire.xml_params import XmlParams

__all__ = ["SeedOss", "prompt_conversation", "prompt_text", "reply_text"]

# ---------------------------------------------------------------------------- markers

BOS = "<seed:bos>"
EOS = "<seed:eos>"
CALL_OPEN = "<seed:tool_call>"
CALL_CLOSE = "</seed:tool_call>"
THINK_OPEN = "<seed:think>"
THINK_CLOSE = "</seed:think>"
BUDGET_OPEN = "<seed:cot_budget_reflect>"
BUDGET_CLOSE = "</seed:cot_budget_reflect>"
DEFAULT_SYSTEM = (
    "You are Doubao, a helpful AI assistant. You may call one or more functions to assist with the user query."
)
JSON_TOOLS_HEAD = (
    "\nTool List:\nYou are authorized to use the following tools (described in JSON Schema format). Before "
    "performing any task, you must decide how to call them based on the descriptions and parameters of these tools.\n"
)
CALL_FORMAT = (
    "\n工具调用请遵循如下格式:\n<seed:tool_call>\n<function=example_function_name>\n<parameter=example_parameter_1>"
    "value_1</parameter>\n<parameter=example_parameter_2>This is the value for the second parameter\nthat can span\n"
    "multiple lines</parameter>\n</function>\n</seed:tool_call>\n"
)
NO_THINKING = (
    "You are an intelligent assistant that can answer questions in one step without the need for reasoning and "
    "thinking, that is, your thinking budget is 0. Next, please skip the thinking process and directly start "
    "answering the user's questions."
)
BUDGET = (
    "You are an intelligent assistant with reflective ability. In the process of thinking and reasoning, you need "
    "to strictly follow the thinking budget, which is {0}. That is, you need to complete your thinking within {0} "
    "tokens and start answering the user's questions. You will reflect on your thinking process every {1} tokens, "
    "stating how many tokens have been used and how many are left."
)
#: The generation prompt's think block with ``thinking_budget=0`` (S3).
ZERO_BUDGET_THINK = (
    f"{THINK_OPEN}\n{BUDGET_OPEN}The current thinking budget is 0, so I will directly start answering the question."
    f"{BUDGET_CLOSE}\n{THINK_CLOSE}"
)
GENERATION_PROMPT = BOS + "assistant\n"
#: The reflection interval of each budget gear (S3).
GEARS = ((0, 0), (512, 128), (1024, 256), (2048, 512), (4096, 512), (8192, 1024), (16384, 1024))


# ---------------------------------------------------------------------------- render


@functools.cache
def _replies() -> XmlParams:
    kit = compile_spec(WIRE)
    assert isinstance(kit, XmlParams)
    return kit


def py_type(kind: Any) -> str:
    """The ``py_type`` macro: a JSON type's Python name (S2)."""
    if kind == "string":
        return "str"
    if contains(("number", "integer"), kind) if isinstance(kind, str) else False:
        return "int"
    return {"boolean": "bool", "array": "list"}.get(kind, "Any") if isinstance(kind, str) else "Any"


def render_tool(function: Any) -> str:
    """One ``function`` tool as the template documents it (S2): its signature and docstring."""
    parameters = lookup(function, "parameters")
    properties = lookup(parameters, "properties")
    pairs = list(_method_items(properties))
    signature = ",".join(f"{string(name)}: {py_type(attr(spec, 'type'))}" for name, spec in pairs)
    out = [f'\n\nFunction:\ndef {string(attr(function, "name"))}({signature}):\n    """\n    ']
    out.append(trim(attr(function, "description")) + "\n\n")
    if properties:
        out.append("    Args:")
        required = attr(parameters, "required")
        for name, spec in pairs:
            mark = " [必填]" if contains(required, name) else " [选填]"
            described = string(attr(spec, "description") or "")
            out.append(f"\n    - {string(name)} ({py_type(attr(spec, 'type'))}){mark}: {described}")
    out.append("\n")
    returns = attr(function, "returns")
    shown = attr(returns, "properties") if defined(returns) else returns
    if defined(returns) and defined(shown) and shown:
        out.append("    Returns:")
        for name, spec in _method_items(shown):
            out.append(
                f"\n    - {string(name)} ({py_type(attr(spec, 'type'))}): {string(attr(spec, 'description') or '')}"
            )
    out.append('\n    """')
    return "".join(out)


def _method_items(value: Any) -> Any:
    """``value.items()`` as the template calls it: an error for anything without the method."""
    if is_mapping(value):
        return value.items()
    raise RenderError(f"{string(type(value).__name__)} object has no attribute 'items'")


def render_call(call: Any) -> str:
    """One ``\\n<seed:tool_call>...</seed:tool_call>`` block (S4, S5)."""
    return "\n" + _replies().render_call(call)


def _calls(message: Any) -> Any:
    calls = attr(message, "tool_calls")
    if attr(message, "role") == "assistant" and defined(calls) and is_iterable(calls) and len(calls) > 0:
        return calls
    return None


def assistant_body(message: Any) -> str:
    """An assistant turn after ``<seed:bos>assistant`` (S4)."""
    out = []
    reasoning = attr(message, "reasoning_content")
    if isinstance(reasoning, str) and reasoning.strip():
        out.append("\n" + THINK_OPEN + reasoning.strip() + THINK_CLOSE)
    content = attr(message, "content")
    shown = content.strip() if isinstance(content, str) else ""
    calls = _calls(message)
    if calls is None:
        return "".join(out) + ("\n" + shown + EOS if shown else "")
    out.append("\n" + shown + "\n" if shown else "")
    out += [render_call(call) for call in calls]
    return "".join(out) + EOS


def prompt_text(
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    add_generation_prompt: bool,
    variables: dict[str, Any],
) -> str:
    """The prompt, as the reference template renders it (it reads ``thinking_budget`` and ``use_json_tooldef``)."""
    budget = variables.get("thinking_budget", -1)
    interval = next((v for k, v in GEARS if budget <= k), 1024)
    turns = messages
    system: Any = None
    if subscript(messages[0], "role") == "system":
        system, turns = subscript(messages[0], "content"), messages[1:]
    tool_list = tools or []
    out = []
    if system is not None:
        out.append(concat(BOS + "system\n", system))
    elif tool_list:
        out.append(BOS + "system\n" + DEFAULT_SYSTEM)
    if variables.get("use_json_tooldef"):
        out.append(JSON_TOOLS_HEAD + tojson(tool_list))
    else:
        for tool in tool_list:
            if attr(tool, "type") == "function":
                out.append(render_tool(lookup(tool, "function")))
    if tool_list:
        out.append(CALL_FORMAT)
    if system is not None or tool_list:
        out.append(EOS)
    if budget == 0:  # S3
        out.append(f"{BOS}system\n{NO_THINKING}\n{EOS}")
    elif budget != -1:
        out.append(f"{BOS}system\n{BUDGET.format(string(budget), string(interval))}\n{EOS}")
    for message in turns:
        role = attr(message, "role")
        if _calls(message) is not None or role == "assistant":
            out.append(concat(BOS, role) + assistant_body(message))
        else:  # user, system, tool and any other role alike (S1)
            out.append(concat(BOS, role, "\n", attr(message, "content"), EOS))
    if add_generation_prompt:  # S6
        out.append(GENERATION_PROMPT + (ZERO_BUDGET_THINK if budget == 0 else ""))
    return "".join(out)


# ---------------------------------------------------------------------------- reply


def reply_text(message: dict[str, Any]) -> str:
    """What the model writes after ``<seed:bos>assistant\\n``: the turn as the template writes it (S4),
    ``<seed:eos>`` included."""
    body = assistant_body({**message, "role": "assistant"})
    body = body[1:] if body.startswith("\n") else body
    return body if body.endswith(EOS) else body + EOS


# ---------------------------------------------------------------------------- decode

_TURN = re.compile(r"<seed:bos>([A-Za-z_]+)")
_CALL_START = CALL_OPEN + "\n<function="
_DEF = re.compile(r"\n\nFunction:\ndef ")


def _turns(text: str) -> list[tuple[str, int, int]]:
    """The turns of ``text``: (role, where its text starts, where it ends: the next turn or the end)."""
    starts = [m for m in _TURN.finditer(text)]
    if not text.startswith(BOS):
        raise expected_error(text, 0, (BOS,), "a turn")
    out = []
    for index, found in enumerate(starts):
        end = starts[index + 1].start() if index + 1 < len(starts) else len(text)
        out.append((found.group(1), found.end(), end))
    return out


def _value(raw: str) -> Any:
    """A value of a declaration read back: a type of the Python name shown."""
    return {"str": "string", "int": "integer", "bool": "boolean", "list": "array"}.get(raw)


_DOC = re.compile(
    r'([^(\n]*)\((.*?)\):\n    """\n    (.*?)\n\n(?:    Args:((?:\n    - .*?)*?))?\n'
    r'(?:    Returns:((?:\n    - .*?)*?))?\n    """\Z',
    re.S,
)
_ITEM = re.compile(r"(.*) \((str|int|bool|list|Any)\)( \[必填\]| \[选填\])?: (.*)", re.S)


def _items(text: str | None, pos: int) -> list[tuple[str, dict[str, Any], bool]]:
    """The ``- NAME (TYPE) [MARK]: DESCRIPTION`` lines of a docstring's section: name, schema, required."""
    out = []
    for item in (text or "").split("\n    - ")[1:]:
        match = _ITEM.fullmatch(item)
        if match is None:
            raise parse_error_at(item, 0, f"a documented argument does not read back: {item!r}")
        name, kind, mark, doc = match.groups()
        schema: dict[str, Any] = {"type": _value(kind)} if _value(kind) else {}
        if doc:
            schema["description"] = doc
        out.append((name, schema, mark == " [必填]"))
    return out


def _tools_docs(text: str, pos: int) -> list[dict[str, Any]]:
    """The tools documented as Python functions (S2), with schemas that document them the same."""
    tools = []
    for block in text.split("\n\nFunction:\ndef ")[1:]:
        match = _DOC.match(block)
        if match is None:
            raise parse_error_at(text, pos, "a tool's documentation does not read back")
        name, _, description, args, returns = match.groups()
        listed = _items(args, pos)
        function: dict[str, Any] = {"name": name}
        if description:
            function["description"] = description
        function["parameters"] = {
            "type": "object",
            "properties": {key: schema for key, schema, _ in listed},
            "required": [key for key, _, required in listed if required],
        }
        if returns:
            function["returns"] = {"type": "object", "properties": {k: v for k, v, _ in _items(returns, pos)}}
        tools.append({"type": "function", "function": function})
    return tools


def _system(text: str, body: str) -> tuple[str | None, list[dict[str, Any]] | None, dict[str, Any]]:
    """The system text (None for none), the tools and the variables of the first system turn (S2)."""
    variables: dict[str, Any] = {}
    if not body.endswith(CALL_FORMAT):
        return body, None, variables
    body = body[: -len(CALL_FORMAT)]
    json_at = body.find(JSON_TOOLS_HEAD)
    if json_at >= 0:
        try:
            tools = PLAIN_JSON_DECODER.decode(body[json_at + len(JSON_TOOLS_HEAD) :])
        except ValueError:
            tools = None
        if isinstance(tools, list) and tojson(tools) == body[json_at + len(JSON_TOOLS_HEAD) :]:
            variables["use_json_tooldef"] = True
            system = body[:json_at]
            return (None if system == DEFAULT_SYSTEM else system), tools or None, variables
    first = _DEF.search(body)
    system = body[: first.start()] if first else body
    tools = _tools_docs(body[len(system) :], 0)
    return (None if system == DEFAULT_SYSTEM and tools else system), tools or None, variables


def _assistant(text: str, start: int, end: int, ids: Iterator[int]) -> dict[str, Any]:
    """An assistant turn after its role (S4): reasoning, content, calls."""
    message: dict[str, Any] = {"role": "assistant"}
    pos = start
    if text.startswith("\n" + THINK_OPEN, pos):
        close = text.find(THINK_CLOSE, pos, end)
        if close >= 0:
            message["reasoning_content"] = text[pos + 1 + len(THINK_OPEN) : close]
            pos = close + len(THINK_CLOSE)
    if not text.endswith(EOS, pos, end):
        if pos != end:
            raise parse_error_at(text, pos, "an assistant turn not closed by <seed:eos> writes nothing more")
        return message
    stop = end - len(EOS)

    def read(text: str, at: int, limit: int) -> tuple[tuple[str, dict[str, Any]], int] | None:
        try:
            return _read_call(text, at, limit)
        except ParseError:
            return None

    def content_may_end(at: int) -> bool:
        head = text[pos:at]  # the call's own line break, after "\n" + content + "\n" where there is content
        content = head[1:-2]
        return head == "\n" or (head.startswith("\n") and head.endswith("\n\n") and content.strip() == content != "")

    cut, calls = trailing_blocks(text, pos, stop, _CALL_START, read, content_may_end)
    if calls:
        return {**assistant_message(text[pos + 1 : cut - 2] if cut > pos + 1 else None, calls, ids), **message}
    if not text.startswith("\n", pos):
        raise expected_error(text, pos, ("\n",))
    message["content"] = text[pos + 1 : stop]
    return message


def _read_call(text: str, pos: int, end: int) -> tuple[tuple[str, dict[str, Any]], int]:
    """The ``<seed:tool_call>`` block at ``pos`` and the offset after it (values inline, S4)."""
    at = expect(text, pos, _CALL_START)
    name_end = text.find(">\n", at, end)
    if name_end < 0:
        raise parse_error_at(text, pos, "the function head is never closed")
    name, at = text[at:name_end], name_end + 2
    arguments: dict[str, Any] = {}
    tail = "</function>\n" + CALL_CLOSE
    while not text.startswith(tail, at):
        at = expect(text, at, "<parameter=")
        key_end = text.find(">", at, end)
        close = text.find("</parameter>\n", key_end, end)
        if key_end < 0 or close < 0:
            raise parse_error_at(text, at, "a parameter is never closed")
        key = text[at:key_end]
        if key in arguments:
            raise parse_error_at(text, at, "a parameter repeated")
        arguments[key] = argument(text[key_end + 1 : close], None)
        at = close + len("</parameter>\n")
    return (name, arguments), at + len(tail)


def prompt_conversation(prompt: str) -> Conversation:
    """The conversation ``prompt`` is a rendering of (README, "Decoding prompts")."""
    variables: dict[str, Any] = {}
    text, generation = prompt, False
    if prompt.endswith(GENERATION_PROMPT + ZERO_BUDGET_THINK):
        text, generation = prompt[: -len(ZERO_BUDGET_THINK) - len(GENERATION_PROMPT)], True
    elif prompt.endswith(GENERATION_PROMPT):
        text, generation = prompt[: -len(GENERATION_PROMPT)], True
    turns = _turns(text) if text else []
    messages: list[dict[str, Any]] = []
    tools: list[dict[str, Any]] | None = None
    ids = itertools.count()
    for index, (role, start, end) in enumerate(turns):
        body_start = start + 1
        if role != "assistant" and not (text.startswith("\n", start) and text.endswith(EOS, start, end)):
            raise expected_error(text, end, (EOS,), "a turn closed by <seed:eos>")
        body = text[body_start : end - len(EOS)]
        if role == "system" and body == NO_THINKING + "\n" and "thinking_budget" not in variables:
            variables["thinking_budget"] = 0
            continue
        budget = re.fullmatch(
            r"You are an intelligent assistant with reflective ability\..*?which is (-?\d+)\..*\n", body, re.S
        )
        if role == "system" and budget and "thinking_budget" not in variables:
            variables["thinking_budget"] = int(budget.group(1))
            continue
        if role == "system" and index == 0:
            system, tools, found = _system(text, body)
            variables.update(found)
            if system is not None:
                messages.append({"role": "system", "content": system})
            continue
        if role == "assistant":
            messages.append(_assistant(text, start, end, ids))
        else:
            messages.append({"role": role, "content": body})
    if generation and variables.get("thinking_budget") == 0 and not prompt.endswith(ZERO_BUDGET_THINK):
        raise parse_error_at(prompt, len(prompt), "a budget of 0 writes its think block after the generation prompt")
    if not messages:
        raise parse_error_at(prompt, 0, "a prompt holds at least one message", expected=(BOS,))
    return Conversation.model_validate(
        {"messages": messages, "tools": tools, "add_generation_prompt": generation, "variables": variables}
    )


# ---------------------------------------------------------------------------- wire

#: Qwen3-Coder's XML inside ``<seed:tool_call>``, values inline and through ``str()`` (S4, S5).
WIRE = WireSpec(
    "xml_params",
    call=(CALL_OPEN, CALL_CLOSE),
    stop=EOS,
    reasoning=(THINK_OPEN, THINK_CLOSE),
    name=("<function=", ">"),
    arguments="tagged",
    parameter=("<parameter=", ">", "</parameter>"),
    values="python_str",
    value_lines=False,
    separator="\n",
)


# ---------------------------------------------------------------------------- format


class SeedOss(Format):
    """ByteDance Seed-OSS: XML calls in ``<seed:tool_call>``, ``<seed:think>`` reasoning, ``<seed:eos>``."""

    name = "seed_oss"
    aliases = ("seed-oss", "seed_oss_36b")
    summary = "ByteDance Seed-OSS: <seed:tool_call> around XML calls (values inline, via str()), <seed:think>"
    stop_token = EOS
    #: Relative to ``../shared/seeds``: the template is one of ``../shared/templates/families``.
    reference_template = "../templates/families/seed_oss/ByteDance-Seed-OSS.jinja"
    template_markers = (CALL_OPEN, "<function=", "<parameter=", THINK_OPEN)

    functions = Functions(prompt_text, prompt_conversation, reply_text)
    wire = WIRE
