"""Parse speed: codec against the way popular servers parse each format, measured in one run.

    python bench/parse.py [--format NAME ...] [--quick]

Replies: an empty one (``Hello.``), a typical one (about 350 B of prose and one call), and about
1 KB, 20 KB, 200 KB and 1 MB of parallel calls with nested arguments, as ``render_reply`` writes
them. For each: the best-of-N time of one complete parse (and of the grammar's path alone, where
no whole-reply reader takes the reply), the total time to parse the same reply streamed in
4-character chunks (arguments deltas included: events on), and the baselines of the same run: a
regex + ``json.loads`` (hermes, granite4, qwen3_coder, gemma4, glm4_6, glm4_7, minimax_m2,
deepseek_v3_1, deepseek_v3_2, kimi_k2, gpt_oss; for llama3_1 JSON objects ``;`` apart; for
mistral_nemo the list after ``[TOOL_CALLS]``, for mistral_small3_2 and ministral3 the text split at
each ``[TOOL_CALLS]``), a regex +
``json.loads`` or ``ast.literal_eval`` by the declared type (qwen3_5, nemotron3, seed_oss,
functiongemma: values written with Python's ``str()``) or ``ast.parse`` + ``literal_eval`` (the
Python-list formats), and for qwen3_coder, qwen3_5 and gemma4 transformers' ``ResponseParser``
with its fallback templates (``transformers.cli.serving.utils``), where transformers is installed.
Streamed, the regex baseline re-runs on the whole buffer at each chunk, as those servers do
(quadratic: past 50 KB it is estimated from 2 000 evenly spaced chunks, and at 1 MB not run). A
prose-only reply (about 2 KB) streamed in 4-character deltas is timed against the least a streaming
parser does with it: append each delta and look for the format's call openers. Cold
start: ``import codec`` and the first parse in a new process, with the grammar cache warm and cold.
Each ratio is printed next to its target (issue "Speed"), and the tables go to
``bench/results/parse.json`` and ``bench/results/parse.md``. ``--quick`` leaves out 200 KB and 1 MB.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import json
import os
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import codec
from codec.formats.gemma3_tool_code import Gemma3ToolCode
from codec.stream import Stream

SIZES = (1_000, 20_000, 200_000, 1_000_000)
CHUNK = 4


def sample_calls(count: int, plain: bool = False, nulls: bool = True) -> list[dict[str, Any]]:
    """Tool calls with the kinds of values real replies carry (no marker text inside values: the
    regex baseline would cut the call there, which codec does not). ``plain`` leaves quotes,
    backslashes and newlines out of strings, for formats whose baseline cannot read them back
    (the DeepSeek template writes strings unescaped)."""
    calls = []
    for i in range(count):
        if i % 2:
            city = f"São Paulo #{i} line two" if plain else f'São "Paulo" #{i}\nline two \\ end'
            args: dict[str, Any] = {
                "city": city,
                "days": i,
                "options": {"unit": "c", "hourly": [1, 2.5, True, None] if nulls else [1, 2.5, True], "lang": "pt-BR"},
            }
            name = "get_weather"
        else:
            args = {"query": f"tool call parsers <b>{i}</b>", "filters": {"site": "example.org"}, "limit": 10}
            name = "search"
        calls.append({"id": f"call_{i}", "type": "function", "function": {"name": name, "arguments": args}})
    return calls


def make_reply(fmt: codec.Format, size: int) -> str:
    """A reply of about ``size`` characters: a sentence of content, then calls."""
    count = 1
    while True:
        calls = sample_calls(count, plain=fmt.name in PLAIN_STRINGS, nulls=fmt.name not in NO_NULLS)
        message = {"role": "assistant", "content": "Let me look that up.", "tool_calls": calls}
        text = fmt.render_reply(message)
        if len(text) >= size:
            return text
        count = max(count + 1, int(count * size / len(text)))


_HERMES_RX = re.compile(r"<tool_call>(.*?)</tool_call>|<tool_call>(.*)", re.DOTALL)


def mistral_list_baseline(text: str) -> list[Any]:
    """vLLM's Mistral parser for tokenizers before v11 (as recalled): the text after the last
    ``[TOOL_CALLS]``, less the stop token, read by json.loads as the list of calls."""
    _, sep, body = text.rpartition("[TOOL_CALLS]")
    if not sep:
        return []
    try:
        found = json.loads(body.removesuffix("</s>"))
    except json.JSONDecodeError:  # a partial list while streaming
        return []
    return found if isinstance(found, list) else []


def mistral_v11_baseline(text: str) -> list[Any]:
    """vLLM's Mistral parser for tokenizers of version 11 and later (as recalled): the text split at
    each ``[TOOL_CALLS]``, each piece's name before ``[ARGS]`` (less a ``[CALL_ID]`` and its id),
    json.loads for the rest less the stop token."""
    calls = []
    for piece in text.split("[TOOL_CALLS]")[1:]:
        name, sep, arguments = piece.partition("[ARGS]")
        if not sep:
            continue
        with contextlib.suppress(json.JSONDecodeError):  # a partial call while streaming
            calls.append(
                {"name": name.partition("[CALL_ID]")[0], "arguments": json.loads(arguments.removesuffix("</s>"))}
            )
    return calls


def hermes_baseline(text: str) -> list[Any]:
    """vLLM's hermes approach: a lazy regex for the blocks, json.loads for each body."""
    calls = []
    for m in _HERMES_RX.finditer(text):
        with contextlib.suppress(json.JSONDecodeError):  # a partial block while streaming
            calls.append(json.loads(m.group(1) or m.group(2)))
    return calls


