"""``codec check``: exit status 0 when a template agrees with its format, 1 with a counterexample of
each check that fails or a check that found nothing to check, 2 on bad input; its ``--json``
report; the same conversations for a seed however codec is installed, and nothing left in the
working directory; and a one-byte edit of every reference template (``../shared``, when present)
caught with the first differing byte shown."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
from harness import deep, examples

import codec
from codec.cli import main
from codec.testing import check as check_module
from codec.testing import grammars
from codec.testing.check import CHECKS, check_template

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "chat_template.jinja"
SHARED = ROOT.parent / "shared"
#: The one byte the example template lacks (README, "Checking a template").
TYPO, FIXED = "'}\\n<tool_call>'", "'}\\n</tool_call>'"


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        status = main(["check", *argv])
    return status, out.getvalue(), err.getvalue()


@pytest.fixture
def fixed(tmp_path: Path) -> Path:
    text = EXAMPLE.read_text(encoding="utf-8")
    assert text.count(TYPO) == 1
    path = tmp_path / "fixed.jinja"
    path.write_text(text.replace(TYPO, FIXED), encoding="utf-8")
    return path


def test_the_agreeing_example_is_the_broken_one_with_its_byte_back() -> None:
    """``examples/hermes_template.jinja`` (README's Command line) is ``chat_template.jinja`` (README's
    "Checking a template") with the byte it lacks."""
    fixed = (ROOT / "examples" / "hermes_template.jinja").read_text(encoding="utf-8")
    assert fixed == EXAMPLE.read_text(encoding="utf-8").replace(TYPO, FIXED)
    assert len(fixed.encode()) == len(EXAMPLE.read_text(encoding="utf-8").encode()) + 1


def test_a_template_that_agrees_exits_0(fixed: Path) -> None:
    status, out, err = run(str(fixed), "-n", "25")
    assert (status, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == f"{fixed}: hermes (detected), 25 conversations per check, seed 0"
    assert [line.split(":")[0] for line in lines[1:]] == list(CHECKS.values())
    assert all(": ok (" in line for line in lines[1:])


def test_the_example_template_fails_at_its_missing_byte(fixed: Path) -> None:
    """The one-byte edit: exit 1, and the --json report's render counterexample shows the first
    differing byte with both texts around it (the human summary prints the same detail: see the
    README example, which test_readme runs)."""
    status, out, _ = run(str(EXAMPLE), "-n", "25", "--json")
    report = json.loads(out)
    assert status == 1
    assert set(report) == {"template", "detected", "verified", "format", "examples", "seed", "ok", "checks"}
    assert (report["format"], report["examples"], report["seed"], report["ok"]) == ("hermes", 25, 0, False)
    assert (report["template"], report["detected"], report["verified"]) == (str(EXAMPLE), True, False)
    assert list(report["checks"]) == list(CHECKS)
    for check in report["checks"].values():
        assert set(check) == {"ok", "generated", "checked", "skipped", "not_checked", "counterexample"}
    render = report["checks"]["render"]
    assert render["ok"] is False and render["counterexample"]["conversation"]["messages"]
    lines = render["counterexample"]["detail"].splitlines()
    difference = next(i for i, line in enumerate(lines) if line.startswith("first difference at offset"))
    assert lines[difference + 1].strip().startswith("template")
    assert lines[difference + 1].endswith("| 'tool_call><|im_end|>\\n'")
    assert lines[difference + 2].strip().startswith("hermes")
    assert lines[difference + 2].endswith("| '/tool_call><|im_end|>\\n'")
    assert not report["checks"]["round_trip"]["ok"] and not report["checks"]["grammar"]["ok"]
    status, out, _ = run(str(fixed), "-n", "10", "--json")
    assert status == 0 and json.loads(out)["ok"] is True


def test_the_same_seed_gives_the_same_counterexample() -> None:
    template, fmt = EXAMPLE.read_text(encoding="utf-8"), codec.get_format("hermes")
    reports = [check_template(template, fmt, examples=15, seed=7, checks=["render"]).as_json() for _ in range(2)]
    assert reports[0] == reports[1]
    assert reports[0]["checks"]["render"]["counterexample"] is not None


def test_a_check_draws_no_constant_from_local_source_files() -> None:
    """hypothesis harvests constants from the source of the loaded modules it deems local (codec's
    own in a checkout, none once installed) and now and then draws one: while a check runs the
    harvest is empty, so the same seed draws the same conversations however codec is installed;
    the caller's harvest is back afterwards."""
    from hypothesis.internal.conjecture import providers

    harvest = getattr(providers, "_get_local_constants", None)
    if harvest is None:
        pytest.skip("this hypothesis harvests no constants")
    with check_module._as_installed():
        empty = providers._get_local_constants()
        assert not (empty.strings or empty.integers or empty.floats or empty.bytes)
    assert providers._get_local_constants is harvest


