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

import functools
import re
from dataclasses import dataclass
from typing import Any

from codec._lark import Token, compile_grammar
from codec.export import (
    DIGIT,
    EMPTY,
    NAME,
    CallSyntax,
    Expr,
    GrammarBuilder,
    Head,
    JsonValues,
    Lit,
    Marker,
    Reasoning,
    Term,
    alt,
    charset,
    optional,
    parameters_schema,
    plus,
    ralt,
    rseq,
    seq,
    star,
)
from codec.format import Format, Functions
from codec.formats._calls import MARKUP, LiteralHandlers, before_stop, leading_reasoning
from codec.formats._pythonic import checked_string, leading_zeros, padded, resolve_padded
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
from codec.issues import IssueKind
from codec.literals import PLAIN_JSON_DECODER, json_text, json_value, python_literal
from codec.models import Conversation
from codec.schema import tool_name
from codec.sink import CONTENT, REASONING, CallWriter, Sink
from codec.stream import Builder, BuildError, Stream, Syntax, ToolsByName, WholeReading
from codec.watch import Delimiter, Watch
from codec.wire import WireSpec

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


def quote_string(text: str) -> str:
    """A string value: ``<|"|>text<|"|>``, nothing escaped."""
    return QUOTE + text + QUOTE


def format_value(value: Any, *, quote_keys: bool = True) -> str:
    """A value in Gemma's notation: ``<|"|>`` strings, ``true``/``false``, ``{k:v}`` sorted, ``[a,b]``, else ``str()``.

    ``str()`` gives ``None``, ``2.0``, ``1e+20``, big ints verbatim. Object keys are
    ``<|"|>``-quoted with ``quote_keys`` (declarations) and bare without (calls, responses). A
    tuple, or an undefined value (``[]``), is a list as well.
    """
    if isinstance(value, str):
        return quote_string(value)
    if value is True or value is False:
        return "true" if value else "false"
    if is_mapping(value):
        pairs = []
        for key, item in dictsort(value):
            name = concat(QUOTE, key, QUOTE) if quote_keys else string(key)
            pairs.append(name + ":" + format_value(item, quote_keys=quote_keys))
        return "{" + ",".join(pairs) + "}"
    if is_sequence(value):
        return "[" + ",".join(format_value(item, quote_keys=quote_keys) for item in iterate(value)) + "]"
    return string(value)


def format_arguments(arguments: Any) -> str:
    """What goes between a call's braces: ``key:value`` pairs sorted, raw text for a string (Q10), else nothing."""
    if is_mapping(arguments):
        return ",".join(string(key) + ":" + format_value(value, quote_keys=False) for key, value in dictsort(arguments))
    if isinstance(arguments, str):
        return arguments
    return ""


def render_call(call: Any) -> str:
    """One ``<|tool_call>call:NAME{...}<tool_call|>`` block for an OpenAI tool call."""
    function = attr(call, "function")
    head = concat(CALL_OPEN + "call:", lookup(function, "name"), "{")
    return head + format_arguments(attr(function, "arguments")) + "}" + CALL_CLOSE


def render_response(name: Any, response: Any) -> str:
    """``<|tool_response>response:NAME{...}<tool_response|>``: a mapping's pairs, anything else as ``value:``."""
    if is_mapping(response):
        head = concat(RESPONSE_OPEN + "response:", name, "{")
        pairs = (string(key) + ":" + format_value(value, quote_keys=False) for key, value in dictsort(response))
        return head + ",".join(pairs) + "}" + RESPONSE_CLOSE
    head = concat(RESPONSE_OPEN + "response:", name, "{value:")
    return head + format_value(response, quote_keys=False) + "}" + RESPONSE_CLOSE


# ---------------------------------------------------------------------------- render: declarations


def _required(names: Any) -> str:
    return "required:[" + ",".join(quote_string(string(name)) for name in iterate(names)) + "]"


