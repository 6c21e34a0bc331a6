"""The ``invoke`` family's reply builder: calls from the grammar's reductions, values typed by schema.

What the rules of ``grammars/wire/invoke.lark`` read becomes calls here: an invoke head starts a
call, each parameter's value is typed by the tool's schema or by its head's ``string`` attribute
(a string streams as it arrives, another value is sent once its closer is read), drifted closers
and names are reported, a lone ``arguments`` parameter holding every argument is unwrapped, and a
call in another model's bracket form is read whole. The markers are a member's
(:class:`~codec.wire.invoke.Tags`), a class attribute of the builder made for its spec.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from codec._lark import Token
from codec.schema import declared_types, type_text
from codec.sink import CallWriter, Sink
from codec.stream import Builder, BuildError
from codec.wire._xml_params_builder import schema_properties

if TYPE_CHECKING:
    from codec.wire.invoke import Tags

__all__ = ["BRACKET", "VALUE", "InvokeBuilder"]

#: Text kind of the parameter-value terminal: the builder types it, or streams it as a string.
VALUE = "value"
#: Text kind of a bracket call's body: collected, read as JSON once its closer arrives.
BRACKET = "bracket"

#: An attribute of a head: its name and its value, in double quotes, single quotes or none.
_ATTRIBUTE = re.compile(r"""([\w-]+)=(?:"([^"]*)"|'([^']*)'|([^\s"'<>/]+))""")

#: The parameter a model may wrap every argument in.
_WRAPPER = "arguments"


def _tag_pos(token: Token) -> int:
    """Where the tag starts in a token that holds the layout before it."""
    text = str(token)
    return int(token.start_pos) + len(text) - len(text.lstrip(" \t\r\n"))


def _attributes(head: str) -> list[tuple[str, str]]:
    """A head's attributes, in order: (name, value)."""
    return [(m.group(1), next(g for g in m.groups()[1:] if g is not None)) for m in _ATTRIBUTE.finditer(head)]


@dataclass
class _Param:
    """The parameter being read: its key, where it starts, its schema, and how its value is taken."""

    key: str
    pos: int
    schema: Any
    #: Whether its value streams as a string (else its text is collected and typed at its end).
    streams: bool
    #: ``string="true"`` / ``"false"`` where its head says so, else None.
    flag: bool | None
    #: Whether it may be every argument in one (a first ``arguments`` the tool does not declare).
    wrapper: bool
    raw: list[str] = field(default_factory=list)


