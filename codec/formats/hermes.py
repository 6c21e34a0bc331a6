"""``hermes``: Hermes / Qwen2.5-style JSON tool calls inside ``<tool_call>`` tags.

Reference template: the Portuguese Hermes template of the Tucano2 models
(``hermes-json-pt.jinja``). A reply looks like::

    Some text
    <tool_call>
    {"name": "get_weather", "arguments": {"city": "Paris"}}
    </tool_call><|im_end|>

Argument values are JSON and keep their JSON types; with ``tools`` they are checked against the
tool's schema, never coerced. Tolerated (each reported as an Issue): a missing
``</tool_call>`` (or ``}``) before the end of the reply or before the next block; ``parameters``
for ``arguments``; ``arguments`` given as a JSON string; Python-literal or single-quoted objects
(``True``, ``None``); raw control characters in strings; two JSON objects in one block, or a JSON
list of them; a code fence around a block's JSON; text after ``<|im_end|>``. A leading
``<think>...</think>`` block (Qwen3-style models) is reasoning.
"""

from __future__ import annotations

import functools
import itertools
import json
import re
from collections.abc import Iterator
from typing import Any

from codec import jinja
from codec._lark import Token, ValueToken, compile_grammar
from codec.errors import RenderError, parse_error_at
from codec.export import EMPTY, CallSyntax, GrammarBuilder, JsonValues, Marker, Reasoning, alt, parameters_schema, seq
from codec.format import Format, Functions
from codec.formats._calls import LiteralHandlers
from codec.formats._chatml import (
    GENERATION_PROMPT,
    IM_END,
    IM_START,
    RESPONSE_CLOSE,
    RESPONSE_OPEN,
    TURN_END,
    ChatMLTurn,
    read_turns,
    tool_responses,
)
from codec.formats._decode import assistant_message, json_object_as_written, trailing_blocks
from codec.formats._render import concat, required
from codec.literals import (
    JSON_DECODER,
    LAX_JSON_DECODER,
    PLAIN_JSON_DECODER,
    json_text,
    json_value,
    nesting,
    python_literal,
)
from codec.models import Conversation
from codec.schema import tool_name
from codec.sink import CONTENT, REASONING, CallWriter, Sink
from codec.stream import MAX_DEPTH, Builder, BuildError, Syntax
from codec.watch import Delimiter, json_fast_lexer

# ---------------------------------------------------------------------------- markers

SYSTEM_TOOLS_HEADER = (
    "# Tools / Ferramentas\n\nVocê pode chamar uma ou mais funções para auxiliar na consulta do usuário.\n\n"
    "Você recebe assinaturas de funções dentro de tags XML <tools></tools>:\n<tools>"
)
SYSTEM_TOOLS_FOOTER = (
    "\n</tools>\n\nPara cada chamada de função, retorne um objeto json com o nome da função e os "
    "argumentos dentro das tags XML <tool_call></tool_call>:\n<tool_call>\n"
    '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'
) + TURN_END
CALL_OPEN = "<tool_call>"
CALL_CLOSE = "</tool_call>"
STOP = IM_END


# ---------------------------------------------------------------------------- render


def prompt_text(
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    add_generation_prompt: bool,
    variables: dict[str, Any],
) -> str:
    """The prompt, as the reference template renders it (it reads no ``variables``)."""
    first = messages[0]
    first_is_system = required(first, "role") == "system"
    out: list[str] = []
    if tools:
        out.append(IM_START + "system\n")
        if first_is_system:
            out.append(concat(required(first, "content"), "\n\n"))
        out.append(SYSTEM_TOOLS_HEADER)
        for tool in tools:
            out.append("\n" + jinja.tojson(tool))
        out.append(SYSTEM_TOOLS_FOOTER)
    elif first_is_system:
        out.append(concat(IM_START + "system\n", required(first, "content"), TURN_END))
    for i, message in enumerate(messages):
        role = required(message, "role")
        content = message.get("content")
        content = content if isinstance(content, str) else ""
        if role == "user" or (role == "system" and i):
            out.append(concat(IM_START, role, "\n", content, TURN_END))
        elif role == "assistant":
            out.append(GENERATION_PROMPT + reply_text(message) + "\n")
        elif role == "tool":
            if i == 0 or messages[i - 1].get("role") != "tool":
                out.append(IM_START + "user")
            out.append(RESPONSE_OPEN + content + RESPONSE_CLOSE)
            if i == len(messages) - 1 or messages[i + 1].get("role") != "tool":
                out.append(TURN_END)
    if add_generation_prompt:
        out.append(GENERATION_PROMPT)
    return "".join(out)


