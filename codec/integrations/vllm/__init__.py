"""codec's parsers as vLLM tool and reasoning parsers, registered by name.

vLLM calls :func:`register` when it loads its ``vllm.general_plugins`` entry points (codec's
``pyproject.toml`` declares it), so that after ``pip install ".[vllm]"`` (from a checkout) a server takes
``--tool-call-parser codec_<format>`` and ``--reasoning-parser codec_<format>`` without
``--tool-parser-plugin``. This module is cheap to import and imports vLLM only inside
:func:`register`; the parser classes live in :mod:`codec.integrations.vllm.parsers`, which
imports vLLM and is loaded on first use of a parser.
"""

from __future__ import annotations

from codec.formats import formats

__all__ = ["PARSERS_MODULE", "parser_name", "reasoning_class_name", "register", "tool_class_name"]

#: The module that defines the parser classes (it imports vLLM).
PARSERS_MODULE = "codec.integrations.vllm.parsers"

#: The formats whose replies have a reasoning block (or, in the harmony family, reasoning messages),
#: which get a reasoning parser of their own.
#: Kept here, not derived, so that registering stays cheap; the tests check it against the formats.
REASONING_FORMATS = frozenset(
    {"hermes", "qwen3", "hermes3", "qwen3_coder", "qwen3_coder_official", "gemma4", "deepseek_pythonic"}
    | {"qwen2_5", "qwq", "gemma4_31b", "gemma4_31b_interleaved", "lfm2"}
    | {"glm4_6", "glm4_7"}
    | {"nemotron3", "seed_oss"}
    | {"minimax_m2", "deepseek_v3_2"}
    | {"deepseek_v3_1", "kimi_k2", "ministral3"}
    | {"qwen3_5"}
    | {"gpt_oss"}
)


def parser_name(format_name: str) -> str:
    """The name vLLM knows ``format_name``'s parsers by: ``codec_<format>``."""
    return f"codec_{format_name}"


def _camel(format_name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in format_name.split("_"))


def tool_class_name(format_name: str) -> str:
    """The name of ``format_name``'s tool parser class in :data:`PARSERS_MODULE`."""
    return f"Codec{_camel(format_name)}ToolParser"


def reasoning_class_name(format_name: str) -> str:
    """The name of ``format_name``'s reasoning parser class in :data:`PARSERS_MODULE`."""
    return f"Codec{_camel(format_name)}ReasoningParser"


def register() -> None:
    """Registration of a tool parser per format, and a reasoning parser per format with reasoning,
    with vLLM's parser managers: lazily, so the classes are imported when a server first asks for one.

    Safe to call more than once (vLLM may load plugins in several processes, or twice in one).
    """
    from vllm.reasoning import ReasoningParserManager
    from vllm.tool_parsers import ToolParserManager

    for name in formats():
        ToolParserManager.register_lazy_module(parser_name(name), PARSERS_MODULE, tool_class_name(name))
        if name in REASONING_FORMATS:
            ReasoningParserManager.register_lazy_module(parser_name(name), PARSERS_MODULE, reasoning_class_name(name))
