"""``gemma4``: Google Gemma 4's native tool calls, ``<|tool_call>call:NAME{key:value,...}<tool_call|>``.

Reference template: ``gemma4.jinja`` (the Gemma 4 E4B-it template with OpenAI ``role: tool``
support). A reply after the generation prompt ``<|turn>model\\n`` looks like (the line break
after ``<channel|>`` is only for this page)::

    <|channel>thought
    The user wants the weather.<channel|>
    <|tool_call>call:get_weather{city:<|"|>Paris<|"|>,days:3}<tool_call|><|tool_response>

The model writes ``<|tool_response>`` after its calls and stops there; the application appends
``response:get_weather{value:<|"|>sunny<|"|>}<tool_response|>`` in the same model turn and the
model goes on writing its answer, ended by ``<turn|>``. A turn without calls is content +
``<turn|>``.

Values use Gemma's own notation, not JSON: strings between ``<|"|>`` tokens with nothing
escaped, numbers as Python writes them (``2.0``, ``1e+20``, big ints verbatim), ``true`` /
``false``, ``None`` for null (as the template renders it), ``[a,b]`` lists and ``{k:v}``
objects whose keys are sorted case-insensitively and written bare (in tool declarations,
nested object keys are ``<|"|>``-quoted). Nothing separates the elements.

The system turn holds ``<|think|>\\n`` when ``enable_thinking``, the trimmed system text and one
``<|tool>declaration:NAME{description:...,parameters:{properties:{...},required:[...],type:<|"|>OBJECT<|"|>}}<tool|>``
per tool: properties sorted case-insensitively, types upper-cased, ``enum`` / ``items`` /
``nullable`` / nested ``properties`` and ``required``, an optional ``response`` schema.

Quirks of the reference template, reproduced by the renderer (FORMATS.md §2.9):

* Q1/Q2. String values are pasted raw between ``<|"|>`` (a value containing ``<|"|>`` is ambiguous:
  the parser reads it back only where no structure follows it, and reports it); null is ``None``;
  floats use Python's ``repr``.
* Q3. The content of an assistant message with calls is written after the tool responses.
* Q4. After tool responses followed by content, ``add_generation_prompt`` adds nothing: the
  prompt ends ``...content<turn|>\\n`` with no ``<|turn>model\\n``.
* Q5. Calls with no following tool message end ``<tool_call|><|tool_response>`` (no ``<turn|>``)
  and the generation prompt adds nothing; answered calls of a message without content end at
  the last ``<tool_response|>`` (no ``<turn|>``: the model continues the same turn).
* Q6. Tool messages are rendered only when they follow an assistant message with calls; any
  other (orphan) tool message is dropped.
* Q7. Consecutive assistant messages (with only tool messages between them) share one model
  turn: no new ``<|turn>model`` header.
* Q8. Only ``messages[0]`` (``system`` or ``developer``) joins the system turn; a later system
  message is its own ``<|turn>system`` turn.
* Q9. Reasoning (``reasoning``, else ``reasoning_content``) is written back only for messages
  with calls after the last user message, as ``<|channel>thought\\n...\\n<channel|>``;
  ``<|channel>...<channel|>`` is stripped from assistant content, ``<think>`` is not.
* Q10. ``arguments`` given as a string are pasted inside the braces: ``call:f{{"a": 1}}``.
* Q11. Content lists are joined without separator (user parts trimmed one by one, system parts
  trimmed and each followed by a space; image/audio/video parts become ``<|image|>``...); tool
  content that is a mapping fails (``'str object' has no attribute 'get'``), as Jinja iterates
  its keys as content parts.
* Q12. Declarations: a list ``type`` is written as its upper-cased Python repr
  (``<|"|>['INTEGER', 'NULL']<|"|>``), ``anyOf`` gives an empty type, ``enum`` is kept only for
  strings, an object without ``properties`` lists its other keys as properties, a missing
  description is ``<|"|><|"|>``, a tool without parameters is ``declaration:t{description:...}``.
* Q13. A tool response is named after the call whose ``id`` equals the message's
  ``tool_call_id`` (a message without ``tool_call_id`` matches a call without ``id``), else
  after the message's ``name``. With neither, the template fails
  (``can only concatenate str (not "NoneType") to str``): its ``default('unknown')`` only applies
  to the legacy ``tool_responses`` list of an assistant message, which is rendered too.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from codec.format import Format, Functions
from codec.formats._render import (
    attr,
    call_method,
    concat,
    contains,
    default,
    defined,
    dictsort,
    is_mapping,
    is_sequence,
    iterate,
    lookup,
    string,
    trim,
    upper,
)
from codec.models import Conversation
from codec.wire import WireSpec
from codec.wire.gemma4 import Notation, without_reasoning

# ---------------------------------------------------------------------------- markers

QUOTE = '<|"|>'
TURN_OPEN = "<|turn>"
TURN_CLOSE = "<turn|>"
TURN_END = TURN_CLOSE + "\n"
THINK = "<|think|>\n"
DECLARATION_OPEN = "<|tool>"
DECLARATION_CLOSE = "<tool|>"
CALL_OPEN = "<|tool_call>"
CALL_CLOSE = "<tool_call|>"
RESPONSE_OPEN = "<|tool_response>"
RESPONSE_CLOSE = "<tool_response|>"
CHANNEL_OPEN = "<|channel>"
CHANNEL_CLOSE = "<channel|>"
THOUGHT_OPEN = CHANNEL_OPEN + "thought\n"
#: How the template closes the thought it writes back in the history (Q9; a reply has no line break).
THOUGHT_END = "\n" + CHANNEL_CLOSE
GENERATION_PROMPT = TURN_OPEN + "model\n"

#: Schema keys an object without ``properties`` does not list as (fake) properties (Q12).
_STANDARD_KEYS = ("description", "type", "properties", "required", "nullable")
_MEDIA = ("image", "audio", "video")


# ---------------------------------------------------------------------------- render: values

#: Gemma's value notation (the reply's, :class:`codec.wire.gemma4.Notation`), for tool calls,
#: tool responses and declarations.
NOTATION = Notation(QUOTE, (CALL_OPEN, CALL_CLOSE))
#: A string value: ``<|"|>text<|"|>``, nothing escaped.
quote_string = NOTATION.string
#: A value in Gemma's notation (``quote_keys``: object keys quoted, as declarations write them).
format_value = NOTATION.value
#: One ``<|tool_call>call:NAME{...}<tool_call|>`` block for an OpenAI tool call (Q10: string
#: arguments pasted inside the braces).
render_call = NOTATION.call_text


def render_response(name: Any, response: Any) -> str:
    """``<|tool_response>response:NAME{...}<tool_response|>``: a mapping's pairs, anything else as ``value:``."""
    if is_mapping(response):
        head = concat(RESPONSE_OPEN + "response:", name, "{")
        return head + NOTATION.arguments(response) + "}" + RESPONSE_CLOSE
    head = concat(RESPONSE_OPEN + "response:", name, "{value:")
    return head + format_value(response, quote_keys=False) + "}" + RESPONSE_CLOSE


