"""The vLLM plugin's registration side, which needs no vLLM: the entry point codec declares, a
module that stays cheap to import (vLLM only inside ``register``), and the names it registers.
The parsers themselves are tested against vLLM's own classes in ``test_vllm.py``."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import codec
from codec.integrations import vllm as plugin

ROOT = Path(__file__).resolve().parent.parent


def test_entry_point_and_extra_are_declared() -> None:
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")  # no tomllib before Python 3.11
    entry = '[project.entry-points."vllm.general_plugins"]\ncodec = "codec.integrations.vllm:register"\n'
    assert entry in text
    assert '\nvllm = ["vllm>=0.33,<0.34"]\n' in text


def test_importing_codec_and_the_plugin_does_not_import_vllm() -> None:
    code = "import sys, codec, codec.integrations.vllm; print('vllm' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "False"


def test_names_are_hyphen_free_and_one_per_format() -> None:
    names = [plugin.parser_name(name) for name in codec.formats()]
    assert all("-" not in name and name.startswith("codec_") for name in names)
    assert len(set(names)) == len(codec.formats())
    classes = [plugin.tool_class_name(name) for name in codec.formats()]
    assert len(set(classes)) == len(classes) and all(c.isidentifier() for c in classes)


def test_reasoning_formats_are_those_whose_replies_read_reasoning() -> None:
    reads_reasoning = {name for name in codec.formats() if codec.get_format(name).syntax().reasoning_open}
    assert reads_reasoning == plugin.REASONING_FORMATS


def test_every_registered_class_is_defined_in_the_parsers_module() -> None:
    """What ``register`` names, the parsers module defines (read from its source: importing it
    needs vLLM, and a format added without its classes fails only in vLLM's environment)."""
    source = (ROOT / "codec" / "integrations" / "vllm" / "parsers.py").read_text(encoding="utf-8")
    defined = {
        target.id
        for node in ast.parse(source).body
        if isinstance(node, ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    wanted = {plugin.tool_class_name(name) for name in codec.formats()}
    wanted |= {plugin.reasoning_class_name(name) for name in plugin.REASONING_FORMATS}
    assert sorted(wanted - defined) == []
