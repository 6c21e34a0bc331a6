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

* Q1/Q2. String values are pasted raw between ``<|"|>`` (a value containing ``<|"|>`` cannot be
  read back); null is ``None``; floats use Python's ``repr``.
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

import dataclasses
import itertools
import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from codec._lark import compile_grammar
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
from codec.format import Format
from codec.formats._calls import Call, LiteralHandlers, json_chars
from codec.formats._decode import bos_token, call_id, rendering
from codec.formats._reading import Reader, Readings
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
from codec.literals import json_text, json_value, python_literal
from codec.models import Conversation, Function, FunctionCall, Message, Tool, ToolCall
from codec.schema import tool_name
from codec.stream import CONTENT, REASONING, Builder, BuildError, Stream, Syntax
from codec.watch import Delimiter

QUOTE = '<|"|>'
TURN_OPEN = "<|turn>"
TURN_CLOSE = "<turn|>"
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
GENERATION_PROMPT = TURN_OPEN + "model\n"

#: Schema keys an object without ``properties`` does not list as (fake) properties (Q12).
_STANDARD_KEYS = ("description", "type", "properties", "required", "nullable")
_MEDIA = ("image", "audio", "video")


# ---------------------------------------------------------------------------- values


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


# ---------------------------------------------------------------------------- declarations


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


# ---------------------------------------------------------------------------- turns


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
    """The prompt, as the reference template renders it (errors raised in the template's order)."""
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
        out.append(TURN_CLOSE + "\n")

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
            out.append(concat(THOUGHT_OPEN, thought, "\n" + CHANNEL_CLOSE))

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
            out.append(TURN_CLOSE + "\n")

    if add_generation_prompt and state not in ("tool_response", "tool_call"):  # Q4, Q5
        out.append(GENERATION_PROMPT)
    return "".join(out)


def reply_text(message: dict[str, Any]) -> str:
    """What the model writes for ``message`` after ``<|turn>model\\n`` (see :meth:`Gemma4.render_reply`)."""
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


# ---------------------------------------------------------------------------- parse

#: Text kind of string-value characters: the builder streams or collects them.
CHARS = "chars"
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