# ---------------------------------------------------------------------------- render: declarations


def _required(names: Any) -> str:
    return "required:[" + ",".join(quote_string(string(name)) for name in iterate(names)) + "]"


def _items_schema(schema: dict[str, Any], everywhere: bool = False, commas: bool = False) -> str:
    """The fields of an array's ``items`` schema: every non-null key, sorted; nested keys quoted
    (``everywhere``, ``commas``: see :func:`render_properties`)."""
    fields = []
    for key, value in dictsort(schema):
        if value is None:
            continue
        if key == "properties":
            nested = render_properties(value, everywhere=everywhere, commas=commas) if is_mapping(value) else ""
            fields.append("properties:{" + nested + "}")
        elif key == "required":
            fields.append(_required(value))
        elif key == "type":
            kind = value.upper() if isinstance(value, str) else [upper(item) for item in iterate(value or ())]
            fields.append("type:" + format_value(kind))
        else:
            fields.append(string(key) + ":" + format_value(value))
    return ",".join(fields)


def _property(schema: Any, everywhere: bool = False, commas: bool = False) -> str:
    """One property's ``{description:...,...,type:<|"|>TYPE<|"|>}`` body (without the braces;
    ``everywhere``, ``commas``: see :func:`render_properties`)."""
    if commas:
        return _property_with_leading_commas(schema)
    fields = []
    description = attr(schema, "description")
    if description:
        fields.append("description:" + quote_string(string(description)))
    kind = upper(attr(schema, "type"))
    if kind == "STRING":
        enum = attr(schema, "enum")
        if enum:
            fields.append("enum:" + format_value(enum))
    elif kind == "ARRAY":
        items_schema = attr(schema, "items")
        if is_mapping(items_schema) and items_schema:
            fields.append("items:{" + _items_schema(items_schema, everywhere) + "}")
    if attr(schema, "nullable"):
        fields.append("nullable:true")
    if kind == "OBJECT":
        properties = attr(schema, "properties")
        if defined(properties) and is_mapping(properties):
            fields.append("properties:{" + render_properties(properties, everywhere=everywhere) + "}")
        elif is_mapping(schema):
            own = render_properties(schema, skip_standard_keys=True, everywhere=everywhere)
            fields.append("properties:{" + own + "}")
        required = attr(schema, "required")
        if required:
            fields.append(_required(required))
    fields.append("type:" + quote_string(kind))
    return ",".join(fields)


