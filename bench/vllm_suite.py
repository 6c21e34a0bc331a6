"""vLLM 0.33.0's own unit tests of the tool and reasoning parsers that match codec's formats, run
against vLLM's parsers and against codec's plugin (``codec_<format>``), so that the two can be
compared test by test.

The tests come from vLLM's source release on the package index (they are not in its wheel); they
are fetched and unpacked into a work folder, never into the project. Three runs:

* ``vllm``: the tests as shipped, vLLM's parsers;
* ``codec``: the same tests with only the parser lookup changed to codec's ``codec_<format>``;
* ``codec_finished``: as ``codec``, with the tests' streaming helpers finishing the stream as
  vLLM's serving layer does at the end of a reply (``finish_streaming()`` of an engine-based
  parser, its delta appended to the last one: ``vllm.parser.abstract_parser``).

A test "reaches a parser" where its run against vLLM's parsers passes or fails (a test that errors
before it says nothing about a parser). The tokenizers the tests load from the model hub, which
this machine cannot reach, are stand-ins built in the work folder (:data:`STAND_INS`). Each test
vLLM passes and codec does not is printed with its kind and reason (:data:`DIFFERENCES`). Run in
the environment ``tests/vllm-env.sh`` builds::

    PYTHONPATH=. ../vllm-venv/bin/python bench/vllm_suite.py [--work DIR] [--json FILE]
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import xml.etree.ElementTree as ET
from pathlib import Path

VERSION = "0.33.0"

#: The test files, and how each one looks its parser up: (vLLM's name, codec's), where vLLM's
#: name is a class the file imports (rebound to codec's class after the imports), a quoted
#: registry name (replaced where it is passed to a manager or assigned to ``parser_name``).
TESTS: dict[str, tuple[tuple[str, str], ...]] = {
    "tests/tool_parsers/test_hermes_tool_parser.py": (
        ("Hermes2ProToolParser", "codec_hermes"),
        ("Granite4ToolParser", "codec_granite4"),
    ),
    "tests/tool_parsers/test_qwen3coder_tool_parser.py": (("Qwen3EngineToolParser", "codec_qwen3_coder"),),
    "tests/tool_parsers/test_gemma4_tool_parser.py": (("Gemma4EngineToolParser", "codec_gemma4"),),
    "tests/tool_parsers/test_pythonic_tool_parser.py": (('"pythonic"', "codec_llama4_pythonic"),),
    "tests/tool_parsers/test_llama4_pythonic_tool_parser.py": (('"llama4_pythonic"', "codec_llama4_pythonic"),),
    "tests/tool_use/test_gemma4_responses_adjust_request.py": (("Gemma4ToolParser", "codec_gemma4"),),
    "tests/reasoning/test_qwen3_reasoning_parser.py": (('"qwen3"', "codec_qwen3"),),
    "tests/reasoning/test_deepseekr1_reasoning_parser.py": (('"deepseek_r1"', "codec_qwq"),),
    "tests/reasoning/test_gemma4_reasoning_parser.py": (('"gemma4"', "codec_gemma4"),),
}

#: What the tests import besides themselves. (vLLM's tests/conftest.py and tests/tool_use/conftest.py
#: start servers and load models: not taken; the parser tests do not use their fixtures.)
SUPPORT = (
    "tests/__init__.py",
    "tests/tool_parsers/__init__.py",
    "tests/tool_parsers/conftest.py",
    "tests/tool_parsers/utils.py",
    "tests/reasoning/__init__.py",
    "tests/reasoning/utils.py",
    "tests/tool_use/__init__.py",
)

#: The streaming helpers of the tests, finished as vLLM's serving layer finishes a stream.
FINISHING_CONFTEST = '''"""The tests' streaming helpers, each finishing its stream as vLLM's serving layer does."""

import functools
import inspect

import tests.reasoning.utils as reasoning_utils
import tests.tool_parsers.utils as tool_utils


def finish(parser):
    """What vLLM's serving layer sends at the end of a reply: an engine-based parser's flush."""
    flush = getattr(parser, "finish_streaming", None)
    if flush is None or not getattr(parser, "engine_based_streaming", False):
        return None
    return flush()


def _finishing_reconstructor(helper):
    @functools.wraps(helper)
    def run(parser, *args, **kwargs):
        reconstructor = helper(parser, *args, **kwargs)
        delta = finish(parser)
        if delta is not None:
            reconstructor.append_delta(delta)
        return reconstructor

    return run


tool_utils.run_tool_extraction_streaming = _finishing_reconstructor(tool_utils.run_tool_extraction_streaming)
reasoning_utils.run_reasoning_extraction_streaming = _finishing_reconstructor(
    reasoning_utils.run_reasoning_extraction_streaming
)


def _finishing_list(helper, parser_at):
    @functools.wraps(helper)
    def run(*args, **kwargs):
        parser = inspect.signature(helper).bind(*args, **kwargs).arguments[parser_at]
        deltas = helper(*args, **kwargs)
        delta = finish(parser)
        if delta is not None:
            last = deltas[-1][1] if deltas and isinstance(deltas[-1], tuple) else None
            deltas.append((delta, last) if deltas and isinstance(deltas[-1], tuple) else delta)
        return deltas

    return run


def _finishing_generator(helper, parser_at):
    @functools.wraps(helper)
    def run(*args, **kwargs):
        parser = inspect.signature(helper).bind(*args, **kwargs).arguments[parser_at]
        yield from helper(*args, **kwargs)
        delta = finish(parser)
        if delta is not None:
            yield delta

    return run


def pytest_collection_modifyitems(items):
    done = set()
    for item in items:
        module = item.module
        if module in done:
            continue
        done.add(module)
        if hasattr(module, "_simulate_streaming"):  # test_hermes_tool_parser
            module._simulate_streaming = _finishing_list(module._simulate_streaming, "parser")
        if hasattr(module, "stream_delta_message_generator"):  # test_qwen3coder_tool_parser
            module.stream_delta_message_generator = _finishing_generator(
                module.stream_delta_message_generator, "qwen3_tool_parser"
            )
        streaming = getattr(module, "TestStreamingExtraction", None)  # test_gemma4_tool_parser
        if streaming is not None and hasattr(streaming, "_simulate_streaming"):
            streaming._simulate_streaming = _finishing_list(streaming._simulate_streaming, "parser")
'''

REGISTER = "from codec.integrations.vllm import register as _codec_register\n_codec_register()\n"

#: The added tokens of each model family's tokenizer the tests load: (special, the first of them its
#: end of sequence; plain). Special ones
#: are dropped from decoded text with ``skip_special_tokens``; plain ones (Qwen's ``<think>``,
#: ``<tool_call>``) are kept.
QWEN = (("<|im_end|>", "<|endoftext|>", "<|im_start|>"), ("<tool_call>", "</tool_call>", "<think>", "</think>"))
DEEPSEEK_R1_DISTILL = (
    ("<｜end▁of▁sentence｜>", "<｜begin▁of▁sentence｜>", "<｜User｜>", "<｜Assistant｜>"),
    ("<think>", "</think>"),
)
GEMMA4 = (
    (
        *("<eos>", "<bos>", "<|turn>", "<turn|>", "<|channel>", "<channel|>", "<|tool>", "<tool|>"),
        *("<|tool_call>", "<tool_call|>", "<|tool_response>", "<tool_response|>", '<|"|>'),
    ),
    (),
)
GPT2 = (("<|endoftext|>",), ())

#: The tokenizers the tests load from the model hub, by the name they give, and the added tokens
#: of each. The hub is out of reach here, so each gets a stand-in in the test tree, under that
#: name as a local folder (vLLM's and transformers' loaders take a path that exists as local):
#: a byte-level BPE trained on the test files themselves (so that their texts split into tokens
#: of several characters, as a real vocabulary splits them), with the family's added tokens.
#: Token ids differ from the real model's; a test that depends on them is a stub difference.
STAND_INS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "Qwen/Qwen3-32B": QWEN,
    "Qwen/Qwen3-0.6B": QWEN,
    "Qwen/Qwen3.5-397B-A17B": QWEN,
    "Qwen/Qwen3-4B-Thinking-2507": QWEN,
    "Qwen/Qwen3-Coder-30B-A3B-Instruct-FP8": QWEN,
    "deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B": DEEPSEEK_R1_DISTILL,
    "google/gemma-4-E2B-it": GEMMA4,
    "openai-community/gpt2": GPT2,
}


#: Why a test vLLM's parsers pass fails with codec's (finished as vLLM's serving layer finishes a
#: stream), by a piece of the test's id: ``policy`` (codec answers otherwise on purpose: README,
#: "Serving with vLLM"), ``stub`` (the test depends on more than a parser: a stub tokenizer, an
#: internal of vLLM's parser, token strings passed for ids) or ``bug`` (codec's to fix). The
#: first piece found in the id names the reason; a difference none explains is reported as such.
DIFFERENCES: tuple[tuple[str, str, str], ...] = (
    ("invalid_json", "policy", "a truncated hermes call is recovered, marked damaged"),
    ("TestBareAndMalformedOpeners", "policy", "a gemma4 call with no argument braces stays text"),
    ("test_text_before_tool_call", "policy", "the whitespace before a call stays in the content"),
    ("structural_tag", "policy", "forced calls and strict tools are constrained by codec's grammar"),
    ("required_skips_structured_outputs", "policy", "forced calls are constrained by codec's grammar"),
    ("named_skips_structured_outputs", "policy", "forced calls are constrained by codec's grammar"),
    ("parallel_calls_streaming", "policy", "a chunk that ends a call and starts the next sends both"),
    ("tool_call_with_think_no_end", "policy", "the line breaks before the call that ends reasoning"),
    ("invalid_simple", "policy", "a closer with no opener and no prompt stays in the content"),
    ("invalid_complete", "policy", "a closer with no opener and no prompt stays in the content"),
    ("thinking_enabled", "policy", "is_reasoning_end reads the text, not enable_thinking"),
    ("deepseekr1_reasoning_parser::test_reasoning[new_line_streaming]", "policy", "the stream reads as whole"),
    ("shortest", "policy", "an empty reasoning block gives no reasoning (None), whole and streamed"),
    ("deepseekr1_reasoning_parser::test_reasoning[empty]", "policy", "an empty reply gives no reasoning"),
    ("without_think", "policy", "no reasoning marker and no prompt: content"),
    ("truncated_no_start_token", "policy", "no reasoning marker and no prompt: content"),
    ("no_think_end", "policy", "no reasoning marker and no prompt: content"),
    ("implicit_reasoning_end", "policy", "no reasoning marker and no prompt: content"),
    ("no_content_token", "policy", "no reasoning marker and no prompt: content"),
    ("no_reasoning_token", "policy", "no reasoning marker and no prompt: content"),
    ("test_regex_timeout_handling", "stub", "patches TOOL_CALL_REGEX, an internal of vLLM's parser"),
    ("skip_special_tokens_false", "stub", "its stub tokenizer has no added tokens (codec reads them)"),
    ("named_custom_tool_choice", "stub", "its stub tokenizer has no added tokens (codec reads them)"),
    ("test_reasoning[complete_reasoning", "stub", "passes token strings where ids go"),
    ("test_reasoning[think_no_end", "stub", "passes token strings where ids go"),
    ("test_gemma4_reasoning[empty]", "policy", "is_reasoning_end of an empty text: none read yet (False)"),
    (
        "gemma4_reasoning_parser::test_gemma4_reasoning[new_line_streaming]",
        "policy",
        "text before a gemma4 block, no tool parser: the block is content (no tools: prose or a call?)",
    ),
)


def why(test: str) -> tuple[str, str]:
    """The kind and reason :data:`DIFFERENCES` gives a differing test, or ("unexplained", "")."""
    for piece, kind, reason in DIFFERENCES:
        if piece in test:
            return kind, reason
    return "unexplained", ""


def stand_in_tokenizers(tree: Path) -> None:
    """A stand-in tokenizer per model the tests name (:data:`STAND_INS`), in ``tree``."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers

    corpus = [(tree / path).read_text() for path in TESTS]
    for name, (special, plain) in STAND_INS.items():
        tokenizer = Tokenizer(models.BPE())
        tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tokenizer.decoder = decoders.ByteLevel()
        alphabet = pre_tokenizers.ByteLevel.alphabet()
        trainer = trainers.BpeTrainer(vocab_size=4096, initial_alphabet=alphabet, show_progress=False)
        tokenizer.train_from_iterator(corpus, trainer)
        tokenizer.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in special])
        tokenizer.add_tokens([AddedToken(t, special=False, normalized=False) for t in plain])
        folder = tree / name
        folder.mkdir(parents=True, exist_ok=True)
        tokenizer.save(str(folder / "tokenizer.json"))
        config: dict[str, object] = {"tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": 131072}
        config["eos_token"] = special[0]
        (folder / "tokenizer_config.json").write_text(json.dumps(config))


