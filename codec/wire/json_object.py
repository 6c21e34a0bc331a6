"""The ``json_object`` family: each call a JSON object (name and arguments) between call markers."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from codec.wire import Family

if TYPE_CHECKING:
    from codec.export import CallSyntax, GrammarBuilder
    from codec.stream import Syntax


class JsonObject(Family):
    name = "json_object"
    parameters = frozenset({"call", "stop", "reasoning", "name", "arguments_keys", "separator", "recover"})
    content_style = "json"

    def syntax(self) -> Syntax:
        from codec.formats import hermes

        return hermes.reply_syntax()

    def reply_text(self, message: dict[str, Any]) -> str:
        from codec.formats import hermes

        return hermes.reply_text(message)

    def grammar_calls(self, builder: GrammarBuilder, tools: list[dict[str, Any]]) -> CallSyntax:
        from codec.formats import hermes

        return hermes.grammar_calls(builder, tools)

    def reply_markers(self) -> tuple[str, ...]:
        return (r"<tool_call>\s*\{",)


FAMILY = JsonObject