def _property_with_leading_commas(schema: Any) -> str:
    """One property's body in the interleaved 31B template's layout
    (:mod:`codec.formats.gemma4_31b_interleaved`, I1): description, ``nullable``, then a string's
    ``enum``, an object's ``,properties:{...}`` and ``,required:[...]`` or an array's ``,items:{...}``,
    then the type. Those three are written with a literal leading comma, and a comma goes before
    ``nullable``, ``enum`` and ``type`` only after a description, ``nullable`` or ``enum``: a property
    with neither reads ``{,properties:{...}type:<|"|>OBJECT<|"|>}``. Schema keys are left out at
    every level (G1)."""
    out: list[str] = []
    comma = False  # the template's add_comma
    description = attr(schema, "description")
    if description:
        out.append("description:" + quote_string(string(description)))
        comma = True
    if attr(schema, "nullable"):
        out.append(("," if comma else "") + "nullable:true")
        comma = True
    kind = upper(attr(schema, "type"))
    if kind == "STRING":
        enum = attr(schema, "enum")
        if enum:
            out.append(("," if comma else "") + "enum:" + format_value(enum))
            comma = True
    elif kind == "OBJECT":
        properties = attr(schema, "properties")
        if defined(properties) and is_mapping(properties):
            nested = render_properties(properties, everywhere=True, commas=True)
        else:
            nested = render_properties(schema, everywhere=True, commas=True) if is_mapping(schema) else ""
        out.append(",properties:{" + nested + "}")
        required = attr(schema, "required")
        if required:
            out.append("," + _required(required))
    elif kind == "ARRAY":
        items_schema = attr(schema, "items")
        if is_mapping(items_schema) and items_schema:
            out.append(",items:{" + _items_schema(items_schema, everywhere=True, commas=True) + "}")
    out.append(("," if comma else "") + "type:" + quote_string(kind))
    return "".join(out)


def render_properties(
    properties: Any, *, skip_standard_keys: bool = False, everywhere: bool = False, commas: bool = False
) -> str:
    """``name:{...}`` for each property, sorted case-insensitively, comma-separated.

    ``skip_standard_keys`` is the template's reading of an object schema without ``properties``:
    its own keys other than description/type/properties/required/nullable become properties.
    ``everywhere``: properties with those names are left out at every level (Gemma 4 31B's
    templates), not only there. ``commas``: the layout of :func:`_property_with_leading_commas`.
    """
    skip = skip_standard_keys or everywhere
    return ",".join(
        string(name) + ":{" + _property(schema, everywhere, commas) + "}"
        for name, schema in dictsort(properties)
        if not (skip and name in _STANDARD_KEYS)
    )


def render_declaration(tool: Any, everywhere: bool = False, commas: bool = False) -> str:
    """``declaration:NAME{description:<|"|>...<|"|>,parameters:{...},response:{...}}`` for one tool.

    As in the template, ``parameters:{`` is closed only by a ``type`` and ``response:{`` only by
    an ``OBJECT`` type; otherwise the final ``}`` is all there is. ``everywhere``, ``commas``: see
    :func:`render_properties`.
    """
    function = attr(tool, "function")
    out = ["declaration:", string(lookup(function, "name"))]
    out.append("{description:" + quote_string(string(lookup(function, "description"))))
    parameters = lookup(function, "parameters")
    if parameters:
        out.append(",parameters:{")
        properties = attr(parameters, "properties")
        if properties:
            out.append("properties:{" + render_properties(properties, everywhere=everywhere, commas=commas) + "},")
        required = attr(parameters, "required")
        if required:
            out.append(_required(required) + ",")
        kind = attr(parameters, "type")
        if kind:
            out.append("type:" + quote_string(upper(kind)) + "}")
    if contains(function, "response"):
        response = lookup(function, "response")
        out.append(",response:{")
        description = lookup(response, "description")
        if description:
            out.append("description:" + quote_string(string(description)) + ",")
        if upper(lookup(response, "type")) == "OBJECT":
            out.append("type:" + quote_string("OBJECT") + "}")
    out.append("}")
    return "".join(out)


# ---------------------------------------------------------------------------- render: turns


