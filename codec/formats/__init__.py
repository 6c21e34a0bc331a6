"""The registry of built-in formats: one module per format, listed here once."""

from __future__ import annotations

import functools
import importlib

from codec.errors import UnknownFormat
from codec.format import Format

#: Every built-in format: its module and class, in the registry's order (the order detection
#: breaks ties by). A module is imported when its format is first asked for, so that ``import
#: codec`` and a command on one format do not import them all. Adding a format is one module, one
#: grammar and one line here.
_TABLE: tuple[tuple[str, str], ...] = (
    ("deepseek_pythonic", "DeepseekPythonic"),
    ("gemma3_tool_code", "Gemma3ToolCode"),
    ("gemma4", "Gemma4"),
    ("hermes", "Hermes"),
    ("qwen3_coder", "Qwen3Coder"),
    ("minimax_m2", "MinimaxM2"),
    ("deepseek_v3_2", "DeepseekV32"),
    ("hermes3", "Hermes3"),
    ("qwen3", "Qwen3"),
    ("qwen3_coder_official", "Qwen3CoderOfficial"),
    ("qwen2_5", "Qwen2_5"),
    ("qwq", "Qwq"),
    ("gemma4_31b", "Gemma4_31b"),
    ("gemma4_31b_interleaved", "Gemma4_31bInterleaved"),
    ("qwen3_5", "Qwen3_5"),
    ("nemotron3", "Nemotron3"),
    ("granite4", "Granite4"),
    ("llama3_1", "Llama3_1"),
    ("llama3_2", "Llama3_2"),
    ("seed_oss", "SeedOss"),
    ("glm4_6", "Glm4_6"),
    ("glm4_7", "Glm4_7"),
    ("deepseek_v3_1", "DeepSeekV31"),
    ("kimi_k2", "KimiK2"),
    ("mistral_small3_2", "MistralSmall3_2"),
    ("ministral3", "Ministral3"),
    ("lfm2", "Lfm2"),
    ("llama4_pythonic", "Llama4Pythonic"),
    ("gpt_oss", "GptOss"),
    ("mistral_nemo", "MistralNemo"),
    ("functiongemma", "FunctionGemma"),
)

#: The formats made so far, by canonical name (a format's module's name is its name).
_INSTANCES: dict[str, Format] = {}
_NAMES: frozenset[str] = frozenset(module for module, _ in _TABLE)


def _made(name: str) -> Format:
    """The built-in format called ``name`` (a canonical name), made on first use."""
    made = _INSTANCES.get(name)
    if made is None:
        module, attribute = next(row for row in _TABLE if row[0] == name)
        cls: type[Format] = getattr(importlib.import_module(f"codec.formats.{module}"), attribute)
        made = _INSTANCES.setdefault(name, cls())
    return made


def builtins() -> tuple[type[Format], ...]:
    """Every built-in format class, in the registry's order (importing every format's module)."""
    return tuple(type(_made(module)) for module, _ in _TABLE)


@functools.cache
def _aliases() -> dict[str, str]:
    """Each alias of a built-in format, as :func:`get_format` spells the name it is given
    (``gemma-4-31b`` is ``gemma_4_31b``), and the format's name (importing every format's module)."""
    return {_key(alias): cls.name for cls in builtins() for alias in cls.aliases}


#: Names that were aliases of formats whose templates are not those models' own: refused, with
#: what to use instead (an alias must be true of the prompt as well as of the reply).
RETIRED: dict[str, str] = {
    "deepseek": "deepseek_pythonic spells DeepSeek's role tokens in ASCII; DeepSeek's own templates "
    "are deepseek_v3_1 (V3.1) and deepseek_v3_2 (V3.2, DSML calls)",
}


def _key(name: str) -> str:
    return name.strip().lower().replace("-", "_")


def formats() -> list[str]:
    """The canonical names of the formats that work, sorted."""
    return sorted(_NAMES | set(_INSTANCES))


def reply_owner(name: str) -> str:
    """The format whose replies format ``name`` writes: the first built-in with the same compiled reply
    syntax (a prompt variant, such as ``hermes3``, writes its base format's replies)."""
    syntax = get_format(name).syntax()
    return next(module for module, _ in _TABLE if _made(module).syntax() is syntax)


def get_format(name: str) -> Format:
    """The format called ``name`` (aliases and ``-``/``_`` spellings resolve); raises :class:`UnknownFormat`."""
    if not isinstance(name, str):
        raise TypeError(f"get_format() takes a format's name (str), such as 'hermes', not {type(name).__name__}")
    key = _key(name)
    if key not in _INSTANCES and key not in _NAMES:
        key = _aliases().get(key, key)
    if key in _INSTANCES:
        return _INSTANCES[key]
    if key in _NAMES:
        return _made(key)
    aliases = [alias for cls in builtins() for alias in cls.aliases]
    error = UnknownFormat(name, formats() + aliases)
    if key in RETIRED:
        error.args = (f"{error.args[0]} ({name!r} is not an alias any more: {RETIRED[key]})",)
    raise error
