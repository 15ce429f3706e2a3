"""The README's two commands stay what .ci/run runs, and the demo runs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _commands() -> list[str]:
    return re.findall(r"```bash\n(.+?)\n```", (ROOT / "README.md").read_text())


def test_readme_has_exactly_two_setup_commands() -> None:
    commands = _commands()
    assert len(commands) == 2
    assert "dpframe demo" in commands[0]
    assert "pytest" in commands[1]


def test_ci_runs_the_readme_test_command() -> None:
    assert _commands()[1] in (ROOT / ".ci" / "run").read_text()


def test_demo_prints_answers_and_ledger(capsys: pytest.CaptureFixture[str]) -> None:
    from dpframe.__main__ import main

    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    assert "95% CI" in out and "remaining" in out and "parallel composition" in out