def strip_thinking(text: Any) -> str:
    """Assistant text without its ``<|channel>...<channel|>`` blocks, trimmed (``<think>`` stays)."""
    return without_reasoning(text, CHANNEL_OPEN, CHANNEL_CLOSE)


def content_text(content: Any, role: Any) -> tuple[str, str | None]:
    """(text, last media kind): a message's content as the template writes it.

    A string is trimmed (model turns: :func:`strip_thinking`); a list (or any sequence, Q11)
    joins its text parts the same way, unseparated, and writes ``<|image|>``, ``<|audio|>``,
    ``<|video|>`` for media parts; other parts and other content give nothing.
    """
    model = role == "model"
    if isinstance(content, str):
        return (strip_thinking(content) if model else content.strip()), None
    out: list[str] = []
    media = None
    if is_sequence(content):
        for part in iterate(content):
            kind = attr(part, "type")
            if kind == "text":
                text = attr(part, "text")
                out.append(strip_thinking(text) if model else trim(text))
            elif isinstance(kind, str) and kind in _MEDIA:
                out.append(f"<|{kind}|>")
                media = kind
    return "".join(out), media


def _system_text(content: Any) -> str:
    """The first system message's text: trimmed, or each part's text trimmed plus a space (Q11)."""
    if isinstance(content, str):
        return content.strip()
    if is_sequence(content):
        return "".join(trim(attr(part, "text")) + " " for part in iterate(content))
    return ""


def _tool_content(content: Any) -> Any:
    """A tool message's content for its response block: a string, the text parts joined, or the value itself."""
    if isinstance(content, str) or not is_sequence(content):
        return content
    text = ""
    for part in iterate(content):
        if call_method(part, "get", "type") == "text":
            text = concat(text, call_method(part, "get", "text"))
    return text


def _response_name(message: dict[str, Any], result: dict[str, Any]) -> Any:
    """The function a tool message answers: the call with its ``tool_call_id`` (last match), else its ``name``."""
    name = result.get("name")  # `| default('unknown')` never applies: .get gives None, not undefined
    for call in iterate(message["tool_calls"]):
        if call_method(call, "get", "id") == result.get("tool_call_id"):
            name = lookup(lookup(call, "function"), "name")
    return name


def _thought(message: dict[str, Any]) -> Any:
    return message.get("reasoning") or message.get("reasoning_content")


@dataclass(frozen=True)
class Dialect:
    """Where a Gemma 4 template writes its prompts otherwise than the reference template (the
    31B templates: :mod:`codec.formats.gemma4_31b`); :data:`REFERENCE` is the reference's own."""

    #: The first system (or developer) message's text: Q11's, or Python's ``str`` trimmed.
    system_text: Callable[[Any], str]
    #: Whether an answered assistant turn is closed, given the message and its text as written
    #: (Q5: where that text is not blank; the 31B templates: where the message's content is truthy).
    closes_answered: Callable[[dict[str, Any], str], bool]
    #: Properties named after the schema keys that Q12 skips are left out at every level.
    skips_schema_keys: bool = False
    #: What follows the generation prompt unless ``enable_thinking`` is truthy.
    thoughtless: str = ""
    #: Declarations in the interleaved 31B template's layout (:func:`_property_with_leading_commas`).
    leading_commas: bool = False


def prompt_text(
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    add_generation_prompt: bool,
    variables: dict[str, Any],
) -> str:
    """The prompt, as the reference template renders it (errors raised in the template's order).

    Template variables: ``bos_token`` (the template writes the variable, not a literal ``<bos>``:
    pass ``bos_token="<bos>"`` for the real prompt) and ``enable_thinking``.
    """
    return render_prompt(messages, tools, add_generation_prompt, variables, REFERENCE)


def render_system_turn(
    messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, variables: dict[str, Any], dialect: Dialect
) -> tuple[list[str], list[dict[str, Any]], str | None]:
    """(the prompt so far, the messages left to write, the template's ``ns.prev_message_type``): the
    ``bos_token`` and the system turn opened for thinking, tools or a first system message."""
    out = [string(variables["bos_token"])] if "bos_token" in variables else []
    thinking = bool(variables.get("enable_thinking"))
    state: str | None = None  # the template's ns.prev_message_type
    turns = messages
    first_is_system = attr(messages[0], "role") in ("system", "developer")
    if thinking or tools or first_is_system:
        out.append(TURN_OPEN + "system\n")
        if thinking:
            out.append(THINK)
            state = "think"
        if first_is_system:
            out.append(dialect.system_text(attr(messages[0], "content")))
            turns = messages[1:]
        if tools:
            declarations = (
                render_declaration(tool, dialect.skips_schema_keys, dialect.leading_commas) for tool in tools
            )
            out.extend(DECLARATION_OPEN + declaration + DECLARATION_CLOSE for declaration in declarations)
            state = "tool"
        out.append(TURN_END)
    return out, turns, state