_LLAMA_SEPARATOR = re.compile(r"\s*;\s*")


def llama3_json_baseline(text: str) -> list[Any]:
    """vLLM's llama3_json approach: the text after an optional <|python_tag|>, up to the stop token,
    json.loads for each object (``;`` apart)."""
    body = text.removeprefix("<|python_tag|>").removesuffix("<|eot_id|>").removesuffix("<|eom_id|>")
    calls = []
    decoder = json.JSONDecoder()
    pos = 0
    while body.startswith("{", pos):
        try:
            value, pos = decoder.raw_decode(body, pos)
        except json.JSONDecodeError:  # a partial object while streaming
            break
        calls.append({"name": value["name"], "arguments": value.get("parameters", value.get("arguments"))})
        match = _LLAMA_SEPARATOR.match(body, pos)
        pos = match.end() if match else pos
    return calls


TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string"},
                    "days": {"type": "integer"},
                    "options": {"type": "object"},
                },
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "search",
            "parameters": {
                "type": "object",
                "properties": {
                    "query": {"type": "string"},
                    "filters": {"type": "object"},
                    "limit": {"type": "integer"},
                },
            },
        },
    },
]
_TYPES = {
    tool["function"]["name"]: {
        key: schema["type"] for key, schema in tool["function"]["parameters"]["properties"].items()
    }
    for tool in TOOLS
}
_QWEN_CALL = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL)
_QWEN_FUNCTION = re.compile(r"<function=(.*?)>(.*?)</function>", re.DOTALL)
_QWEN_PARAMETER = re.compile(r"<parameter=(.*?)>(.*?)</parameter>", re.DOTALL)


def qwen3_coder_baseline(text: str) -> list[Any]:
    """The regex approach of the popular Qwen3-Coder parsers: blocks, functions and parameters by
    lazy regexes, one newline trimmed on each side, values converted by the declared type."""
    calls = []
    for block in _QWEN_CALL.findall(text):
        for name, body in _QWEN_FUNCTION.findall(block):
            types = _TYPES.get(name, {})
            args: dict[str, Any] = {}
            for key, raw in _QWEN_PARAMETER.findall(body):
                value = raw[1:] if raw.startswith("\n") else raw
                value = value[:-1] if value.endswith("\n") else value
                kind = types.get(key, "string")
                if kind == "integer":
                    args[key] = int(value)
                elif kind in ("object", "array"):
                    args[key] = json.loads(value)
                else:
                    args[key] = value
            calls.append({"name": name, "arguments": args})
    return calls


_PYTHON_NAMES = {"True": True, "False": False, "None": None}


def _python_scalar(raw: str, kind: str) -> Any:
    """A Qwen3.5 value by its declared type: a string as written, an object or array as JSON (the
    template writes mappings and lists with ``tojson``), anything else as ``str()`` wrote it
    (``True``, ``None``, ``1.5``), read back with ``ast.literal_eval``."""
    if kind == "string":
        return raw
    if kind in ("object", "array"):
        return json.loads(raw)
    if raw in _PYTHON_NAMES:
        return _PYTHON_NAMES[raw]
    return int(raw) if kind == "integer" else ast.literal_eval(raw)


