"""The README's commands stay what .ci/run runs, the demo runs, and the curator service's commands work as written."""

from __future__ import annotations

import os
import re
import shlex
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _commands() -> list[str]:
    return re.findall(r"```bash\n(.+?)\n```", (ROOT / "README.md").read_text())


def test_readme_has_the_setup_and_service_commands() -> None:
    commands = _commands()
    assert len(commands) == 4
    assert "dpframe demo" in commands[0]
    assert "pytest" in commands[1]
    assert "dpframe serve" in commands[2] and "dpframe remote-demo" in commands[3]


def test_ci_runs_the_readme_test_command() -> None:
    assert _commands()[1] in (ROOT / ".ci" / "run").read_text()


def test_demo_prints_answers_and_ledger(capsys: pytest.CaptureFixture[str]) -> None:
    from dpframe.__main__ import main

    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    assert "95% CI" in out and "remaining" in out and "parallel composition" in out


def _readme_example() -> list[str]:
    """The lines of the README's first example after the one that makes ``p``, without their comments."""
    block = re.search(r"```python\n(.+?)\n```", (ROOT / "README.md").read_text(), re.S)
    assert block is not None
    lines = [line.split("#")[0].rstrip() for line in block.group(1).splitlines()]
    start = next(i for i, line in enumerate(lines) if line.startswith("p = df.dp.protect("))
    return lines[start + 1 :]


def test_the_remote_demo_runs_the_readme_example() -> None:
    from dpframe.service.cli import README_EXAMPLE

    assert list(README_EXAMPLE) == _readme_example()


def test_the_remote_demos_transcript_of_a_local_frame_refuses_only_the_exact_read() -> None:
    """The same lines on a local protected frame: only the README's refusal, as remotely."""
    import io

    import dpframe
    from dpframe.__main__ import readme_census
    from dpframe.service.cli import run_example
    from dpframe.testing import seeded_noise

    out = io.StringIO()
    with seeded_noise(3):
        run_example(readme_census().dp.protect(epsilon=3.5, delta=1e-6, ledger=dpframe.Ledger.in_memory()), out)
    text = out.getvalue()
    assert text.count("RefusedError") == 1 and "RefusedError: ProtectedSeries.mean is refused" in text
    assert re.search(r">>> p\.dp\.sample\(0\.1\)\.dp\.count\(epsilon=0\.5\)\n\d+ \(95% CI", text)
    assert "\nBudget(ε=3.5, δ=1e-06): spent" in text


def _run(command: str, port: int) -> list[str]:
    """A README command as a subprocess's arguments: this interpreter for the venv's, the test's port for 8000."""
    words = shlex.split(command.replace("127.0.0.1:8000", f"127.0.0.1:{port}"))
    assert words[0] == ".venv/bin/python"
    return [sys.executable, *words[1:]]


def test_the_readme_service_commands_serve_the_example_and_answer_it_remotely(tmp_path: Path) -> None:
    """The README's service commands as written (the venv and the install are this test run's): write the example,
    serve it on a free port, run the remote demo against it in a second process, and see the answers."""
    for module in ("fastapi", "uvicorn", "httpx"):
        pytest.importorskip(module)
    from test_service_server import free_port

    setup, remote = _commands()[2:]
    venv, install, example, serve = setup.split(" && ")
    assert venv == "python3 -m venv .venv" and install == '.venv/bin/pip install -e ".[server]"'
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    written = subprocess.run(_run(example, port), cwd=tmp_path, env=env, capture_output=True, text=True,
                             timeout=300)
    assert written.returncode == 0, written.stderr
    assert remote.split()[-1] in written.stdout  # it names the token file the README's next command reads
    log = tmp_path / "server.log"
    with open(log, "wb") as log_file:
        server = subprocess.Popen([*_run(serve, port), "--port", str(port)], cwd=tmp_path, env=env,
                                  stdout=log_file, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 120
        while True:
            assert server.poll() is None, log.read_text()
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, log.read_text()
                time.sleep(0.2)
        demo = subprocess.run(_run(remote, port), cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=600)
    finally:
        server.terminate()
        server.wait(timeout=60)
    assert demo.returncode == 0, demo.stderr
    out = demo.stdout
    for line in _readme_example():
        assert f">>> {line}\n" in out
    # Answers with their intervals, the README's refusal, the refusal of what is local-only, and the analyst's budget.
    assert out.count("95% CI") >= 4 and "parallel composition" in out
    assert "RefusedError: ProtectedSeries.mean is refused" in out
    assert re.search(r">>> p\.dp\.sample\(0\.1\)\.dp\.count\(epsilon=0\.5\)\n-?\d+ \(95% CI", out)
    assert out.count("RefusedError") == 1 and "BudgetExceededError" not in out and "Traceback" not in demo.stderr
    assert re.search(r"BudgetView\(ε=3\.5, δ=1e-06\): spent ε=\S+, δ=\S+, remaining", out)
    # The synthetic frame (more cells than a plan's tables may hold) reached the analyst.
    assert re.search(r"\n\[\d+ rows x 7 columns\]\n", out)
