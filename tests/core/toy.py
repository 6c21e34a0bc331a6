"""A toy reply format for testing the streaming core without any real format's grammar.

A reply is free text with calls ``<<name key=value ...>>`` in it and ``$`` as its stop token;
values are numbers, ``"strings"`` (streamed as they arrive) and ``[lists]`` (of values and
whole ``"string"`` tokens). A reply may open with ``<think>...</think>`` reasoning. It uses every part
of :class:`codec.stream.Syntax` the real formats use: a block with an opener and a closer,
autoclose, resync markers, a delimited token the stream watches, closed terminals, nesting with a
depth limit, a fast lexer, and a builder's recovery.
"""

from __future__ import annotations

import re
from typing import Any

from codec._lark import CompiledGrammar, Token, ValueToken
from codec.sink import CONTENT, REASONING, CallWriter, Sink
from codec.stream import Builder, BuildError, Stream, Syntax
from codec.watch import Delimiter

GRAMMAR = r"""
start: reasoning? items?
reasoning: THINK_OPEN thoughts? THINK_CLOSE
thoughts: thoughts THOUGHT | THOUGHT
items: items _item | _item
_item: text | call | stop

text: TEXT
stop: STOP
call: OPEN name args? CLOSE
    | FAST_CALL                         -> fast_call
%declare FAST_CALL
name: NAME
args: args arg | arg
arg: key EQ value
   | key EQ string_open chars? QUOTE    -> string_arg
key: NAME
string_open: QUOTE
chars: chars CHARS | CHARS

?value: NUMBER                          -> number
      | list
// A list item may be a whole string token: a delimited token the stream watches while it arrives.
list: LBRACK (item (COMMA item)*)? RBRACK
?item: value
     | STRING                           -> string

TEXT.2: /(?:[^<$]+|<(?!<))+/
THOUGHT.2: /(?:[^<]+|<(?!\/think>))+/
THINK_OPEN.3: "<think>"
THINK_CLOSE: "</think>"
CHARS.2: /[^"]+/
STOP: "$"
OPEN: "<<"
CLOSE: ">>"
NAME: /[a-z_]+/
EQ: "="
NUMBER: /[0-9]+/
QUOTE: "\""
STRING: /"[^"]*"/
LBRACK: "["
RBRACK: "]"
COMMA: ","
WS: /[ \t\n]+/
%ignore WS
"""

#: Kind of a string argument's characters: the builder streams them to the call's writer.
CHARS = "chars"
#: A whole call of numbers only, ``<<name a=1 b=2>>``: what the fast lexer takes.
_FAST = re.compile(r"<<([a-z_]+)((?: [a-z_]+=[0-9]+)*)>>")


def lex_fast_call(text: str, pos: int, final: bool) -> tuple[Any, int] | None:
    """A whole call with number arguments only, decoded in one step (None for anything else)."""
    m = _FAST.match(text, pos)
    if m is None or m.group(1) == "bad":  # the rules refuse that name: so must the fast path
        return None
    pairs = [pair.split("=") for pair in m.group(2).split()]
    args = {key: int(value) for key, value in pairs}
    if len(args) != len(pairs):
        return None  # a repeated key: the rules report it
    return (m.group(1), args), m.end()


class ToyBuilder(Builder):
    """Calls from the toy grammar; a call named ``bad`` is refused by the builder (a semantic error)."""

    def __init__(self, sink: Sink) -> None:
        super().__init__(sink)
        self._call: CallWriter | None = None
        self._key = ""  # the last key read

    def name(self, token: Token) -> None:
        if str(token) == "bad":
            raise BuildError("no call may be named 'bad'", token.start_pos)
        self._call = self.sink.call(str(token), token.start_pos)

    def key(self, token: Token) -> Token:
        self._key = str(token)
        return token

    def arg(self, key: Token, equals: Token, value: Any) -> None:
        assert self._call is not None
        self._call.argument(str(key), value, key.start_pos)

    def string_open(self, quote: Token) -> None:
        assert self._call is not None
        self._call.string_start(self._key, quote.start_pos)

    def string_arg(self, key: Token, equals: Token, *rest: Any) -> None:
        assert self._call is not None
        self._call.string_end()

    def on_text(self, kind: str, text: str, pos: int) -> None:
        if kind == CHARS:
            assert self._call is not None
            self._call.string_more(text)
        else:
            super().on_text(kind, text, pos)

    def number(self, token: Token) -> int:
        return int(token)

    def string(self, token: Token) -> str:
        return str(token)[1:-1]

    def list(self, *children: Any) -> list[Any]:
        return list(children[1:-1:2])

    def call(self, *children: Any) -> None:
        call, self._call = self._call, None
        assert call is not None
        call.end()

    def fast_call(self, token: ValueToken) -> None:
        name, args = token.decoded
        self.sink.whole_call(name, token.start_pos, args)

    def recover(self, raw: str, pos: int, error: str) -> int | None:
        call, self._call = self._call, None
        if call is None:
            return None
        call.cut(raw, error, pos)
        return len(raw)


#: What makes the toy read, without a prompt, whether the prompt opened reasoning (a short lookahead).
REASONING_LOOKAHEAD: dict[str, Any] = {
    "reasoning_close": "</think>",
    "reasoning_not_opened": ("<think>", "<<", "$"),
    "reasoning_lookahead": 64,
}


def syntax(**changes: Any) -> Syntax:
    """The toy syntax (``changes`` replace its fields)."""
    fields: dict[str, Any] = {
        "grammar": _grammar(),
        "builder": ToyBuilder,
        "text_terminals": {"TEXT": CONTENT, "CHARS": CHARS, "THOUGHT": REASONING},
        "blocks": {"OPEN": "CLOSE"},
        "autoclose": {"RBRACK": "]", "CLOSE": ">>", "THINK_CLOSE": "</think>"},
        "autoclose_before": frozenset({"OPEN", "STOP"}),
        "resync_after": (">>",),
        "resync_before": ("<<", "$"),
        "delimiters": (Delimiter('"', '"'),),
        "closed_terminals": frozenset({"CLOSE", "STOP", "QUOTE", "STRING"}),
        "holdback": 4,
        "marker_starts": "<$",
        "nest_open": frozenset({"LBRACK"}),
        "nest_close": frozenset({"RBRACK"}),
        "max_depth": 5,
        "fast_terminals": {"FAST_CALL": lex_fast_call},
        "reasoning_open": "THINK_OPEN",
        "prompt_opens_reasoning": lambda prompt: prompt.endswith("<think>"),
        "preempt_starts": "<",
    }
    fields.update(changes)
    return Syntax(**fields)


_COMPILED: list[CompiledGrammar] = []


def _grammar() -> CompiledGrammar:
    if not _COMPILED:
        _COMPILED.append(CompiledGrammar(GRAMMAR))
    return _COMPILED[0]


def stream(**kwargs: Any) -> Stream:
    """A stream of the toy syntax."""
    return Stream(syntax(), **kwargs)