def qwen3_5_baseline(text: str) -> list[Any]:
    """The Qwen3-Coder regex approach for Qwen3.5's replies (nemotron3 writes the same): blocks,
    functions and parameters by lazy regexes, one newline trimmed on each side, values by the
    declared type with Python's spellings of scalars."""
    calls = []
    for block in _QWEN_CALL.findall(text):
        for name, body in _QWEN_FUNCTION.findall(block):
            types = _TYPES.get(name, {})
            args: dict[str, Any] = {}
            for key, raw in _QWEN_PARAMETER.findall(body):
                value = raw[1:] if raw.startswith("\n") else raw
                value = value[:-1] if value.endswith("\n") else value
                args[key] = _python_scalar(value, types.get(key, "string"))
            calls.append({"name": name, "arguments": args})
    return calls


_SEED_CALL = re.compile(r"<seed:tool_call>(.*?)</seed:tool_call>", re.DOTALL)


def seed_oss_baseline(text: str) -> list[Any]:
    """The regex approach of the popular Seed-OSS parsers: ``<seed:tool_call>`` blocks, functions and
    parameters by lazy regexes, values inline (nothing trimmed), a string as written and anything
    else as ``str()`` wrote it (``{'unit': 'c'}``, ``True``), read back with ``ast.literal_eval``."""
    calls = []
    for block in _SEED_CALL.findall(text):
        for name, body in _QWEN_FUNCTION.findall(block):
            types = _TYPES.get(name, {})
            args: dict[str, Any] = {}
            for key, raw in _QWEN_PARAMETER.findall(body):
                args[key] = raw if types.get(key, "string") == "string" else ast.literal_eval(raw)
            calls.append({"name": name, "arguments": args})
    return calls


_GLM_CALL = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL)
_GLM_ARGUMENT = re.compile(r"<arg_key>(.*?)</arg_key>\s*<arg_value>(.*?)</arg_value>", re.DOTALL)


def glm4_6_baseline(text: str) -> list[Any]:
    """The regex approach of the popular GLM-4.5/4.6 parsers: blocks by a lazy regex, the name up
    to the first key tag, key and value pairs by a lazy regex, values converted by the declared
    type (json.loads for any type but a string)."""
    calls = []
    for block in _GLM_CALL.findall(text):
        name = block.split("<arg_key>", 1)[0].strip()
        types = _TYPES.get(name, {})
        args: dict[str, Any] = {}
        for key, raw in _GLM_ARGUMENT.findall(block):
            args[key.strip()] = raw if types.get(key.strip(), "string") == "string" else json.loads(raw)
        calls.append({"name": name, "arguments": args})
    return calls


_MINIMAX_CALL = re.compile(r"<minimax:tool_call>(.*?)</minimax:tool_call>", re.DOTALL)
_MINIMAX_INVOKE = re.compile(r'<invoke name="(.*?)">(.*?)</invoke>', re.DOTALL)
_MINIMAX_PARAMETER = re.compile(r'<parameter name="(.*?)">(.*?)</parameter>', re.DOTALL)


def minimax_baseline(text: str) -> list[Any]:
    """The regex approach of the popular MiniMax-M2 parsers: wrappers, invokes and parameters by
    lazy regexes, values converted by the declared type."""
    calls = []
    for block in _MINIMAX_CALL.findall(text):
        for name, body in _MINIMAX_INVOKE.findall(block):
            types = _TYPES.get(name, {})
            args: dict[str, Any] = {}
            for key, value in _MINIMAX_PARAMETER.findall(body):
                kind = types.get(key, "string")
                if kind == "integer":
                    args[key] = int(value)
                elif kind in ("object", "array"):
                    args[key] = json.loads(value)
                else:
                    args[key] = value
            calls.append({"name": name, "arguments": args})
    return calls


_DSML_CALL = re.compile(r"<｜DSML｜function_calls>(.*?)</｜DSML｜function_calls>", re.DOTALL)
_DSML_INVOKE = re.compile(r'<｜DSML｜invoke name="(.*?)">(.*?)</｜DSML｜invoke>', re.DOTALL)
_DSML_PARAMETER = re.compile(
    r'<｜DSML｜parameter name="(.*?)" string="(true|false)">(.*?)</｜DSML｜parameter>', re.DOTALL
)


def dsml_baseline(text: str) -> list[Any]:
    """The regex approach of the popular DeepSeek V3.2 parsers: blocks, invokes and parameters by
    lazy regexes, a value JSON where its head says it is no string."""
    calls = []
    for block in _DSML_CALL.findall(text):
        for name, body in _DSML_INVOKE.findall(block):
            args = {
                key: value if flag == "true" else json.loads(value)
                for key, flag, value in _DSML_PARAMETER.findall(body)
            }
            calls.append({"name": name, "arguments": args})
    return calls