# ---------------------------------------------------------------------------- reply


def _render_call(call: Any) -> str:
    """One ``<tool_call>`` block for an OpenAI tool call (or its bare ``function`` object)."""
    if not isinstance(call, dict):
        raise RenderError("tool_calls entries must be objects")
    function = call.get("function") or call
    name = function.get("name", "") if isinstance(function, dict) else ""
    arguments = function.get("arguments") if isinstance(function, dict) else None
    args = arguments if isinstance(arguments, str) else jinja.tojson(arguments)
    return f'{CALL_OPEN}\n{{"name": "{"" if name is None else name}", "arguments": {args}}}\n{CALL_CLOSE}'


def reply_text(message: dict[str, Any]) -> str:
    """What the model writes for ``message``: what follows ``<|im_start|>assistant\\n``, ``<|im_end|>`` included."""
    content = message.get("content")
    content = content if isinstance(content, str) else ""
    out = [content]
    calls = message.get("tool_calls") or []
    for i, call in enumerate(calls):
        if i or content:
            out.append("\n")
        out.append(_render_call(call))
    out.append(IM_END)
    return "".join(out)


# ---------------------------------------------------------------------------- decode

#: How the turns the template writes begin (the generation prompt is the assistant's opener).
_OPENERS = (IM_START + "system\n", IM_START + "user\n", GENERATION_PROMPT)
#: The end of the tools block, up to the ``<|im_end|>`` that closes the first system turn.
_TOOLS_END = SYSTEM_TOOLS_FOOTER.removesuffix(TURN_END)
_CALL_HEAD = CALL_OPEN + '\n{"name": "'
_CALL_ARGUMENTS = '", "arguments": '
_CALL_TAIL = "}\n" + CALL_CLOSE
#: Stands for messages the template does not render (any role but system, user, assistant and
#: tool) where the prompt shows there were some: between two turns of tool results, before a
#: system turn that the tools header does not hold, or as the whole conversation.
UNSHOWN_MESSAGE: dict[str, Any] = {"role": "developer", "content": ""}


def prompt_conversation(prompt: str) -> Conversation:
    """The conversation ``prompt`` is a rendering of (what comes back: README, "Decoding prompts")."""
    turns, generation_prompt = read_turns(prompt, 0, _OPENERS)
    tools: list[dict[str, Any]] | None = None
    header_system = False  # the tools header holds the first system message
    messages: list[dict[str, Any]] = []
    ids = itertools.count()
    for turn in turns:
        body = turn.body + 1  # past the newline after the role
        if turn.role == "system" and turn.start == 0 and prompt.endswith(_TOOLS_END, body, turn.end):
            system, tools = _tools_turn(prompt, body, turn.end - len(_TOOLS_END))
            if system is not None:
                messages.append({"role": "system", "content": system})
                header_system = True
        elif turn.role == "user":
            results = tool_responses(prompt, turn.body, turn.end)
            if results is None:
                messages.append({"role": "user", "content": prompt[body : turn.end]})
            else:
                if messages and messages[-1]["role"] == "tool":  # else the two groups would render as one
                    messages.append(dict(UNSHOWN_MESSAGE))
                messages += [{"role": "tool", "content": result} for result in results]
        elif turn.role == "system":
            messages.append({"role": "system", "content": prompt[body : turn.end]})
        else:
            messages.append(_assistant_message(prompt, turn, ids))
    if tools and messages and messages[0]["role"] == "system" and not header_system:
        messages.insert(0, dict(UNSHOWN_MESSAGE))  # else the system message would move into the header
    if not messages:
        messages.append(dict(UNSHOWN_MESSAGE))
    return Conversation.model_validate(
        {"messages": messages, "tools": tools, "add_generation_prompt": generation_prompt}
    )


