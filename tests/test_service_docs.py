"""docs/server.md's "Setting up a service, step by step", run as a curator would type it: its commands in a new
folder holding only the data, then `dpframe serve`, then the analyst's code against it -- on the mock, and on the
real data with `mock=True` deleted."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from contextlib import redirect_stdout
from fractions import Fraction
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
pytest.importorskip("httpx")
pytest.importorskip("tomlkit")

import dpframe  # noqa: E402
from dpframe.__main__ import readme_census  # noqa: E402
from dpframe.accounting.budget import Budget  # noqa: E402
from dpframe.accounting.ledger import Ledger  # noqa: E402
from test_service_server import launch, stop  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SECTION = "## Setting up a service, step by step"
SERVE = "dpframe serve service.toml"


def section() -> str:
    page = (ROOT / "docs" / "server.md").read_text(encoding="utf-8")
    start = page.index(SECTION)
    return page[start:page.index("\n## ", start + len(SECTION))]


def commands(text: str) -> list[str]:
    """The console blocks' commands (``$ `` lines, with the lines of a here-document after them), in order."""
    found: list[str] = []
    for block in re.findall(r"```console\n(.*?)```", text, flags=re.S):
        for line in block.splitlines():
            if line.startswith("$ "):
                found.append(line[2:])
            elif found:
                found[-1] += "\n" + line  # a here-document's body and its end marker
    return found


def test_the_curator_sets_up_a_service_from_the_docs_alone(tmp_path: Path) -> None:
    readme_census().to_csv(tmp_path / "census.csv", index=False)
    typed = commands(section())
    assert [line.split()[:2] for line in typed] == [
        ["dpframe", "schema"], ["cat", ">"], ["dpframe", "analyst"], ["dpframe", "analyst"], ["dpframe", "serve"],
        ["dpframe", "mock"], ["dpframe", "serve"]]
    assert typed[-1].startswith(SERVE)
    # Steps 1-5 in a shell, `dpframe` being this interpreter's (as `pip install` puts it on the PATH).
    script = "set -euo pipefail\ndpframe() { \"$PYTHON\" -m dpframe \"$@\"; }\n" + "\n".join(typed[:-1]) + "\n"
    env = {**os.environ, "PYTHON": sys.executable,
           "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    done = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "made the mock of census" in done.stdout
    # Step 6 on a free port (the docs' default, 8000, may be taken on a test machine), then step 7.
    server = launch(tmp_path / "service.toml")
    try:
        code = re.findall(r"```python\n(.*?)```", section(), flags=re.S)
        assert len(code) == 1 and "mock=True" in code[0]
        analyst = code[0].replace("http://127.0.0.1:8000", server.url)
        previous = os.getcwd()
        os.chdir(tmp_path)  # the analyst's token file is where the curator wrote it
        try:
            for source in (analyst, analyst.replace(", mock=True", "")):
                names: dict[str, object] = {}
                with redirect_stdout(io.StringIO()):
                    exec(compile(source, "docs/server.md", "exec"), names)  # noqa: S102  (the project's docs)
                budget = names["p"].dp.budget  # type: ignore[attr-defined]
                assert budget.spent.epsilon.exact == Fraction(3, 10)
        finally:
            os.chdir(previous)
    finally:
        stop(server)
    ledger = Ledger.at(tmp_path / "ledger.sqlite")
    alice = Budget.open("analyst:alice/dataset:census", ledger=ledger)
    assert alice.spent.epsilon.exact == Fraction(3, 10)  # the real run only: the rehearsal spent nothing
    assert Budget.open("dataset:census", ledger=ledger).spent.epsilon.exact == Fraction(8, 10)  # alice's and the mock's
    assert {"analyst added", "mock made"} <= set(ledger.service_events()["event"])