def _items_schema(schema: dict[str, Any]) -> str:
    """The fields of an array's ``items`` schema: every non-null key, sorted; nested keys quoted."""
    fields = []
    for key, value in dictsort(schema):
        if value is None:
            continue
        if key == "properties":
            fields.append("properties:{" + (render_properties(value) if is_mapping(value) else "") + "}")
        elif key == "required":
            fields.append(_required(value))
        elif key == "type":
            kind = value.upper() if isinstance(value, str) else [upper(item) for item in iterate(value or ())]
            fields.append("type:" + format_value(kind))
        else:
            fields.append(string(key) + ":" + format_value(value))
    return ",".join(fields)


def _property(schema: Any) -> str:
    """One property's ``{description:...,...,type:<|"|>TYPE<|"|>}`` body (without the braces)."""
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
            fields.append("items:{" + _items_schema(items_schema) + "}")
    if attr(schema, "nullable"):
        fields.append("nullable:true")
    if kind == "OBJECT":
        properties = attr(schema, "properties")
        if defined(properties) and is_mapping(properties):
            fields.append("properties:{" + render_properties(properties) + "}")
        elif is_mapping(schema):
            fields.append("properties:{" + render_properties(schema, skip_standard_keys=True) + "}")
        required = attr(schema, "required")
        if required:
            fields.append(_required(required))
    fields.append("type:" + quote_string(kind))
    return ",".join(fields)


def render_properties(properties: Any, *, skip_standard_keys: bool = False) -> str:
    """``name:{...}`` for each property, sorted case-insensitively, comma-separated.

    ``skip_standard_keys`` is the template's reading of an object schema without ``properties``:
    its own keys other than description/type/properties/required/nullable become properties.
    """
    return ",".join(
        string(name) + ":{" + _property(schema) + "}"
        for name, schema in dictsort(properties)
        if not (skip_standard_keys and name in _STANDARD_KEYS)
    )


def render_declaration(tool: Any) -> str:
    """``declaration:NAME{description:<|"|>...<|"|>,parameters:{...},response:{...}}`` for one tool.

    As in the template, ``parameters:{`` is closed only by a ``type`` and ``response:{`` only by
    an ``OBJECT`` type; otherwise the final ``}`` is all there is.
    """
    function = attr(tool, "function")
    out = ["declaration:", string(lookup(function, "name"))]
    out.append("{description:" + quote_string(string(lookup(function, "description"))))
    parameters = lookup(function, "parameters")
    if parameters:
        out.append(",parameters:{")
        properties = attr(parameters, "properties")
        if properties:
            out.append("properties:{" + render_properties(properties) + "},")
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
    parts = call_method(text, "split", CHANNEL_CLOSE)
    return "".join(part.split(CHANNEL_OPEN)[0] for part in parts).strip()


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
            out.append(_system_text(attr(messages[0], "content")))
            turns = messages[1:]
        if tools:
            out.extend(DECLARATION_OPEN + render_declaration(tool) + DECLARATION_CLOSE for tool in tools)
            state = "tool"
        out.append(TURN_END)

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
            for result in turns[i + 1 :]:
                if attr(result, "role") != "tool":
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
        elif not responded or text.strip():
            out.append(TURN_END)

    if add_generation_prompt and state not in ("tool_response", "tool_call"):  # Q4, Q5
        out.append(GENERATION_PROMPT)
    return "".join(out)


# ---------------------------------------------------------------------------- reply


def reply_text(message: dict[str, Any]) -> str:
    """What the model generates after the generation prompt ``<|turn>model\\n``.

    ``<|channel>thought\\nREASONING<channel|>`` when the message has reasoning, then the
    content (``<|channel>`` blocks stripped, trimmed), then either the calls followed by
    ``<|tool_response>`` (where generation stops: the model's own end-of-calls token, §2.5)
    or, without calls, ``<turn|>``.

    This is not a slice of the rendered history: the template writes reasoning back only for
    calls after the last user message and with ``\\n`` before ``<channel|>`` (Q9; real
    replies have none), and puts the content of a message with calls after the tool
    responses (Q3), where it is the model's continuation once the results are in. A reply
    writes it before its calls, where the model writes a preamble.
    """
    out = []
    thought = _thought(message)
    if thought:
        out.append(concat(THOUGHT_OPEN, thought, CHANNEL_CLOSE))
    out.append(content_text(attr(message, "content"), "model")[0])
    calls = attr(message, "tool_calls")
    if calls:
        out.extend(render_call(call) for call in iterate(calls))
        out.append(RESPONSE_OPEN)
    else:
        out.append(TURN_CLOSE)
    return "".join(out)


