"""The curator's operations from the command line: `dpframe serve --check`, `dpframe analyst add|rotate|remove|budget`
and `dpframe cap extend` on configs in tmp_path, and one running server that sees them without a restart.

Each edit keeps the config's comments, is refused (the file untouched, no file left beside it) when the new config
would not validate, replaces the file in one step with its permissions, and is recorded in the ledger without the
token or its hash.
"""

from __future__ import annotations

import io
import logging
import os
import stat
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
pytest.importorskip("tomlkit")

from test_service_server import TOKENS, count, error_of, launch, stop, write_files  # noqa: E402

from dpframe.__main__ import main  # noqa: E402
from dpframe.accounting.budget import Budget  # noqa: E402
from dpframe.accounting.ledger import Ledger  # noqa: E402
from dpframe.service.config import Config, load_config  # noqa: E402
from dpframe.service.tokens import hash_token  # noqa: E402

COMMENT = "# the curator's own note, kept by every edit\n"


def dpframe(*argv: str) -> tuple[int, str, str]:
    """``dpframe ARGV`` in this process: its exit code, stdout and stderr."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def config(tmp_path: Path) -> Path:
    """tests/test_service_server.py's config (a shared cap people over census, visits with its own zCDP cap; alice,
    bob, carol), with a comment of the curator's."""
    path = write_files(tmp_path)
    path.write_text(COMMENT + path.read_text(encoding="utf-8"), encoding="utf-8")
    return path


def ledger_of(config: Path) -> Ledger:
    return Ledger.at(config.parent / "ledger.sqlite")


def events(config: Path) -> list[tuple[str, str, str]]:
    frame = ledger_of(config).service_events()
    return list(zip(frame["event"], frame["subject"], frame["detail"], strict=True))


def leftovers(folder: Path) -> list[str]:
    """Files an edit could have left beside the config (its temporary file)."""
    return [path.name for path in folder.iterdir() if path.name.startswith(".service.toml")]


# -- dpframe serve --check ---------------------------------------------------------------------------------------
def test_check_prints_what_is_served_and_creates_no_ledger(config: Path) -> None:
    code, out, err = dpframe("serve", "--check", str(config))
    assert code == 0, err
    assert "dataset census: " in out and "under cap cap:people, privacy unit person_id" in out
    assert "dataset visits: " in out and "mock at ρ=0.05, not made yet" in out
    assert "cap cap:people: ε=2, δ=1e-06" in out and "cap dataset:visits: ρ=0.5" in out
    assert "analyst alice: census ε=1, δ=1e-07; visits ρ=0.25" in out and "analyst bob: visits ρ=0.25" in out
    assert "curator page: off" in out
    assert "not made yet: `dpframe serve` makes it" in out and not (config.parent / "ledger.sqlite").exists()
    # Warnings go to stderr and do not fail the check: people is oversubscribed by alice and carol alone, visits
    # only by its mock (0.25 + 0.25 + 0.05 over 0.5).
    assert code == 0 and err.count("dpframe serve: warning: ") == 2
    assert "the mock's cost (ρ=0.05) under the cap of dataset visits add up to ρ=0.55" in err


def test_check_counts_a_mock_in_the_cap_and_reports_a_kept_one(config: Path) -> None:
    text = config.read_text()
    config.write_text(text.replace('total = { rho = 0.5 }\n', 'total = { rho = 0.5 }\nmock = false\n'))
    ledger_of(config).keep_mock("census", "{}", None, "ε=0.2")
    code, out, err = dpframe("serve", "--check", str(config))
    assert code == 0
    assert "cap of dataset visits" not in err and "dataset visits: " in out and "no mock (mock = false)" in out
    assert "mock at ε=0.2, δ=1e-07, made " in out  # a tenth of people's cap, kept in the ledger
    assert "cap cap:people: ε=2, δ=1e-06; in the ledger: spent" not in out  # the ledger has no caps yet
    config.write_text(COMMENT + 'curator = { token_sha256 = "' + "f" * 64 + '" }\n' + text)
    assert "curator page: on" in dpframe("serve", "--check", str(config))[1]


def replace(config: Path, old: str, new: str) -> None:
    text = config.read_text()
    assert old in text
    config.write_text(text.replace(old, new, 1))


