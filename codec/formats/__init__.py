"""The registry of built-in formats: one module per format, listed here once."""

from __future__ import annotations

from codec.errors import UnknownFormat
from codec.format import Format
from codec.formats.deepseek_pythonic import DeepseekPythonic
from codec.formats.gemma3_tool_code import Gemma3ToolCode
from codec.formats.gemma4 import Gemma4
from codec.formats.hermes import Hermes
from codec.formats.qwen3 import Qwen3
from codec.formats.qwen3_coder import Qwen3Coder

#: Every built-in format class. Adding a format is one module, one grammar and one line here.
BUILTINS: tuple[type[Format], ...] = (DeepseekPythonic, Gemma3ToolCode, Gemma4, Hermes, Qwen3Coder)
BUILTINS += (Qwen3,)  # hermes' replies, the Qwen3 prompt

_INSTANCES: dict[str, Format] = {cls.name: cls() for cls in BUILTINS}
_ALIASES: dict[str, str] = {alias: cls.name for cls in BUILTINS for alias in cls.aliases}


def _key(name: str) -> str:
    return name.strip().lower().replace("-", "_")


def formats() -> list[str]:
    """The canonical names of the formats that work, sorted."""
    return sorted(_INSTANCES)


def get_format(name: str) -> Format:
    """The format called ``name`` (aliases and ``-``/``_`` spellings resolve); raises :class:`UnknownFormat`."""
    key = _key(name)
    key = _ALIASES.get(key, key)
    try:
        return _INSTANCES[key]
    except KeyError:
        raise UnknownFormat(name, list(_INSTANCES) + list(_ALIASES)) from None
