"""``codec grammar``: the grammar of a format's replies for a tools file, as ``Format.grammar`` builds it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import codec
from codec.cli import main

ROOT = Path(__file__).resolve().parent.parent
TOOLS = ROOT / "examples" / "tools.json"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize("fmt", codec.formats())
@pytest.mark.parametrize(
    ("options", "kwargs"),
    [
        ((), {}),
        (("--dialect", "gbnf", "--tool-choice", "required"), {"dialect": "gbnf", "tool_choice": "required"}),
        (("--dialect", "lark", "--no-parallel"), {"dialect": "lark", "parallel": False}),
    ],
)
def test_grammar_is_what_the_library_builds(
    capsys: pytest.CaptureFixture[str], fmt: str, options: tuple[str, ...], kwargs: dict[str, object]
) -> None:
    code, out, err = run(capsys, "grammar", "-f", fmt, "--tools", str(TOOLS), *options)
    tools = json.loads(TOOLS.read_text(encoding="utf-8"))
    assert (code, err) == (0, "")
    assert out == codec.get_format(fmt).grammar(tools, **kwargs)  # type: ignore[arg-type]


def test_tools_from_stdin_in_an_object(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    tools = json.loads(TOOLS.read_text(encoding="utf-8"))
    stdin = io.TextIOWrapper(io.BytesIO(json.dumps({"tools": tools}).encode()), encoding="utf-8")
    monkeypatch.setattr(sys, "stdin", stdin)
    code, out, _ = run(capsys, "grammar", "-f", "hermes", "--tools", "-")
    assert code == 0 and out == codec.get_format("hermes").grammar(tools)


@pytest.mark.parametrize(
    ("argv", "tools", "message"),
    [
        (("--dialect", "ebnf"), None, "invalid choice: 'ebnf'"),
        (("--tool-choice", "nope"), None, "'nope', which is not a declared tool"),
        (("--server", "tgi"), None, "invalid choice: 'tgi'"),
        (("--tool-choice", "required"), [], "at least one tool"),
        (
            (),
            [{"type": "function", "function": {"description": "no name"}}],
            "tools[0].function.name: Field required",
        ),
        ((), {"not": "tools"}, 'a "tools" key'),
        ((), "twice", "declared twice"),
    ],
)
def test_bad_input_is_one_line_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, argv: tuple[str, ...], tools: object, message: str
) -> None:
    path = TOOLS
    if tools is not None:
        path = tmp_path / "tools.json"
        declared = json.loads(TOOLS.read_text(encoding="utf-8"))
        path.write_text(json.dumps(declared + declared if tools == "twice" else tools), encoding="utf-8")
    code, out, err = run(capsys, "grammar", "-f", "hermes", "--tools", str(path), *argv)
    assert code == 2 and out == ""
    assert len(err.splitlines()) == 1 and err.startswith("codec: error: ") and message in err, err


def test_runs_as_a_command() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "codec", "grammar", "-f", "gemma4", "--tools", str(TOOLS), "--dialect", "gbnf"],
        capture_output=True,
        cwd=ROOT,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.decode("utf-8").splitlines()[1].startswith("root ::= ")


@pytest.mark.parametrize("fmt", codec.formats())
@pytest.mark.parametrize("server", ["vllm", "sglang", "llama.cpp"])
@pytest.mark.parametrize(
    ("options", "kwargs"),
    [
        ((), {}),
        (("--tool-choice", "required", "--no-parallel"), {"tool_choice": "required", "parallel": False}),
        (("--tool-choice", "none"), {"tool_choice": "none"}),
        (("--tool-choice", "search"), {"tool_choice": {"type": "function", "function": {"name": "search"}}}),
    ],
)
def test_server_fields_are_what_the_library_gives(
    capsys: pytest.CaptureFixture[str], fmt: str, server: str, options: tuple[str, ...], kwargs: dict[str, object]
) -> None:
    code, out, err = run(capsys, "grammar", "-f", fmt, "--tools", str(TOOLS), "--server", server, *options)
    tools = json.loads(TOOLS.read_text(encoding="utf-8"))
    assert (code, err) == (0, "")
    assert json.loads(out) == codec.get_format(fmt).request_fields(tools, server=server, **kwargs)  # type: ignore[arg-type]


def test_keywords_left_out_are_warning_lines(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    properties = {"day": {"type": "string", "format": "date"}, "n": {"type": "number", "maximum": 3}}
    tools = [
        {"type": "function", "function": {"name": "book", "parameters": {"type": "object", "properties": properties}}}
    ]
    path = tmp_path / "tools.json"
    path.write_text(json.dumps(tools), encoding="utf-8")
    for extra in ((), ("--server", "llama.cpp")):
        code, out, err = run(capsys, "grammar", "-f", "hermes", "--tools", str(path), *extra)
        assert code == 0 and out
        assert err == (
            "warning: the hermes grammar does not constrain these schema keywords (values may break them): "
            "book.day: format; book.n: maximum\n"
        )
