"""The wire kit: a format's reply side as an instance of a shared syntax family.

A reply syntax is described by a :class:`WireSpec`, plain data a person can read (and a program
can write): which family it belongs to, its markers, how a call's name and arguments are written,
how values are encoded, what separates parallel calls, its reasoning markers and stop token. A
family module (``codec/wire/<family>.py``) compiles a spec into everything the reply side needs:
the lark grammar and its builder (streaming with argument deltas, recovery, issue kinds), the
whole-reply reader, the reply renderer, the constrained-decoding calls and the detection
markers. A format module then keeps its spec, its prompt renderer and its prompt decoder.

Words used here:

family
    A shape of reply syntax shared by several formats (``json_object``, ``xml_params``...): one
    module, one grammar template, one builder.
member
    A format whose replies are one family's, set apart by its spec's parameters.
spec
    A :class:`WireSpec`: the family's name and the member's parameters (the fields the family
    reads; the rest keep their defaults, which :meth:`Family.check` verifies).
kit
    What a family compiles a spec into (a :class:`Family` instance), shared by every format with
    the same spec: :func:`compile_spec` builds it once per spec and process.
"""

from __future__ import annotations

import functools
import importlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, ClassVar

from codec._lark import CompiledGrammar, load_grammar_text
from codec.errors import RenderError, parse_error_at

if TYPE_CHECKING:
    from codec.export import CallSyntax, GrammarBuilder
    from codec.format import Format
    from codec.models import Conversation
    from codec.stream import Syntax

__all__ = [
    "FAMILIES",
    "Family",
    "WireSpec",
    "compile_spec",
    "family_grammar",
    "lark_literal",
    "regex_literal",
    "reply_format",
]

#: The families, by name, and the module (``codec.wire.<module>``) that defines each.
FAMILIES: dict[str, str] = {
    "json_object": "json_object",
    "xml_params": "xml_params",
    "call_list": "call_list",
    "gemma4": "gemma4",
    "arg_pairs": "arg_pairs",
    "named_json": "named_json",
    "invoke": "invoke",
    "harmony": "harmony",
}