_GEMMA_CALL = re.compile(r"<\|tool_call>call:([\w\-.]+)(\{.*?\})<tool_call\|>", re.DOTALL)
_GEMMA_STRING = re.compile(r'<\|"\|>(.*?)<\|"\|>', re.DOTALL)
_GEMMA_KEY = re.compile(r"([{,])([A-Za-z_][\w\-.]*):")
_GEMMA_SLOT = re.compile("\x00([0-9]+)\x00")


def gemma4_baseline(text: str) -> list[Any]:
    """The regex-rewrite approach: find each call, set its <|"|> strings aside, quote the bare
    keys, spell None as null, put the strings back JSON-encoded and json.loads the result."""
    calls = []
    for name, body in _GEMMA_CALL.findall(text):
        strings: list[str] = []

        def set_aside(m: re.Match[str], strings: list[str] = strings) -> str:
            strings.append(m.group(1))
            return f"\x00{len(strings) - 1}\x00"

        body = _GEMMA_KEY.sub(r'\1"\2":', _GEMMA_STRING.sub(set_aside, body)).replace("None", "null")
        body = _GEMMA_SLOT.sub(lambda m, strings=strings: json.dumps(strings[int(m.group(1))]), body)
        calls.append({"name": name, "arguments": json.loads(body)})
    return calls


_FUNCTIONGEMMA_CALL = re.compile(r"<start_function_call>call:(\w+)\{(.*?)\}<end_function_call>", re.DOTALL)
_FUNCTIONGEMMA_ARG = re.compile(r"(\w+):<escape>(.*?)<escape>", re.DOTALL)


def functiongemma_baseline(text: str) -> list[Any]:
    """vLLM's FunctionGemma approach: a lazy regex per call and per ``key:<escape>value<escape>``
    pair, each value json.loads'd where it reads as JSON; here also ast.literal_eval'd where it reads
    as a Python literal (the template writes ``str()``: ``{'unit': 'c'}``), else kept as its text."""
    calls = []
    for name, body in _FUNCTIONGEMMA_CALL.findall(text):
        args: dict[str, Any] = {}
        for key, value in _FUNCTIONGEMMA_ARG.findall(body):
            try:
                args[key] = json.loads(value)
            except json.JSONDecodeError:
                try:
                    args[key] = ast.literal_eval(value)
                except (ValueError, SyntaxError):
                    args[key] = value
        calls.append({"name": name, "arguments": args})
    return calls


_HARMONY_CALL = re.compile(
    r"to=functions\.([^\s<]+)[^<]*(?:<\|constrain\|>\w+)?<\|message\|>(.*?)(?:<\|call\|>|\Z)", re.DOTALL
)


def harmony_baseline(text: str) -> list[Any]:
    """The regex approach to Harmony calls: each recipient's message up to <|call|>, json.loads its body."""
    calls = []
    for name, body in _HARMONY_CALL.findall(text):
        with contextlib.suppress(json.JSONDecodeError):  # a partial call while streaming
            calls.append({"name": name, "arguments": json.loads(body)})
    return calls


_PYTHON_LIST = re.compile(r"\[[A-Za-z_][\w.\-]*\(.*\)\]", re.DOTALL)


def pythonic_baseline(text: str) -> list[Any]:
    """vLLM's pythonic approach: find the list, ast.parse it, literal_eval each keyword (JSON
    spellings true/false/null bound as names, as the DeepSeek template writes them)."""
    found = _PYTHON_LIST.search(text)
    if found is None:
        return []
    tree = ast.parse(found.group(), mode="eval").body
    assert isinstance(tree, ast.List)
    calls = []
    for call in tree.elts:
        assert isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
        args = {kw.arg: _literal(kw.value) for kw in call.keywords}
        calls.append({"name": call.func.id, "arguments": args})
    return calls


_JSON_NAMES = {"true": True, "false": False, "null": None}


def _literal(node: ast.expr) -> Any:
    if isinstance(node, ast.Name) and node.id in _JSON_NAMES:
        return _JSON_NAMES[node.id]
    if isinstance(node, ast.Dict):
        return {_literal(k): _literal(v) for k, v in zip(node.keys, node.values, strict=True)}
    if isinstance(node, ast.List):
        return [_literal(v) for v in node.elts]
    return ast.literal_eval(node)


#: The Python-list formats' strings are written plain here (see sample_calls).
PLAIN_STRINGS = {"deepseek_pythonic", "lfm2", "llama4_pythonic"}
#: Formats whose replies hold no null here: transformers' gemma4 response template fails on
#: ``None`` (it rewrites keys and strings to JSON, not the literal).
NO_NULLS = {"gemma4"}