def test_nothing_is_left_in_the_working_directory(tmp_path: Path) -> None:
    """No ``.hypothesis`` folder (hypothesis' example database, constants and Unicode tables)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    argv = [sys.executable, "-m", "codec", "check", "-n", "2", str(ROOT / "examples" / "hermes_template.jinja")]
    proc = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_tokenizer_config_of_named_templates(tmp_path: Path, fixed: Path) -> None:
    config = {"chat_template": [{"name": "default", "template": "{{ messages[0].content }}"}]}
    config["chat_template"].append({"name": "tool_use", "template": fixed.read_text(encoding="utf-8")})
    path = tmp_path / "tokenizer_config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    status, out, _ = run(str(path), "-n", "10")
    assert status == 0
    assert out.startswith(f"{path} [tool_use]: hermes (detected)")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["/nonexistent/template.jinja"], "No such file"),
        (["{{ messages }}"], "No such file"),
        (["-n", "0", "X"], "examples must be at least 1"),
        (["-f", "nope", str(EXAMPLE)], "nope"),
    ],
)
def test_bad_arguments_exit_2(argv: list[str], message: str) -> None:
    status, out, err = run(*argv)
    assert (status, out) == (2, "")
    assert err.startswith("codec: error: ") and message in err and err.count("\n") == 1


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("Hello {{ messages[0].content }}", "not a chat template of a known format"),
        ('{"bos_token": "<s>"}', 'no "chat_template"'),
        ('{"chat_template": 3}', '"chat_template" must be'),
    ],
)
def test_bad_templates_exit_2(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "t.jinja"
    path.write_text(text, encoding="utf-8")
    status, out, err = run(str(path))
    assert (status, out) == (2, "")
    assert message in err and err.count("\n") == 1


@pytest.mark.parametrize("text", ["{% if tools %}<tool_call>", "{% for m in messages %}{{ m.content }\n"])
@pytest.mark.parametrize("given", [True, False], ids=["given", "detected"])
def test_a_template_that_does_not_compile_exits_2(tmp_path: Path, text: str, given: bool) -> None:
    """With or without ``-f``, and markers of ours or not: the syntax error, not an unknown format."""
    path = tmp_path / "t.jinja"
    path.write_text(text, encoding="utf-8")
    status, _, err = run(str(path), *(["-f", "hermes"] if given else []))
    assert status == 2 and err.startswith("codec: error: template error (line 1): ")


RAISES = '{{ raise_exception("this template renders nothing") }}'


def test_checks_with_nothing_to_check_are_not_checked_and_the_run_does_not_pass() -> None:
    """A template that raises on every render: no reply to read, no prompt to decode. Those checks
    are not checked, with the reason, never ok."""
    checks = ["round_trip", "decode", "grammar"] if grammars.available() else ["round_trip", "decode"]
    report = check_template(RAISES, codec.get_format("hermes"), examples=3, checks=checks)
    assert not report.ok
    reason = "nothing to check in 3 conversations: the template raises: this template renders nothing"
    for check in report.checks:
        assert not check.ok and check.checked == 0 and check.counterexample is None
        assert check.not_checked == reason
        assert check.as_json()["ok"] is False and check.as_json()["not_checked"] == reason
    lines = report.summary().splitlines()
    assert lines == [f"{CHECKS[check.name]}: NOT CHECKED ({reason})" for check in report.checks]


def test_a_check_with_nothing_to_check_fails_the_command(tmp_path: Path) -> None:
    path = tmp_path / "raises.jinja"
    path.write_text(RAISES, encoding="utf-8")
    status, out, _ = run(str(path), "-f", "hermes", "-n", "3", "--json")
    report = json.loads(out)
    assert status == 1 and report["ok"] is False and report["verified"] is None
    assert [name for name, check in report["checks"].items() if check["not_checked"]] == [
        name for name in ("round_trip", "decode", "grammar") if name != "grammar" or grammars.available()
    ]


def _reference(fmt: codec.Format) -> str:
    for folder in (SHARED / "seeds", SHARED / "templates"):
        path = folder / fmt.reference_template
        if (SHARED / "seeds").is_dir() and path.resolve().is_file():
            return path.read_text(encoding="utf-8")
    pytest.skip(f"reference template {fmt.reference_template} is not available (../shared is absent)")


@pytest.mark.parametrize("name", codec.formats())
def test_every_reference_template_passes(name: str) -> None:
    fmt = codec.get_format(name)
    template = _reference(fmt)
    # At least ten conversations: a check passes only when it had something to check, and in fewer a
    # template may write no answered call turn at all (NOT CHECKED, which is not ok).
    assert check_template(template, fmt, examples=max(10, examples(30).max_examples), seed=0).ok


def _edited_formats() -> list[str]:
    """The formats whose reference template the one-byte edit is tried on: every one in the deep
    profile; by default the first of each wire family (the check and its report are the same code
    for all; that every template's markers are rendered exactly is test_render's)."""
    names = codec.formats()
    if deep():
        return names
    first: dict[str, str] = {}
    for name in names:
        first.setdefault(codec.get_format(name).wire.family, name)
    return sorted(first.values())


@pytest.mark.parametrize("name", _edited_formats())
def test_a_one_byte_edit_of_a_reference_template_fails(name: str) -> None:
    fmt = codec.get_format(name)
    template = _reference(fmt)
    # A typo in a marker: the last byte of the first stop token the template writes, dropped (not
    # one in a comment, which writes nothing); where it writes none (it writes eos_token, the
    # tokenizer's), of the first of the format's template markers it writes.
    comments = [m.span() for m in re.finditer(r"\{#.*?#\}", template, re.DOTALL)]
    marker, cut = next(
        (marker, at + len(marker) - 1)
        for marker in (fmt.stop_token, *fmt.template_markers)
        for at in (m.start() for m in re.finditer(re.escape(marker), template))
        if not any(a <= at < b for a, b in comments)
    )
    edited = template[:cut] + template[cut + 1 :]
    report = check_template(edited, fmt, examples=examples(300).max_examples, seed=0, checks=["render"])
    (render,) = report.checks
    assert render.counterexample is not None
    detail = render.counterexample.detail.splitlines()
    assert detail[1].startswith("first difference at offset")
    assert detail[2].strip().startswith("template") and detail[3].strip().startswith(name)
    last = marker[-1]
    assert detail[2].split(" | ", 1)[1][1] != last and detail[3].split(" | ", 1)[1][1] == last


def test_without_hypothesis_codec_imports_and_check_says_what_to_install() -> None:
    """hypothesis is the ``testing`` extra: ``import codec`` and the other commands never need it."""
    code = (
        "import sys; sys.modules['hypothesis'] = None\n"
        "import codec\n"
        "from codec.cli import main\n"
        "assert codec.get_format('hermes').parse('hi').content == 'hi'\n"
        f"sys.exit(main(['check', {str(EXAMPLE)!r}]))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == "codec: error: codec check needs hypothesis: pip install '.[testing]' from a checkout\n"
