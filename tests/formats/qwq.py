"""The ``qwq`` test profile: qwen3's replies (hermes' calls after a think block: its profile, reused),
QwQ-32B's prompts (Qwen2.5's normal form, less the default system prompt, with reasoning cut
from the turns before the last)."""

from __future__ import annotations

import dataclasses
from typing import Any

from formats import Decode
from formats.qwen2_5 import normal_form_of
from formats.qwen3 import PROFILE as QWEN3


def _shown(content: Any, is_last: bool) -> Any:
    """The content an assistant turn writes: after its last ``</think>``, leading newlines removed, but the last."""
    return content if is_last else content.split("</think>")[-1].lstrip("\n")


def decode_normal_form(case: dict[str, Any], text: str) -> dict[str, Any] | None:
    return normal_form_of(case, unwritten=None, shown=_shown, empty="")


PROFILE = dataclasses.replace(QWEN3, decode=Decode(normal_form=decode_normal_form))