def fetch(work: Path) -> Path:
    """vLLM's source release, downloaded into ``work`` once (pip reads its metadata from the
    source, which needs setuptools-rust and setuptools-scm and, for a CPU build that compiles
    nothing, VLLM_TARGET_DEVICE=empty)."""
    sdist = work / f"vllm-{VERSION}.tar.gz"
    if sdist.exists():
        return sdist
    work.mkdir(parents=True, exist_ok=True)
    pip = [sys.executable, "-m", "pip"]
    subprocess.run([*pip, "install", "--quiet", "setuptools-rust", "setuptools-scm"], check=True)
    env = dict(os.environ, VLLM_TARGET_DEVICE="empty", VLLM_VERSION_OVERRIDE=VERSION)
    command = [*pip, "download", f"vllm=={VERSION}", "--no-deps", "--no-binary", ":all:", "--no-build-isolation"]
    subprocess.run([*command, "--dest", str(work)], check=True, env=env)
    return sdist


def unpack(sdist: Path, tree: Path) -> None:
    """The test files and what they import, from the release into ``tree``."""
    wanted = {f"vllm-{VERSION}/{path}" for path in (*TESTS, *SUPPORT)}
    with tarfile.open(sdist) as archive:
        for member in archive.getmembers():
            if member.name in wanted:
                target = tree / member.name.split("/", 1)[1]
                target.parent.mkdir(parents=True, exist_ok=True)
                source = archive.extractfile(member)
                assert source is not None
                target.write_bytes(source.read())
    missing = [p for p in (*TESTS, *SUPPORT) if not (tree / p).exists()]
    if missing:
        raise SystemExit(f"not in vLLM {VERSION}'s source release: {', '.join(missing)}")


