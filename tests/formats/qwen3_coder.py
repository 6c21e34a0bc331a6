"""The ``qwen3_coder`` test profile: XML calls (``<function=NAME>``, ``<parameter=KEY>``), values as raw text."""

from __future__ import annotations

import dataclasses
import itertools
import json
from typing import Any

import strategies
from harness import linked_as_json
from hypothesis import assume
from hypothesis import strategies as st
from hypothesis.strategies import DrawFn

from codec import wire
from codec.formats.qwen3_coder import DEFAULT_SYSTEM, Qwen3Coder
from codec.schema import declared_types, type_text, violations
from formats import DEEP, PLAIN_TEXT, Adversarial, Decode, Message, N, Profile, RoundTrip, Tools

STOP = "<|im_end|>"
#: qwen3_coder's spec with markers of its own: another member of the family.
OWN_MARKERS = dataclasses.replace(
    Qwen3Coder.wire,
    call=("<invoke_tool>", "</invoke_tool>"),
    stop="<|end|>",
    reasoning=("<reason>", "</reason>"),
    name=("<fn=", ">"),
    parameter=("<arg=", ">", "</arg>"),
)
_CALL = "<tool_call>\n<function=f>\n"
_ARG = _CALL + "<parameter=a>\n"  # a call cut where the value of "a" starts
_END = "\n</parameter>\n</function>\n</tool_call>"


def _param(key: str, value: str) -> str:
    return f"<parameter={key}>\n{value}\n</parameter>\n"