class Gemma4Builder(LiteralHandlers, Builder):
    """Builds calls from the gemma4 grammar. Values are typed as written; nothing is coerced."""

    def __init__(self, sink: Stream) -> None:
        super().__init__(sink)
        self._wrapped = False
        self._call: Call | None = None
        self._key: tuple[str, int] | None = None  # the last key read, and where
        self._streaming: str | None = None  # the argument whose string value is streaming
        self._chars: list[str] = []  # the characters of the string being read

    # ---- frame
    def call_open(self, c: list[Any]) -> None:
        self._wrapped = True
        token = c[0]
        if str(token) != CALL_OPEN + "call:":
            self.sink.issue(
                "call_opener", f"call opened with {str(token)!r} instead of '<|tool_call>call:'", token.start_pos
            )

    def bare_open(self, c: list[Any]) -> None:
        self._wrapped = False
        self.sink.issue("bare_call", "call:NAME{...} without <|tool_call> accepted", c[0].start_pos)

    def call_head(self, c: list[Any]) -> None:
        token = c[0]
        self._call = Call(str(token), self.sink.start_call(str(token)), token.start_pos)

    def paren_body(self, c: list[Any]) -> None:
        self.sink.issue("parentheses", "call written with (...) instead of {...}", c[0].start_pos)

    def call(self, c: list[Any]) -> None:
        self._end_call()

    def bare_call(self, c: list[Any]) -> None:
        self._end_call()

    def _end_call(self) -> None:
        call, self._call = self._call, None
        assert call is not None
        self.sink.end_call(call.index, call.args, call.pos)

    def stray_close(self, c: list[Any]) -> None:
        token = c[0]
        self.sink.issue(
            "stray_closer", f"{str(token).strip()!r} with nothing open, ignored", token.start_pos, str(token)
        )

    # ---- arguments
    def key(self, c: list[Any]) -> _Key:
        token = c[0]
        text = str(token)
        if token.type == "GSTRING":
            key = text[len(QUOTE) : -len(QUOTE)]
        elif token.type in ("JSTRING", "SSTRING"):
            key = self._quoted(token)
        else:
            key = text
        self._key = (key, token.start_pos)
        return _Key(key, token.start_pos)

    def arg(self, c: list[Any]) -> None:
        call = self._call
        assert call is not None
        key, separator, value = str(c[0]), c[1], c[2]
        if separator.type == "EQUALS":
            self.sink.issue("key_equals", f"argument {key!r} written with '=' instead of ':'", separator.start_pos)
        if self._streaming is not None:  # a streamed string: already sent
            self._streaming = None
            call.args[key] = value
            return
        if key in call.args:
            shown = json_text(value)
            message = f"argument {key!r} repeated; the first value is kept"
            self.sink.issue("duplicate_argument", message, c[0].pos, shown)
            return
        prefix = "{" if not call.args else ", "
        call.args[key] = value
        self.sink.add_arguments(call.index, prefix + json_text(key) + ": " + json_text(value))

    def string_open(self, c: list[Any]) -> None:
        call, key = self._call, self._key
        assert call is not None and key is not None
        self._chars = []
        if key[0] in call.args:
            return  # a duplicate: collected, reported by arg()
        self._streaming = key[0]
        prefix = "{" if not call.args and not self.sink.sent_arguments(call.index) else ", "
        self.sink.add_arguments(call.index, prefix + json_text(key[0]) + ': "')

    def stream_string(self, c: list[Any]) -> str:
        text = "".join(self._chars)
        self._chars = []
        if self._streaming is not None:
            assert self._call is not None
            self.sink.add_arguments(self._call.index, '"')
        return text

    def on_text(self, kind: str, text: str, pos: int) -> None:
        if kind != CHARS:
            super().on_text(kind, text, pos)
            return
        self._chars.append(text)
        if self._streaming is not None and self._call is not None:
            self.sink.add_arguments(self._call.index, json_chars(text))

    # ---- values
    def string(self, c: list[Any]) -> str:
        text = "".join(self._chars)
        self._chars = []
        return text

    def jstring(self, c: list[Any]) -> str:
        self.sink.issue("quoted_string", 'string written with JSON "quotes" instead of <|"|>', c[0].start_pos)
        return self._quoted(c[0])

    def sstring(self, c: list[Any]) -> str:
        self.sink.issue("quoted_string", "string written with 'single quotes' instead of <|\"|>", c[0].start_pos)
        return self._quoted(c[0])

    def bareword(self, c: list[Any]) -> str:
        token = c[0]
        self.sink.issue(
            "unquoted_value", f"value {str(token)!r} is not quoted; read as a string{_STRIPPED_HINT}", token.start_pos
        )
        return str(token)

    def _quoted(self, token: Any) -> str:
        try:
            value = json_value(str(token)) if str(token).startswith('"') else python_literal(str(token))
        except ValueError as exc:
            raise BuildError(f"invalid quoted string: {exc}", token.start_pos) from None
        if not isinstance(value, str):
            raise BuildError("invalid quoted string", token.start_pos)
        return value

    def object(self, c: list[Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in c[1:-1:2]:
            if key in out:
                self.sink.issue("duplicate_key", f"key {str(key)!r} repeated; the last value is kept", key.pos)
            out[str(key)] = value
        return out

    def pair(self, c: list[Any]) -> tuple[_Key, Any]:
        return c[0], c[2]

    def array(self, c: list[Any]) -> list[Any]:
        return list(c[1:-1:2])

    # ---- a block the grammar rejected
    def recover(self, raw: str, pos: int, error: str) -> bool:
        call, streaming, chars = self._call, self._streaming, "".join(self._chars)
        self._call, self._streaming, self._chars, self._wrapped = None, None, [], False
        if call is None:
            return False
        if streaming is not None:
            call.args[streaming] = chars  # what was already sent of it
        self.sink.issue("truncated_call", f"tool call {call.name!r} cut short: {error}", pos, raw)
        self.sink.end_call(call.index, call.args, call.pos)
        return True


def _opens_reasoning(prompt: str) -> bool:
    """Whether the prompt ends inside an open thought channel (the reply then starts in reasoning)."""
    return prompt.rstrip().endswith((CHANNEL_OPEN, CHANNEL_OPEN + "thought"))


# ---------------------------------------------------------------------------- decode
#
# The renderer writes every text raw: a content, a description or a string value may hold
# ``<turn|>\n``, ``<|"|>`` or any other marker, and then the prompt reads several ways. The
# reader below tries the readings in a fixed order (a text ends at the first closer that lets the
# rest read, a call's braces read as ``key:value`` pairs before raw text) and the first complete
# reading that renders back to the prompt is the conversation: readings that render the same are
# told apart by that order alone.

TURN_END = TURN_CLOSE + "\n"
THOUGHT_END = "\n" + CHANNEL_CLOSE
_SYSTEM_HEADER = TURN_OPEN + "system\n"
_MEDIA_TOKEN = re.compile(r"(<\|(?:image|audio|video)\|>)")
_SCALAR = re.compile(r"[^,}\]]*")
#: Complete readings of an ambiguous prompt rendered back before the first one is returned as is.
_MAX_READINGS = 16


@dataclass(frozen=True)
class _Header:
    """The system turn the template opens for thinking, tools or a first system message."""

    thinking: bool
    system: str
    tools: tuple[dict[str, Any], ...]


@dataclass(frozen=True)
class _Gemma4Turn:
    """One non-tool message as the prompt shows it (assistant turns merged by Q7 are separate)."""

    role: str
    content: str
    #: What closed it: :data:`TURN_END`, :data:`RESPONSE_OPEN` (Q5), or ``""`` (answered calls, no content).
    end: str
    thought: str | None = None
    calls: tuple[tuple[str, dict[str, Any] | str], ...] = ()
    #: ``(name, the mapping between the braces)`` of each ``response:NAME{...}``.
    responses: tuple[tuple[str, dict[str, Any]], ...] = ()


def _scalar(token: str) -> tuple[Any] | None:
    """``(value,)`` for a scalar that :func:`format_value` writes as exactly ``token``, else ``None``."""
    if token in ("None", "true", "false"):
        return ({"None": None, "true": True, "false": False}[token],)
    try:
        number: float = int(token) if token.lstrip("-").isdigit() else float(token)
    except ValueError:  # not a number, or an int too long to convert
        return None
    if not math.isfinite(number) or str(number) != token:
        return None
    return (number,)


def _sorted_mapping(pairs: tuple[tuple[str, Any], ...]) -> dict[str, Any] | None:
    """The mapping of ``pairs`` if :func:`dictsort` writes its keys in this order and none repeats."""
    keys = [key for key, _ in pairs]
    if len(set(keys)) != len(keys) or keys != sorted(keys, key=str.lower):
        return None
    return dict(pairs)


def _schema_type(text: str) -> str | list[str] | None:
    """A ``type`` back from its upper-cased text: ``None`` for none, a list from its Python repr (Q12)."""
    if not text:
        return None
    if text.startswith("["):
        try:
            kinds = python_literal(text.lower())
        except ValueError:
            return text.lower()
        if isinstance(kinds, list) and all(isinstance(kind, str) for kind in kinds):
            return kinds
    return text.lower()


def _lower_type(value: Any) -> Any:
    """An ``items`` schema's ``type``, written upper-cased (a string or a list of them), lower-cased back."""
    if isinstance(value, str):
        return value.lower()
    if isinstance(value, list):
        return [item.lower() if isinstance(item, str) else item for item in value]
    return value


class _PromptReader(Reader):
    """The readings of a gemma4 prompt, in order; where the deepest one failed, for the error."""

    refusal = "not a gemma4 prompt: no reading of it gets past here"
    gave_up = "; the search gave up there: the prompt reads too many ways to try them all"

    def __init__(self, text: str) -> None:
        super().__init__(text)
        #: (offset, previous role) from which no reading of the turns reached the end.
        self._dead: set[tuple[int, str | None]] = set()

    # ------------------------------------------------------------------ primitives

    def _named(self, pos: int, head: str, expected: str) -> tuple[str, int] | None:
        """``head`` at ``pos``, then a name up to the next ``{``: (the name, the brace's offset)."""
        if not self.at(pos, head):
            return None
        brace = self.text.find("{", pos + len(head))
        if brace < 0:
            self.fail(len(self.text), (expected,))
            return None
        return self.text[pos + len(head) : brace], brace

    # ------------------------------------------------------------------ values (Gemma notation)

    def _string(self, pos: int, follow: tuple[str, ...]) -> Readings[str]:
        """``<|"|>text<|"|>``, closed by a ``<|"|>`` that one of ``follow`` comes after (Q1)."""
        if not self.at(pos, QUOTE):
            return
        start = pos + len(QUOTE)
        for close in self.find_all(start, (QUOTE,)):
            after = close + len(QUOTE)
            if self.text.startswith(follow, after):
                yield self.text[start:close], after
            else:
                self.fail(after, follow)

    def _value(self, pos: int, follow: tuple[str, ...], quote_keys: bool) -> Readings[Any]:
        """A value as :func:`format_value` writes it (keys ``<|"|>``-quoted with ``quote_keys``)."""
        text = self.text
        if text.startswith(QUOTE, pos):
            yield from self._string(pos, follow)
        elif text.startswith("{", pos):
            yield from self._mapping(pos, quote_keys)
        elif text.startswith("[", pos):
            yield from self._list(pos, quote_keys)
        else:
            match = _SCALAR.match(text, pos)
            assert match is not None  # the pattern matches the empty string
            scalar = _scalar(match.group())
            if scalar is None:
                self.fail(pos, ("a value",))
            else:
                yield scalar[0], match.end()

    def _list(self, pos: int, quote_keys: bool) -> Readings[list[Any]]:
        if not self.at(pos, "["):
            return
        if self.text.startswith("]", pos + 1):
            yield [], pos + 2
            return
        for items, end in self.separated(pos + 1, lambda at: self._value(at, (",", "]"), quote_keys), "]"):
            yield list(items), end

    def _key(self, pos: int, quote_keys: bool) -> Readings[str]:
        if quote_keys:
            yield from self._string(pos, (":",))
            return
        colon = self.text.find(":", pos)  # a bare key holds no ':' (the first one ends it)
        if colon < 0:
            self.fail(len(self.text), (":",))
        else:
            yield self.text[pos:colon], colon

    def _mapping(self, pos: int, quote_keys: bool) -> Readings[dict[str, Any]]:
        """``{key:value,...}``, keys in :func:`dictsort` order."""
        if not self.at(pos, "{"):
            return
        if self.text.startswith("}", pos + 1):
            yield {}, pos + 2
        for pairs, end in self.separated(pos + 1, lambda at: self._pair(at, quote_keys), "}"):
            mapping = _sorted_mapping(pairs)
            if mapping is not None:
                yield mapping, end

    def _pair(self, pos: int, quote_keys: bool) -> Readings[tuple[str, Any]]:
        for key, after_key in self._key(pos, quote_keys):
            if self.at(after_key, ":"):
                for value, after in self._value(after_key + 1, (",", "}"), quote_keys):
                    yield (key, value), after

    # ------------------------------------------------------------------ declarations (system turn)

    def _fields(self, pos: int, read: Callable[[str, int], Readings[Any]]) -> Readings[dict[str, Any]]:
        """``{name:value,...}`` with bare names, each value read by ``read(name, pos)``."""
        if not self.at(pos, "{"):
            return
        if self.text.startswith("}", pos + 1):
            yield {}, pos + 2
            return
        for fields, end in self.separated(pos + 1, lambda at: self._field(at, read), "}"):
            if len({name for name, _ in fields}) == len(fields):
                yield dict(fields), end

    def _field(self, pos: int, read: Callable[[str, int], Readings[Any]]) -> Readings[tuple[str, Any]]:
        colon = self.text.find(":", pos)
        if colon < 0:
            self.fail(len(self.text), (":",))
            return
        name = self.text[pos:colon]
        for value, after in read(name, colon + 1):
            yield (name, value), after

    def _properties(self, pos: int) -> Readings[dict[str, Any]]:
        """``{name:{...},...}`` as :func:`render_properties` writes it: the property schemas."""
        return self._fields(pos, lambda _name, at: self._property(at))

    def _property(self, pos: int) -> Readings[dict[str, Any]]:
        """One property's ``{...}`` (:func:`_property`); no ``type`` for an empty one, no empty ``properties``."""
        for fields, after in self._fields(pos, self._property_field):
            schema = {key: value for key, value in fields.items() if key != "type" or value is not None}
            if schema.get("properties") == {}:
                del schema["properties"]  # an object with none lists none (Q12)
            yield schema, after

    def _property_field(self, name: str, pos: int) -> Readings[Any]:
        """One field of a property (:func:`_property`)."""
        if name == "description":
            yield from self._string(pos, (",",))
        elif name in ("enum", "required"):
            yield from self._value(pos, (",", "}"), quote_keys=True)
        elif name == "items":
            yield from self._fields(pos, self._items_field)
        elif name == "nullable":
            if self.at(pos, "true"):
                yield True, pos + len("true")
        elif name == "properties":
            yield from self._properties(pos)
        elif name == "type":
            for kind, after in self._string(pos, ("}",)):
                yield _schema_type(kind), after
        else:
            self.fail(pos - len(name) - 1, ("description", "enum", "items", "nullable", "properties", "type"))

    def _items_field(self, name: str, pos: int) -> Readings[Any]:
        """One field of an array's ``items`` (:func:`_items_schema`): any key, ``properties`` as schemas."""
        if name == "properties":
            yield from self._properties(pos)
        else:
            for value, after in self._value(pos, (",", "}"), quote_keys=True):
                yield (_lower_type(value) if name == "type" else value), after

    def _parameters(self, pos: int) -> Readings[dict[str, Any] | None]:
        """``,parameters:{properties:{...},required:[...],type:<|"|>T<|"|>}``, each part optional.

        Without a type, the template writes no closing ``}`` (the declaration's own closes it).
        """
        if not self.text.startswith(",parameters:{", pos):
            yield None, pos
            return
        yield from self._parameter_parts(pos + len(",parameters:{"))

    def _part(
        self, pos: int, label: str, read: Callable[[int], Readings[Any]], schema: dict[str, Any]
    ) -> Readings[dict[str, Any]]:
        """``schema`` with ``label:VALUE,`` read at ``pos`` if the text has that part there."""
        if not self.text.startswith(label + ":", pos):
            yield schema, pos
            return
        for value, after in read(pos + len(label) + 1):
            if self.at(after, ","):
                yield {**schema, label: value}, after + 1

    def _parameter_parts(self, pos: int) -> Readings[dict[str, Any]]:
        for schema, at in self._part(pos, "properties", self._properties, {}):
            for full, at_type in self._part(at, "required", lambda p: self._list(p, quote_keys=True), schema):
                yield from self._parameter_type(full, at_type)

    def _parameter_type(self, schema: dict[str, Any], pos: int) -> Readings[dict[str, Any]]:
        if self.text.startswith("type:", pos):
            for kind, after in self._string(pos + len("type:"), ("}",)):
                yield {**schema, "type": _schema_type(kind)}, after + 1
        else:  # parameters the template writes nothing for are still truthy: written as ``{``
            yield (schema or {"properties": {}}), pos

    def _response(self, pos: int) -> Readings[dict[str, Any] | None]:
        """``,response:{description:<|"|>D<|"|>,type:<|"|>OBJECT<|"|>}``, each part optional."""
        if not self.text.startswith(",response:{", pos):
            yield None, pos
            return
        pos += len(",response:{")
        described: list[tuple[dict[str, Any], int]] = [({}, pos)]
        if self.text.startswith("description:", pos):
            described = [({"description": d}, at + 1) for d, at in self._string(pos + len("description:"), (",",))]
        for response, at in described:
            if self.text.startswith("type:" + quote_string("OBJECT") + "}", at):
                yield {**response, "type": "object"}, at + len("type:" + quote_string("OBJECT") + "}")
            yield response, at

    def _declaration(self, pos: int) -> Readings[dict[str, Any]]:
        """``<|tool>declaration:NAME{description:...}<tool|>``: the tool's function, as a JSON schema."""
        named = self._named(pos, DECLARATION_OPEN + "declaration:", "{description:")
        if named is None:
            return
        name, brace = named
        if not self.at(brace, "{description:"):
            return
        follow = (",parameters:{", ",response:{", "}" + DECLARATION_CLOSE)
        for description, at in self._string(brace + len("{description:"), follow):
            for parameters, at_response in self._parameters(at):
                for response, end in self._response(at_response):
                    if self.at(end, "}" + DECLARATION_CLOSE):
                        function: dict[str, Any] = {"name": name}
                        if description:
                            function["description"] = description
                        if parameters is not None:
                            function["parameters"] = parameters
                        if response is not None:
                            function["response"] = response
                        yield function, end + len("}" + DECLARATION_CLOSE)

    def _header(self, pos: int) -> Readings[_Header | None]:
        """The system turn: ``<|turn>system\\n[<|think|>\\n]TEXT[<|tool>...<tool|>]*<turn|>\\n``."""
        if not self.text.startswith(_SYSTEM_HEADER, pos):
            yield None, pos
            return
        pos += len(_SYSTEM_HEADER)
        thinking = self.text.startswith(THINK, pos)
        if thinking:
            pos += len(THINK)
        for end in self.find_all(pos, (DECLARATION_OPEN, TURN_END)):
            for tools, after in self.repeat(self._declaration, end):
                if self.at(after, TURN_END):
                    yield _Header(thinking, self.text[pos:end], tools), after + len(TURN_END)

    # ------------------------------------------------------------------ turns

    def _call(self, pos: int) -> Readings[tuple[str, dict[str, Any] | str]]:
        """``<|tool_call>call:NAME{...}<tool_call|>``: pairs, else the raw text of string arguments (Q10)."""
        named = self._named(pos, CALL_OPEN + "call:", "{")
        if named is None:
            return
        name, brace = named
        for arguments, after in self._mapping(brace, quote_keys=False):
            if self.at(after, CALL_CLOSE):
                yield (name, arguments), after + len(CALL_CLOSE)
        for close in self.find_all(brace + 1, ("}" + CALL_CLOSE,)):
            yield (name, self.text[brace + 1 : close]), close + 1 + len(CALL_CLOSE)

    def _tool_response(self, pos: int) -> Readings[tuple[str, dict[str, Any]]]:
        """``<|tool_response>response:NAME{...}<tool_response|>``."""
        named = self._named(pos, RESPONSE_OPEN + "response:", "{")
        if named is None:
            return
        name, brace = named
        for body, after in self._mapping(brace, quote_keys=False):
            if self.at(after, RESPONSE_CLOSE):
                yield (name, body), after + len(RESPONSE_CLOSE)

    def _texts(self, pos: int, closers: tuple[str, ...], *, model: bool = False) -> Readings[str]:
        """A trimmed turn text from ``pos`` up to one of ``closers`` (the offset returned is the closer's).

        A model text holds no ``<|channel>`` or ``<channel|>`` (the template strips them, Q9).
        """
        text = self.text
        limit = pos if text[pos : pos + 1].isspace() else len(text)  # only "" is trimmed then
        if model:
            channels = (text.find(CHANNEL_OPEN, pos), text.find(CHANNEL_CLOSE, pos))
            limit = min([limit, *(at for at in channels if at >= 0)])
        for end in self.find_all(pos, closers):
            if end > limit:
                return
            if end == pos or not text[end - 1].isspace():
                yield text[pos:end], end

    def _model_turn(self, pos: int) -> Readings[_Gemma4Turn]:
        """An assistant message: ``[thought]calls*responses*content`` and what ends it (Q3, Q5, Q9)."""
        if not self.text.startswith(THOUGHT_OPEN, pos):
            yield from self._model_body(pos, None)
            return
        start = pos + len(THOUGHT_OPEN)
        for end in self.find_all(start, (THOUGHT_END + CALL_OPEN,)):
            yield from self._model_body(end + len(THOUGHT_END), self.text[start:end])

    def _model_body(self, pos: int, thought: str | None) -> Readings[_Gemma4Turn]:
        for calls, at in self.repeat(self._call, pos):
            if thought is not None and not calls:
                continue  # reasoning is written back only for a message with calls
            for responses, at_content in self.repeat(self._tool_response, at):
                yield from self._model_end(at_content, _Gemma4Turn("assistant", "", "", thought, calls, responses))

    def _model_end(self, pos: int, turn: _Gemma4Turn) -> Readings[_Gemma4Turn]:
        if turn.responses:
            yield turn, pos  # answered, nothing more: the model goes on in the same turn (Q5)
        closers = (RESPONSE_OPEN, TURN_END) if turn.calls and not turn.responses else (TURN_END,)
        for content, end in self._texts(pos, closers, model=True):
            closer = RESPONSE_OPEN if self.text.startswith(RESPONSE_OPEN, end) else TURN_END
            if turn.responses and not content:
                continue
            if closer == TURN_END and turn.calls and not turn.responses and not _MEDIA_TOKEN.search(content):
                continue  # unanswered calls end with <|tool_response> unless a media part came last
            yield dataclasses.replace(turn, content=content, end=closer), end + len(closer)

    def _plain_turn(self, pos: int, role: str) -> Readings[_Gemma4Turn]:
        for content, end in self._texts(pos, (TURN_END,)):
            yield _Gemma4Turn(role, content, TURN_END), end + len(TURN_END)

    def _turns_at(self, pos: int, previous: str | None) -> Readings[_Gemma4Turn]:
        """The readings of the message at ``pos``, given the role before it (Q7: none after an assistant)."""
        text = self.text
        if text.startswith(TURN_OPEN, pos):
            start = pos + len(TURN_OPEN)
            newline = text.find("\n", start)
            role = text[start:newline] if newline >= 0 else ""
            if newline < 0:
                self.fail(len(text), ("\n",))
            elif role == "model" and previous != "assistant":
                yield from self._model_turn(newline + 1)
            elif role in ("model", "assistant", "tool"):
                self.fail(start, ("user", "system") if role == "model" else ("user", "model", "system"))
            else:
                yield from self._plain_turn(newline + 1, role)
        else:
            self.fail(pos, (TURN_OPEN,))
        if previous == "assistant":
            yield from self._model_turn(pos)

    def _bodies(self, pos: int) -> Iterator[tuple[list[_Gemma4Turn], bool]]:
        """Every reading of the turns from ``pos`` to the end: ``(turns, generation prompt)``.

        Depth-first over messages without recursion (a conversation can be long). A place from
        which no reading reached the end is not tried again, nor a second reading of a message
        that ends where another one did (both render the same).
        """
        text = self.text
        path: list[_Gemma4Turn] = []
        #: Per message being read: its readings, where it starts, the completions before it, the ends seen.
        stack: list[tuple[Iterator[tuple[_Gemma4Turn, int]], tuple[int, str | None], int, set[tuple[int, str]]]] = []
        completed = 0
        here: tuple[int, str | None] | None = (pos, None)
        while True:
            if here is not None:
                if here in self._dead:
                    if path:
                        path.pop()
                else:
                    at = here[0]
                    generation = len(text) - at == len(GENERATION_PROMPT) and text.startswith(GENERATION_PROMPT, at)
                    if at == len(text) or generation:
                        completed += 1
                        yield list(path), generation
                    if at < len(text):
                        stack.append((self._turns_at(*here), here, completed, set()))
                    elif path:
                        path.pop()
                here = None
            if not stack:
                return
            readings, state, before, ends = stack[-1]
            step = next(readings, None)
            if step is None:
                stack.pop()
                if completed == before:
                    self._dead.add(state)
                if path:
                    path.pop()
                continue
            turn, end = step
            if (end, turn.role) in ends:
                continue
            ends.add((end, turn.role))
            path.append(turn)
            here = (end, "assistant" if turn.role == "assistant" else turn.role)

    def conversations(self) -> Iterator[Conversation]:
        """Every complete reading of the prompt, in order."""
        start = self.text.find(TURN_OPEN)
        if start < 0:
            start = len(self.text)
        bos = bos_token(self.text, start, TURN_OPEN)
        for header, at in self._header(start):
            for turns, generation in self._bodies(at):
                yield _conversation(bos, header, turns, generation)


# ---------------------------------------------------------------------------- decode: the conversation


def _system_content(text: str) -> str | list[dict[str, Any]]:
    """The first system message's content: the text, or text parts where it has the parts' trailing spaces (Q11)."""
    if text == text.strip():
        return text
    lead = len(text) - len(text.lstrip(" "))
    trail = len(text) - len(text.rstrip(" "))
    middle = text[lead : len(text) - trail]
    parts = [""] * lead + ([middle] + [""] * (trail - 1) if middle else [])
    return [{"type": "text", "text": part} for part in parts]


def _media_parts(text: str) -> list[dict[str, Any]]:
    """Model content as parts, its ``<|image|>``... tokens as media parts (their kind decides the generation prompt)."""
    parts: list[dict[str, Any]] = []
    for piece in _MEDIA_TOKEN.split(text):
        if _MEDIA_TOKEN.fullmatch(piece):
            parts.append({"type": piece[2:-2]})
        elif piece:
            parts.append({"type": "text", "text": piece})
    return parts


def _function_call(name: str, arguments: dict[str, Any] | str) -> FunctionCall:
    """A call's function; string arguments (Q10) are kept as the raw text the template pasted."""
    if isinstance(arguments, str):
        return FunctionCall.model_construct(name=name, arguments=arguments)  # raw text, not JSON
    return FunctionCall(name=name, arguments=arguments)


def _tool_messages(responses: tuple[tuple[str, dict[str, Any]], ...], calls: list[ToolCall]) -> list[Message]:
    """OpenAI tool messages for ``value:`` responses, each linked to the first unanswered call of its name."""
    answered: set[int] = set()
    messages = []
    for name, body in responses:
        message: dict[str, Any] = {"role": "tool", "name": name, "content": body["value"]}
        for index, call in enumerate(calls):
            if index not in answered and call.function.name == name:
                answered.add(index)
                message["tool_call_id"] = call.id
                break
        messages.append(Message(**message))
    return messages


def _is_tool_message(body: dict[str, Any]) -> bool:
    """Whether a response body is what a ``role: tool`` message renders: ``{value:<text or None>}``."""
    return list(body) == ["value"] and (body["value"] is None or isinstance(body["value"], str))


def _legacy_response(name: str, body: dict[str, Any]) -> dict[str, Any]:
    """An entry of an assistant message's ``tool_responses``: a mapping, or the value of ``{value:...}``."""
    if list(body) == ["value"] and not isinstance(body["value"], dict):
        return {"name": name, "response": body["value"]}
    return {"name": name, "response": body}


def _assistant_messages(turn: _Gemma4Turn, ids: Iterator[int], last_with_generation: bool) -> list[Message]:
    """The assistant message of a model turn, then the tool messages its responses render from."""
    calls = [ToolCall(id=call_id(next(ids)), function=_function_call(name, args)) for name, args in turn.calls]
    needs_media = (calls and not turn.responses and turn.end == TURN_END) or (
        last_with_generation and turn.responses and turn.content
    )
    content: Any = turn.content or (None if calls or turn.responses else "")
    if needs_media:
        content = _media_parts(turn.content)
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if turn.thought is not None:
        message["reasoning_content"] = turn.thought
    if calls:
        message["tool_calls"] = calls
    results: list[Message] = []
    if calls and turn.responses and all(_is_tool_message(body) for _, body in turn.responses):
        results = _tool_messages(turn.responses, calls)
    elif turn.responses:
        message["tool_responses"] = [_legacy_response(name, body) for name, body in turn.responses]
    return [Message(**message), *results]


def _conversation(bos: str, header: _Header | None, turns: list[_Gemma4Turn], generation: bool) -> Conversation:
    """The conversation of one reading (ids ``call_0``... in order; see the module docs for the canonical choices)."""
    variables: dict[str, Any] = {"bos_token": bos} if bos else {}
    messages: list[Message] = []
    tools = None
    first_merges = not turns or turns[0].role in ("system", "developer")  # would join the system turn (Q8)
    if header is not None:
        if header.thinking:
            variables["enable_thinking"] = True
        if header.tools:
            tools = [Tool(function=Function(**function)).model_dump() for function in header.tools]
        if header.system or not (header.thinking or header.tools) or first_merges:
            messages.append(Message(role="system", content=_system_content(header.system)))
    elif first_merges:  # a first message the template drops (Q6), so that the next one is not merged
        messages.append(Message(role="tool", content=""))
    ids = itertools.count()
    for index, turn in enumerate(turns):
        if turn.role == "assistant":
            messages.extend(_assistant_messages(turn, ids, generation and index == len(turns) - 1))
        else:
            messages.append(Message(role=turn.role, content=turn.content))
    return Conversation(messages=messages, tools=tools, add_generation_prompt=generation, variables=variables)


def prompt_conversation(prompt: str) -> Conversation:
    """The conversation ``prompt`` renders from: the first reading that renders back to it exactly.

    With none, the first complete reading (the caller reports where its rendering departs), or a
    ParseError at the farthest point any reading reached.
    """
    reader = _PromptReader(prompt)
    first: Conversation | None = None
    try:
        for count, conversation in enumerate(reader.conversations()):
            first = first or conversation
            if rendering(conversation, prompt_text) == prompt:
                return conversation
            if count + 1 >= _MAX_READINGS:
                break
    except RecursionError:  # values nested deeper than Python recurses
        raise reader.error("; values are nested too deeply there to read") from None
    if first is None:
        raise reader.error()
    return first


# ---------------------------------------------------------------------------- format


class Gemma4(Format):
    """Google Gemma 4 native tool calls (reference: the Gemma 4 E4B-it template)."""

    name = "gemma4"
    aliases = ("gemma-4", "gemma_4")
    summary = 'Gemma 4 native calls: <|tool_call>call:NAME{key:<|"|>text<|"|>,n:3}<tool_call|>'
    stop_token = TURN_CLOSE
    reference_template = "gemma4.jinja"
    grammar_special_tokens = (CALL_OPEN, CALL_CLOSE, QUOTE, CHANNEL_OPEN, CHANNEL_CLOSE, TURN_CLOSE, RESPONSE_OPEN)
    template_markers = ("<|turn>", "<|tool_call>")
    #: A call opener, or a bare ``call:NAME{`` where the parser accepts one.
    reply_markers = (r"<\|tool_call>", r"(?:\A|\n|<channel\|>)call:[\w.-]+[{(]")

    def _render(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        *,
        add_generation_prompt: bool,
        **variables: Any,
    ) -> str:
        """Template variables: ``bos_token`` (the template writes the variable, not a literal ``<bos>``:
        pass ``bos_token="<bos>"`` for the real prompt) and ``enable_thinking``."""
        return prompt_text(messages, tools, add_generation_prompt, variables)

    def _render_reply(self, message: dict[str, Any]) -> str:
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
        return reply_text(message)

    # ------------------------------------------------------------------ decode

    def _decode(self, prompt: str) -> Conversation:
        """The conversation of a gemma4 prompt (see "decode" above for how ambiguous texts read)."""
        return prompt_conversation(prompt)

    # ------------------------------------------------------------------ parse

    def _syntax(self) -> Syntax:
        return Syntax(
            grammar=compile_grammar("gemma4"),
            builder=Gemma4Builder,
            text_terminals={"TEXT": CONTENT, "THOUGHT": REASONING, "CHARS": CHARS},
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
            closed_terminals=frozenset(
                {"GSTRING", "JSTRING", "SSTRING", "GQ", "CALL_CLOSE", "TURN_END", "TOOL_RESPONSE"}
            ),
            holdback=40,
            nest_open=frozenset({"LBRACE", "LBRACK", "LPAR"}),
            nest_close=frozenset({"RBRACE", "RBRACK", "RPAR"}),
            reasoning_open="CHANNEL_OPEN",
            preempt_starts="c",
            prompt_opens_reasoning=_opens_reasoning,
        )

    # ------------------------------------------------------------------ constrained decoding

    def _grammar_calls(self, builder: GrammarBuilder, tools: list[dict[str, Any]]) -> CallSyntax:
        return grammar_calls(builder, tools)


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