@dataclass(frozen=True)
class WireSpec:
    """A reply syntax as data: the family it belongs to and the parameters of one member.

    Every field is plain data (strings, tuples, booleans), so that a spec prints as JSON
    (:meth:`to_json`), reads back (:meth:`from_json`) and can be written by a program. A family
    reads the fields it names in :attr:`Family.parameters`; a member that sets any other field
    is refused when it is compiled, not silently ignored.
    """

    #: The family's name, a key of :data:`FAMILIES`.
    family: str
    #: What opens and closes each call (``<tool_call>``, ``</tool_call>``); empty where calls are bare.
    call: tuple[str, str] = ("", "")
    #: What opens and closes the calls of a turn as a whole (a code fence, ``[TOOL_CALLS]``); empty for none.
    block: tuple[str, str] = ("", "")
    #: What the model writes to end its turn.
    stop: str = ""
    #: What opens and closes reasoning (``<think>``, ``</think>``), or None where replies have none.
    reasoning: tuple[str, str] | None = None
    #: What stands before and after a call's name (``<function=`` and ``>``; for a JSON object, the key).
    name: tuple[str, str] = ("", "")
    #: Where calls write an id between their name and their arguments: what stands before it
    #: (``[CALL_ID]``, ``:``) and the call's id made of what is written, a template of ``{name}``
    #: and ``{id}`` (``functions.{name}:{id}``); empty where calls write none.
    call_id: tuple[str, str] = ("", "")
    #: How a call's arguments are written: ``"json"`` (one JSON object), ``"tagged"`` (a tag per
    #: argument, its value text up to the closing tag), ``"python"`` (Python keyword arguments),
    #: ``"quoted"`` (``key:value`` pairs, strings between a quote token).
    arguments: str = "json"
    #: The keys a JSON call object may give its arguments under, the first the canonical one.
    arguments_keys: tuple[str, ...] = ()
    #: The key a JSON call object writes the call's id under, after its arguments (Mistral's
    #: ``"id"``); empty where call objects write none.
    id_key: str = ""
    #: An argument's tags: what opens its key, what ends the key, what closes its value.
    parameter: tuple[str, str, str] = ("", "", "")
    #: How argument values are written: ``"json"``; ``"json_raw"`` (JSON, but strings between ``"``
    #: with nothing escaped); ``"text"`` (raw, typed by the tool's schema);
    #: ``"python_str"`` (Python's ``str()`` of the value, typed by the schema); ``"python_scalars"``
    #: (a mapping or a list as JSON, any other non-string through ``str()``); ``"python"``
    #: (Python literals); ``"quoted"`` (the family's own, strings between :attr:`quote`).
    values: str = "json"
    #: The token that opens and closes a string value where the family writes strings between one.
    quote: str = ""
    #: What the reply renderer writes between two calls.
    separator: str = ""
    #: What the reply renderer writes between two arguments.
    argument_separator: str = ""
    #: What the reply renderer writes between an argument's key and its value where that differs from
    #: :attr:`argument_separator` (arg_pairs: GLM-4.5's ``</arg_key>\n<arg_value>`` after no line
    #: break before ``<arg_key>``); None where it is the same.
    value_separator: str | None = None
    #: Whether a call list is written between ``[`` and ``]`` (call_list); False: its calls one after
    #: another in the block, :attr:`separator` apart (MiniCPM3's one call a line in a fence).
    brackets: bool = True
    #: Whether an argument's value is written on lines of its own: a line break after its key's tag
    #: and another before its closer (Qwen3-Coder's ``<parameter=k>\nv\n</parameter>``), else inline.
    value_lines: bool = False
    #: The tokens of a message's header where a family writes one (harmony: the channel, constrain
    #: and message tokens), then the role name of the assistant's messages.
    header: tuple[str, ...] = ()
    #: The channels a family's messages go to, by purpose: reasoning, calls (and preambles), content.
    channels: tuple[str, ...] = ()
    #: Markers a tokenizer holds as special tokens (written as tokens in llguidance grammars).
    special_tokens: tuple[str, ...] = ()
    #: The deviations the parser recovers, by name (see each family's ``RECOVERIES``).
    recover: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The spec as JSON data: every field, tuples as lists."""
        return {f.name: _jsonable(getattr(self, f.name)) for f in fields(self)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> WireSpec:
        """The spec :meth:`to_json` printed (lists back to tuples); unknown keys are a ValueError."""
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise ValueError(f"not fields of a WireSpec: {', '.join(unknown)}")
        return cls(**{key: _tupled(value) for key, value in data.items()})

    def differences(self) -> list[str]:
        """The fields set to other than their defaults (``family`` excluded)."""
        default = WireSpec(self.family)
        return [f.name for f in fields(self)[1:] if getattr(self, f.name) != getattr(default, f.name)]


def _jsonable(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_jsonable(item) for item in value]
    return value


def _tupled(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_tupled(item) for item in value)
    return value


class Family:
    """What a family compiles a :class:`WireSpec` into: the reply side of every member with that spec.

    A family module defines one subclass (``name``, ``parameters``) and implements its methods
    from the spec alone: what sets members apart is in their specs, not in code of theirs.
    """

    #: The family's name, as in :data:`FAMILIES` and :attr:`WireSpec.family`.
    name: ClassVar[str]
    #: The :class:`WireSpec` fields members of this family may set.
    parameters: ClassVar[frozenset[str]]
    #: How xgrammar's structural tag writes this family's arguments itself (``"json"``,
    #: ``"qwen_xml"``), or None: codec's own grammar of the calls then.
    content_style: ClassVar[str | None] = None

    def __init__(self, spec: WireSpec) -> None:
        self.check(spec)
        self.spec = spec

    @classmethod
    def check(cls, spec: WireSpec) -> None:
        """Refuse a spec of another family, or one that sets fields this family does not read."""
        if spec.family != cls.name:
            raise ValueError(f"a {spec.family!r} spec given to the {cls.name!r} family")
        foreign = [name for name in spec.differences() if name not in cls.parameters]
        if foreign:
            unread = ", ".join(foreign)
            raise ValueError(f"the {cls.name!r} family does not read {unread}: leave them at their defaults")

    def syntax(self) -> Syntax:
        """The reply's grammar, builder and how the stream reads them (built once per kit)."""
        raise NotImplementedError

    def reply_text(self, message: dict[str, Any]) -> str:
        """What the model writes for an assistant message (prepared plain data), stop token included."""
        raise NotImplementedError

    def grammar_calls(self, builder: GrammarBuilder, tools: list[dict[str, Any]]) -> CallSyntax:
        """The calls to ``tools`` in a constrained-decoding grammar."""
        raise NotImplementedError

    def reply_markers(self) -> tuple[str, ...]:
        """Regular expressions that match only where a reply writes a call in this syntax (for detection)."""
        raise NotImplementedError

    def reply_ids(self, message: dict[str, Any]) -> list[str] | None:
        """The ids the calls of the reply :meth:`reply_text` writes for ``message`` parse with, where
        the syntax writes ids (they are then the calls' ids); None where it writes none (a parse's
        ``call_id`` makes them)."""
        return None

    def schema_tag(self, name: str) -> tuple[str, str] | None:
        """What comes before and after the arguments of a call of tool ``name`` in xgrammar's
        structural tag, where xgrammar writes the arguments itself (:attr:`content_style`), or
        None where it does not (codec's grammar of the calls is the tag's content then)."""
        return None

    def __repr__(self) -> str:
        return f"<codec wire family {self.name!r}: {self.spec}>"


