"""The pages' examples run, and the pictures they show exist.

Every ```python block of README.md and docs/ runs, in order, in one namespace per page (each page is a
script). Conventions in the pages, in HTML comments (neither GitHub nor mkdocs shows them):

* ``<!-- setup: what it stands for`` ... ``-->`` -- Python run where it stands, for what the reader brings
  (their ``df``, a CSV file the page reads). The code is on the lines after ``setup:``; ``-->`` closes it on a
  line of its own.
* ``<!-- not run: reason -->`` on the line before a fence -- that block is not run. Keep these few: prefer a
  setup that makes the example runnable.
* A statement whose comment names an error (``p["age"].mean()  # RefusedError: ...``) must raise that error.
* A block of ``>>>`` lines is a doctest: its outputs are compared (ELLIPSIS and NORMALIZE_WHITESPACE).

Each page runs in its own temporary directory with its own ledger file (``DPFRAME_LEDGER``), offline, with
seeded noise (:func:`dpframe.testing.seeded_noise`) so that the doctests' outputs are reproducible.
Expressions are shown as a notebook would (their ``repr`` is computed), so a broken ``repr`` fails too.
"""

from __future__ import annotations

import ast
import builtins
import doctest
import io
import re
import tokenize
import warnings
from dataclasses import dataclass
from pathlib import Path

import matplotlib
import pytest

import dpframe
from dpframe.testing import NotPrivateWarning, seeded_noise

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]

FENCE = re.compile(r"^(`{3,})\s*(\S*)")
NOT_RUN = re.compile(r"^<!--\s*not run:\s*\S.*-->\s*$")
EXPECTED_ERROR = re.compile(r"#\s*([A-Z]\w*Error)\b")
IMAGE = re.compile(r"!\[[^\]]*\]\(([^)\s]+)[^)]*\)|<img\s[^>]*src=\"([^\"]+)\"")


@dataclass(frozen=True)
class Block:
    """Code of a page: ``kind`` is "setup", "script", "doctest" or "not run"; ``line`` is its first line's."""

    kind: str
    code: str
    line: int


def blocks(text: str) -> list[Block]:
    """A page's setup comments and python blocks, in order."""
    lines = text.splitlines()
    found: list[Block] = []
    i = 0
    while i < len(lines):
        fence = FENCE.match(lines[i])
        if lines[i].startswith("<!-- setup:"):
            end = next(j for j in range(i, len(lines)) if "-->" in lines[j])
            assert lines[end].strip() == "-->", f"line {end + 1}: close a setup comment with --> on its own line"
            found.append(Block("setup", "\n".join(lines[i + 1 : end]), i + 2))
            i = end
        elif fence:
            end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith(fence.group(1)))
            if fence.group(2) == "python":
                code = "\n".join(lines[i + 1 : end])
                doctest_or_script = "doctest" if code.lstrip().startswith(">>>") else "script"
                found.append(Block("not run" if i and NOT_RUN.match(lines[i - 1]) else doctest_or_script, code, i + 2))
            i = end
        i += 1
    return found


def expected_error(statement: ast.stmt, source: list[str]) -> type[BaseException] | None:
    """The error a statement's comment says it raises (``# RefusedError``), from dpframe or the builtins."""
    lines = source[statement.lineno - 1 : statement.end_lineno]
    tokens = tokenize.generate_tokens(io.StringIO("\n".join(lines) + "\n").readline)
    named = EXPECTED_ERROR.search(" ".join(token.string for token in tokens if token.type == tokenize.COMMENT))
    if named is None:
        return None
    error = getattr(dpframe, named.group(1), None) or getattr(builtins, named.group(1), None)
    assert isinstance(error, type) and issubclass(error, BaseException), f"no error class {named.group(1)}"
    return error


def run_script(block: Block, namespace: dict[str, object], name: str) -> None:
    """Run a block statement by statement, as a reader pasting it into a notebook would."""
    source = block.code.splitlines()
    for statement in ast.parse(block.code).body:
        error = expected_error(statement, source)
        ast.increment_lineno(statement, block.line - 1)  # tracebacks point at the page's lines
        if error is not None:
            with pytest.raises(error):
                exec(compile(ast.Module([statement], []), name, "exec"), namespace)
        elif isinstance(statement, ast.Expr):
            repr(eval(compile(ast.Expression(statement.value), name, "eval"), namespace))
        else:
            exec(compile(ast.Module([statement], []), name, "exec"), namespace)


def run_doctest(block: Block, namespace: dict[str, object], name: str) -> None:
    test = doctest.DocTestParser().get_doctest(block.code, namespace, name, name, block.line - 1)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    report: list[str] = []
    runner.run(test, out=report.append, clear_globs=False)
    assert runner.failures == 0, "".join(report)


def _name(page: Path) -> str:
    return str(page.relative_to(ROOT))


EXAMPLE_PAGES = [page for page in PAGES if any(b.kind in ("script", "doctest") for b in blocks(page.read_text()))]


def test_the_pages_have_examples() -> None:
    assert {"README.md", "docs/index.md", "docs/plots.md", "docs/reading-answers.md"} <= set(map(_name, EXAMPLE_PAGES))


@pytest.mark.parametrize("page", EXAMPLE_PAGES, ids=_name)
def test_page_examples_run(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if _name(page) == "docs/dask.md":
        pytest.importorskip("dask.dataframe", reason="docs/dask.md needs the 'dask' extra")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DPFRAME_LEDGER", str(tmp_path / "ledger.sqlite"))
    namespace: dict[str, object] = {"__name__": "__main__"}
    try:
        with warnings.catch_warnings(), seeded_noise(2024):
            warnings.simplefilter("ignore", NotPrivateWarning)
            for block in blocks(page.read_text()):
                if block.kind == "doctest":
                    run_doctest(block, namespace, _name(page))
                elif block.kind != "not run":
                    run_script(block, namespace, _name(page))
    finally:
        plt.close("all")


def test_conventions() -> None:
    page = "\n".join([
        "<!-- setup: the reader's data", "x = 1", "-->",
        "```python", "y = x + 1", "```",
        "<!-- not run: a fragment -->", "```python", "f(...)", "```",
        "```python", ">>> y", "2", "```",
        "```bash", "echo", "```",
    ])
    assert [(b.kind, b.code, b.line) for b in blocks(page)] == [
        ("setup", "x = 1", 2), ("script", "y = x + 1", 5), ("not run", "f(...)", 9), ("doctest", ">>> y\n2", 12),
    ]
    namespace: dict[str, object] = {}
    run_script(Block("script", "z = 1\n[].pop()  # IndexError: expected\nz += 1", 1), namespace, "page")
    assert namespace["z"] == 2
    with pytest.raises(pytest.fail.Exception, match="DID NOT RAISE"):
        run_script(Block("script", "[1].pop()  # IndexError", 1), {}, "page")
    with pytest.raises(AssertionError, match=r"Expected:\s+3\s+Got:\s+2"):
        run_doctest(Block("doctest", ">>> 1 + 1\n3", 1), {}, "page")


def _shown(page: Path) -> list[Path]:
    return [page.parent / (m.group(1) or m.group(2)) for m in IMAGE.finditer(page.read_text())]


def test_every_picture_a_page_shows_exists() -> None:
    missing = [f"{_name(page)}: {image}" for page in PAGES for image in _shown(page) if not image.is_file()]
    assert not missing


def test_every_picture_is_shown() -> None:
    shown = {image.resolve() for page in PAGES for image in _shown(page)}
    assert {picture.resolve() for picture in (ROOT / "docs" / "img").iterdir()} <= shown