_DEEPSEEK_V3_1_RX = re.compile(r"<｜tool▁call▁begin｜>(.*?)<｜tool▁sep｜>(.*?)<｜tool▁call▁end｜>", re.DOTALL)


def deepseek_v3_1_baseline(text: str) -> list[Any]:
    """vLLM's DeepSeek V3.1 approach: a lazy regex for each call's name and arguments, json.loads for these."""
    calls = []
    for m in _DEEPSEEK_V3_1_RX.finditer(text):
        with contextlib.suppress(json.JSONDecodeError):  # a partial call while streaming
            calls.append({"name": m.group(1), "arguments": json.loads(m.group(2))})
    return calls


_KIMI_K2_RX = re.compile(
    r"<\|tool_call_begin\|>\s*(?P<id>[\w.]+:\d+)\s*<\|tool_call_argument_begin\|>\s*(?P<args>.*?)\s*<\|tool_call_end\|>",
    re.DOTALL,
)


def kimi_k2_baseline(text: str) -> list[Any]:
    """vLLM's Kimi K2 approach: a lazy regex for each call's id and arguments, the name from the id."""
    calls = []
    for m in _KIMI_K2_RX.finditer(text):
        with contextlib.suppress(json.JSONDecodeError):  # a partial call while streaming
            name = m.group("id").split(":")[0].split(".")[-1]
            calls.append({"name": name, "arguments": json.loads(m.group("args"))})
    return calls


BASELINES: dict[str, Callable[[str], list[Any]]] = {
    "deepseek_pythonic": pythonic_baseline,
    "deepseek_v3_1": deepseek_v3_1_baseline,
    "deepseek_v3_2": dsml_baseline,
    "gemma3_tool_code": pythonic_baseline,
    "lfm2": pythonic_baseline,
    "llama4_pythonic": pythonic_baseline,
    "gemma4": gemma4_baseline,
    "functiongemma": functiongemma_baseline,
    "gpt_oss": harmony_baseline,
    "granite4": hermes_baseline,  # Granite 4's calls are hermes' blocks (vLLM's granite4 parser reads them alike)
    "glm4_6": glm4_6_baseline,
    "glm4_7": glm4_6_baseline,  # GLM-4.7 writes GLM-4.6's calls without the line breaks the baseline strips
    "hermes": hermes_baseline,
    "kimi_k2": kimi_k2_baseline,
    "llama3_1": llama3_json_baseline,
    "minimax_m2": minimax_baseline,
    "ministral3": mistral_v11_baseline,
    "mistral_nemo": mistral_list_baseline,
    "mistral_small3_2": mistral_v11_baseline,
    "nemotron3": qwen3_5_baseline,
    "qwen3_5": qwen3_5_baseline,
    "qwen3_coder": qwen3_coder_baseline,
    "seed_oss": seed_oss_baseline,
}
#: Formats whose calls are the whole reply (no prose beside them: a typical reply is its call).
BARE_CALLS = {"llama3_1"}
#: Formats whose values need the tools to be typed are parsed with them (codec and baseline alike).
WITH_TOOLS = {"qwen3_coder", "qwen3_5", "nemotron3", "seed_oss", "glm4_6", "glm4_7", "minimax_m2", "functiongemma"}


def best_of(fn: Callable[[], object], budget: float = 1.0, runs: int = 200) -> float:
    best = float("inf")
    start = time.perf_counter()
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
        if time.perf_counter() - start > budget:
            break
    return best


def chunks(text: str) -> list[str]:
    return [text[i : i + CHUNK] for i in range(0, len(text), CHUNK)]


def codec_stream(fmt: codec.Format, pieces: list[str], tools: Any) -> None:
    stream = fmt.stream(tools=tools)
    for piece in pieces:
        stream.feed(piece)
    stream.close()


def baseline_stream(parse: Callable[[str], object], text: str, pieces: list[str], limit: int | None) -> float:
    """Re-parse the growing buffer at every chunk; with ``limit``, time that many evenly spaced chunks."""
    ends = list(range(CHUNK, len(text) + CHUNK, CHUNK))
    if limit is not None and len(ends) > limit:
        step = len(ends) / limit
        sample = [ends[int(k * step)] for k in range(limit)]
        t0 = time.perf_counter()
        for end in sample:
            parse(text[:end])
        return (time.perf_counter() - t0) * len(ends) / limit
    t0 = time.perf_counter()
    for end in ends:
        parse(text[:end])
    return time.perf_counter() - t0


