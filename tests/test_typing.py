"""User code type-checks against dpframe: ``mypy --strict`` on the small programs in ``tests/typecheck/``.

``revealed.py`` must pass, with mypy revealing on each line the type its
comment names (``revealed: <type>``), and it also runs, giving values of those
types. Every other file has one mistake a user could make, marked
``error: <code>``, and mypy must report exactly that error there (its
explanatory notes aside). One mypy run checks all the files (pandas-stubs
makes a cold run take seconds), with its cache in a temporary folder and the
working directory outside the repository, so dpframe is found the way a
user's mypy finds it: installed. mypy reads pandas-stubs, never the installed
pandas, so the pandas 2.2 run checks the same thing (the programs also pass
with pandas-stubs 2.2).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import re
import sys
from pathlib import Path
from typing import Any

import pytest

FILES = Path(__file__).parent / "typecheck"
PROGRAMS = sorted(FILES.glob("*.py"))
# mypy's lines, e.g. "…/revealed.py:9: note: Revealed type is "…"" and "…/x.py:8: error: … [attr-defined]".
REVEALED = re.compile(r'^(?P<file>[^:]+):(?P<line>\d+): note: Revealed type is "(?P<type>.*)"$')
NOTE = re.compile(r"^(?P<file>[^:]+):(?P<line>\d+): note: ")
ERROR = re.compile(r"^(?P<file>[^:]+):(?P<line>\d+): error: .*\[(?P<code>[a-z-]+)\]$")
EXPECTED = re.compile(r"#\s*(?P<kind>revealed|error):\s*(?P<value>.+?)\s*$")


def _installed(distribution: str) -> bool:
    try:
        importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


@pytest.fixture(scope="module")
def mypy_output(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    """mypy's output lines for each program (by file name), from one ``--strict`` run over them all."""
    api = pytest.importorskip("mypy.api", reason="mypy (in the 'test' extra) is not installed")
    if not _installed("pandas-stubs"):
        pytest.skip("pandas-stubs (in the 'test' extra) is not installed: without it pandas is untyped")
    outside = tmp_path_factory.mktemp("mypy")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(outside)  # not the repository: dpframe must be found where it is installed
        stdout, stderr, _ = api.run([
            "--strict", "--config-file", "", "--cache-dir", str(outside / "cache"), "--show-error-codes",
            "--no-error-summary", "--hide-error-context", "--no-pretty", *map(str, PROGRAMS),
        ])
    assert not stderr, stderr
    lines: dict[str, list[str]] = {program.name: [] for program in PROGRAMS}
    for line in stdout.splitlines():
        lines[Path(line.split(":", 1)[0]).name].append(line)  # only the programs may be reported on
    return lines


def _expected(program: Path) -> tuple[dict[int, str], set[tuple[int, str]]]:
    """The ``# revealed:`` types by line, and the ``# error:`` (line, code) pairs, written in ``program``."""
    revealed: dict[int, str] = {}
    errors: set[tuple[int, str]] = set()
    for number, text in enumerate(program.read_text().splitlines(), start=1):
        found = EXPECTED.search(text)
        if found is None:
            continue
        if found["kind"] == "revealed":
            revealed[number] = found["value"]
        else:
            errors.add((number, found["value"]))
    return revealed, errors


def test_the_revealed_types_are_the_types_at_run_time() -> None:
    """The annotations are true: run ``revealed.py`` and check each revealed value's class."""
    program = FILES / "revealed.py"
    revealed, _ = _expected(program)
    values: dict[int, Any] = {}

    def reveal_type(value: Any) -> Any:
        values[sys._getframe(1).f_lineno] = value
        return value

    exec(compile(program.read_text(), str(program), "exec"), {"reveal_type": reveal_type, "__name__": "revealed"})
    assert sorted(values) == sorted(revealed)
    for line, name in revealed.items():
        path = re.sub(r"\[.*\]$", "", name)  # the class, without type arguments
        module, _, cls = path.rpartition(".")
        assert isinstance(values[line], getattr(importlib.import_module(module or "builtins"), cls)), (line, name)


def test_the_programs_say_what_they_expect() -> None:
    assert [p.name for p in PROGRAMS if not any(_expected(p))] == []
    assert sum(bool(_expected(p)[0]) for p in PROGRAMS) == 1  # revealed.py; the others have one mistake each
    assert all(len(_expected(p)[1]) == 1 for p in PROGRAMS if p.name != "revealed.py")


@pytest.mark.parametrize("program", PROGRAMS, ids=[p.stem for p in PROGRAMS])
def test_mypy_strict_on_user_code(program: Path, mypy_output: dict[str, list[str]]) -> None:
    revealed, errors = _expected(program)
    lines = mypy_output[program.name]
    got_revealed = {int(m["line"]): m["type"] for m in map(REVEALED.match, lines) if m}
    got_errors = {(int(m["line"]), m["code"]) for m in map(ERROR.match, lines) if m}
    assert got_revealed == revealed, "\n".join(lines)
    assert got_errors == errors, "\n".join(lines)
    unexplained = [line for line in lines if not (NOTE.match(line) or ERROR.match(line))]
    assert unexplained == []
