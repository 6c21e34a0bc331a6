"""What the wheel and the sdist ship beside the code: the license the metadata names, in full."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: The sha256 of the Apache License 2.0 as the Apache Software Foundation publishes it (LICENSE-2.0.txt).
APACHE_2_0 = "cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30"
PLACEHOLDER = "   Copyright [yyyy] [name of copyright owner]"
COPYRIGHT = "   Copyright 2026 The codec authors"


def test_license_is_the_apache_license_with_our_copyright_line() -> None:
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.count(COPYRIGHT + "\n") == 1
    standard = text.replace(COPYRIGHT + "\n", PLACEHOLDER + "\n")
    assert hashlib.sha256(standard.encode("utf-8")).hexdigest() == APACHE_2_0


def test_pyproject_ships_the_license() -> None:
    tomllib = pytest.importorskip("tomllib", reason="reading pyproject.toml needs Python 3.11's tomllib")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert project["project"]["license"] == "Apache-2.0"
    assert project["project"]["license-files"] == ["LICENSE"]
    assert "LICENSE" in project["tool"]["hatch"]["build"]["targets"]["sdist"]["include"]


def _project() -> dict:  # type: ignore[type-arg]
    tomllib = pytest.importorskip("tomllib", reason="reading pyproject.toml needs Python 3.11's tomllib")
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]  # type: ignore[no-any-return]


def test_readme_installs_the_extras_from_the_checkout() -> None:
    """codec is on no index: ``pip install "codec[vllm]"`` would ask one for another project."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    extras = _project()["optional-dependencies"]
    named = set(re.findall(r'pip install "\.\[([a-z,]+)\]"', readme))
    assert {"testing", "test", "vllm"} <= named and all(set(n.split(",")) <= set(extras) for n in named)
    assert not re.search(r"pip install ['\"]?codec\[", readme)


def test_the_testing_extra_runs_every_check() -> None:
    """``codec check``'s grammar check needs llguidance and tokenizers (codec.testing.grammars.available)."""
    testing = {re.split(r"[<>=!~ ]", requirement)[0] for requirement in _project()["optional-dependencies"]["testing"]}
    assert {"hypothesis", "llguidance", "tokenizers"} <= testing


def test_wheel_metadata_names_authors_and_classifiers() -> None:
    project = _project()
    assert project["authors"] and project["keywords"]
    versions = {c.rsplit(" :: ", 1)[1] for c in project["classifiers"] if re.fullmatch(r".* :: 3\.\d+", c)}
    assert min(versions, key=lambda v: tuple(map(int, v.split(".")))) == project["requires-python"].lstrip(">=")