#: The typical agent reply's prose (about 350 B with its call).
PROSE = (
    "I looked at the forecast sources you mentioned and compared them. The weather service has the most"
    " recent data, so I will ask it for the next days in Paris, in Celsius, and then summarise what to"
    " pack. One moment while I fetch that for you; it should not take long."
)
TYPICAL_CALL = {
    "id": "call_0",
    "type": "function",
    "function": {"name": "get_weather", "arguments": {"city": "Paris", "days": 3, "options": {"unit": "c"}}},
}
#: transformers' fallback response template for each format's models (its model types).
RESPONSE_TEMPLATES = {"qwen3_coder": "qwen3_5", "qwen3_5": "qwen3_5", "gemma4": "gemma4"}
#: The targets of the speed issue: the largest ratio each measure may reach.
TARGETS = {
    "typical_vs_baseline": {
        "hermes": 5.0,
        "granite4": 5.0,
        "llama3_1": 5.0,
        "mistral_nemo": 5.0,
        "mistral_small3_2": 5.0,
        "ministral3": 5.0,
        "gemma3_tool_code": 1.0,
        "deepseek_pythonic": 1.0,
        "lfm2": 1.0,
        "llama4_pythonic": 1.0,
    },
    "typical_vs_transformers": {"qwen3_coder": 0.67, "qwen3_5": 0.67, "gemma4": 0.67},
    "20k_vs_baseline": {
        "hermes": 3.0,
        "granite4": 3.0,
        "llama3_1": 3.0,
        "mistral_nemo": 3.0,
        "mistral_small3_2": 3.0,
        "ministral3": 3.0,
        "gemma3_tool_code": 1.0,
        "deepseek_pythonic": 1.0,
        "lfm2": 1.0,
        "llama4_pythonic": 1.0,
    },
    "20k_vs_transformers": {"qwen3_coder": 0.67, "qwen3_5": 0.67, "gemma4": 0.67},
    "stream_vs_parse": 3.0,
    "prose_vs_append_find": 2.0,
    "first_parse_ms": 15.0,
    "import_s": 0.25,
    "per_byte_1m_vs_20k": 1.3,
}
PER_BYTE = TARGETS["per_byte_1m_vs_20k"]


def typical_reply(fmt: codec.Format) -> str:
    """Prose and one call, as the format's template writes them (a Gemma 3 reply writes no
    content beside its calls: the prose goes before the fence, as models write it)."""
    message = {"role": "assistant", "content": PROSE, "tool_calls": [TYPICAL_CALL]}
    text = fmt.render_reply(message)
    return text if PROSE in text or fmt.name in BARE_CALLS else PROSE + "\n" + text


def response_parser(name: str) -> Callable[[str], object] | None:
    """transformers' ``parse_response`` with the fallback template of the format's models, or None."""
    try:
        from transformers.cli.serving.utils import _RESPONSE_TEMPLATE_FALLBACKS
        from transformers.utils.chat_parsing import parse_response
        from transformers.utils.chat_parsing.response_templates import load_response_template
    except ImportError:
        return None
    model_type = RESPONSE_TEMPLATES.get(name)
    found = [spec for types, spec in _RESPONSE_TEMPLATE_FALLBACKS.items() if model_type in types]
    if not found:
        return None
    template = load_response_template(found[0])
    tools = TOOLS if name in WITH_TOOLS else None
    return lambda text: parse_response(text, template, prefix="", tools=tools)


def grammar_parse(fmt: codec.Format, text: str, tools: Any) -> None:
    """A complete parse by the grammar's path alone (the stream fed the whole reply, no events):
    what ``parse`` does where no whole-reply reader takes the reply."""
    stream = Stream(fmt.syntax(), tools=tools, events=False)
    stream.feed(text)
    stream.close()


def measure(name: str, fmt: codec.Format, kind: str, text: str, *, stream: bool = True) -> dict[str, Any]:
    """One row: codec's parse (and stream) of ``text`` and the baselines', checked to agree first."""
    baseline = BASELINES[name]
    tools = TOOLS if name in WITH_TOOLS else None
    result = fmt.parse(text, tools=tools)
    assert not result.issues, result.issues[:3]
    calls = [c.function.arguments for c in result.tool_calls]
    assert calls == [c["arguments"] for c in baseline(text)], "baseline and codec disagree on the calls"
    row: dict[str, Any] = {"format": name, "reply": kind, "bytes": len(text.encode()), "calls": len(calls)}
    budget = 1.0 if len(text) < 100_000 else 3.0
    row["parse_us"] = best_of(lambda: fmt.parse(text, tools=tools), budget=budget) * 1e6
    row["grammar_parse_us"] = best_of(lambda: grammar_parse(fmt, text, tools), budget=budget) * 1e6
    row["baseline_us"] = best_of(lambda: baseline(text), budget=budget) * 1e6
    parser = response_parser(name)
    if parser is not None:
        read = parser(text)
        assert isinstance(read, dict) and len(read.get("tool_calls") or []) == len(calls), read
        row["transformers_us"] = best_of(lambda: parser(text), budget=budget) * 1e6
    if stream:
        pieces = chunks(text)
        row["stream4_us"] = best_of(lambda: codec_stream(fmt, pieces, tools), budget=2.0, runs=20) * 1e6
        if len(text) <= 250_000:
            limit = 2000 if len(text) > 50_000 else None
            row["baseline_stream4_us"] = baseline_stream(baseline, text, pieces, limit) * 1e6
    return row