@pytest.mark.parametrize("old,new,expected", [
    ('path = "census.csv"', 'path = "nowhere.csv"', "datasets.census: cannot read {folder}/nowhere.csv: No such file"),
    ('schema = "census.schema.json"', 'schema = "visits.schema.json"', "datasets.census: the header of "),
    ('privacy_unit = "person_id"', 'privacy_unit = "who"', "datasets.census.privacy_unit: 'who' is not a column"),
    (f'token_sha256 = "{hash_token(TOKENS["carol"])}"', f'token_sha256 = "{TOKENS["carol"]}"',
     ("analysts.carol.token_sha256: not a SHA-256 (46 characters, not 64 hexadecimal digits): paste the "
      "token_sha256 line that `dpframe token` prints, never the token itself")),
    (f'token_sha256 = "{hash_token(TOKENS["carol"])}"', f'token_sha256 = "{hash_token(TOKENS["alice"])}"',
     "analysts.carol.token_sha256: the same as analysts.alice's"),
    ("[analysts.alice]", f'[curator]\ntoken_sha256 = "{hash_token(TOKENS["bob"])}"\n[analysts.alice]',
     "curator.token_sha256: the same as analysts.bob's"),
])
def test_check_finds_each_problem(config: Path, old: str, new: str, expected: str) -> None:
    before = config.read_bytes()
    replace(config, old, new)
    code, out, err = dpframe("serve", "--check", str(config))
    assert code == 2 and out == ""
    errors = [line for line in err.splitlines() if line.startswith("dpframe serve: error: ")]
    assert len(errors) == 1 and expected.format(folder=config.parent.resolve()) in errors[0]
    assert not (config.parent / "ledger.sqlite").exists() and before != config.read_bytes()
    # `dpframe serve` makes the same checks, and refuses to start.
    assert dpframe("serve", str(config))[0] == 2


def test_check_lists_every_problem_one_per_line(config: Path) -> None:
    replace(config, 'path = "census.csv"', 'path = "nowhere.csv"')
    replace(config, 'schema = "visits.schema.json"', 'schema = "census.schema.json"')
    code, _, err = dpframe("serve", "--check", str(config))
    errors = [line for line in err.splitlines() if line.startswith("dpframe serve: error: ")]
    assert code == 2 and len(errors) == 2
    assert "datasets.census: cannot read" in errors[0] and "datasets.visits: the header of" in errors[1]
    # Several fields' problems at once, each on its line.
    replace(config, f'token_sha256 = "{hash_token(TOKENS["carol"])}"', 'token_sha256 = "carol"')
    replace(config, f'token_sha256 = "{hash_token(TOKENS["alice"])}"', 'token_sha256 = "alice"')
    code, _, err = dpframe("serve", "--check", str(config))
    assert code == 2 and err.count("\n") == 2
    assert "analysts.alice.token_sha256: not a SHA-256" in err and "analysts.carol.token_sha256: not a SHA-256" in err


def test_check_refuses_a_ledger_above_the_config_and_writes_nothing(config: Path) -> None:
    ledger = ledger_of(config)
    people = Budget(epsilon=3.0, delta=1e-6, name="cap:people", ledger=ledger)  # raised there, not in the config
    people.allot("analyst:alice/dataset:census", epsilon=1.2, delta=1e-7)       # alice's too
    Budget(rho=0.5, name="dataset:visits", ledger=ledger).allot("analyst:bob/dataset:visits", rho=0.25)
    stored = (config.parent / "ledger.sqlite").stat()
    before = ledger.budgets()
    code, out, err = dpframe("serve", "--check", str(config))
    errors = [line for line in err.splitlines() if line.startswith("dpframe serve: error: ")]
    assert code == 2 and len(errors) == 2
    assert ("the ledger's cap cap:people has total ε=3, δ=1e-06, which the config's ε=2, δ=1e-06 would lower"
            in errors[0]) and "dpframe cap extend" in errors[0]
    assert errors[1].startswith("dpframe serve: error: analysts.alice.budgets.census: the ledger's allotment "
                                "analyst:alice/dataset:census has total ε=1.2, δ=1e-07")
    assert "the server would answer alice on census with 503" in errors[1]
    assert ledger.budgets().equals(before) and len(ledger.service_events()) == 0
    assert (config.parent / "ledger.sqlite").stat().st_mtime_ns == stored.st_mtime_ns
    # Raised in the config, all is well: the summary shows the ledger's spending.
    replace(config, "total = { epsilon = 2.0, delta = 1e-6 }", "total = { epsilon = 3.0, delta = 1e-6 }")
    replace(config, "census = { epsilon = 1.0, delta = 1e-7 }", "census = { epsilon = 1.25, delta = 1e-7 }")
    code, out, err = dpframe("serve", "--check", str(config))
    assert code == 0, err
    assert "cap cap:people: ε=3, δ=1e-06; in the ledger: spent ε=0, δ=0, remaining ε=3, δ=1e-06" in out
    assert "visits ρ=0.25 (spent ρ=0)" in out


