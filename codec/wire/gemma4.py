"""The ``gemma4`` family: ``call:NAME{key:value,...}`` between call tokens, strings between a quote token."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from codec.wire import Family

if TYPE_CHECKING:
    from codec.export import CallSyntax, GrammarBuilder
    from codec.stream import Syntax


class Gemma4Calls(Family):
    name = "gemma4"
    parameters = frozenset({"call", "stop", "reasoning", "arguments", "values", "quote", "special_tokens", "recover"})

    def syntax(self) -> Syntax:
        from codec.formats import gemma4

        return gemma4.reply_syntax()

    def reply_text(self, message: dict[str, Any]) -> str:
        from codec.formats import gemma4

        return gemma4.reply_text(message)

    def grammar_calls(self, builder: GrammarBuilder, tools: list[dict[str, Any]]) -> CallSyntax:
        from codec.formats import gemma4

        return gemma4.grammar_calls(builder, tools)

    def reply_markers(self) -> tuple[str, ...]:
        return (r"<\|tool_call>", r"(?:\A|\n|<channel\|>)call:[\w.-]+[{(]")


FAMILY = Gemma4Calls