# ---------------------------------------------------------------------------- decode


def prompt_conversation(prompt: str) -> Conversation:
    """The conversation ``prompt`` renders from (how ambiguous texts read: :mod:`codec.formats.gemma4_decode`)."""
    # Imported on first use: the decoder reads this module's markers and renders with prompt_text,
    # so importing it at the top would be a cycle, and ``import codec`` does not load the decoder.
    from codec.formats import gemma4_decode

    return gemma4_decode.prompt_conversation(prompt)


# ---------------------------------------------------------------------------- parse

#: Text kinds of a string value's characters: between ``<|"|>`` tokens (CHARS), or unquoted (RAW,
#: the value's opening ``<|"|>`` left out or every special token stripped). The builder streams or
#: collects them.
CHARS = "chars"
RAW = "raw"
_STRIPPED_HINT = (
    ' (a reply without any <|"|> was probably decoded with its special tokens stripped: '
    "decode with skip_special_tokens=False)"
)


class _Key(str):
    """An argument or object key, with where it was written."""

    pos: int

    def __new__(cls, text: str, pos: int) -> _Key:
        key = super().__new__(cls, text)
        key.pos = pos
        return key


class _Streamed(str):
    """A string argument's value that streamed to the call's writer as it arrived."""


@dataclass(frozen=True)
class _Inline:
    """What ``call:NAME{...}`` inside a line of prose reads as on its own: the call, and the issues
    its reading reports (kind, message, offset in the call's text, text)."""

    name: str
    arguments: dict[str, Any]
    issues: tuple[tuple[IssueKind, str, int, str | None], ...]