def _tools_turn(text: str, body: int, footer: int) -> tuple[str | None, list[dict[str, Any]]]:
    """The system text (None without one) and the tools of the first system turn; its tools block ends at ``footer``."""
    header = text.rfind(SYSTEM_TOOLS_HEADER, body, footer)  # declarations are one-line JSON: the last header is it
    if header < 0:
        raise parse_error_at(text, footer, "the tools instructions are not preceded by their header")
    system = None
    if header > body:
        if not text.startswith("\n\n", header - 2) or header - 2 < body:
            raise parse_error_at(text, header, "expected a blank line between the system message and the tools")
        system = text[body : header - 2]
    pos = header + len(SYSTEM_TOOLS_HEADER)
    tools: list[dict[str, Any]] = []
    while pos < footer:
        if not text.startswith("\n", pos):
            raise parse_error_at(text, pos, "expected one tool per line", expected=("\n",))
        line_end = text.find("\n", pos + 1, footer)
        line_end = footer if line_end < 0 else line_end
        tools.append(_tool_line(text, pos + 1, line_end))
        pos = line_end
    if not tools:
        raise parse_error_at(text, pos, "the tools block declares no tool")
    return system, tools


def _tool_line(text: str, start: int, end: int) -> dict[str, Any]:
    """The tool declared as JSON on ``text[start:end]``, as written (the template writes each tool as given)."""
    line = text[start:end]
    try:
        value, stop = PLAIN_JSON_DECODER.raw_decode(line)
    except json.JSONDecodeError as exc:
        raise parse_error_at(text, start + exc.pos, f"a tool declaration is not JSON: {exc.msg}") from None
    except (ValueError, RecursionError) as exc:
        raise parse_error_at(text, start, f"a tool declaration is not plain JSON: {exc}") from None
    if stop != len(line):
        raise parse_error_at(text, start + stop, "unexpected text after a tool declaration")
    if not isinstance(value, dict):
        raise parse_error_at(text, start, "a tool declaration is not a JSON object")
    return value


def _assistant_message(text: str, turn: ChatMLTurn, ids: Iterator[int]) -> dict[str, Any]:
    """An assistant turn: its content, then the calls that end it (each block that reads back exactly)."""
    start = turn.body + 1
    cut, calls = trailing_blocks(
        text,
        start,
        turn.end,
        _CALL_HEAD,
        _read_call,
        lambda pos: pos == start or (pos - start >= 2 and text[pos - 1] == "\n"),
    )
    content = text[start : turn.end] if not calls else text[start : max(start, cut - 1)]
    return assistant_message(content, calls, ids)


def _read_call(text: str, pos: int, end: int) -> tuple[tuple[str, dict[str, Any]], int] | None:
    """The call block at ``pos`` (name, arguments) and the offset after it, if it renders back as written.

    A block whose arguments are not as ``tojson`` writes them (arguments given as a differently
    spelled JSON string), or whose name holds the separator, is not a call: it stays content.
    """
    name_start = pos + len(_CALL_HEAD)
    name_end = text.find(_CALL_ARGUMENTS, name_start, end)
    if name_end < 0:
        return None
    got = json_object_as_written(text, name_end + len(_CALL_ARGUMENTS))
    if got is None or not text.startswith(_CALL_TAIL, got[1], end):
        return None
    return (text[name_start:name_end], got[0]), got[1] + len(_CALL_TAIL)


# ---------------------------------------------------------------------------- parse


def _string(token: Token) -> str:
    try:
        value = json_value(str(token))
    except ValueError as exc:
        raise BuildError(f"invalid JSON string: {exc}", token.start_pos) from None
    assert isinstance(value, str)
    return value


#: How a broken block's text is read, in turn: plain JSON, JSON whose objects repeat a key (the
#: last value is kept), JSON with raw control characters in strings.
_READINGS = (
    (PLAIN_JSON_DECODER, "JSON"),
    (JSON_DECODER, "JSON with a repeated key"),
    (LAX_JSON_DECODER, "JSON with raw control characters in strings"),
)
_PYTHON = "a Python literal"
#: A code fence around a whole ``<tool_call>`` block's body.
_BODY_FENCE = re.compile(r"[ \t\r\n]*```[A-Za-z]*[ \t]*\r?\n(.*?)\n[ \t]*```[ \t\r\n]*", re.DOTALL)


