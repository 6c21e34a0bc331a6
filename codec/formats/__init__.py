"""The registry of built-in formats: one module per format, listed here once."""

from __future__ import annotations

from codec.errors import UnknownFormat
from codec.format import Format
from codec.formats.deepseek_pythonic import DeepseekPythonic
from codec.formats.deepseek_v3_1 import DeepSeekV31
from codec.formats.deepseek_v3_2 import DeepseekV32
from codec.formats.functiongemma import FunctionGemma
from codec.formats.gemma3_tool_code import Gemma3ToolCode
from codec.formats.gemma4 import Gemma4
from codec.formats.gemma4_31b import Gemma4_31b
from codec.formats.gemma4_31b_interleaved import Gemma4_31bInterleaved
from codec.formats.glm4_6 import Glm4_6
from codec.formats.glm4_7 import Glm4_7
from codec.formats.gpt_oss import GptOss
from codec.formats.granite4 import Granite4
from codec.formats.hermes import Hermes
from codec.formats.hermes3 import Hermes3
from codec.formats.kimi_k2 import KimiK2
from codec.formats.lfm2 import Lfm2
from codec.formats.llama3_1 import Llama3_1
from codec.formats.llama3_2 import Llama3_2
from codec.formats.llama4_pythonic import Llama4Pythonic
from codec.formats.minimax_m2 import MinimaxM2
from codec.formats.ministral3 import Ministral3
from codec.formats.mistral_nemo import MistralNemo
from codec.formats.mistral_small3_2 import MistralSmall3_2
from codec.formats.nemotron3 import Nemotron3
from codec.formats.qwen2_5 import Qwen2_5
from codec.formats.qwen3 import Qwen3
from codec.formats.qwen3_5 import Qwen3_5
from codec.formats.qwen3_coder import Qwen3Coder
from codec.formats.qwen3_coder_official import Qwen3CoderOfficial
from codec.formats.qwq import Qwq
from codec.formats.seed_oss import SeedOss

#: Every built-in format class. Adding a format is one module, one grammar and one line here.
BUILTINS: tuple[type[Format], ...] = (DeepseekPythonic, Gemma3ToolCode, Gemma4, Hermes, Qwen3Coder)
BUILTINS += (MinimaxM2, DeepseekV32)  # members of the invoke family
BUILTINS += (
    Hermes3,
    Qwen3,
    Qwen3CoderOfficial,
    Qwen2_5,
    Qwq,
    Gemma4_31b,
    Gemma4_31bInterleaved,
    Qwen3_5,
    Nemotron3,
    Granite4,
    Llama3_1,
    Llama3_2,
)  # variants of a format's prompts, one line each
BUILTINS += (SeedOss,)  # a member of xml_params with markers of its own
BUILTINS += (Glm4_6, Glm4_7)  # the arg_pairs family's members
BUILTINS += (DeepSeekV31, KimiK2, MistralSmall3_2, Ministral3)  # a name, then JSON arguments (named_json)
BUILTINS += (Lfm2, Llama4Pythonic)  # members of a family with replies of their own
BUILTINS += (GptOss,)
BUILTINS += (MistralNemo,)  # JSON call objects listed after a block opener (json_object)
BUILTINS += (FunctionGemma,)  # a gemma4 member with prompts of its own

_INSTANCES: dict[str, Format] = {cls.name: cls() for cls in BUILTINS}
_ALIASES: dict[str, str] = {alias: cls.name for cls in BUILTINS for alias in cls.aliases}


#: Names that were aliases of formats whose templates are not those models' own: refused, with
#: what to use instead (an alias must be true of the prompt as well as of the reply).
RETIRED: dict[str, str] = {
    "deepseek": "deepseek_pythonic spells DeepSeek's role tokens in ASCII; DeepSeek's own templates "
    "are deepseek_v3_1 (V3.1) and deepseek_v3_2 (V3.2, DSML calls)",
}


def _key(name: str) -> str:
    return name.strip().lower().replace("-", "_")


#: The aliases as :func:`get_format` spells the name it is given (``gemma-4-31b`` is ``gemma_4_31b``).
_ALIAS_KEYS: dict[str, str] = {_key(alias): name for alias, name in _ALIASES.items()}


def formats() -> list[str]:
    """The canonical names of the formats that work, sorted."""
    return sorted(_INSTANCES)


def reply_owner(name: str) -> str:
    """The format whose replies format ``name`` writes: the first built-in with the same compiled reply
    syntax (a prompt variant, such as ``hermes3``, writes its base format's replies)."""
    syntax = get_format(name).syntax()
    return next(cls.name for cls in BUILTINS if _INSTANCES[cls.name].syntax() is syntax)


def get_format(name: str) -> Format:
    """The format called ``name`` (aliases and ``-``/``_`` spellings resolve); raises :class:`UnknownFormat`."""
    if not isinstance(name, str):
        raise TypeError(f"get_format() takes a format's name (str), such as 'hermes', not {type(name).__name__}")
    key = _key(name)
    key = _ALIAS_KEYS.get(key, key)
    try:
        return _INSTANCES[key]
    except KeyError:
        error = UnknownFormat(name, list(_INSTANCES) + list(_ALIASES))
        if key in RETIRED:
            error.args = (f"{error.args[0]} ({name!r} is not an alias any more: {RETIRED[key]})",)
        raise error from None