def render_prompt(
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    add_generation_prompt: bool,
    variables: dict[str, Any],
    dialect: Dialect,
) -> str:
    """The prompt as a Gemma 4 template of ``dialect`` renders it (:func:`prompt_text`: the reference's)."""
    out, turns, state = render_system_turn(messages, tools, variables, dialect)
    roles = [attr(message, "role") for message in turns]
    last_user = max((i for i, role in enumerate(roles) if role == "user"), default=-1)
    previous: Any = None  # role of the previous non-tool message
    for i, message in enumerate(turns):
        if roles[i] == "tool":
            continue
        state = None
        role = "model" if roles[i] == "assistant" else roles[i]
        if not (role == "model" and previous == "assistant"):
            out.append(concat(TURN_OPEN, role, "\n"))
        previous = roles[i]

        thought = _thought(message)
        if thought and i > last_user and message.get("tool_calls"):
            out.append(concat(THOUGHT_OPEN, thought, THOUGHT_END))

        calls = attr(message, "tool_calls")
        if calls:
            out.extend(render_call(call) for call in iterate(calls))
            state = "tool_call"

        responded = False
        legacy = message.get("tool_responses")
        if legacy:  # Gemma's native form: the results listed on the assistant message itself
            for result in iterate(legacy):
                out.append(render_response(default(attr(result, "name"), "unknown"), attr(result, "response")))
                responded, state = True, "tool_response"
        elif message.get("tool_calls"):  # OpenAI form: the tool messages that follow (Q6, Q13)
            # Read in place, not from a copy of the rest of the list: a copy per call turn made
            # rendering quadratic in the number of messages.
            for j in range(i + 1, len(turns)):
                result = turns[j]
                if roles[j] != "tool":
                    break
                name = _response_name(message, result)
                out.append(render_response(name, _tool_content(result.get("content"))))
                responded, state = True, "tool_response"

        text, media = content_text(attr(message, "content"), role)
        if media is not None:
            state = media
        out.append(text)  # after the tool responses (Q3)
        if state == "tool_call" and not responded:
            out.append(RESPONSE_OPEN)  # Q5
        elif not responded or dialect.closes_answered(message, text):
            out.append(TURN_END)

    if add_generation_prompt and state not in ("tool_response", "tool_call"):  # Q4, Q5
        out.append(GENERATION_PROMPT)
        if dialect.thoughtless and not variables.get("enable_thinking"):
            out.append(dialect.thoughtless)
    return "".join(out)


#: The reference template's dialect.
REFERENCE = Dialect(_system_text, lambda message, text: bool(text.strip()))


# ---------------------------------------------------------------------------- decode


def prompt_conversation(prompt: str) -> Conversation:
    """The conversation ``prompt`` renders from (how ambiguous texts read: :mod:`codec.formats.gemma4_decode`)."""
    # Imported on first use: the decoder reads this module's markers and renders with prompt_text,
    # so importing it at the top would be a cycle, and ``import codec`` does not load the decoder.
    from codec.formats import gemma4_decode

    return gemma4_decode.prompt_conversation(prompt)


# ---------------------------------------------------------------------------- wire

WIRE = WireSpec(
    "gemma4",
    call=(CALL_OPEN, CALL_CLOSE),
    block=("", RESPONSE_OPEN),
    stop=TURN_CLOSE,
    reasoning=(CHANNEL_OPEN + "thought", CHANNEL_CLOSE),
    arguments="quoted",
    values="quoted",
    quote=QUOTE,
    special_tokens=(CALL_OPEN, CALL_CLOSE, QUOTE, CHANNEL_OPEN, CHANNEL_CLOSE, TURN_CLOSE, RESPONSE_OPEN),
    recover=("bare_call", "call_tag"),
)


# ---------------------------------------------------------------------------- format


class Gemma4(Format):
    """Google Gemma 4 native tool calls (reference: the Gemma 4 E4B-it template)."""

    name = "gemma4"
    aliases = ("gemma-4", "gemma_4")
    summary = 'Gemma 4 native calls: <|tool_call>call:NAME{key:<|"|>text<|"|>,n:3}<tool_call|>'
    stop_token = TURN_CLOSE
    reference_template = "gemma4.jinja"
    template_markers = ("<|turn>", "<|tool_call>")

    functions = Functions(prompt_text, prompt_conversation)
    wire = WIRE
