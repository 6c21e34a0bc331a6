"""``codec.detect`` names ``hermes3`` for Hermes 3's ``tool_use`` template, alone or as it ships: a
``tokenizer_config.json`` whose ``chat_template`` lists a plain ``default`` and the ``tool_use`` one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import codec

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
CHATML = (
    "{{ bos_token }}{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content']"
    " + '<|im_end|>' + '\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)


def read(path: Path) -> str:
    if not path.is_file():
        pytest.skip(f"{path} is not available (../shared is absent)")
    return path.read_text(encoding="utf-8")


def test_the_template_and_its_config() -> None:
    template = read(SHARED / "templates" / "hermes3-tool-use.jinja")
    assert codec.detect(template) == "hermes3"
    named = [{"name": "default", "template": CHATML}, {"name": "tool_use", "template": template}]
    config = {"bos_token": "<|begin_of_text|>", "eos_token": "<|im_end|>", "chat_template": named}
    assert codec.detect(config) == "hermes3"
    assert codec.detect(json.dumps(config, indent=2)) == "hermes3"


def test_the_hermes_seed_is_still_hermes() -> None:
    assert codec.detect(read(SHARED / "seeds" / "hermes-json-pt.jinja")) == "hermes"


def test_replies_are_hermes() -> None:
    reply = codec.get_format("hermes3").render_reply(
        {"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": {"a": 1}}}]}
    )
    assert codec.detect_reply(reply)[0].format == "hermes"