def test_check_needs_a_config() -> None:
    code, _, err = dpframe("serve", "--check", "/no/such/service.toml")
    assert code == 2 and "cannot read the config /no/such/service.toml" in err


# -- dpframe analyst ...
def test_analyst_add_writes_a_token_file_and_keeps_comments(config: Path) -> None:
    os.chmod(config, 0o640)
    inode = config.stat().st_ino
    token_file = config.parent / "dave.token"
    code, out, err = dpframe("analyst", "add", str(config), "dave", "--budget", "census=0.5,1e-7",
                             "--budget", "visits=rho:0.05", "--token-file", str(token_file))
    assert code == 0, err
    secret = token_file.read_text().strip()
    assert len(secret) == 43 and stat.S_IMODE(token_file.stat().st_mode) == 0o600 and secret not in out
    text = config.read_text()
    assert text.startswith(COMMENT) and f'token_sha256 = "{hash_token(secret)}"' in text
    dave = load_config(config).analysts["dave"]
    assert dave.budgets["census"].epsilon == 0.5 and dave.budgets["census"].delta == 1e-7
    assert dave.budgets["visits"].rho == 0.05
    # Replaced in one step (a new file), with the old one's permissions, and nothing left beside it.
    assert config.stat().st_ino != inode and stat.S_IMODE(config.stat().st_mode) == 0o640
    assert leftovers(config.parent) == []
    assert events(config) == [("analyst added", "analyst:dave", "budgets: census ε=0.5, δ=1e-07; visits ρ=0.05")]
    # Printed once when no file is given, with a note to pass it privately.
    code, out, _ = dpframe("analyst", "add", str(config), "erin", "--budget", "census=0.1")
    secret = out.splitlines()[-1]
    assert code == 0 and "over a private channel" in out.splitlines()[-2]
    assert load_config(config).analysts["erin"].token_sha256 == hash_token(secret)


@pytest.mark.parametrize("arguments,expected", [
    (["alice", "--budget", "census=0.5"], "analyst 'alice' already exists"),
    (["dave", "--budget", "nosuch=0.5"], "analysts.dave.budgets.nosuch: no such dataset"),
    (["dave", "--budget", "visits=0.5"], "an (epsilon, delta) budget under a zCDP (rho) cap"),
    (["dave", "--budget", "census=rho:0.5"], "a zCDP (rho) budget under an (epsilon, delta) cap"),
    (["dave", "--budget", "census=-1"], "budget 'census=-1': epsilon must be > 0, got -1.0"),
    (["dave", "--budget", "census=1,0.5,2"], "budget 'census=1,0.5,2': give DATASET=EPSILON[,DELTA] or DATASET=rho:RHO"),
    (["dave", "--budget", "census"], "give DATASET=EPSILON[,DELTA] or DATASET=rho:RHO"),
    (["dave", "--budget", "census=1", "--budget", "census=2"], "two budgets for dataset 'census'"),
    (["dave smith", "--budget", "census=0.5"], "names must be letters"),
])
def test_analyst_add_refuses_and_leaves_the_config_untouched(config: Path, arguments: list[str],
                                                             expected: str) -> None:
    before, inode = config.read_bytes(), config.stat().st_ino
    token_file = config.parent / "new.token"
    code, out, err = dpframe("analyst", "add", str(config), *arguments, "--token-file", str(token_file))
    assert code == 2 and expected in err and err.startswith("dpframe analyst add: error: "), err
    assert str(config) in err or "config" not in err.split("error: ", 1)[1][:6]  # named by its path, not a temp's
    assert config.read_bytes() == before and config.stat().st_ino == inode
    assert not token_file.exists() and leftovers(config.parent) == [] and out == ""
    assert not (config.parent / "ledger.sqlite").exists() or events(config) == []