def _decode_objects(body: str) -> tuple[list[tuple[int, Any]], str] | None:
    """The JSON (or Python-literal) values ``body`` holds, each with where it starts, and how they
    were read; None if it holds none, or anything else."""
    for decoder, how in _READINGS:
        values: list[tuple[int, Any]] = []
        i, n = 0, len(body)
        try:
            while True:
                while i < n and body[i] in " \t\r\n":
                    i += 1
                if i >= n:
                    break
                start = i
                value, i = decoder.raw_decode(body, i)
                values.append((start, value))
        except (ValueError, RecursionError):
            continue
        if values:
            return (values, how) if all(nesting(v) <= MAX_DEPTH for _, v in values) else None
    try:
        value = python_literal(body)
    except ValueError:
        return None
    lead = len(body) - len(body.lstrip())
    return ([(lead, value)], _PYTHON) if nesting(value) <= MAX_DEPTH else None


def _as_call(obj: Any) -> tuple[str, dict[str, Any], list[str]] | None:
    """(name, arguments, repairs) of a decoded call object, or None if it is not one."""
    if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
        return None
    repairs: list[str] = []
    key = "arguments" if "arguments" in obj else "parameters"
    if key == "parameters" and key in obj:
        repairs.append("'parameters' used for 'arguments'")
    args = obj.get(key, {})
    if isinstance(args, str):
        try:
            args = json_value(args)
        except ValueError:
            try:
                args = python_literal(args)
            except ValueError:
                return None
        repairs.append("arguments given as a string")
    if args is None:
        args = {}
    if not isinstance(args, dict):
        return None
    return obj["name"], args, repairs


_SPACE = re.compile(r"[ \t\r\n]*")
#: Any JSON object or array in a value position, decoded in C when it is complete.
lex_json_container = json_fast_lexer(PLAIN_JSON_DECODER)


def lex_call_json(text: str, pos: int, final: bool) -> tuple[Any, int] | None:
    """Fast path: a complete, ordinary call object at ``pos``, decoded in C.

    Only ``{"name": str, "arguments": {...}}`` with no repeated key and no non-finite number is
    taken; anything else, and an object still arriving (whose name and arguments should stream),
    is left to the grammar's rules.
    """
    if not text.startswith("{", pos):
        return None
    try:
        value, end = PLAIN_JSON_DECODER.raw_decode(text, pos)
    except (ValueError, RecursionError):
        return None
    if not (len(value) == 2 and isinstance(value.get("name"), str) and isinstance(value.get("arguments"), dict)):
        return None
    # Only where the grammar's rules could go on too: what follows must be able to end or
    # continue the block, else the rules (which see the object only with what follows) decide.
    after = _SPACE.match(text, end).end()  # type: ignore[union-attr]
    if text.startswith(_AFTER_OBJECT, after) or _opens_block(text, after) or (final and after == len(text)):
        return value, end
    return None


#: ``<tool_call>`` opens a block only where the line ends after it or a JSON object or list
#: starts (as ``CALL_OPEN`` in the grammar): elsewhere (``the <tool_call> tag``) it is text.
CALL_OPENER = r"<tool_call>(?=[ \t]?(?:\r?\n|[{\[]))"
#: What follows ``<tool_call>`` where it opens a block (the lookahead of ``CALL_OPENER``).
_OPENER_NEXT = tuple(blank + after for blank in ("", " ", "\t") for after in ("\n", "\r\n", "{", "["))


def _opens_block(text: str, pos: int) -> bool:
    """Whether a ``<tool_call>`` that opens a block is at ``pos`` (``CALL_OPENER`` matches there)."""
    return text.startswith(CALL_OPEN, pos) and text.startswith(_OPENER_NEXT, pos + _OPEN_LENGTH)