def openers(fmt: codec.Format) -> list[str]:
    """The fixed texts that open a block (a call) in the format's replies, as a server's parser
    looks for them in prose; the characters that can start a marker where no opener is fixed text."""
    syntax = fmt.syntax()
    terminals = syntax.grammar.terminals
    found = [
        terminals[name].pattern.value
        for name in syntax.blocks
        if name in terminals and terminals[name].pattern.type == "str" and terminals[name].pattern.value
    ]
    return sorted(set(found)) or list(syntax.marker_starts)


def append_and_find(pieces: list[str], markers: list[str]) -> None:
    """The least a streaming parser does with prose: append each delta and look for the openers
    in what could now hold one."""
    longest = max(map(len, markers))
    buf = ""
    for piece in pieces:
        start = max(0, len(buf) - longest + 1)
        buf += piece
        for marker in markers:
            buf.find(marker, start)


def measure_prose(name: str, fmt: codec.Format) -> dict[str, Any]:
    """A prose-only reply (about 2 KB, no call) streamed in 4-character deltas, against
    :func:`append_and_find` on the same deltas: the per-character cost of prose."""
    tools = TOOLS if name in WITH_TOOLS else None
    text = " ".join([PROSE] * 8)
    assert not fmt.parse(text, tools=tools).tool_calls
    pieces = chunks(text)
    markers = openers(fmt)
    row: dict[str, Any] = {"format": name, "reply": "prose only", "bytes": len(text.encode()), "openers": markers}
    row["stream4_us"] = best_of(lambda: codec_stream(fmt, pieces, tools), budget=1.0, runs=20) * 1e6
    row["append_find_us"] = best_of(lambda: append_and_find(pieces, markers), budget=1.0, runs=50) * 1e6
    return row


def run(name: str, sizes: tuple[int, ...]) -> list[dict[str, Any]]:
    # Gemma 3 replies are written with the corrected template (", " between arguments): the
    # reference writes none, which ast.parse, the baseline, cannot read.
    fmt = Gemma3ToolCode(corrected=True) if name == "gemma3_tool_code" else codec.get_format(name)
    fmt.parse(make_reply(fmt, 500))  # build the grammar before timing
    rows = [measure(name, fmt, "empty", "Hello.", stream=False), measure(name, fmt, "typical", typical_reply(fmt))]
    rows += [measure(name, fmt, f"{size // 1000} KB", make_reply(fmt, size)) for size in sizes]
    return rows


_COLD = (
    "import time, sys; t0 = time.perf_counter(); import codec; t1 = time.perf_counter();"
    " codec.get_format(sys.argv[1]).parse('Hello.'); t2 = time.perf_counter();"
    " print(t1 - t0, t2 - t1)"
)