def _tools_typed(kind: str) -> list[dict[str, Any]]:
    props = {"a": {"type": kind}, "s": {"type": "string"}, "n": {"type": "integer"}}
    return [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": props}}}]


def _adversarial() -> dict[str, Adversarial]:
    one = _CALL + _param("a", "1") + "</function>\n</tool_call>"
    bare = "<function=f>\n" + _param("a", "1") + "</function>\n</tool_call>"
    texts = {
        "unterminated_value": _ARG + "x" * N,
        "value_of_unconfirmed_closers": _ARG + "\n</parameter>\nx" * (N // 15) + _END,
        "value_of_closers_then_spaces": _ARG + "\n</parameter>    x" * (N // 18) + _END,
        "value_of_partial_closers": _ARG + "\n</param" * (N // 8),
        "value_of_less_than_signs": _ARG + "<" * N,
        "value_of_newlines": _ARG + "\n" * N + _END,
        "value_of_other_markers": _ARG + "<tool_call></tool_call><|im_end|>" * (N // 33),
        "unclosed_function_head": "<tool_call>\n<function=" + "x" * N,
        "unclosed_parameter_head": _CALL + "<parameter=" + "x" * N,
        # Kept small: each '<function=' on a line without '>' costs a regex scan to the end of the
        # line that stream.work does not count: quadratic time (100 KB of them take ~4 s), a known bug.
        "function_heads_without_end": "<function=" * 1_000,
        "partial_function_markers": "<function" * (N // 9),
        "partial_call_markers": "<tool_call" * (N // 10),
        "partial_markers_after_newlines": "\n<tool_" * (N // 7),
        "stop_tokens": STOP * (N // 10),
        "orphan_closers": "</tool_call>" * (N // 12),
        "empty_blocks": "<tool_call>\n" * (N // 12),
        "many_calls": (one + "\n") * (N // 80) + STOP,
        "many_bare_calls": (bare + "\n") * (N // 70),
        "many_broken_calls": (_CALL + "junk\n</function>\n</tool_call>\n") * (N // 60),
        "many_parameters": _CALL + "".join(_param(f"k{i}", str(i)) for i in range(N // 30)) + "</function>",
        "many_duplicates": _CALL + _param("a", "x") * (N // 30) + "</function>",
    }
    out = {name: Adversarial(text) for name, text in texts.items()}
    # every '<parameter=' is refused once (a missing </parameter>) before the closer is inserted
    out["many_unclosed_parameters"] = Adversarial(_CALL + "<parameter=a>\n1\n" * (N // 16))
    # Values typed by a schema: long and deep containers, long strings and numbers.
    array, obj = _tools_typed("array"), _tools_typed("object")
    out["typed_long_array"] = Adversarial(_ARG + "[" + "1, " * (N // 3) + "1]" + _END, array)
    out["typed_long_python_list"] = Adversarial(_ARG + "[" + "'x', " * (N // 5) + "None]" + _END, array)
    out["typed_long_string"] = Adversarial(_CALL + "<parameter=s>\n" + "é" * N + _END, array)
    out["typed_long_integer"] = Adversarial(_CALL + "<parameter=n>\n" + "9" * 4_000 + _END, array)
    # past Python's int-to-str limit (4300 digits): must stay a string, not raise
    out["typed_huge_integer"] = Adversarial(_CALL + "<parameter=n>\n" + "9" * 5_000 + _END, array)
    out["typed_deep_tuple"] = Adversarial(_ARG + "(" * DEEP + ")" * DEEP + _END, array)
    out["typed_deep_array"] = Adversarial(_ARG + "[" * DEEP + "]" * DEEP + _END, array)
    out["typed_deep_unclosed_array"] = Adversarial(_ARG + "[" * DEEP + _END, array)
    out["typed_deep_object"] = Adversarial(_ARG + '{"k": ' * DEEP + "1" + "}" * DEEP + _END, obj)
    out["typed_deep_string_encoded"] = Adversarial(_ARG + '"' + "[" * DEEP + '"' + _END, obj)
    # Pretty-printed calls: the layout of long values, blank lines and blanks held at line starts,
    # lines less indented than the layout, indented tags, drifted tags.
    laid = "<tool_call>\n  <function=f>\n    <parameter=s>\n"
    laid_end = "\n    </parameter>\n  </function>\n</tool_call>"
    texts = {
        "laid_out_value_of_many_lines": laid + "      x = 1\n" * (N // 12) + laid_end,
        "laid_out_value_of_blank_lines": laid + "      a\n" + "      \n" * (N // 7) + "      b" + laid_end,
        "laid_out_value_of_one_long_indentation": laid + " " * N + "x" + laid_end,
        "laid_out_value_of_uneven_lines": laid + "      a\n" + "b\n" * (N // 2) + laid_end,
        "laid_out_value_cut_in_blanks": laid + "      a\n" + " \n" * (N // 2),
        "indented_parameters": "<tool_call>\n  <function=f>\n"
        + "".join(f"    <parameter=k{i}>\n      {i}\n    </parameter>\n" for i in range(N // 40))
        + "  </function>\n</tool_call>",
        "blank_lines_between_tags": _CALL + "  \n" * (N // 3) + "</function>\n</tool_call>",
        "indentation_before_no_tag": _CALL + "\n   x" * (N // 5),
        "indents_before_tags_in_a_value": _ARG + "\n    <b>" * (N // 8) + _END,
        "suffixed_closers_in_a_value": _ARG + "</parameter_x> " * (N // 15) + _END,
        "unterminated_closers_in_a_value": _ARG + "</parameter\nx" * (N // 13) + _END,
        "unterminated_function_closers_in_a_value": _ARG + "</function\nx" * (N // 12) + _END,
        "many_drifted_calls": (
            "<tool_call>\n<function=f\n<parameter=a\n1\n</parameter1>\n<parameter=b>\n2\n</parameter\n</function\n</tool_call>\n"
        )
        * (N // 95),
        "function_heads_without_gt_in_calls": ("<tool_call>\n<function=" + "x" * 40 + "\n</tool_call>\n") * (N // 66),
        "parameter_heads_without_gt": _CALL + "<parameter=a\n" * (N // 13),
        # Markup inside a string value: heads that are text of it, calls written inside it.
        "value_of_given_heads": _CALL + "<parameter=s>\n" + "x\n</parameter>\n<parameter=s>\n" * (N // 29) + _END,
        "value_of_undeclared_heads": _CALL + "<parameter=s>\n" + "\n<parameter=zz>\n" * (N // 15) + _END,
        "value_of_written_calls": _CALL + "<parameter=s>\n" + "<function=g>\n</function>\n" * (N // 24) + _END,
        "value_of_written_call_heads": _CALL + "<parameter=s>\n" + "<function=g>\nx" * (N // 14) + _END,
        "value_of_an_unclosed_written_call": _CALL + "<parameter=s>\n<function=g>\n<parameter=x>\n" + "y\n" * (N // 2),
    }
    out.update({name: Adversarial(text, array) for name, text in texts.items()})
    # Reasoning, fences and prose about the tags.
    texts = {
        "long_reasoning": "<think>\n" + "I think <tool_call> </think \n" * (N // 27),
        "unclosed_reasoning_of_newlines": "<think>" + "\n" * N,
        "many_fences": "```\n<function=f>\n```\n" * (N // 20),
        "unclosed_fence_of_markers": "```\n" + "<tool_call>\n</tool_call>\n<function=f>\n" * (N // 37),
        "fenced_calls": ("```\n" + one + "\n```\n") * (N // 70),
        "backticks": "`" * N,
        "prose_mentioning_tags": "Use <tool_call> then <function=f> and </tool_call>. " * (N // 52),
        "lines_starting_with_tags": "\n<function=f\n</tool_call>x" * (N // 26),
        "orphan_closers_on_their_lines": "\n  </tool_call>" * (N // 15),
        "openers_not_followed_by_functions": "<tool_call>\n x" * (N // 15),
        "quoted_names": ('<tool_call>\n<function="f">\n<parameter="a">\n1\n</parameter>\n</function>\n</tool_call>\n')
        * (N // 80),
    }
    out.update({name: Adversarial(text) for name, text in texts.items()})
    return out


# --------------------------------------------------------------------------- round trip


def tojson(value: Any) -> str:
    """The template's ``tojson``: how a non-string value is written."""
    return json.dumps(value, ensure_ascii=False)


def raw_text(value: Any) -> str:
    """A value as the template writes it between the parameter tags: strings raw, the rest JSON."""
    return value if isinstance(value, str) else tojson(value)


def declared(schema: Any) -> list[str]:
    """The JSON types a property schema names (``type``, ``nullable``, ``anyOf``/``oneOf``, string ``enum``)."""
    if not isinstance(schema, dict):
        return []
    kind = schema.get("type")
    types = [kind] if isinstance(kind, str) else list(kind or [])
    if schema.get("nullable") is True:
        types.append("null")
    for key in ("anyOf", "oneOf"):
        for option in schema.get(key) or []:
            types += declared(option)
    if not types and isinstance(schema.get("enum"), list) and all(isinstance(v, str) for v in schema["enum"]):
        types = ["string"]
    return list(dict.fromkeys(types))


def representable(value: Any, schema: Any, *, typed: bool) -> bool:
    """Whether the format can carry ``value`` so that parsing gives it back (``typed``: with its schema).

    Excluded, because nothing in the format can tell them apart from markup or from other values:

    * a value whose text holds ``<parameter=`` or ``</function>``: either ends the value (a string
      holding ``\\n</parameter>\\n<parameter=`` is the case FORMATS.md X2 names), and the template
      escapes nothing;
    * a value holding ``<|im_end|>``: a model cannot write its stop token inside a value;
    * with a schema, a string ``null``/``None`` (blanks around allowed) where null is allowed: it
      reads as null.
    """
    text = raw_text(value)
    if "<parameter=" in text or "</function>" in text or STOP in text:
        return False
    types = declared(schema)
    return not (typed and "null" in types and isinstance(value, str) and text.strip() in ("null", "None"))


def unambiguous(schema: Any) -> Any:
    """``schema`` with every union of several non-null types cut to its first one.

    The raw text of a value is read by the first declared type that accepts it (``anyOf:
    [string, integer]`` reads ``5`` as the string "5"), so a value of a later type cannot round
    trip; golden/qwen3_coder/typed_unions.json covers such unions instead.
    """
    if isinstance(schema, list):
        return [unambiguous(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: unambiguous(v) for k, v in schema.items()}
    for key in ("anyOf", "oneOf"):
        options = out.get(key)
        if isinstance(options, list) and len([t for t in declared({key: options}) if t != "null"]) > 1:
            kept = [o for o in options if "null" in declared(o)]
            first = next(o for o in options if [t for t in declared(o) if t != "null"])
            out[key] = [first, *kept]
    kind = out.get("type")
    if isinstance(kind, list) and len([t for t in kind if t != "null"]) > 1:
        out["type"] = [next(t for t in kind if t != "null"), *(["null"] if "null" in kind else [])]
    return out


def _schema_of(tools: list[dict[str, Any]] | None, name: str, key: str) -> Any:
    for tool in tools or []:
        function = tool["function"]
        if function["name"] == name:
            props = (function.get("parameters") or {}).get("properties")
            return props.get(key) if isinstance(props, dict) else None
    return None


def _content_ok(text: str) -> bool:
    """Content the format can carry: no call or stop markers (nothing is escaped), no ``<think>`` first
    (a reply that starts with one starts with reasoning), and no code fence left open (the calls
    after it would be inside it)."""
    if any(marker in text for marker in ("<tool_call>", "</tool_call>", "<function=", STOP)):
        return False
    fences = sum(1 for line in text.split("\n") if line.startswith("```"))
    return not text.lstrip().startswith("<think>") and fences % 2 == 0


#: Property schemas, mostly scalars (with enums, nullables and unions), sometimes arrays and objects.
_property_schemas = st.one_of(strategies.schemas(0), strategies.schemas(0), strategies.schemas(1)).map(unambiguous)


@st.composite
def _tool(draw: DrawFn, name: str) -> dict[str, Any]:
    """A tool with 0-4 parameters of any schema (unions cut by :func:`unambiguous`), rarely none declared."""
    function: dict[str, Any] = {"name": name}
    if draw(st.integers(0, 7)):
        props = draw(st.dictionaries(strategies.names(), _property_schemas, max_size=4))
        function["parameters"] = {"type": "object", "properties": props}
    return {"type": "function", "function": function}


@st.composite
def _arguments(draw: DrawFn, tool: dict[str, Any] | None, typed: bool) -> dict[str, Any]:
    """Arguments for ``tool`` (most declared parameters, values fitting them), or free ones.

    Values the format cannot carry (see :func:`representable`) are left out.
    """
    props = ((tool or {}).get("function", {}).get("parameters") or {}).get("properties")
    if props:
        arguments = {k: draw(strategies.values(v)) for k, v in props.items() if draw(st.integers(0, 4))}
    else:
        arguments = draw(strategies.arguments())
    return {
        k: v for k, v in arguments.items() if representable(v, (props or {}).get(k) if typed else None, typed=typed)
    }


@st.composite
def messages(draw: DrawFn, *, with_tools: bool) -> tuple[dict[str, Any], list[dict[str, Any]] | None]:
    """An assistant message with content and 0-3 calls, and the tools it calls (or None)."""
    names = draw(st.lists(strategies.names(), min_size=1, max_size=3, unique=True))
    tools = [draw(_tool(name)) for name in names]
    # The template trims content: only trimmed content can come back unchanged.
    content = draw(st.one_of(st.none(), strategies.texts().map(str.strip).filter(_content_ok)))
    message: dict[str, Any] = {"role": "assistant", "content": content}
    calls = []
    for _ in range(draw(st.sampled_from((0, 1, 1, 2, 3)))):
        tool = draw(st.sampled_from(tools))
        arguments = draw(_arguments(tool, with_tools))
        calls.append({"type": "function", "function": {"name": tool["function"]["name"], "arguments": arguments}})
        if with_tools:  # nested values fit their schemas too, or the parse reports them
            assume(not violations(arguments, tool["function"].get("parameters") or {}))
    if calls or draw(st.booleans()):
        message["tool_calls"] = calls
    return message, tools if with_tools else None


def expected_arguments(call: dict[str, Any], tools: list[dict[str, Any]] | None) -> dict[str, Any]:
    """The arguments a perfect parse gives: typed where the tool declares a type, raw text otherwise."""
    name, arguments = call["function"]["name"], call["function"]["arguments"]
    return {k: v if declared(_schema_of(tools, name, k)) else raw_text(v) for k, v in arguments.items()}


def expected(message: Message, tools: Tools) -> dict[str, Any]:
    """What the reply parses to: the trimmed content, no reasoning, values typed by the tools (raw text without)."""
    calls = message.get("tool_calls") or []
    return {
        "content": message["content"] or "",
        "reasoning": "",
        "tool_calls": [{"name": c["function"]["name"], "arguments": expected_arguments(c, tools)} for c in calls],
    }


# --------------------------------------------------------------------------- decode

#: Sequences the template writes between the parts of a prompt: a text holding one reads as two parts.
SEPARATORS = ("<|im_end|>\n<|im_start|>", "</tool_response>\n<tool_response>", "</parameter>\n<parameter=")


def text_of(content: Any) -> str:
    # The template joins text parts and trims every message's text.
    if isinstance(content, list):
        content = "".join(part["text"] for part in content)
    return (content or "").strip()


def read_back(value: Any, schema: Any) -> Any:
    """The value a call's written text reads as.

    By the declared schema (as replies are parsed) when that reading is written the same; else as
    JSON when the text is exactly how a non-string value is written; else the text itself.
    """
    raw = raw_text(value)
    if declared_types(schema):
        typed, problem = type_text(raw, schema)
        if problem is None and raw_text(typed) == raw:
            return typed
    try:
        as_json = json.loads(raw)
    except ValueError:
        return raw
    return as_json if not isinstance(as_json, str) and raw_text(as_json) == raw else raw


def property_normal_form(schema: Any) -> dict[str, Any]:
    if not isinstance(schema, dict):
        return {}  # a schema that is no object (``true``) is written as the property's name alone
    if "description" in schema:
        return {**schema, "description": schema["description"].strip()}  # descriptions are written trimmed
    return schema


def tool_normal_form(tool: dict[str, Any]) -> dict[str, Any]:
    function = tool.get("function", tool)  # a bare function object is written as the wrapped one
    out: dict[str, Any] = {"name": function["name"]}
    if "description" in function:
        out["description"] = function["description"].strip()
    parameters = function.get("parameters") or {}
    properties = {name: property_normal_form(schema) for name, schema in parameters.get("properties", {}).items()}
    # The parameters' "type" is not written: it comes back as "object"; no parameters are no properties.
    out["parameters"] = {"type": "object", "properties": properties}
    out["parameters"].update({k: v for k, v in parameters.items() if k not in ("type", "properties")})
    out.update({k: v for k, v in function.items() if k not in ("name", "description", "parameters")})
    return {"type": "function", "function": out}


def assistant_normal_form(
    message: dict[str, Any], schemas: dict[str, Any], ids: itertools.count[int]
) -> dict[str, Any]:
    out: dict[str, Any] = {"role": "assistant", "content": text_of(message.get("content")) or None}
    calls = message.get("tool_calls") or []
    if calls:
        out["tool_calls"] = []
    for call in calls:
        name, arguments = call["function"]["name"], call["function"]["arguments"]
        properties = (schemas.get(name) or {}).get("properties", {})
        arguments = {key: read_back(value, properties.get(key)) for key, value in arguments.items()}
        # Ids are not in the prompt: call_0, call_1... across the conversation.
        out["tool_calls"].append(
            {"id": f"call_{next(ids)}", "type": "function", "function": {"name": name, "arguments": arguments}}
        )
    return out


def qwen3_coder_normal_form(case: dict[str, Any]) -> dict[str, Any]:
    """What ``decode(render(case))`` gives back."""
    tools = [tool_normal_form(tool) for tool in case["tools"]] if case["tools"] else None  # [] renders as none
    schemas = {tool["function"]["name"]: tool["function"]["parameters"] for tool in tools or ()}
    ids = itertools.count()
    messages: list[dict[str, Any]] = []
    for message in case["messages"]:
        if message["role"] == "assistant":
            messages.append(assistant_normal_form(message, schemas, ids))
        else:  # reasoning, tool_call_id and name are not in the prompt
            messages.append({"role": message["role"], "content": text_of(message.get("content"))})
    if tools and messages[0]["role"] == "system" and messages[0]["content"] in ("", DEFAULT_SYSTEM):
        # With tools, an empty system text is written as the default one: both read as no system
        # message, unless it is the only message (then it reads as the default text).
        messages = messages[1:] or [{"role": "system", "content": DEFAULT_SYSTEM}]
    return {
        "messages": messages,
        "tools": tools,
        "add_generation_prompt": case["add_generation_prompt"],
        "variables": {},  # the template reads no variable
    }


def texts(case: dict[str, Any]) -> list[str]:
    out = [text_of(m.get("content")) for m in case["messages"]]
    for message in case["messages"]:
        for call in message.get("tool_calls") or []:
            out += [v for v in call["function"]["arguments"].values() if isinstance(v, str)]
    return out


def decode_normal_form(case: dict[str, Any], text: str) -> dict[str, Any] | None:
    if any(sep in t for t in texts(case) for sep in SEPARATORS):
        return None
    return linked_as_json(qwen3_coder_normal_form(case))


PROFILE = Profile(
    markers=(
        "<tool_call>",
        "</tool_call>",
        "<function=f>",
        "</function>",
        "<parameter=a>",
        "</parameter>",
        STOP,
        "<|im_start|>",
    ),
    snippets=(
        "<tool_call>\n<function=f>\n",
        "<parameter=a>\n",
        "\n</parameter>\n",
        "</function>\n</tool_call>",
        "<function=",
        "<parameter=",
        "<function=f>\n<parameter=a>\n1\n</parameter>\n</function>",
        '{"k": [1, true]}',
        "['x', None]",
        "None",
        "True",
        "1e5",
        "0042",
    ),
    call_closer="</tool_call>",
    plain_text=PLAIN_TEXT,
    broken_block="<tool_call>\n<function=\noops\n</tool_call>",
    adversarial=_adversarial,
    grammar_forbid=(),
    decode=Decode(normal_form=decode_normal_form),
    round_trip=RoundTrip(
        messages=lambda with_tools: messages(with_tools=with_tools), expected=expected, keeps_key_order=True
    ),
    round_trip_variants={
        # The family's reply side made from a spec with markers of its own carries the same messages
        # (the snippets of qwen3_coder's markers in them are text there).
        "own_markers": RoundTrip(
            messages=lambda with_tools: messages(with_tools=with_tools),
            expected=expected,
            keeps_key_order=True,
            fmt=wire.reply_format(OWN_MARKERS, "qwen3_coder_own_markers"),
        )
    },
)