class Gemma4Builder(LiteralHandlers, Builder):
    """Builds calls from the gemma4 grammar. Values are typed as written; nothing is coerced."""

    def __init__(self, sink: Sink) -> None:
        super().__init__(sink)
        self._call: CallWriter | None = None
        self._key: _Key | None = None  # the last key read
        self._in_argument = False  # the string being read is an argument's value (it streams)
        self._raw_at: int | None = None  # where the unquoted argument value being read starts
        self._end = 0  # where the last character of the string being read ends
        self._quote_seen = False  # a <|"|> was read as data in the string being read
        self._chars: list[str] = []  # the characters of a nested string being read
        self._padded = False  # the argument being read holds a number written with leading zeros

    # ---- frame
    def call_open(self, token: Token) -> None:
        if str(token) != CALL_OPEN + "call:":
            self.sink.issue(
                "call_opener", f"call opened with {str(token)!r} instead of '<|tool_call>call:'", token.start_pos
            )

    def bare_open(self, token: Token) -> None:
        self.sink.issue("bare_call", "call:NAME{...} without <|tool_call> accepted", token.start_pos)

    def call_head(self, token: Token) -> None:
        self._call = self.sink.call(str(token), token.start_pos)

    def paren_body(self, lpar: Token, *rest: Any) -> None:
        self.sink.issue("parentheses", "call written with (...) instead of {...}", lpar.start_pos)

    def call(self, opener: None, head: None, body: None, closer: Token) -> None:
        self._end_call()

    def bare_call(self, opener: None, head: None, body: None) -> None:
        self._end_call()

    def _end_call(self) -> None:
        call, self._call = self._call, None
        assert call is not None
        call.end()

    def stray_close(self, token: Token) -> None:
        self.sink.issue(
            "stray_closer", f"{str(token).strip()!r} with nothing open, ignored", token.start_pos, str(token)
        )

    def partial_call(self, token: Token) -> None:
        self.sink.text(CONTENT, str(token), token.start_pos)

    def prose_call(self, text: Token, token: Token) -> None:
        """``call:NAME{...}`` inside a line of prose: a call of NAME if the tools declare it, else text."""
        pos, found = token.start_pos, token.decoded
        assert isinstance(found, _Inline)
        if not self._declared(found.name):
            self.sink.text(CONTENT, str(token), pos)
            return
        self.sink.block(pos)  # the line's call: what is reported below concerns it
        self.sink.issue(
            "inline_call", f"call:{found.name}{{...}} inside a line of text read as a call of a declared tool", pos
        )
        for kind, message, offset, text in found.issues:
            self.sink.issue(kind, message, pos + offset, text)
        self.sink.whole_call(found.name, pos, found.arguments)

    def _declared(self, name: str) -> bool:
        """Whether tools were given (a name none of them has is undeclared) and one is called ``name``."""
        return not self.sink.undeclared(name) and self.sink.undeclared(name + "\0")

    # ---- arguments
    def key(self, token: Token) -> _Key:
        text = str(token)
        if token.type == "GSTRING":
            text = text[len(QUOTE) : -len(QUOTE)]
        elif token.type in ("JSTRING", "SSTRING"):
            text = self._quoted(token)
        self._key = _Key(text, token.start_pos)
        return self._key

    def arg(self, key: _Key, separator: Token, value: Any) -> _Key:
        call = self._call
        assert call is not None
        if separator.type == "EQUALS":
            self._key_equals(key, separator)
        if self._padded:
            self._padded = False
            value = resolve_padded(self.sink, call.name, str(key), value)
        if type(value) is not _Streamed:  # a streamed string is the writer's already
            call.argument(str(key), value, key.pos)
        return key

    def missing_comma(self, args: Any, key: _Key) -> None:
        self.sink.issue("missing_comma", f"argument {str(key)!r} written without ',' before it", key.pos)

    def _key_equals(self, key: _Key, separator: Token) -> None:
        self.sink.issue("key_equals", f"argument {str(key)!r} written with '=' instead of ':'", separator.start_pos)

    # ---- string arguments: they stream as they arrive
    def string_open(self, token: Token) -> None:
        self._start_string(token.start_pos + len(token))

    def _start_string(self, pos: int) -> None:
        call, key = self._call, self._key
        assert call is not None and key is not None
        self._in_argument, self._end, self._quote_seen = True, pos, False
        call.string_start(str(key), key.pos)

    def on_text(self, kind: str, text: str, pos: int) -> None:
        if kind in (CHARS, RAW):
            if self._in_argument:
                assert self._call is not None
                self._end = pos + len(text)
                self._call.string_more(text)
            elif kind == RAW:  # an unquoted argument value starts
                self._raw_at = pos
                self._start_string(pos)
                self.on_text(kind, text, pos)
            else:
                self._chars.append(text)
        else:
            super().on_text(kind, text, pos)

    def string_data(self, *children: Any) -> None:
        """A data token of a string argument (a quote, a brace or a ``<|"|>`` that closes nothing)."""
        token: Token = children[-1]
        assert self._call is not None
        if token.type == "GQ_DATA":
            self._quote_in_string(token)
        self._end = token.start_pos + len(token)
        self._call.string_more(str(token))

    def _quote_in_string(self, token: Token) -> None:
        if not self._quote_seen:  # once per string
            self._quote_seen = True
            self.sink.issue(
                "quote_in_string", '<|"|> inside a string, not followed by structure, kept as text', token.start_pos
            )

    def stream_string(self, opener: None, *rest: Any) -> _Streamed:
        call = self._call
        assert call is not None
        self._in_argument = False
        return _Streamed(call.string_end())

    def quote_closed_string(self, opener: None, *rest: Any) -> _Streamed:
        closer: Token = rest[-1]
        self.sink.issue("mixed_quotes", f'string opened with <|"|> closed with {str(closer)!r}', closer.start_pos)
        return self._end_string()

    def unclosed_string(self, opener: None, *rest: Any) -> _Streamed:
        self.sink.issue("missing_close_quote", 'string without its closing <|"|>, ended with the call', self._end)
        return self._end_string()

    def unopened_string(self, chars: None, closer: Token) -> _Streamed:
        assert self._raw_at is not None
        self.sink.issue("missing_open_quote", 'string without its opening <|"|>, read up to its closer', self._raw_at)
        return self._end_string()

    def raw_string(self, chars: None) -> _Streamed:
        return self._end_string(unquoted=True)

    def _end_string(self, unquoted: bool = False) -> _Streamed:
        call = self._call
        assert call is not None
        at = self._raw_at
        self._in_argument, self._raw_at = False, None
        value = call.string_end()
        if unquoted:
            assert at is not None
            self.sink.issue("unquoted_value", f"value {value!r} is not quoted; read as a string{_STRIPPED_HINT}", at)
        return _Streamed(value)

    def mixed_string(self, token: Token) -> str:
        """A value opened with ``"`` or ``'`` and closed with ``<|"|>``: the text between them, as
        written (a ``<|"|>`` string is never escaped), less a closing quote of the opening kind right
        before the ``<|"|>`` (a quoted value followed by a dangling ``<|"|>``)."""
        text = str(token)[: -len(QUOTE)]
        opener = text[0]
        self.sink.issue("mixed_quotes", f'string opened with {opener!r} closed with <|"|>', token.start_pos)
        return text[1:-1] if len(text) > 1 and text[-1] == opener else text[1:]

    # ---- values
    def number(self, token: Token) -> Any:
        """A number as written; one with leading zeros (``zip:02134``) is kept as its text, a string, reported."""
        if leading_zeros(str(token)):
            self._padded = True
            return padded(str(token), token.start_pos)
        return super().number(token)

    def string(self, opener: Token, *rest: Any) -> str:
        text = "".join(self._chars)
        self._chars, self._quote_seen = [], False
        return text

    def nested_quote(self, *children: Any) -> None:
        token: Token = children[-1]
        self._quote_in_string(token)
        self._chars.append(str(token))

    def jstring(self, token: Token) -> str:
        self.sink.issue("quoted_string", 'string written with JSON "quotes" instead of <|"|>', token.start_pos)
        return self._quoted(token)

    def sstring(self, token: Token) -> str:
        self.sink.issue("quoted_string", "string written with 'single quotes' instead of <|\"|>", token.start_pos)
        return self._quoted(token)

    def bareword(self, token: Token) -> str:
        self.sink.issue(
            "unquoted_value", f"value {str(token)!r} is not quoted; read as a string{_STRIPPED_HINT}", token.start_pos
        )
        return str(token)

    def _quoted(self, token: Token) -> str:
        try:
            value = json_value(str(token)) if str(token).startswith('"') else python_literal(str(token))
        except ValueError as exc:
            raise BuildError(f"invalid quoted string: {exc}", token.start_pos) from None
        if not isinstance(value, str):
            raise BuildError("invalid quoted string", token.start_pos)
        return checked_string(self.sink, value, str(token), token.start_pos)

    def object(self, *children: Any) -> dict[str, Any]:
        return self.mapping((str(key), value, key.pos) for key, value in children[1:-1:2])  # { pair , pair ... }

    def pair(self, key: _Key, separator: Token, value: Any) -> tuple[_Key, Any]:
        if separator.type == "EQUALS":
            self._key_equals(key, separator)
        return key, value

    def array(self, *children: Any) -> list[Any]:
        return list(children[1:-1:2])  # [ value , value ... ]

    # ---- a block the grammar rejected
    def recover(self, raw: str, pos: int, error: str) -> int | None:
        call = self._call
        self._call, self._key, self._in_argument, self._raw_at = None, None, False, None
        self._chars, self._quote_seen, self._padded = [], False, False
        if call is None:
            return None
        call.cut(raw, error, pos)  # a string argument being read keeps what was already sent of it
        return len(raw)


