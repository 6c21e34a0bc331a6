"""The ``llama3_2`` test profile: ``llama3_1``'s replies (its profile, reused), Llama 3.2's prompts,
whose date is today's where ``date_string`` is not given."""

from __future__ import annotations

import dataclasses
from typing import Any

from codec.formats.llama3_2 import today
from formats import Decode
from formats.llama3_1 import PROFILE as LLAMA3_1
from formats.llama3_1 import llama_normal_form


def decode_normal_form(case: dict[str, Any], text: str) -> dict[str, Any] | None:
    return llama_normal_form(case, date=today())


PROFILE = dataclasses.replace(LLAMA3_1, decode=Decode(normal_form=decode_normal_form))
