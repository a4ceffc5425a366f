"""The recorded real-instrumentation files in tests/data/ingest/captured (no processes started):
llm_calls must hold exactly what the fake server saw, for every instrumentation."""

from __future__ import annotations

from pathlib import Path

import pytest

from spanrl.ingest.views import connect
from tests.ingest.conftest import ingest_captured, rows_of
from tests.ingest.test_real_instrumentation import CONVENTION, assert_holds_exchange

CAPTURED = Path(__file__).resolve().parents[1] / "data" / "ingest" / "captured"


@pytest.fixture(scope="module")
def captured(tmp_path_factory):
    data = tmp_path_factory.mktemp("captured")
    s, exchanges = ingest_captured(CAPTURED, data)
    assert (s.rejects, s.spans) == (0, 36) and s.logs == 16  # 4 instrumentations x 9 spans; openai-v2 events
    rows = {r["response_id"]: r for r in rows_of(connect(data), "SELECT * FROM llm_calls")}
    return rows, exchanges


def test_every_captured_call_matches_the_server(captured) -> None:
    rows, exchanges = captured
    assert len(rows) == len(exchanges) == 16
    for req, resp in exchanges:
        row = rows[resp["id"]]
        assert row["convention"] == CONVENTION[row["service_name"]]
        assert_holds_exchange(row, req, resp)
        assert row["agent_name"] == "weather-agent"