def _opens_reasoning(prompt: str) -> bool:
    """Whether the prompt ends inside an open thought channel (the reply then starts in reasoning)."""
    return prompt.rstrip().endswith((CHANNEL_OPEN, CHANNEL_OPEN + "thought"))


#: ``call:NAME{`` or ``call:NAME(``, as a bare call starts.
_INLINE_HEAD = re.compile(r"call:[A-Za-z_][\w\-.]{0,31}[{(]")
#: What ends the text a call inside a line of prose can be read from: the end of the line, a
#: marker, or the next ``call:``.
_INLINE_STOP = re.compile(
    "|".join(re.escape(m) for m in ("\n", CALL_OPEN, "<call>", CALL_CLOSE, TURN_CLOSE, RESPONSE_OPEN, CHANNEL_OPEN))
    + "|"
    + "|".join(re.escape(m) for m in (CHANNEL_CLOSE, "call:"))
)
_INLINE_STOP_LONGEST = len(RESPONSE_OPEN)
#: What a call read inside a line of prose must not report: it is then no call, and stays text.
_NOT_A_CALL = frozenset({"truncated_call", "invalid_tool_call", "unexpected_text"})


#: How far a call inside a line of prose may run: a decision the stream waits for is bounded.
_INLINE_LIMIT = 1024