_OPEN_LENGTH = len(CALL_OPEN)
_AFTER_OBJECT = (CALL_CLOSE, "{", STOP)  # or a block's opener
#: JSON punctuation that no other terminal can extend where it is read (tests check it).
CLOSED_PUNCTUATION = ("LBRACE", "RBRACE", "LBRACK", "RBRACK", "COMMA", "COLON")


def lex_call_block(text: str, pos: int, final: bool) -> tuple[Any, int] | None:
    """Fast path for a whole ``<tool_call> {ordinary object} </tool_call>`` block.

    Decodes to the call object; None for anything else (the grammar's rules take it).
    """
    if not text.startswith(CALL_OPEN, pos) or not text.startswith(_OPENER_NEXT, pos + _OPEN_LENGTH):
        return None  # (what _opens_block says, inline: this runs at every token of the content)
    brace = _SPACE.match(text, pos + len(CALL_OPEN)).end()  # type: ignore[union-attr]
    got = lex_call_json(text, brace, final)
    if got is None:
        return None
    close = _SPACE.match(text, got[1]).end()  # type: ignore[union-attr]
    if not text.startswith(CALL_CLOSE, close):
        return None
    return got[0], close + len(CALL_CLOSE)


class HermesBuilder(LiteralHandlers, Builder):
    """Builds calls from the hermes grammar's reductions and repairs blocks it rejects."""

    def __init__(self, sink: Sink) -> None:
        super().__init__(sink)
        self._call: CallWriter | None = None  # the call object being read
        self._args_seen = 0  # its "arguments" members so far
        self._done_in_block = 0  # call objects completed in the current block
        self._in_list = False  # the current block holds a list of call objects
        #: Unused keys of a list element whose name has not come yet (it may be no call at all).
        self._unused: list[tuple[str, int, str]] = []

    # values
    def string(self, token: Token) -> str:
        return _string(token)

    def number(self, token: Token) -> Any:
        try:
            return json_value(str(token))
        except ValueError as exc:
            raise BuildError(str(exc), token.start_pos) from None

    def container(self, token: ValueToken) -> Any:
        return token.decoded

    def array(self, *children: Any) -> list[Any]:
        return list(children[1:-1:2])  # [ value , value ... ]

    def pair(self, key: Token, colon: Token, value: Any) -> tuple[str, Any, int]:
        return _string(key), value, key.start_pos

    def object(self, *children: Any) -> dict[str, Any]:
        return self.mapping(children[1:-1:2])  # { pair , pair ... }

    # the call object
    def _current(self, pos: int) -> CallWriter:
        if self._call is None:
            self._call = self.sink.call(None, pos)  # its name may come after its arguments
            self._args_seen = 0
        return self._call

    def name_member(self, key: Token, colon: Token, name: Any) -> None:
        call = self._current(key.start_pos)
        if not isinstance(name, str):
            raise BuildError('"name" must be a string', key.start_pos)
        if call.name is not None:
            self.sink.issue("duplicate_key", f'"name" repeated; {call.name!r} is kept', key.start_pos, name)
            return
        call.start(name)
        for message, pos, text in self._unused:
            self.sink.issue("unexpected_key", message, pos, text)
        self._unused.clear()

    def arg(self, key: Token, colon: Token, value: Any) -> None:
        self._current(key.start_pos).argument(_string(key), value, key.start_pos)

    def args_member(self, key: Token, colon: Token, arguments: None) -> None:
        self._args_key(self._current(key.start_pos), key)

    def args_string_member(self, key: Token, colon: Token, string: Token) -> None:
        call = self._current(key.start_pos)
        self._args_key(call, key)
        text = _string(string)
        try:
            args = json_value(text) if text.strip() else {}
        except ValueError:
            try:
                args = python_literal(text)
            except ValueError:
                raise BuildError("arguments string is not an object", string.start_pos) from None
        if not isinstance(args, dict):
            raise BuildError("arguments string is not an object", string.start_pos)
        self.sink.issue("arguments_as_string", "arguments given as a JSON string, decoded", string.start_pos)
        if call.arguments:
            raise BuildError("arguments given twice", string.start_pos)
        for name, value in args.items():
            call.argument(name, value, string.start_pos)

    def _args_key(self, call: CallWriter, key: Token) -> None:
        self._args_seen += 1
        if self._args_seen > 1:
            self.sink.issue("duplicate_key", "arguments given twice; merged", key.start_pos)
        if key.value == '"parameters"':
            self.sink.issue("parameters_key", "'parameters' used for 'arguments'", key.start_pos)

    def other_member(self, key: Token, colon: Token, value: Any) -> None:
        name = _string(key)
        text = json_text({name: value})
        message = f"key {name!r} in a tool call object is not used"
        if self._in_list and (self._call is None or self._call.name is None):
            self._unused.append((message, key.start_pos, text))  # reported if the element is a call
            return
        self.sink.issue("unexpected_key", message, key.start_pos, text)

    def call_object(self, *children: Any) -> None:
        brace = children[0]
        call = self._current(brace.start_pos)
        if call.name is None:
            raise BuildError('tool call object has no "name"', brace.start_pos)
        self._call = None
        self._object_done(brace.start_pos)
        call.end(brace.start_pos)

    def fast_call(self, token: ValueToken) -> None:
        found = token.decoded
        self._object_done(token.start_pos)
        self.sink.whole_call(found["name"], token.start_pos, found["arguments"])

    def fast_block(self, token: ValueToken) -> None:
        found = token.decoded
        brace = token.start_pos + token.index("{")
        self._object_done(brace)
        self.sink.whole_call(found["name"], brace, found["arguments"])
        self._done_in_block = 0

    def _object_done(self, pos: int) -> None:
        """A call object of the current block is complete (a second one is reported, outside a list)."""
        self._done_in_block += 1
        if self._done_in_block == 2 and not self._in_list:
            self.sink.issue("several_objects", "several call objects in one <tool_call> block", pos)

    def list_open(self, bracket: Token) -> None:
        self._in_list = True
        self.sink.issue("call_list", "calls written as one JSON list", bracket.start_pos)

    def call(self, *children: Any) -> None:
        self._done_in_block = 0
        self._in_list = False

    # a block the grammar rejected
    def recover(self, raw: str, pos: int, error: str) -> int | None:
        call, self._call = self._call, None
        skip, self._done_in_block = self._done_in_block, 0
        listed, self._in_list = self._in_list, False
        self._unused.clear()  # an element without a name is reported whole
        body = raw[len(CALL_OPEN) :] if raw.startswith(CALL_OPEN) else raw
        if body.rstrip().endswith(CALL_CLOSE):
            body = body.rstrip()[: -len(CALL_CLOSE)]
        fenced = _BODY_FENCE.fullmatch(body)
        decoded = _decode_objects(body if fenced is None else fenced.group(1))
        if decoded is None:
            return self._cut(call, raw, error, pos)
        values, how = [value for _, value in decoded[0]], decoded[1]
        # A list's elements are its calls: one that is no call is reported, the others kept.
        is_list = len(values) == 1 and isinstance(values[0], list)
        elements = values[0][skip:] if is_list else values[skip:]
        calls = [_as_call(element) for element in elements]
        if not is_list and (not calls or None in calls):
            return self._cut(call, raw, error, pos)
        if is_list and not skip and not any(calls) and (call is None or call.name is None):
            return None
        if is_list and not listed:
            self.sink.issue("call_list", "calls written as one JSON list", pos)
        if fenced:
            self.sink.issue("fenced_call", "the block's JSON written in a code fence", pos)
        # A call the list or the fence was all that kept the grammar from reading needs no other word.
        read_as_is = how == _READINGS[0][1] and (is_list or fenced is not None)
        for i, (element, found) in enumerate(zip(elements, calls, strict=True)):
            writer = call if i == 0 and call is not None and call.name is not None else None
            if writer is not None and (found is None or found[0] != writer.name or not writer.extends(found[1])):
                writer.cut(raw, error, pos)  # what was streamed of it cannot be taken back
                continue
            if found is None:
                text = json_text(element)
                self.sink.issue("invalid_list_element", "an element of a call list that is no call, dropped", pos, text)
                continue
            name, args, repairs = found
            writer = writer or self.sink.call(name, pos)
            if repairs or not read_as_is:
                detail = "; ".join([f"read as {how}", *repairs])
                self.sink.issue("repaired_call", f"tool call {name!r} repaired ({error}): {detail}", pos)
            writer.end(pos, args)
        return len(raw)

    @staticmethod
    def _cut(call: CallWriter | None, raw: str, error: str, pos: int) -> int | None:
        """A block that holds no usable call: the call it started is cut short (None: there is none)."""
        if call is None or call.name is None:
            return None
        call.cut(raw, error, pos)
        return len(raw)