@functools.cache
def family_class(name: str) -> type[Family]:
    """The :class:`Family` subclass of the family called ``name``."""
    try:
        module = FAMILIES[name]
    except KeyError:
        raise ValueError(f"no wire family {name!r}; the families are {', '.join(sorted(FAMILIES))}") from None
    found: type[Family] = importlib.import_module(f"codec.wire.{module}").FAMILY
    return found


_KITS: dict[WireSpec, Family] = {}


def compile_spec(spec: WireSpec) -> Family:
    """The kit of ``spec``: its family's compiled reply side, built once per spec."""
    kit = _KITS.get(spec)
    if kit is None:
        kit = _KITS.setdefault(spec, family_class(spec.family)(spec))
    return kit


# ---------------------------------------------------------------------------- grammar templates

_PLACEHOLDER = re.compile(r"@([A-Z_][A-Z0-9_]*)@")


def lark_literal(text: str) -> str:
    """``text`` as a lark string literal (``"<tool_call>"``)."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    return f'"{escaped}"'


#: Characters spelled otherwise inside a lark ``/.../`` terminal than ``re.escape`` spells them (it
#: writes a backslash before a raw line break, which lark's regexp loader does not take as one).
_REGEX_CHARS = {"\n": "\\n", "\t": "\\t", "\r": "\\r", "/": "\\/"}


def regex_literal(text: str) -> str:
    """``text`` as regex source matching exactly it, to go inside a lark ``/.../`` terminal."""
    return "".join(_REGEX_CHARS.get(char) or re.escape(char) for char in text)


@functools.cache
def _grammar(text: str) -> CompiledGrammar:
    return CompiledGrammar(text, cache=True)


def family_grammar(template: str, values: tuple[tuple[str, str], ...]) -> CompiledGrammar:
    """The grammar ``grammars/<template>.lark`` with each ``@NAME@`` replaced by its value in ``values``,
    compiled once per process and text (its LALR tables kept in the cache folder).

    A placeholder without a value, or a value no placeholder takes, is a ValueError: a family's
    grammar and its builder must agree on what a spec fills in."""
    text = load_grammar_text(template)
    given = dict(values)
    wanted = set(_PLACEHOLDER.findall(text))
    if wanted != set(given):
        missing, unused = sorted(wanted - set(given)), sorted(set(given) - wanted)
        raise ValueError(f"grammar {template}: placeholders without a value {missing}, values without one {unused}")
    return _grammar(_PLACEHOLDER.sub(lambda m: given[m.group(1)], text))


# ---------------------------------------------------------------------------- formats of a spec


def reply_format(spec: WireSpec, name: str) -> Format:
    """A format whose replies are ``spec``'s and which has no prompt template of its own.

    It parses, streams, renders replies (the family's renderer) and exports grammars as any
    format does; :meth:`~codec.format.Format.render` needs ``template=`` (the chat template to
    render), and :meth:`~codec.format.Format.decode` raises :class:`~codec.errors.ParseError`, since
    there is no renderer to invert."""
    from codec.format import Format, Functions

    def prompt_text(*_: Any) -> str:
        raise RenderError(f"{name} has no prompt template of its own: give render() a template=")

    def prompt_conversation(prompt: str) -> Conversation:
        raise parse_error_at(prompt, 0, f"{name} has no prompt template of its own, so no prompt to decode")

    attributes = {
        "name": name,
        "summary": f"replies of the {spec.family} family",
        "stop_token": spec.stop,
        "functions": Functions(prompt_text, prompt_conversation),
        "wire": spec,
        "__doc__": f"Replies as {spec} writes them; no prompt template.",
    }
    cls = type(f"ReplyFormat_{name}", (Format,), attributes)
    made: Format = cls()
    return made