class _InlineWatch:
    """Wakes the stream once the text a call inside a line of prose is read from has arrived, or
    once ``budget`` more characters have (the call is then read from that much)."""

    def __init__(self, tail: str, budget: int) -> None:
        self.tail = tail  # the end of what was searched, for a stop split across chunks
        self.budget = budget

    def scan(self, text: str) -> bool:
        self.budget -= len(text)
        joined = self.tail + text
        if _INLINE_STOP.search(joined) or self.budget <= 0:
            return True
        self.tail = joined[-(_INLINE_STOP_LONGEST - 1) :]
        return False


def lex_inline_call(text: str, pos: int, final: bool) -> tuple[_Inline, int] | Watch | None:
    """``call:NAME{...}`` inside a line of prose (the fast lexer of INLINE_CALL), read as a reply of
    its own: the call and its issues, if the text from ``call:`` to the last ``}`` or ``)`` before the
    end of its line (or the next marker or ``call:``, and within ``_INLINE_LIMIT`` characters) holds
    no ``<|"|>`` (the special tokens were stripped) and reads as exactly one complete call, followed
    at most by text."""
    if _INLINE_HEAD.match(text, pos) is None:
        return None
    limit = min(len(text), pos + _INLINE_LIMIT)
    stop = _INLINE_STOP.search(text, pos + len("call:"), limit)
    if stop is None and not final and limit < pos + _INLINE_LIMIT:
        tail = text[max(pos + len("call:"), len(text) - _INLINE_STOP_LONGEST + 1) :]
        return _InlineWatch(tail, pos + _INLINE_LIMIT - len(text))
    line = text[pos : stop.start() if stop is not None else limit]
    candidate = line[: max(line.rfind("}"), line.rfind(")")) + 1]
    if not candidate or QUOTE in candidate:
        return None
    stream = Stream(reply_syntax(), events=False)
    stream.feed(candidate)
    stream.close()
    result = stream.result
    if len(result.tool_calls) != 1 or result.reasoning or not candidate.endswith(result.content):
        return None
    if any(issue.kind in _NOT_A_CALL for issue in result.issues):
        return None
    (call,) = result.tool_calls
    issues = tuple(
        (issue.kind, issue.message, issue.pos, issue.text) for issue in result.issues if issue.kind != "bare_call"
    )
    arguments = call.function.arguments
    assert isinstance(arguments, dict)
    return _Inline(call.function.name, arguments, issues), pos + len(candidate) - len(result.content)


#: A call's head, and the tokens of its arguments as the template writes them (no blanks): a
#: ``<|"|>`` string (to the first ``<|"|>``), a bare key, a JSON number, a literal, punctuation.
_WHOLE_HEAD = re.compile(r"<\|tool_call>call:([A-Za-z_][\w\-.]*)\{")
_WHOLE_TOKEN = re.compile(
    r'<\|"\|>(.*?)<\|"\|>|([A-Za-z_][\w\-.]*):|(-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?)'
    r"|(true|false|None)|([{}\[\],])",
    re.DOTALL,
)
_LITERALS = {"true": "true", "false": "false", "None": "null"}
#: The deepest nesting a whole-reply reader takes (well within the grammar's bound).
_WHOLE_DEPTH = 16
#: Prose that may be markup or an inline call the grammar reads.
_WHOLE_MARKUP = re.compile(MARKUP.pattern + "|call:")


