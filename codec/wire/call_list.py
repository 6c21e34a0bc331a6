"""The ``call_list`` family: Python-style call lists (``[f(a=1), g()]``), bare, fenced or between tokens."""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING, Any

from codec.wire import Family

if TYPE_CHECKING:
    from codec.export import CallSyntax, GrammarBuilder
    from codec.stream import Syntax


class CallList(Family):
    name = "call_list"
    parameters = frozenset(
        {"block", "stop", "reasoning", "arguments", "values", "separator", "argument_separator", "recover"}
    )

    def _module(self) -> ModuleType:
        from codec.formats import deepseek_pythonic, gemma3_tool_code

        return gemma3_tool_code if self.spec.block[0] else deepseek_pythonic

    def syntax(self) -> Syntax:
        return self._module().reply_syntax()  # type: ignore[no-any-return]

    def reply_text(self, message: dict[str, Any]) -> str:
        return self._module().reply_text(message)  # type: ignore[no-any-return]

    def grammar_calls(self, builder: GrammarBuilder, tools: list[dict[str, Any]]) -> CallSyntax:
        return self._module().grammar_calls(builder, tools)  # type: ignore[no-any-return]

    def reply_markers(self) -> tuple[str, ...]:
        return (r"```tool_code",) if self.spec.block[0] else (r"\)\]<\|end_of_sentence\|>",)


FAMILY = CallList