@functools.cache
def reply_syntax() -> Syntax:
    """The reply syntax: the grammar, the builder and how the stream reads them (built once)."""
    return Syntax(
        grammar=compile_grammar("hermes"),
        builder=HermesBuilder,
        text_terminals={"TEXT": CONTENT, "THOUGHT": REASONING},
        blocks={"CALL_OPEN": "CALL_CLOSE"},
        autoclose={"RBRACK": "]", "RBRACE": "}", "CALL_CLOSE": CALL_CLOSE, "THINK_CLOSE": "</think>"},
        autoclose_before=frozenset({"CALL_OPEN", "CALL_CLOSE", "STOP"}),
        resync_after=(CALL_CLOSE,),
        resync_before=(CALL_OPEN, STOP),
        delimiters=(Delimiter('"', '"', "\\"),),
        # JSON punctuation no other terminal can extend: taken as soon as it arrives, not held back.
        closed_terminals=frozenset({"STRING", "CALL_OPEN", "CALL_CLOSE", "STOP", *CLOSED_PUNCTUATION}),
        # Also what free text needs to see past a line break or a '<' to tell it from an opener
        # (CALL_OPEN's lookahead): the grammar's lookaheads fit in it.
        holdback=len(CALL_CLOSE) + 2,
        nest_open=frozenset({"LBRACE", "LBRACK"}),
        nest_close=frozenset({"RBRACE", "RBRACK"}),
        fast_terminals={
            "CALL_BLOCK": lex_call_block,
            "CALL_JSON": lex_call_json,
            "JSON_CONTAINER": lex_json_container,
        },
        reasoning_open="THINK_OPEN",
        preempt_starts=" \t\r\n<",
        prompt_opens_reasoning=lambda prompt: prompt.rstrip().endswith("<think>"),
    )