def whole_reply(text: str, tools: ToolsByName | None) -> WholeReading | None:
    """A whole reply in the template's shape, read at once (see ``Syntax.whole``): an optional
    ``<|channel>thought\n...<channel|>``, prose, then calls one after the other and
    ``<|tool_response>``, or no call and ``<turn|>`` (or neither). Arguments are read only where
    they are spelled as the template writes them (bare keys, ``<|"|>`` strings holding neither
    ``call:`` nor both ``<`` and ``|``, which every marker holds, JSON numbers,
    ``true``/``false``/``None``, no blanks), as JSON with no repeated key; anything else is the
    grammar's."""
    lead = leading_reasoning(text, THOUGHT_OPEN, CHANNEL_CLOSE, _WHOLE_MARKUP)
    if lead is None:
        return None
    reasoning, start = lead
    first = text.find(CALL_OPEN, start)
    if first < 0:
        last = before_stop(text, TURN_CLOSE)
        prose = text[start:last]
        return None if _WHOLE_MARKUP.search(prose) else (prose, reasoning, [])
    prose = text[start:first]
    if _WHOLE_MARKUP.search(prose):
        return None
    last = before_stop(text, RESPONSE_OPEN)
    calls = []
    pos = first
    while pos < last:
        head = _WHOLE_HEAD.match(text, pos)
        if head is None:
            return None
        out = ["{"]
        depth = 1
        pos = head.end()
        while depth:
            token = _WHOLE_TOKEN.match(text, pos)
            if token is None:
                return None
            string, key, number, literal, mark = token.groups()
            if mark is not None:
                depth += 1 if mark in "{[" else -1 if mark in "}]" else 0
                if depth > _WHOLE_DEPTH:
                    return None  # deep nesting is the grammar's to bound and report
                out.append(mark)
            elif string is not None:
                if "call:" in string or ("<" in string and "|" in string):
                    return None  # the grammar may read a call's head (f(x)call:g) or a marker there

                out.append(json_text(string))
            elif key is not None:
                out.append(json_text(key) + ":")
            else:
                out.append(number if number is not None else _LITERALS[literal])
            pos = token.end()
        if not text.startswith(CALL_CLOSE, pos):
            return None
        pos += len(CALL_CLOSE)
        try:
            arguments = PLAIN_JSON_DECODER.decode("".join(out))
        except ValueError:  # a repeated key, a number out of range, a misplaced comma or key
            return None
        calls.append((head.group(1), arguments))
    return prose, reasoning, calls


@functools.cache
def reply_syntax() -> Syntax:
    """The reply syntax: the grammar, the builder and how the stream reads them (built once)."""
    return Syntax(
        grammar=compile_grammar("gemma4"),
        builder=Gemma4Builder,
        text_terminals={
            "TEXT": CONTENT,
            "CALL_WORD": CONTENT,
            "THOUGHT": REASONING,
            "CHARS": CHARS,
            "NESTED_CHARS": CHARS,
            "RAW_FIRST": RAW,
            "RAW_TEXT": RAW,
        },
        blocks={"CALL_OPEN": "CALL_CLOSE", "BARE_CALL": None, "BARE_CALL0": None},
        autoclose={
            "CHANNEL_CLOSE": "<channel|>",
            "RBRACK": "]",
            "RBRACE": "}",
            "RPAR": ")",
            "CALL_CLOSE": CALL_CLOSE,
        },
        autoclose_before=frozenset({"CALL_OPEN", "CALL_CLOSE", "TURN_END", "TOOL_RESPONSE"}),
        resync_after=(CALL_CLOSE,),
        resync_before=(CALL_OPEN, TURN_CLOSE, RESPONSE_OPEN),
        delimiters=(Delimiter(QUOTE, QUOTE), Delimiter('"', '"', "\\"), Delimiter("'", "'", "\\")),
        # JSTRING and SSTRING are not closed: MIXED_STRING may match longer once its <|"|> arrives.
        closed_terminals=frozenset({"GSTRING", "GQ", "CALL_CLOSE", "TURN_END", "TOOL_RESPONSE"}),
        holdback=40,
        nest_open=frozenset({"LBRACE", "LBRACK", "LPAR"}),
        nest_close=frozenset({"RBRACE", "RBRACK", "RPAR", "END_BRACE"}),
        fast_terminals={"INLINE_CALL": lex_inline_call},
        reasoning_open="CHANNEL_OPEN",
        # "call:" at the start of the reply; a literal (true, None, 42...) where an unquoted value may start
        preempt_starts="ctTfFnN-.0123456789",
        prompt_opens_reasoning=_opens_reasoning,
        whole=whole_reply,
    )


