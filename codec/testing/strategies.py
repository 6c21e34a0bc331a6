"""Hypothesis strategies for OpenAI-style conversations, tools and tool-call arguments.

General on purpose: nothing here is tied to one chat template. Conversations are mostly well
formed (system? then user / assistant exchanges with tool rounds), sometimes shuffled into odd
orders (consecutive or orphan tool messages, a late system message, assistant first...) so that a
template's error branches are exercised too. Tests for one format filter to what it accepts.

Exports: :func:`texts`, :func:`plain_texts`, :func:`names`, :func:`json_values`, :func:`schemas`,
:func:`object_schemas`, :func:`tool`, :func:`tools`, :func:`values`, :func:`arguments`,
:func:`tool_calls`, :func:`variables`, :func:`conversations`, :func:`rich_conversations`.
Sizes stay small (a few messages, short strings) so hundreds of examples run in seconds.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from hypothesis import strategies as st
from hypothesis.strategies import DrawFn, SearchStrategy

# Text that looks like the markers of the formats we render and parse (and of their neighbours).
MARKERS: tuple[str, ...] = (
    "<tool_call>",
    "</tool_call>",
    "<|im_start|>",
    "<|im_end|>",
    "<think>",
    "</think>",
    "```",
    "```tool_code\n",
    "```tool_response",
    "<|tool_call>",
    "<tool_call|>",
    '<|"|>',
    "call:",
    "<|channel>",
    "<channel|>",
    "<|turn>",
    "<turn|>",
    "<|tool_response>",
    "<tool_response>",
    "</tool_response>",
    "<function=f>",
    "</function>",
    "<parameter=x>",
    "</parameter>",
    "<|end_of_sentence|>",
    "<|User|>",
    "<|Assistant|>",
    "<start_of_turn>",
    "<end_of_turn>",
    "[f(a=1)]",
    '{"name": "f", "arguments": {}}',
    "tool_response",
    "{{ x }}",
    "{% if %}",
)
PUNCTUATION: tuple[str, ...] = ('"', "'", "\\", "\\n", "\\u00e9", "{", "}", "[", "]", "(", ")", ",", ":", "=", "|")
WHITESPACE: tuple[str, ...] = (" ", "\n", "\n\n", "\t", "\r\n", "  ")
WORDS: tuple[str, ...] = ("hello", "Paris", "São Paulo", "日本語", "emoji 🙂", "naïve café", "x", "None", "null", "42")
SPECIAL_TEXTS: tuple[str, ...] = ("", " ", "\n", " \n\t ", "\n\n")
NAMES: tuple[str, ...] = ("city", "query", "a", "A", "b", "Z", "days", "unit", "limit", "_private", "x1", "get_weather")


# Strategies are built once (``lru_cache``) and the structure is drawn by plain ``_draw_*``
# helpers: building hypothesis strategies inside a draw is what makes generation slow.


@cache
def texts(max_pieces: int = 4) -> SearchStrategy[str]:
    """Short strings mixing unicode, quotes, backslashes, newlines and marker-like text; sometimes blank."""
    piece = st.one_of(
        st.sampled_from(WORDS),
        st.text(st.characters(codec="utf-8"), min_size=1, max_size=4),
        st.sampled_from(PUNCTUATION),
        st.sampled_from(WHITESPACE),
        st.sampled_from(MARKERS),
    )
    joined = st.lists(piece, min_size=1, max_size=max_pieces).map("".join)
    return st.one_of(joined, joined, joined, st.sampled_from(SPECIAL_TEXTS))


@cache
def plain_texts(max_pieces: int = 4) -> SearchStrategy[str]:
    """Short prose: words, letters and digits of any script, spaces and line breaks; never markup.

    What an assistant writes beside its calls when a test means the calls to be read back: no
    marker, bracket, brace, quote or backslash that a format could take for the start of a call.
    """
    letters = st.characters(categories=("L", "N"), codec="utf-8")
    piece = st.one_of(
        st.sampled_from(WORDS),
        st.text(letters, min_size=1, max_size=4),
        st.sampled_from((" ", "\n", ", ", ". ")),
    )
    return st.lists(piece, min_size=1, max_size=max_pieces).map("".join)


@cache
def names() -> SearchStrategy[str]:
    """Identifier-like names (tools, parameters, keys), mixed case so that case-insensitive sorting matters."""
    return st.one_of(
        st.sampled_from(NAMES),
        st.sampled_from(NAMES),
        st.text(st.sampled_from("abcxyzABCXYZ_019"), min_size=1, max_size=8).filter(lambda name: not name[0].isdigit()),
    )


@cache
def _ints() -> SearchStrategy[int]:
    return st.one_of(
        st.integers(-1000, 1000),
        st.sampled_from((0, -1, 2**31, 2**53 + 1, -(2**63), 12345678901234567890, 10**30)),
    )


@cache
def _floats() -> SearchStrategy[float]:
    return st.one_of(
        st.floats(allow_nan=False, allow_infinity=False),
        st.sampled_from((0.5, -0.0, 2.0, 1e20, 1e-7, 3.14159, 1e300)),
    )


@cache
def json_values(max_leaves: int = 5) -> SearchStrategy[Any]:
    """JSON-able values: None, bools, (big) ints, floats, strings, small nested lists and objects."""
    scalars = st.one_of(st.none(), st.booleans(), _ints(), _floats(), texts(3))
    return st.recursive(
        scalars,
        lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(names(), inner, max_size=3)),
        max_leaves=max_leaves,
    )


_ID_PREFIXES = ("call_", "call_abc", "toolu_01", "c", "chatcmpl-tool-", "9", "call_é")


# --------------------------------------------------------------------------- JSON schemas

_ENUMS = st.lists(st.sampled_from(("c", "f", "kelvin", "São", "a b", 'x"y')), min_size=1, max_size=3, unique=True)
_SCALAR_TYPES = ("string", "integer", "number", "boolean")


def _described(schema: SearchStrategy[dict[str, Any]]) -> SearchStrategy[dict[str, Any]]:
    """The schema, one time in three with a description (sometimes blank or marker-laden) in front."""
    with_description = st.tuples(texts(3), schema).map(lambda pair: {"description": pair[0], **pair[1]})
    return st.one_of(schema, schema, with_description)


@cache
def schemas(depth: int = 2) -> SearchStrategy[dict[str, Any]]:
    """A property schema: string/integer/number/boolean/enum/nullable/anyOf, arrays and objects to ``depth``."""
    leaf = _described(
        st.one_of(
            st.sampled_from(_SCALAR_TYPES).map(lambda t: {"type": t}),
            _ENUMS.map(lambda values: {"type": "string", "enum": values}),
            st.sampled_from(_SCALAR_TYPES).map(lambda t: {"type": [t, "null"]}),
            st.sampled_from(_SCALAR_TYPES).map(lambda t: {"type": t, "nullable": True}),
            st.just({"anyOf": [{"type": "string"}, {"type": "integer"}]}),
            st.just({"anyOf": [{"type": "number"}, {"type": "null"}]}),
        )
    )
    if depth <= 0:
        return leaf
    array = schemas(depth - 1).map(lambda items: {"type": "array", "items": items})
    return st.one_of(leaf, leaf, leaf, _described(array), _described(object_schemas(depth - 1, max_properties=2)))


@cache
def object_schemas(depth: int = 1, *, max_properties: int = 3) -> SearchStrategy[dict[str, Any]]:
    """``{"type": "object", "properties": {...}, "required": [...]}``, a subset of the properties required."""
    properties = st.dictionaries(names(), schemas(depth), max_size=max_properties)

    def build(pair: tuple[dict[str, Any], list[bool]]) -> dict[str, Any]:
        props, flags = pair
        required = [key for key, flag in zip(props, flags[1:], strict=False) if flag]
        schema: dict[str, Any] = {"type": "object", "properties": props}
        if required or flags[0]:
            schema["required"] = required
        return schema

    flags = st.lists(st.booleans(), min_size=max_properties + 1, max_size=max_properties + 1)
    return st.tuples(properties, flags).map(build)


def _draw_tool(draw: DrawFn, name: str) -> dict[str, Any]:
    function: dict[str, Any] = {"name": name}
    kind = draw(st.integers(0, 5))
    if kind > 0:
        function["description"] = draw(texts(4))
    if kind != 1:  # almost always has parameters
        function["parameters"] = draw(object_schemas())
    return {"type": "function", "function": function}


@st.composite
def tool(draw: DrawFn, name: str | None = None) -> dict[str, Any]:
    """One OpenAI tool: ``{"type": "function", "function": {"name", "description"?, "parameters"?}}``."""
    return _draw_tool(draw, name if name is not None else draw(names()))


@st.composite
def tools(draw: DrawFn, min_size: int = 1, max_size: int = 3) -> list[dict[str, Any]]:
    """A list of tools with distinct names."""
    tool_names = draw(st.lists(names(), min_size=min_size, max_size=max_size, unique=True))
    return [_draw_tool(draw, name) for name in tool_names]


#: :func:`tools`, under a name that :func:`conversations`' parameter ``tools`` does not hide.
_any_tools = tools


# --------------------------------------------------------------------------- argument values


def _draw_value(draw: DrawFn, schema: dict[str, Any], depth: int) -> Any:
    """A value that fits ``schema`` (enum, anyOf, nullable, type lists, arrays, objects); free JSON otherwise."""
    if "enum" in schema:
        return draw(st.sampled_from(schema["enum"]))
    if "anyOf" in schema:
        return _draw_value(draw, draw(st.sampled_from(schema["anyOf"])), depth)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = draw(st.sampled_from(kind))
    if kind == "null" or (schema.get("nullable") and draw(st.integers(0, 3)) == 0):
        return None
    if kind == "string":
        return draw(texts(4))
    if kind == "integer":
        return draw(_ints())
    if kind == "number":
        return draw(st.one_of(_floats(), _ints()))
    if kind == "boolean":
        return draw(st.booleans())
    if kind == "array":
        items = schema.get("items")
        count = draw(st.integers(0, 3))
        if isinstance(items, dict) and depth > 0:
            return [_draw_value(draw, items, depth - 1) for _ in range(count)]
        return draw(st.lists(json_values(3), max_size=3))
    if kind == "object" and isinstance(schema.get("properties"), dict) and depth > 0:
        return _draw_arguments(draw, schema, depth - 1)
    return draw(json_values(4))


def _draw_arguments(draw: DrawFn, schema: dict[str, Any] | None, depth: int = 2) -> dict[str, Any]:
    if schema is None or not isinstance(schema.get("properties"), dict):
        return draw(st.dictionaries(names(), json_values(), max_size=3))
    required = set(schema.get("required") or ())
    result: dict[str, Any] = {}
    for key, prop in schema["properties"].items():
        if key in required or draw(st.booleans()):
            result[key] = _draw_value(draw, prop if isinstance(prop, dict) else {}, depth)
    return result


@st.composite
def values(draw: DrawFn, schema: dict[str, Any], depth: int = 2) -> Any:
    """Values that fit a property ``schema``."""
    return _draw_value(draw, schema, depth)


@st.composite
def arguments(draw: DrawFn, schema: dict[str, Any] | None = None, *, depth: int = 2) -> dict[str, Any]:
    """A tool call's arguments: a JSON-able dict, fitting the object ``schema`` when one is given.

    With a schema, required properties are always present and optional ones sometimes. Without,
    keys are free names and values free JSON (unicode, quotes, backslashes, newlines, big ints,
    floats, nested lists and objects).
    """
    return _draw_arguments(draw, schema, depth)


# --------------------------------------------------------------------------- messages


def _draw_tool_calls(
    draw: DrawFn, tool_list: list[dict[str, Any]] | None, *, max_calls: int = 3, string_arguments: bool = True
) -> list[dict[str, Any]]:
    count = min(max_calls, draw(st.sampled_from((1, 1, 2, 3))))
    prefix = draw(st.sampled_from(_ID_PREFIXES))
    calls = []
    for call_id in (f"{prefix}{index}" for index in range(count)):
        if tool_list:
            declared = draw(st.sampled_from(tool_list))["function"]
            name, args = declared["name"], _draw_arguments(draw, declared.get("parameters"))
        else:
            name, args = draw(names()), _draw_arguments(draw, None)
        encoded: Any = args
        if string_arguments and draw(st.integers(0, 9)) == 0:
            encoded = json.dumps(args, ensure_ascii=draw(st.booleans()))
        call: dict[str, Any] = {"type": "function", "function": {"name": name, "arguments": encoded}}
        if draw(st.integers(0, 7)):
            call = {"id": call_id, **call}
        calls.append(call)
    return calls


@st.composite
def tool_calls(
    draw: DrawFn, tool_list: list[dict[str, Any]] | None = None, *, max_calls: int = 3, string_arguments: bool = True
) -> list[dict[str, Any]]:
    """1..``max_calls`` parallel calls (distinct ids, sometimes none), to the given tools if any.

    ``arguments`` is a dict, or (when ``string_arguments``, one time in ten) its JSON text.
    """
    return _draw_tool_calls(draw, tool_list, max_calls=max_calls, string_arguments=string_arguments)


def _draw_content(
    draw: DrawFn, content_parts: bool, prose: SearchStrategy[str] | None = None
) -> str | list[dict[str, Any]]:
    text = draw(prose if prose is not None else texts())
    if content_parts and draw(st.integers(0, 4)) == 0:
        return [{"type": "text", "text": part} for part in [text, *draw(st.lists(texts(2), max_size=1))]]
    return text


def _with_reasoning(draw: DrawFn, message: dict[str, Any], prose: SearchStrategy[str] | None = None) -> dict[str, Any]:
    """Sometimes add reasoning, mostly as ``reasoning_content``, sometimes as ``reasoning``/``thinking``."""
    choice = draw(st.integers(0, 9))
    if choice < 6:
        return message
    key = "reasoning_content" if choice < 9 else draw(st.sampled_from(("reasoning", "thinking")))
    return {**message, key: draw(prose if prose is not None else texts())}


def _draw_assistant(draw: DrawFn, content_parts: bool, prose: SearchStrategy[str] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": _draw_content(draw, content_parts, prose)}
    if draw(st.integers(0, 9)) == 0:
        message["content"] = None
    return _with_reasoning(draw, message, prose)


def _draw_tool_message(draw: DrawFn, call_id: str | None = None, name: str | None = None) -> dict[str, Any]:
    """A tool result: string content (text or a JSON document), with ``tool_call_id`` and/or ``name``."""
    if draw(st.integers(0, 3)) == 0:
        content = json.dumps(_draw_arguments(draw, None), ensure_ascii=False)
    else:
        content = draw(texts())
    message: dict[str, Any] = {"role": "tool", "content": content}
    link = draw(st.integers(0, 4))  # id and name, id only, id only, name only, neither
    if call_id is not None and link < 3:
        message["tool_call_id"] = call_id
    if link in (0, 3):
        message["name"] = name if name is not None else draw(names())
    return message


def _draw_tool_round(
    draw: DrawFn,
    tool_list: list[dict[str, Any]] | None,
    string_arguments: bool,
    content_parts: bool,
    prose: SearchStrategy[str] | None = None,
) -> list[dict[str, Any]]:
    """An assistant message with tool calls, then (usually) one tool result per call."""
    calls = _draw_tool_calls(draw, tool_list, string_arguments=string_arguments)
    message: dict[str, Any] = {"role": "assistant"}
    content_kind = draw(st.integers(0, 4))  # absent, None, "", text, text
    if content_kind == 1:
        message["content"] = None
    elif content_kind == 2:
        message["content"] = ""
    elif content_kind > 2:
        message["content"] = _draw_content(draw, content_parts, prose)
    message["tool_calls"] = calls if draw(st.integers(0, 29)) else []
    result = [_with_reasoning(draw, message, prose)]
    answered = calls if draw(st.integers(0, 5)) else calls[: draw(st.integers(0, len(calls)))]
    for call in answered:
        result.append(_draw_tool_message(draw, call.get("id"), call["function"]["name"]))
    return result


@cache
def variables() -> SearchStrategy[dict[str, Any]]:
    """Template variables: ``enable_thinking`` True/False/absent, ``bos_token``/``eos_token`` sometimes."""
    return st.fixed_dictionaries(
        {},
        optional={
            "enable_thinking": st.booleans(),
            "bos_token": st.sampled_from(("<bos>", "<|begin_of_text|>", "<s>", "")),
            "eos_token": st.sampled_from(("<eos>", "<|im_end|>", "</s>")),
        },
    )


ODD_BLOCKS = ("user", "assistant", "tools", "tool", "system")


@st.composite
def conversations(
    draw: DrawFn,
    *,
    tools: list[dict[str, Any]] | SearchStrategy[list[dict[str, Any]]] | None = None,
    tools_strategy: SearchStrategy[list[dict[str, Any]]] | None = None,
    max_exchanges: int = 3,
    string_arguments: bool = True,
    content_parts: bool = False,
    odd_orders: bool = True,
    readable_replies: bool = False,
) -> dict[str, Any]:
    """A conversation: ``{"messages", "tools", "add_generation_prompt", "variables"}``.

    Mostly well formed: an optional system message, then exchanges of a user message, 0-2 tool
    rounds (assistant with parallel ``tool_calls``, then tool results) and usually an assistant
    answer. With ``odd_orders``, about one in six is a random sequence of such blocks instead
    (orphan or consecutive tool messages, assistant first, repeated roles), and a later system
    message appears sometimes. The conversation's ``tools`` are ``None``, ``[]`` or, seven times in
    ten, the given ``tools`` (a list, or a strategy of lists; ``tools_strategy`` is the same
    parameter under its earlier name), by default 1-3 drawn by :func:`tools`. ``content_parts``
    allows ``[{"type": "text", ...}]`` content lists; ``string_arguments`` allows JSON-string
    ``arguments``. With ``readable_replies``, what assistants write beside their calls (content and
    reasoning) is :func:`plain_texts`, so that every assistant turn can be read back as written
    (arguments still hold marker text); the draws are otherwise the same.
    """
    tool_choice = draw(st.integers(0, 9))
    tool_list: list[dict[str, Any]] | None
    if tool_choice < 3:
        tool_list = None
    elif tool_choice == 3:
        tool_list = []
    else:
        given = tools if tools is not None else tools_strategy
        if given is None:
            tool_list = draw(_any_tools())
        elif isinstance(given, SearchStrategy):
            tool_list = draw(given)
        else:
            tool_list = [dict(tool) for tool in given]

    def user() -> dict[str, Any]:
        return {"role": "user", "content": _draw_content(draw, content_parts)}

    def system() -> dict[str, Any]:
        role = draw(st.sampled_from(("system", "system", "system", "developer")))
        return {"role": role, "content": draw(texts())}

    prose = plain_texts() if readable_replies else None

    def tool_round() -> list[dict[str, Any]]:
        return _draw_tool_round(draw, tool_list, string_arguments, content_parts, prose)

    messages: list[dict[str, Any]] = []
    if draw(st.integers(0, 2)):
        messages.append(system())
    if odd_orders and draw(st.integers(0, 5)) == 0:
        for block in draw(st.lists(st.sampled_from(ODD_BLOCKS), min_size=1, max_size=5)):
            if block == "user":
                messages.append(user())
            elif block == "assistant":
                messages.append(_draw_assistant(draw, content_parts, prose))
            elif block == "tools":
                messages.extend(tool_round())
            elif block == "tool":
                messages.append(_draw_tool_message(draw))
            else:
                messages.append(system())
    else:
        exchanges = draw(st.integers(1, max_exchanges))
        for index in range(exchanges):
            messages.append(user())
            for _ in range(draw(st.sampled_from((0, 0, 1, 1, 2)))):
                messages.extend(tool_round())
            if index < exchanges - 1 or draw(st.integers(0, 2)):
                messages.append(_draw_assistant(draw, content_parts, prose))
        if odd_orders and len(messages) > 1 and draw(st.integers(0, 9)) == 0:
            messages.insert(draw(st.integers(1, len(messages))), system())
    if not messages:
        messages.append(user())
    return {
        "messages": messages,
        "tools": tool_list,
        "add_generation_prompt": draw(st.booleans()),
        "variables": draw(variables()),
    }


# --------------------------------------------------------------------------- rarer shapes

#: Property schemas outside what :func:`schemas` draws: no ``properties``, non-string enums, arrays of objects.
LOOSE_SCHEMAS: tuple[dict[str, Any], ...] = (
    {"type": "object", "description": "free-form", "additionalProperties": {"type": "string"}},
    {"type": "object"},
    {"type": "integer", "enum": [1, 2, 3]},
    {"type": "array", "items": {"type": "object", "properties": {"n": {"type": "string"}}, "required": ["n"]}},
    {"type": "array", "items": {"type": ["string", "null"], "description": "x", "enum": ["a", "b"]}},
    {"type": "array"},
    {"type": "string", "format": "date", "title": "Day"},
)
RESPONSE_SCHEMAS: tuple[dict[str, Any], ...] = (
    {"type": "object", "description": "The result."},
    {"type": "object"},
    {"type": "string", "description": "Plain text."},
)
MEDIA_PARTS: tuple[dict[str, Any], ...] = (
    {"type": "image"},
    {"type": "audio"},
    {"type": "video"},
    {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}},
)


def _as_parts(draw: DrawFn, text: Any) -> Any:
    """``text`` as a list of text parts (sometimes with a media part), or unchanged."""
    if not isinstance(text, str) or draw(st.integers(0, 2)):
        return text
    parts: list[dict[str, Any]] = [{"type": "text", "text": text}]
    if draw(st.booleans()):
        parts.insert(draw(st.integers(0, 1)), draw(st.sampled_from(MEDIA_PARTS)))
    return parts


@st.composite
def rich_conversations(draw: DrawFn) -> dict[str, Any]:
    """:func:`conversations` (content parts allowed) with rarer shapes mixed in.

    Tools get a ``response`` schema or an extra loose property (:data:`LOOSE_SCHEMAS`); system,
    user and tool contents become text-part lists, with an image/audio/video part now and then.
    """
    case = draw(conversations(content_parts=True))
    tool_list = case["tools"]
    if tool_list:
        tool_list = json.loads(json.dumps(tool_list))
        for declared in tool_list:
            function = declared["function"]
            if draw(st.integers(0, 2)) == 0:
                function["response"] = draw(st.sampled_from(RESPONSE_SCHEMAS))
            parameters = function.get("parameters")
            if parameters is not None and draw(st.booleans()):
                parameters["properties"][draw(names())] = draw(st.sampled_from(LOOSE_SCHEMAS))
    messages = []
    for message in case["messages"]:
        if message["role"] in ("system", "developer", "user", "tool") and "content" in message:
            message = {**message, "content": _as_parts(draw, message["content"])}
        messages.append(message)
    return {**case, "messages": messages, "tools": tool_list}
