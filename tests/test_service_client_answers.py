"""The analyst's client reads the server's answers whatever their size: a released answer is charged already."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

httpx = pytest.importorskip("httpx")
pytest.importorskip("pydantic")

from dpframe.service import wire  # noqa: E402
from dpframe.service.client import Connection  # noqa: E402


def test_an_answer_with_more_cells_than_a_plans_table_may_hold_is_read() -> None:
    """A synthetic frame of 150,000 cells (a plan's public tables are capped at wire.MAX_CELLS = 100,000)."""
    synthetic = pd.DataFrame(np.arange(150_000).reshape(30_000, 5), columns=list("abcde"))
    assert synthetic.size > wire.MAX_CELLS
    sent: list[str] = []

    def server(request: httpx.Request) -> httpx.Response:
        sent.append(request.method)
        value = wire.encode(synthetic) if request.method == "POST" else {"columns": ["a"]}
        return httpx.Response(200, content=json.dumps({"value": value}))

    p = Connection("http://127.0.0.1:1", token="t", transport=httpx.MockTransport(server)).dataset("census")
    answer = p.dp.synthesize(epsilon=0.4)
    assert sent == ["GET", "POST"]
    pd.testing.assert_frame_equal(answer, synthetic)
