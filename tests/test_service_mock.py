"""A dataset's mock: made once by the curator (`dpframe mock`), charged to the dataset's cap, the same for every
analyst, free to download, and a local protected frame to rehearse a notebook on (`c.dataset(name, mock=True)`)."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from contextlib import redirect_stderr, redirect_stdout
from fractions import Fraction
from pathlib import Path

import pandas as pd
import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
httpx = pytest.importorskip("httpx")

import dpframe  # noqa: E402
from dpframe.__main__ import main  # noqa: E402
from dpframe.accounting.budget import Budget  # noqa: E402
from dpframe.accounting.ledger import Ledger  # noqa: E402
from dpframe.errors import BudgetExceededError, RemoteError  # noqa: E402
from dpframe.service.mock import MOCK_NOTES, MockInfo  # noqa: E402
from test_service_server import TOKENS, Server, error_of, launch, stop, write_files  # noqa: E402


def run_cli(*arguments: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(arguments))
    return code, out.getvalue(), err.getvalue()


def with_mocks(folder: Path, census: str = "", visits: str = "") -> Path:
    """The server tests' config, with the datasets' mock settings replaced by ``census``/``visits`` lines."""
    config = write_files(folder)
    text = config.read_text()
    text = text.replace('privacy_unit = "person_id"\n', f'privacy_unit = "person_id"\n{census}\n')
    text = text.replace("rows_public = true\n", f"rows_public = true\n{visits}\n")
    config.write_text(text)
    return config


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """census: a mock of 400 rows at ε=0.3; visits (zCDP cap): the default, a tenth of its cap."""
    config = with_mocks(tmp_path_factory.mktemp("mock"), 'mock = { epsilon = 0.3, delta = 1e-8, rows = 400 }')
    assert run_cli("mock", str(config))[0] == 0
    running = launch(config)
    yield running
    stop(running)


def connect(server: Server, who: str = "alice") -> dpframe.service.client.Connection:
    return dpframe.connect(server.url, token=TOKENS[who])


def test_the_mock_is_charged_once_to_the_cap_and_recorded(served: Server) -> None:
    ledger = Ledger.at(served.config.parent / "ledger.sqlite")
    people, visits = Budget.open("cap:people", ledger=ledger), Budget.open("dataset:visits", ledger=ledger)
    assert people.spent.epsilon.exact == Fraction(3, 10) and people.spent.delta.exact == Fraction(1, 10**8)
    assert visits.spent.rho.exact == Fraction(1, 20)  # a tenth of its cap, rho = 0.5
    events = ledger.service_events()
    assert events["event"].tolist() == ["mock made", "mock made"]
    assert sorted(events["subject"]) == ["dataset:census", "dataset:visits"]
    assert "400 rows, ε=0.3, δ=1e-08 charged to cap:people" in " ".join(events["detail"])
    # Made again only when asked: a second run charges nothing.
    code, out, _ = run_cli("mock", str(served.config))
    assert code == 0 and out.count("kept already") == 2
    assert Budget.open("cap:people", ledger=ledger).spent == people.spent


def test_every_analyst_gets_the_same_mock_with_the_schema_free(served: Server) -> None:
    with connect(served, "alice") as alice, connect(served, "carol") as carol:
        p = alice.dataset("census")
        before = p.dp.budget.spent
        mock = p.mock()
        assert_frame = pd.testing.assert_frame_equal
        assert_frame(mock, carol.mock("census"))  # cached: the same rows for every analyst
        assert list(mock.columns) == list(p.columns) and (mock.dtypes == p.dtypes).all()
        assert len(mock) == 400 and set(mock["sex"].dropna()) <= {"F", "M"}
        assert isinstance(mock.attrs["mock"], MockInfo) and mock.attrs["mock"].notes == MOCK_NOTES
        assert mock.attrs["mock"].cost == "ε=0.3, δ=1e-08" and mock.attrs["dp"].rows == 400
        assert p.dp.budget.spent == before  # downloading it charged nothing
        visits = alice.mock("visits")
        assert list(visits.columns) == ["person_id", "visits"] and str(visits["visits"].dtype) == "Int64"


def test_a_mock_of_a_derived_frame_is_refused_and_the_dataset_must_be_yours(served: Server) -> None:
    with connect(served, "bob") as bob:  # bob has visits only
        with pytest.raises(TypeError, match="mock\\(\\) is the dataset's"):
            bob.dataset("visits")[["visits"]].mock()
        with pytest.raises(RemoteError, match="no dataset 'census' for this analyst"):
            bob.mock("census")
    response = served.request("GET", "/v1/datasets/census/mock")
    assert response.status_code == 401


def test_a_rehearsal_runs_the_same_code_on_the_mock_under_what_remains(served: Server) -> None:
    """c.dataset(name, mock=True): a local protected frame of the mock, protected as the server protects the dataset
    (categories, privacy unit), under an in-memory budget of what remains: the same code runs on both."""
    def pipeline(p: dpframe.ProtectedFrame) -> list[object]:
        adults = p[p["age"] >= 30]
        return [type(adults.dp.count(epsilon=0.05)), type(p["age"].dp.mean(bounds=(0, 100), epsilon=0.05)),
                list(p.dp.crosstab("sex", "sex", epsilon=0.05).columns), type(p.dp.budget.spent)]

    with connect(served, "carol") as carol:
        remote = carol.dataset("census")
        spent = remote.dp.budget.spent
        rehearsal = carol.dataset("census", mock=True)
        assert isinstance(rehearsal, dpframe.ProtectedFrame)
        assert rehearsal.dp.budget.total == remote.dp.budget.remaining
        assert rehearsal.dp.budget.store.is_in_memory and rehearsal.dp.budget.name == "mock of census"
        on_mock = pipeline(rehearsal)
        assert remote.dp.budget.spent == spent  # the rehearsal spent nothing of carol's budget
        assert pipeline(remote) == on_mock
        assert rehearsal.dp.budget.spent.epsilon.exact == remote.dp.budget.spent.epsilon.exact - spent.epsilon.exact
        # The same refusals, with the same messages.
        messages = []
        for frame in (rehearsal, remote):
            with pytest.raises(dpframe.errors.RefusedError) as refused:
                frame["age"].mean()
            messages.append(str(refused.value))
        assert messages[0] == messages[1]


def test_no_mock_or_none_yet_is_a_clear_answer(tmp_path: Path) -> None:
    config = with_mocks(tmp_path, census="mock = false")
    code, _, err = run_cli("mock", str(config), "census")
    assert code == 2 and "census offer(s) no mock" in err
    code, _, err = run_cli("mock", str(config), "nowhere")
    assert code == 2 and "no dataset nowhere" in err
    server = launch(config)
    try:
        opted_out = server.request("GET", "/v1/datasets/census/mock", TOKENS["alice"])
        not_made = server.request("GET", "/v1/datasets/visits/mock", TOKENS["alice"])
        assert opted_out.status_code == not_made.status_code == 404
        assert "offers no mock" in error_of(opted_out)["message"]
        assert "dpframe mock" in error_of(not_made)["message"]
        with dpframe.connect(server.url, token=TOKENS["alice"]) as alice, \
                pytest.raises(RemoteError, match="is not made yet"):
            alice.dataset("visits", mock=True)
    finally:
        stop(server)
    ledger = Ledger.at(tmp_path / "ledger.sqlite")
    assert ledger.service_events().empty and Budget.open("cap:people", ledger=ledger).spent.epsilon == 0


def test_a_cap_that_cannot_cover_the_mock_charges_nothing(tmp_path: Path) -> None:
    config = with_mocks(tmp_path, census="mock = { epsilon = 2.5, delta = 1e-8 }")  # the cap is ε=2
    code, _, err = run_cli("mock", str(config), "census")
    assert code == 1 and "the mock of census was not made" in err
    ledger = Ledger.at(tmp_path / "ledger.sqlite")
    assert Budget.open("cap:people", ledger=ledger).spent.epsilon == 0 and ledger.kept_mock("census") is None


def test_made_again_charges_again_and_replaces_it(tmp_path: Path) -> None:
    config = with_mocks(tmp_path, census="mock = { epsilon = 0.2, delta = 1e-8, rows = 50 }")
    assert run_cli("mock", str(config), "census")[0] == 0
    ledger = Ledger.at(tmp_path / "ledger.sqlite")
    first = ledger.kept_mock("census")
    code, out, _ = run_cli("mock", str(config), "census", "--again")
    assert code == 0 and "made the mock of census: 50 synthetic rows" in out
    assert Budget.open("cap:people", ledger=ledger).spent.epsilon.exact == Fraction(2, 5)
    second = ledger.kept_mock("census")
    assert first is not None and second is not None and second[0] > first[0]
    assert json.loads(second[1])["cost"] == "ε=0.2, δ=1e-08"


def test_a_spent_budget_has_no_rehearsal(tmp_path: Path) -> None:
    config = with_mocks(tmp_path, census="mock = { epsilon = 0.2, delta = 1e-8, rows = 50 }")
    assert run_cli("mock", str(config), "census")[0] == 0
    server = launch(config)
    try:
        with dpframe.connect(server.url, token=TOKENS["alice"]) as alice:
            alice.dataset("census").dp.count(epsilon=1.0)
            with pytest.raises(BudgetExceededError, match="a rehearsal on its mock would refuse every query"):
                alice.dataset("census", mock=True)
            assert len(alice.mock("census")) == 50
    finally:
        stop(server)


NOTEBOOK = Path(__file__).resolve().parent.parent / "notebooks" / "16-mock-then-remote.ipynb"
MOCK_LINE = 'p = c.dataset("census", mock=True)  # develop on the mock; then: p = c.dataset("census")'


def run_notebook(cells: list[str]) -> dict[str, object]:
    """The notebook's code cells run in order in one namespace, as a kernel would (their displays aside)."""
    names: dict[str, object] = {"__name__": "__notebook__"}
    with redirect_stdout(io.StringIO()):
        for source in cells:
            exec(compile(source, str(NOTEBOOK), "exec"), names)  # noqa: S102  (the project's own notebook)
    return names


def test_the_notebook_runs_on_the_mock_then_remotely_by_changing_one_line() -> None:
    cells = ["".join(cell["source"]) for cell in json.loads(NOTEBOOK.read_text())["cells"]
             if cell["cell_type"] == "code"]
    assert sum(MOCK_LINE in source for source in cells) == 1
    on_mock = run_notebook(cells)
    remote_cells = [source.replace(MOCK_LINE, 'p = c.dataset("census")') for source in cells]
    remotely = run_notebook(remote_cells)
    assert isinstance(on_mock["p"], dpframe.ProtectedFrame)
    assert type(remotely["p"]).__name__ == "RemoteFrame"
    # Same cells, same charges: on the mock to the in-memory rehearsal budget, remotely to alice's real one.
    rehearsal, real = on_mock["p"].dp.budget, Ledger.at(Path(str(remotely["folder"])) / "ledger.sqlite")
    alice = Budget.open("analyst:alice/dataset:census", ledger=real)
    assert rehearsal.spent.epsilon.exact == alice.spent.epsilon.exact == Fraction(6, 5)