class InvokeBuilder(Builder):
    """Builds calls from the invoke grammar, typing each value by the tool's schema (or its head's flag).

    A member's builder is a subclass whose :attr:`tags` are its spec's (see ``reply_syntax``)."""

    #: The member's markers.
    tags: ClassVar[Tags]

    def __init__(self, sink: Sink) -> None:
        super().__init__(sink)
        self._call: CallWriter | None = None
        self._param: _Param | None = None
        #: Where the last invoke of the block being read ended (a broken block keeps what follows).
        self._ended = -1
        self._bracket: list[str] = []  # the body of the bracket call being read, as it arrives
        self._bracket_pos = 0
        self._bracket_text = ""  # the body of the bracket call read last

    # ---- heads

    def _head(self, token: Token, stem: str) -> tuple[str, list[tuple[str, str]]]:
        """The name a head gives after ``stem`` and its other attributes (the layout before it left out)."""
        text = str(token).lstrip(" \t\r\n")
        found = _attributes(text[len(stem) - len("name=") :])
        if not found or found[0][0] != "name":
            raise BuildError(f"{text!r} names nothing", _tag_pos(token))
        name = found[0][1].strip()
        if not name:
            raise BuildError(f"{text!r} gives an empty name", _tag_pos(token))
        return name, found[1:]

    def invoke_head(self, token: Token) -> None:
        name, _ = self._head(token, self.tags.invoke_stem)
        self._call = self.sink.call(name, _tag_pos(token))

    def bare_head(self, token: Token) -> None:
        name, _ = self._head(token, self.tags.invoke_stem)
        head = f"{self.tags.invoke}{name}{self.tags.name_end} without {self.tags.call_open}"
        if self.sink.undeclared(name):
            raise BuildError(f"{head} names no declared tool", _tag_pos(token))
        self.sink.issue("bare_function", f"{head} accepted", _tag_pos(token))
        self._call = self.sink.call(name, _tag_pos(token))

    def invoke(self, *children: Any) -> None:
        call, self._call = self._call, None
        assert call is not None
        self._finish(call)
        closer = children[-1]
        self._ended = closer.start_pos + len(str(closer))

    def bare_invoke(self, *children: Any) -> None:
        self.invoke(*children)

    def json_invoke(self, *children: Any) -> None:
        self.invoke(*children)

    def bare_json_invoke(self, *children: Any) -> None:
        self.invoke(*children)

    def json_body(self, *children: Any) -> None:
        """The arguments written as one JSON object for the invoke's body: each argument read from
        it, reported (reduced before the invoke's closer is read, so that a body that is no JSON
        object refuses the call)."""
        param, call = self._param, self._call
        assert param is not None and call is not None
        self._param = None
        raw = "{" + "".join(param.raw)
        try:
            arguments = json.loads(raw)
        except (ValueError, RecursionError):
            raise BuildError(f"{raw.strip()[:40]!r} is no JSON object of arguments", param.pos) from None
        if not isinstance(arguments, dict):
            raise BuildError(f"{raw.strip()[:40]!r} is no JSON object of arguments", param.pos)
        message = "the arguments written as one JSON object for the invoke's body, not as parameters: read"
        call.issue("json_arguments", message, param.pos)
        for key, value in arguments.items():
            call.argument(str(key), value, param.pos)

    def json_open(self, token: Token) -> None:
        """The brace of a JSON body: its text is collected (as a value the schema types is)."""
        self._param = _Param("", _tag_pos(token), None, streams=False, flag=None, wrapper=False)

    def invoke_self(self, token: Token) -> None:
        name, _ = self._head(token, self.tags.invoke_stem)
        call = self.sink.call(name, _tag_pos(token))
        call.end()
        self._ended = token.start_pos + len(str(token))

    def call(self, *children: Token) -> None:
        self._ended = -1

    def stray_close(self, token: Token) -> None:
        """A reasoning closer the reply starts with: the end of an empty think block, as templates
        write a turn that does not think (``</think>`` alone), so nothing to report."""

    # ---- parameters

    def param_head(self, token: Token) -> None:
        call = self._call
        assert call is not None
        key, attributes = self._head(token, self.tags.parameter_stem)
        flags = [value.lower() for name, value in attributes if name == "string"]
        flag = flags[0] == "true" if flags and flags[0].lower() in ("true", "false") else None
        properties = schema_properties(self.sink.tool_schema(call.name or ""))
        schema = properties.get(key) if properties is not None else None
        wrapper = key == _WRAPPER and not call.arguments and (properties is None or _WRAPPER not in properties)
        if wrapper:
            streams = False  # perhaps every argument in one: decided at its end
        elif flag is not None:
            streams = flag
        else:
            types = declared_types(schema)
            streams = not types or types == ["string"]
        pos = _tag_pos(token)
        self._param = _Param(key, pos, schema, streams, flag, wrapper)
        if streams:
            call.string_start(key, pos)

    def on_text(self, kind: str, text: str, pos: int) -> None:
        if kind == BRACKET:
            if not self._bracket:
                self._bracket_pos = pos
            self._bracket.append(text)
            return
        if kind != VALUE:
            super().on_text(kind, text, pos)
            return
        param, call = self._param, self._call
        assert param is not None and call is not None
        if param.streams:
            call.string_more(text)
        else:
            param.raw.append(text)

    def param(self, *children: Any) -> None:
        closer = children[-1]
        param, call = self._param, self._call
        assert param is not None and call is not None
        self._param = None
        spelled, proper = str(closer), self.tags.parameter_close
        if closer.type == "PARAM_CLOSE_DRIFT":
            self.sink.issue("parameter_closer_suffix", f"{spelled!r} read as {proper!r}", closer.start_pos, spelled)
        elif closer.type == "PARAM_CLOSE_UNTERMINATED":
            message = f"{spelled!r} without '>' read as {proper!r}"
            self.sink.issue("parameter_closer_unterminated", message, closer.start_pos)
        if param.streams:
            call.string_end()
            return
        raw = "".join(param.raw)
        if param.wrapper and self._unwrapped(call, param, raw):
            return
        value = raw if param.flag is True else self._typed(param, raw)
        call.argument(param.key, value, param.pos)

    def _typed(self, param: _Param, raw: str) -> Any:
        """A collected value: JSON where its head says it is not a string, else typed by its schema."""
        if param.flag is False:
            try:
                return json.loads(raw)
            except (ValueError, RecursionError):
                pass
        value, problem = type_text(raw, param.schema)
        if value is None and problem is not None:
            self.sink.issue("null_value", f"parameter {param.key!r}: {problem}", param.pos)
        return value

    def _unwrapped(self, call: CallWriter, param: _Param, raw: str) -> bool:
        """A first parameter ``arguments`` the tool does not declare, holding a JSON object: every
        argument of the call in one, taken apart (reported)."""
        try:
            arguments = json.loads(raw)
        except (ValueError, RecursionError):
            return False
        if not isinstance(arguments, dict) or not arguments:
            return False
        message = f"every argument given as one {_WRAPPER!r} parameter, a JSON object: read as the arguments"
        call.issue("arguments_as_string", message, param.pos)
        for key, value in arguments.items():
            call.argument(str(key), value, param.pos)
        return True

    def _finish(self, call: CallWriter) -> None:
        call.end()

    # ---- another model's form

    def bracket_body(self, *children: Any) -> tuple[str, dict[str, Any]]:
        """A bracket call's JSON object: its name and arguments (reduced before its closer is read,
        so that a body that is none refuses the block)."""
        body, pos = "".join(self._bracket), self._bracket_pos  # (kept until read: a refusal is made again)
        try:
            found = json.loads(body)
        except (ValueError, RecursionError):
            raise BuildError(f"{body.strip()[:40]!r} is no JSON call object", pos) from None
        name = found.get("tool", found.get("name")) if isinstance(found, dict) else None
        arguments = found.get("args", found.get("arguments", {})) if isinstance(found, dict) else None
        if not isinstance(name, str) or not name or not isinstance(arguments, dict):
            raise BuildError("a bracket call object needs a 'tool' name and 'args'", pos)
        self._bracket_text, self._bracket = body, []
        return name, arguments

    def bracket(self, opener: Token, body: tuple[str, dict[str, Any]], closer: Token) -> None:
        name, arguments = body
        message = f"call {name!r} in another model's {opener!s} form, read"
        written = f"{opener!s}{self._bracket_text}{closer!s}"
        self.sink.issue("foreign_tag", message, opener.start_pos, written)
        self.sink.whole_call(name, opener.start_pos, arguments)

    # ---- recovery

    def recover(self, raw: str, pos: int, error: str) -> int | None:
        call, ended = self._call, self._ended
        self._call, self._param, self._ended, self._bracket = None, None, -1, []
        if call is not None:
            call.cut(raw, error, pos)  # a string value being read keeps what was already sent of it
            return len(raw)
        if ended > pos:  # invokes read whole before the block broke: the rest is text
            self.sink.keep_as_content(raw[ended - pos :], ended, error)
            return len(raw)
        return None