# ---------------------------------------------------------------------------- export (constrained decoding)


def grammar_calls(builder: GrammarBuilder, tools: list[dict[str, Any]]) -> CallSyntax:
    """Calls as the renderer writes them: ``<tool_call>\\n{"name": "NAME", "arguments": {...}}\\n</tool_call>``.

    The arguments are JSON constrained by the tool's parameters; parallel calls are separate
    blocks, one line apart. Reasoning is a leading ``<think>...</think>`` block.
    """
    values = JsonValues(builder)
    bodies = []
    for tool in tools:
        name = tool_name(tool)
        arguments = values.value(parameters_schema(tool))
        bodies.append(seq(f'\n{{"name": "{name}", "arguments": ', arguments, "}\n" + CALL_CLOSE))
    call = builder.rule("call", alt(*bodies)) if bodies else EMPTY
    return CallSyntax(
        triggers=((CALL_OPEN, call),),
        more=seq("\n", Marker(CALL_OPEN), call),
        text_forbid_markers=(CALL_OPEN, STOP),
        reasoning=Reasoning("<think>", "</think>"),
        stops=(STOP,),
    )


# ---------------------------------------------------------------------------- format


class Hermes(Format):
    """Hermes / Qwen2.5 JSON tool calls (reference: the Tucano2 Portuguese Hermes template)."""

    name = "hermes"
    aliases = ("hermes_json", "qwen2_5", "qwen25")
    summary = 'Hermes/Qwen2.5 JSON calls: <tool_call>\\n{"name": ..., "arguments": {...}}\\n</tool_call>'
    stop_token = STOP
    reference_template = "hermes-json-pt.jinja"
    template_markers = (IM_START, CALL_OPEN, '"arguments"')
    reply_markers = (r"<tool_call>\s*\{",)

    functions = Functions(prompt_text, reply_text, prompt_conversation, reply_syntax, grammar_calls)
