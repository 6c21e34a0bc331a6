"""The ``xml_params`` family: ``<function=NAME>``, a ``<parameter=KEY>`` tag per argument, values typed by schema."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from codec.wire import Family

if TYPE_CHECKING:
    from codec.export import CallSyntax, GrammarBuilder
    from codec.stream import Syntax


class XmlParams(Family):
    name = "xml_params"
    parameters = frozenset(
        {"call", "stop", "reasoning", "name", "arguments", "parameter", "values", "separator", "recover"}
    )

    @property
    def content_style(self) -> str | None:  # type: ignore[override]
        return "qwen_xml" if self.spec.values == "text" else None

    def syntax(self) -> Syntax:
        from codec.formats import qwen3_coder

        return qwen3_coder.reply_syntax()

    def reply_text(self, message: dict[str, Any]) -> str:
        from codec.formats import qwen3_coder, qwen3_coder_official

        module = qwen3_coder_official if self.spec.values == "python_str" else qwen3_coder
        return module.reply_text(message)  # type: ignore[no-any-return]

    def grammar_calls(self, builder: GrammarBuilder, tools: list[dict[str, Any]]) -> CallSyntax:
        from codec.formats import qwen3_coder, qwen3_coder_official

        module = qwen3_coder_official if self.spec.values == "python_str" else qwen3_coder
        return module.grammar_calls(builder, tools)  # type: ignore[no-any-return]

    def reply_markers(self) -> tuple[str, ...]:
        return (r"<function=[^>\s]+>",)


FAMILY = XmlParams