def point_at_codec(path: Path, lookups: tuple[tuple[str, str], ...]) -> None:
    """Change only the parser lookup of one test file to codec's parsers."""
    text = path.read_text()
    module = ast.parse(text)
    last_import = max(node.end_lineno or 0 for node in module.body if isinstance(node, ast.Import | ast.ImportFrom))
    rebinding = [REGISTER]
    for ours, codec_name in lookups:
        if ours.startswith('"'):
            pattern = rf"((?:get_tool_parser|get_reasoning_parser)\(\s*|^parser_name = ){re.escape(ours)}"
            text, count = re.subn(pattern, rf'\g<1>"{codec_name}"', text, flags=re.MULTILINE)
            if not count:
                raise SystemExit(f"{path}: no lookup of {ours}")
        else:
            rebinding.append("from vllm.tool_parsers import ToolParserManager as _codec_tool_parsers\n")
            rebinding.append(f'{ours} = _codec_tool_parsers.get_tool_parser("{codec_name}")\n')
    lines = text.splitlines(keepends=True)
    path.write_text("".join(lines[:last_import]) + "".join(rebinding) + "".join(lines[last_import:]))


def run(tree: Path, name: str) -> dict[str, str]:
    """Each test's outcome in one run (passed, failed, error, skipped)."""
    report = tree / f"{name}.xml"
    command = [sys.executable, "-m", "pytest", *TESTS, "-q", "-p", "no:cacheprovider", "-o", "addopts="]
    command += ["-n", "0", f"--junitxml={report}", "--rootdir", str(tree)]
    # The tests run in the tree: a relative PYTHONPATH (README's ``PYTHONPATH=.``) is made absolute
    # first, or the codec imported would be the installed one, not the checkout's.
    given = [str(Path(entry).resolve()) for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep) if entry]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tree), *given]))
    env["HF_HUB_OFFLINE"] = "1"
    subprocess.run(command, cwd=tree, env=env, check=False, stdout=subprocess.DEVNULL)
    outcomes: dict[str, str] = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        test = f"{case.get('classname')}::{case.get('name')}"
        kinds = {child.tag for child in case}
        outcome = "passed"
        for tag, word in (("skipped", "skipped"), ("error", "error"), ("failure", "failed")):
            if tag in kinds:
                outcome = word
        outcomes[test] = outcome
    return outcomes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/codec-vllm-suite"))
    parser.add_argument("--json", type=Path, help="write every test's outcomes here")
    args = parser.parse_args()
    sdist = fetch(args.work)
    results: dict[str, dict[str, str]] = {}
    for name in ("vllm", "codec", "codec_finished"):
        tree = args.work / name
        shutil.rmtree(tree, ignore_errors=True)
        unpack(sdist, tree)
        stand_in_tokenizers(tree)
        if name != "vllm":
            for path, lookups in TESTS.items():
                point_at_codec(tree / path, lookups)
        if name == "codec_finished":
            (tree / "conftest.py").write_text(FINISHING_CONFTEST)
        results[name] = run(tree, name)
    reached = sorted(t for t, o in results["vllm"].items() if o in ("passed", "failed"))
    print(f"{len(results['vllm'])} tests, {len(reached)} reach a parser")
    for name, outcomes in results.items():
        passed = sum(outcomes.get(t) == "passed" for t in reached)
        print(f"{name:>15}: {passed} / {len(reached)} passed")
    only_codec = [t for t in reached if results["vllm"][t] != "passed" and results["codec"].get(t) == "passed"]
    print(f"passing with codec and not with vLLM: {len(only_codec)}")
    differing = [t for t in reached if results["codec_finished"].get(t) != "passed"]
    kinds = [why(t)[0] for t in differing]
    print("differences:", ", ".join(f"{kinds.count(k)} {k}" for k in sorted(set(kinds))) or "none")
    for t in differing:
        kind, reason = why(t)
        print(f"  {results['codec'].get(t)}/{results['codec_finished'].get(t)}  {kind:>11}  {t}  ({reason})")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