def test_analyst_add_never_overwrites_a_token_file(config: Path) -> None:
    token_file = config.parent / "dave.token"
    token_file.write_text("someone else's\n")
    before = config.read_bytes()
    code, _, err = dpframe("analyst", "add", str(config), "dave", "--budget", "census=0.5", "--token-file",
                           str(token_file))
    assert code == 2 and "cannot create the token file" in err and "(it must be new)" in err
    assert token_file.read_text() == "someone else's\n" and config.read_bytes() == before


def test_an_invalid_config_is_not_edited(config: Path) -> None:
    replace(config, "max_contributions = 1", "max_contributions = 0")
    before = config.read_bytes()
    for arguments in (["analyst", "add", str(config), "dave", "--budget", "census=0.5"],
                      ["analyst", "rotate", str(config), "alice"], ["analyst", "remove", str(config), "alice"],
                      ["cap", "extend", str(config), "--cap", "people", "--epsilon", "3"]):
        code, out, err = dpframe(*arguments)
        assert code == 2 and "datasets.census.max_contributions" in err and out == ""
    assert config.read_bytes() == before and leftovers(config.parent) == []


def test_an_edit_never_undoes_another_made_meanwhile(config: Path) -> None:
    from dpframe.service.operations import OperationError, edit_config

    recorded = []

    def change(document: Any, _: Config) -> None:
        document["analysts"]["bob"]["token_sha256"] = "0" * 64
        config.write_text(config.read_text() + "# another edit, while this one runs\n")

    with pytest.raises(OperationError, match="changed while it was being edited"):
        edit_config(config, change, recorded.append)
    assert config.read_text().endswith("# another edit, while this one runs\n") and "0" * 64 not in config.read_text()
    assert recorded == [] and leftovers(config.parent) == []


def test_analyst_rotate_remove_and_budget(config: Path) -> None:
    old = hash_token(TOKENS["bob"])
    code, out, _ = dpframe("analyst", "rotate", str(config), "bob")
    secret = out.splitlines()[-1]
    assert code == 0 and load_config(config).analysts["bob"].token_sha256 == hash_token(secret) != old
    assert old.upper() not in config.read_text() and config.read_text().startswith(COMMENT)
    assert dpframe("analyst", "rotate", str(config), "nobody")[2].endswith(
        "error: no analyst 'nobody' in the config; analysts: alice, bob, carol\n")
    # Raising: never lowering, and a budget on another dataset may be given.
    code, out, _ = dpframe("analyst", "budget", str(config), "bob", "visits=rho:0.3", "census=0.25,1e-7")
    assert code == 0 and "visits ρ=0.25 -> ρ=0.3; census new ε=0.25, δ=1e-07" in out
    assert load_config(config).analysts["bob"].budgets["census"].epsilon == 0.25
    before = config.read_bytes()
    code, _, err = dpframe("analyst", "budget", str(config), "bob", "visits=rho:0.2")
    assert code == 2 and "would lower it" in err and config.read_bytes() == before
    code, _, err = dpframe("analyst", "budget", str(config), "bob", "census=0.25,1e-7")
    assert code == 2 and "nothing to raise" in err and config.read_bytes() == before
    # Removing: its table goes, its spending stays in the ledger.
    allotment = Budget(epsilon=2.0, delta=1e-6, name="cap:people", ledger=ledger_of(config)).allot(
        "analyst:carol/dataset:census", epsilon=1.5, delta=1e-7)
    code, out, _ = dpframe("analyst", "remove", str(config), "carol")
    assert code == 0 and "carol" not in load_config(config).analysts and "[analysts.carol]" not in config.read_text()
    assert Budget.open("analyst:carol/dataset:census", ledger=ledger_of(config)) is allotment
    assert [event[:2] for event in events(config)] == [
        ("token rotated", "analyst:bob"), ("budget raised", "analyst:bob"), ("analyst removed", "analyst:carol")]
    assert events(config)[2][2] == "budgets were: census ε=1.5, δ=1e-07; its spending stays in the ledger"
    # Added again, an analyst finds its allotments: a budget below them is refused (never lowered).
    before = config.read_bytes()
    code, _, err = dpframe("analyst", "add", str(config), "carol", "--budget", "census=1.0,1e-7")
    assert code == 2 and "allotment analyst:carol/dataset:census has total ε=1.5, δ=1e-07" in err
    assert "give at least that" in err and config.read_bytes() == before
    assert dpframe("analyst", "add", str(config), "carol", "--budget", "census=1.5,1e-7")[0] == 0
    # The ledger's record of the operations never holds a token or its hash.
    recorded = " ".join(" ".join(event) for event in events(config)).lower()
    assert secret.lower() not in recorded and hash_token(secret) not in recorded and old not in recorded


