"""codec's parsers as vLLM tool and reasoning parsers, registered by name.

vLLM calls :func:`register` when it loads its ``vllm.general_plugins`` entry points (codec's
``pyproject.toml`` declares it), so that after ``pip install ".[vllm]"`` (from a checkout) a server takes
``--tool-call-parser codec_<format>`` and ``--reasoning-parser codec_<format>`` without
``--tool-parser-plugin``. ``codec_derived`` is the format :func:`codec.derive` makes of the chat
template (or ``tokenizer_config.json``) at the path in the environment variable
``CODEC_DERIVE_TEMPLATE`` (:func:`derived_format`), for a model no format is written for.
This module is cheap to import and imports vLLM only inside
:func:`register`; the parser classes live in :mod:`codec.integrations.vllm.parsers`, which
imports vLLM and is loaded on first use of a parser.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import TYPE_CHECKING

from codec.errors import CodecError
from codec.formats import formats, get_format

if TYPE_CHECKING:
    from codec.format import Format

__all__ = [
    "DERIVED",
    "PARSERS_MODULE",
    "TEMPLATE_VARIABLE",
    "derived_format",
    "parser_format",
    "parser_name",
    "reasoning_class_name",
    "register",
    "tool_class_name",
]

#: The format name of the parsers of a derived format (``codec_derived``).
DERIVED = "derived"
#: The environment variable that holds the path of the chat template ``codec_derived`` derives.
TEMPLATE_VARIABLE = "CODEC_DERIVE_TEMPLATE"

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


@functools.cache
def derived_format() -> Format:
    """The format :func:`codec.derive.derive_source` makes of the file at ``$CODEC_DERIVE_TEMPLATE``
    (a chat template, or a ``tokenizer_config.json``), once per process; a
    :class:`~codec.errors.CodecError` where the variable is unset or the file unreadable, and the
    :class:`~codec.derive.DeriveError` that says why where the template is refused."""
    from codec.derive import derive_source

    path = os.environ.get(TEMPLATE_VARIABLE)
    if not path:
        raise CodecError(f"codec_derived needs {TEMPLATE_VARIABLE}: the path of the model's chat template")
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise CodecError(f"{TEMPLATE_VARIABLE}={path}: {exc.strerror or exc}") from exc
    return derive_source(text)


def parser_format(format_name: str) -> Format:
    """The format a parser of ``format_name`` reads: the registered one, or for :data:`DERIVED`
    the derived one (:func:`derived_format`)."""
    return derived_format() if format_name == DERIVED else get_format(format_name)


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
    # A derived format's parsers: its template is read (and derived) when a server first builds one.
    ToolParserManager.register_lazy_module(parser_name(DERIVED), PARSERS_MODULE, tool_class_name(DERIVED))
    ReasoningParserManager.register_lazy_module(parser_name(DERIVED), PARSERS_MODULE, reasoning_class_name(DERIVED))
