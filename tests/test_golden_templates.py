"""The golden renders come from the reference templates recorded in ``golden_renders/templates.json``:
a template in ``../shared`` that differs from its record fails here, loudly, so that golden renders
made from one template are never taken for another's.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

import codec

GOLDEN = Path(__file__).resolve().parent / "golden_renders"
RECORD = GOLDEN / "templates.json"
SHARED = Path(__file__).resolve().parents[1].parent / "shared"
FORMATS = [name for name in codec.formats() if (GOLDEN / name).is_dir()]


def entries() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(RECORD.read_text(encoding="utf-8"))
    return data


def test_every_format_with_golden_renders_is_recorded() -> None:
    missing = sorted(set(FORMATS) - set(entries()))
    assert not missing, f"no template recorded for {', '.join(missing)}: run tests/golden_renders/make.py --record"
    for name, entry in entries().items():
        assert name in FORMATS, f"{RECORD.name} records {name}, which has no golden renders"
        assert set(entry) == {"template", "sha256", "renderer", "transformers"}
        assert len(entry["sha256"]) == 64 and entry["renderer"] == "codec.jinja"
        assert entry["transformers"] is None or isinstance(entry["transformers"], str)


@pytest.mark.parametrize("name", FORMATS)
def test_the_template_on_disk_is_the_recorded_one(name: str) -> None:
    if not SHARED.is_dir():
        pytest.skip(f"{SHARED} is absent: the templates cannot be checked against their record")
    entry = entries()[name]
    fmt = codec.get_format(name)
    seeds = SHARED / "seeds"
    used = seeds / fmt.reference_template
    if not used.is_file():
        used = SHARED / "templates" / fmt.reference_template
    path = SHARED / entry["template"]
    assert path.resolve() == used.resolve(), f"{name}: the record names {entry['template']}, the format uses {used}"
    if not path.is_file():
        pytest.skip(f"{path} is absent")
    found = hashlib.sha256(path.read_bytes()).hexdigest()
    assert found == entry["sha256"], (
        f"{name}: the reference template {entry['template']} changed: sha256 {found} on disk, "
        f"{entry['sha256']} recorded with its golden renders (transformers {entry['transformers']}); "
        "regenerate with make.py after checking the diff"
    )