# -- dpframe cap extend --------------------------------------------------------------------------------------------
def test_cap_extend_raises_the_config_and_the_ledger_at_once(config: Path) -> None:
    people = Budget(epsilon=2.0, delta=1e-6, name="cap:people", ledger=ledger_of(config))
    code, out, err = dpframe("cap", "extend", str(config), "--cap", "people", "--epsilon", "3")
    assert code == 0, err
    assert "extended cap cap:people: ε=2, δ=1e-06 -> ε=3, δ=1e-06" in out
    assert "total = { epsilon = 3.0, delta = 1e-6 }" in config.read_text()  # delta kept, as written
    assert config.read_text().startswith(COMMENT)
    assert load_config(config).caps["people"].total.epsilon == 3.0 and float(people.total.epsilon) == 3.0
    assert people.events["event"].tolist() == ["created", "extended"]
    assert events(config) == [("cap extended", "cap:people", "total ε=2, δ=1e-06 -> ε=3, δ=1e-06")]
    # A dataset's own cap, by its dataset; the ledger has none yet: the server makes it at the config's total.
    code, out, _ = dpframe("cap", "extend", str(config), "--dataset", "visits", "--rho", "0.75")
    assert code == 0 and load_config(config).cap_total("visits").rho == 0.75
    assert events(config)[-1] == ("cap extended", "dataset:visits", "total ρ=0.5 -> ρ=0.75")


@pytest.mark.parametrize("arguments,expected", [
    (["--cap", "people", "--epsilon", "1.5"], "cap cap:people has total ε=2, δ=1e-06: ε=1.5, δ=1e-06 would lower it"),
    (["--cap", "people", "--epsilon", "3", "--delta", "0"], "would lower it in some part"),
    (["--cap", "people", "--rho", "3"], "cap cap:people is an (epsilon, delta) cap: extend it with the same kind"),
    (["--dataset", "visits", "--epsilon", "3"], "cap dataset:visits is a zCDP (rho) cap"),
    (["--dataset", "census", "--epsilon", "3"],
     "dataset census is under the shared cap 'people': extend it with --cap people"),
    (["--cap", "persons", "--epsilon", "3"], "no [caps.persons]; caps: people"),
    (["--cap", "people", "--epsilon", "2"], "cap cap:people is already ε=2, δ=1e-06: nothing to extend"),
    (["--cap", "people", "--epsilon", "-3"], "cap cap:people: epsilon must be > 0, got -3.0"),
    (["--cap", "people", "--epsilon", "2.5"], "the ledger's cap cap:people has total ε=2.75"),
])
def test_cap_extend_refuses_and_leaves_both_untouched(config: Path, arguments: list[str], expected: str) -> None:
    people = Budget(epsilon=2.0, delta=1e-6, name="cap:people", ledger=ledger_of(config))
    if expected.startswith("the ledger's"):
        people.extend(epsilon=2.75, delta=1e-6)  # raised in the ledger alone, above what is asked
    before, total = config.read_bytes(), people.total
    code, out, err = dpframe("cap", "extend", str(config), *arguments)
    assert code == 2 and expected in err and out == "", err
    assert config.read_bytes() == before and people.total == total and events(config) == []
    assert leftovers(config.parent) == []