# ---------------------------------------------------------------------------- export (constrained decoding)


class GemmaValues(JsonValues):
    """Values as the template writes them: ``<|"|>`` strings, ``None``, ``{k:v}`` sorted by key, no spaces."""

    tag = "gemma"
    null = "None"
    item_separator = ","

    def write(self, value: Any) -> str:
        return format_value(value, quote_keys=False)

    def literal(self, value: Any) -> Expr:
        return self.string_of(Lit(value)) if isinstance(value, str) else Lit(self.write(value))

    def key(self, name: str) -> str:
        return name + ":"

    def free_key(self) -> Expr:
        return seq(NAME, ":")

    def order(self, names: list[str]) -> list[str]:
        return sorted(names, key=str.lower)  # dictsort: case-insensitive, stable

    def string(self) -> Expr:
        return self.string_of(self.b.head(self.b.text((QUOTE,)), QUOTE))

    @staticmethod
    def string_of(inside: Expr) -> Expr:
        if isinstance(inside, Head):
            return seq(Marker(QUOTE), inside)
        return seq(Marker(QUOTE), inside, Marker(QUOTE))

    def integer(self) -> Expr:
        return Term("GEMMA_INTEGER", rseq(optional("-"), plus(DIGIT)))

    def number(self) -> Expr:
        digits = ralt(rseq(plus(DIGIT), optional(rseq(".", star(DIGIT)))), rseq(".", plus(DIGIT)))
        exponent = optional(rseq(charset("eE"), optional(charset("+-")), plus(DIGIT)))
        return Term("GEMMA_NUMBER", rseq(optional("-"), digits, exponent))


def grammar_calls(builder: GrammarBuilder, tools: list[dict[str, Any]]) -> CallSyntax:
    """Calls as the template writes them: ``<|tool_call>call:NAME{key:value,...}<tool_call|>``, back to back.

    Keys sorted case-insensitively, strings between ``<|"|>`` tokens (any text but that token).
    Reasoning is the thought channel. The markers are special tokens of Gemma 4's tokenizer.
    """
    values = GemmaValues(builder)
    bodies = [seq(f"call:{tool_name(tool)}", values.value(parameters_schema(tool))) for tool in tools]
    call = seq(builder.rule("call", alt(*bodies)), Marker(CALL_CLOSE)) if bodies else EMPTY
    opens = (CALL_OPEN, "<call>", TURN_CLOSE, RESPONSE_OPEN)  # what ends the thought channel
    ends = (*opens, CALL_CLOSE)
    return CallSyntax(
        triggers=((CALL_OPEN, call),),
        more=seq(Marker(CALL_OPEN), call),
        text_forbid_markers=(*ends, CHANNEL_OPEN, CHANNEL_CLOSE, "\ncall:"),
        text_forbid_start=("call:",),
        reasoning=Reasoning(CHANNEL_OPEN, CHANNEL_CLOSE, open_rest="thought\n", forbid_markers=opens),
        stops=(RESPONSE_OPEN, TURN_CLOSE),
    )


# ---------------------------------------------------------------------------- wire (the reply syntax)

WIRE = WireSpec(
    "gemma4",
    call=(CALL_OPEN, CALL_CLOSE),
    stop=TURN_CLOSE,
    reasoning=(CHANNEL_OPEN + "thought", CHANNEL_CLOSE),
    arguments="quoted",
    values="quoted",
    quote=QUOTE,
    special_tokens=(CALL_OPEN, CALL_CLOSE, QUOTE, CHANNEL_OPEN, CHANNEL_CLOSE, TURN_CLOSE, RESPONSE_OPEN),
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

    functions = Functions(prompt_text, prompt_conversation, reply_text)
    wire = WIRE