def cold_start(name: str, *, warm: bool, runs: int = 5) -> tuple[float, float]:
    """Best-of-``runs`` (``import codec`` seconds, first parse seconds) in new processes, with the
    grammar cache warm (filled by a run before) or cold (an empty cache folder each time)."""
    import subprocess
    import tempfile

    root = str(Path(__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": root, "PYTHONDONTWRITEBYTECODE": ""}
    best = (float("inf"), float("inf"))
    with tempfile.TemporaryDirectory() as folder:
        for _ in range(runs + (1 if warm else 0)):
            env["CODEC_CACHE_DIR"] = folder if warm else tempfile.mkdtemp(dir=folder)
            out = subprocess.run(
                [sys.executable, "-c", _COLD, name], env=env, capture_output=True, text=True, check=True
            )
            took = tuple(float(v) for v in out.stdout.split())
            best = (min(best[0], took[0]), min(best[1], took[1]))
    return best


def _ratio(row: dict[str, Any], num: str, den: str) -> float | None:
    return row[num] / row[den] if num in row and den in row else None


def _mark(value: float | None, target: float | None) -> str:
    if value is None:
        return "-"
    shown = f"{value:.2f}x"
    return shown if target is None else f"{shown} {'ok' if value <= target else 'over ' + format(target, 'g')}"


def table(rows: list[dict[str, Any]]) -> list[str]:
    """The rows as a Markdown table a person can read, each ratio beside its target."""
    lines = [
        "| format | reply | bytes | calls | parse | grammar's path | stream 4 | regex/ast | transformers "
        "| parse/baseline | parse/transformers | stream/parse | stream/grammar's path |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        key = "typical" if r["reply"] == "typical" else "20k" if r["reply"] == "20 KB" else None
        vs_base = TARGETS[f"{key}_vs_baseline"].get(r["format"]) if key else None
        vs_tf = TARGETS[f"{key}_vs_transformers"].get(r["format"]) if key else None
        stream_target = TARGETS["stream_vs_parse"] if r["reply"] in ("1 KB", "20 KB") else None
        cells = [
            r["format"],
            r["reply"],
            str(r["bytes"]),
            str(r["calls"]),
            _us(r.get("parse_us")),
            _us(r.get("grammar_parse_us")),
            _us(r.get("stream4_us")),
            _us(r.get("baseline_us")),
            _us(r.get("transformers_us")),
            _mark(_ratio(r, "parse_us", "baseline_us"), vs_base),
            _mark(_ratio(r, "parse_us", "transformers_us"), vs_tf),
            _mark(_ratio(r, "stream4_us", "parse_us"), stream_target),
            _mark(_ratio(r, "stream4_us", "grammar_parse_us"), None),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _us(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.1f} us" if value < 1000 else f"{value / 1000:.2f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--format", action="append", choices=sorted(BASELINES), help="default: all")
    parser.add_argument("--quick", action="store_true", help="no 200 KB and 1 MB replies, one cold-start format")
    args = parser.parse_args()
    names = args.format or sorted(BASELINES)
    sizes = SIZES[:2] if args.quick else SIZES
    rows = [row for name in names for row in run(name, sizes)]
    lines = table(rows)
    prose = []
    for name in names:
        fmt = Gemma3ToolCode(corrected=True) if name == "gemma3_tool_code" else codec.get_format(name)
        prose.append(measure_prose(name, fmt))
    lines += ["", "| format | prose only, 4-char deltas | append + find openers | ratio |", "|---|---:|---:|---:|"]
    for r in prose:
        ratio = _mark(r["stream4_us"] / r["append_find_us"], TARGETS["prose_vs_append_find"])
        lines.append(f"| {r['format']} | {_us(r['stream4_us'])} | {_us(r['append_find_us'])} | {ratio} |")
    growth = {}
    for name in names:
        sized = {r["reply"]: r for r in rows if r["format"] == name}
        if "1000 KB" in sized and "20 KB" in sized:
            big, small = sized["1000 KB"], sized["20 KB"]
            growth[name] = (big["parse_us"] / big["bytes"]) / (small["parse_us"] / small["bytes"])
            s_growth = (big["stream4_us"] / big["bytes"]) / (small["stream4_us"] / small["bytes"])
            lines.append("")
            lines.append(
                f"{name}: per-byte cost at 1 MB against 20 KB: parse {_mark(growth[name], PER_BYTE)},"
                f" stream {_mark(s_growth, PER_BYTE)}"
            )
    cold = {}
    for name in names[:1] if args.quick else names:
        warm_import, warm_parse = cold_start(name, warm=True)
        _, cold_parse = cold_start(name, warm=False, runs=3)
        cold[name] = {
            "import_s": warm_import,
            "first_parse_ms": warm_parse * 1e3,
            "uncached_first_parse_ms": cold_parse * 1e3,
        }
        lines.append("")
        lines.append(
            f"{name}: import codec {warm_import:.3f} s (target {TARGETS['import_s']}), first parse"
            f" {warm_parse * 1e3:.1f} ms with the grammar cache warm (target {TARGETS['first_parse_ms']} ms),"
            f" {cold_parse * 1e3:.1f} ms cold"
        )
    print("\n".join(lines))
    out = Path(__file__).resolve().parent / "results"
    out.mkdir(exist_ok=True)
    (out / "parse.json").write_text(
        json.dumps({"rows": rows, "prose": prose, "cold_start": cold}, indent=2) + "\n", encoding="utf-8"
    )
    (out / "parse.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {out / 'parse.json'} and {out / 'parse.md'}")


if __name__ == "__main__":
    main()