def test_cap_extend_needs_one_cap_and_one_amount(config: Path) -> None:
    for arguments in (["--epsilon", "3"], ["--cap", "people"], ["--cap", "people", "--dataset", "visits", "--rho", "1"],
                      ["--cap", "people", "--epsilon", "3", "--rho", "1"]):
        with redirect_stderr(io.StringIO()), pytest.raises(SystemExit) as done:
            main(["cap", "extend", str(config), *arguments])
        assert done.value.code == 2


def test_a_cap_total_is_applied_while_running_once_the_ledger_has_it(config: Path,
                                                                     caplog: pytest.LogCaptureFixture) -> None:
    from dpframe.service.server import Service

    service = Service(config)
    replace(config, "total = { epsilon = 2.0, delta = 1e-6 }", "total = { epsilon = 3.0, delta = 1e-6 }")
    with caplog.at_level(logging.WARNING, logger="dpframe.service"):
        current = service.analysts.current()  # raised in the config alone: the next start raises the ledger's
    assert "restart `dpframe serve`" in caplog.text and current.caps["people"].total.epsilon == 2.0
    caplog.clear()
    Budget.open("cap:people", ledger=ledger_of(config)).extend(epsilon=3.0, delta=1e-6)
    config.write_text(config.read_text() + "# the ledger has it now\n")
    with caplog.at_level(logging.WARNING, logger="dpframe.service"):
        current = service.analysts.current()
    assert "restart" not in caplog.text and current.caps["people"].total.epsilon == 3.0
    replace(config, 'ledger = "ledger.sqlite"', 'ledger = "ledger.sqlite"\n[limits]\nburst = 3')
    with caplog.at_level(logging.WARNING, logger="dpframe.service"):
        current = service.analysts.current()  # anything else still needs a restart
    assert "restart `dpframe serve`" in caplog.text and current.limits.burst == 20


# -- a running server sees each operation without a restart ------------------------------------------------------
def test_a_running_server_sees_each_operation_without_a_restart(tmp_path: Path) -> None:
    server = launch(write_files(tmp_path))
    config, folder = str(server.config), tmp_path
    try:
        # A new analyst's token works at once.
        assert dpframe("analyst", "add", config, "dave", "--budget", "census=0.5,1e-7", "--token-file",
                       str(folder / "dave.token"))[0] == 0
        dave = (folder / "dave.token").read_text().strip()
        assert server.request("GET", "/v1/datasets", dave).json()["value"] == ["census"]
        # A rotated token: the old one is refused, the new one works.
        assert dpframe("analyst", "rotate", config, "bob", "--token-file", str(folder / "bob.token"))[0] == 0
        bob = (folder / "bob.token").read_text().strip()
        assert server.request("GET", "/v1/datasets", TOKENS["bob"]).status_code == 401
        assert server.request("GET", "/v1/datasets", bob).json()["value"] == ["visits"]
        # carol spends 1.5 of people's 2: alice's 0.75, within her own budget, is refused by the cap...
        spent = server.request("POST", "/v1/datasets/census/run", TOKENS["carol"], json=count("a" * 32, 1.5))
        assert spent.status_code == 200, spent.text
        refused = server.request("POST", "/v1/datasets/census/run", TOKENS["alice"], json=count("b" * 32, 0.75))
        assert refused.status_code == 400 and error_of(refused)["type"] == "BudgetExceededError"
        # ... and passes once the cap is extended, without a restart.
        assert dpframe("cap", "extend", config, "--cap", "people", "--epsilon", "3")[0] == 0
        passed = server.request("POST", "/v1/datasets/census/run", TOKENS["alice"], json=count("c" * 32, 0.75))
        assert passed.status_code == 200, passed.text
        assert float(Budget.open("cap:people", ledger=ledger_of(server.config)).spent.epsilon) == 2.25
        # A removed analyst is refused.
        assert dpframe("analyst", "remove", config, "dave")[0] == 0
        assert server.request("GET", "/v1/datasets", dave).status_code == 401
    finally:
        stop(server)
    log = server.log.read_text()
    assert "restart `dpframe serve`" not in log and "cannot be used" not in log
    assert [event for event, *_ in events(server.config)] == ["analyst added", "token rotated", "cap extended",
                                                              "analyst removed"]
