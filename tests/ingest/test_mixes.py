"""Recorded instrumentation mixes nobody had shown the lake before (issue 42; tests/data/ingest/mixes/,
recorded by its record.py with real libraries against the local fake OpenAI server): the Agents SDK under
OpenInference Agents + OpenInference OpenAI + OpenLLMetry + the GenAI instrumentation (the handoff's empty
arguments that stopped the night), parallel tool calls, a streamed run, content on one log record only,
content captured nowhere (OpenInference's ``__REDACTED__``), Pydantic AI under Logfire's OpenTelemetry.

Every mix goes into one lake (each with ids of its own, as tests/helpers/mutate.py makes them) and one
``spanrl ingest``. Per mix: one ``llm_calls`` row per model request the server answered; the tool calls the
model made, with their arguments, once each; every attempt a rollout; no AIR hit (every run is correct);
and where no carrier held the content, the calls are counted in ``coverage``, never given a made-up prompt.
"""

from __future__ import annotations

import json
import re
from collections import Counter

import pytest
from click.testing import CliRunner

from spanrl.cli import cli
from tests.helpers.mutate import ID_TOKENS, ROOT, _lines, _rewrite_ids

MIXES = ROOT / "tests" / "data" / "ingest" / "mixes"
NAMES = sorted(p.name for p in MIXES.glob("*/") if (p / "exchanges.json").is_file())
HIDDEN = {"content-hidden"}  # no carrier held the content: counted in coverage


def _case_id(text: str, case: int) -> str:
    return ID_TOKENS.sub(lambda m: f"{m.group(0)}c{case}", text)


@pytest.fixture(scope="module")
def lake(tmp_path_factory):
    from spanrl.query import connect

    data = tmp_path_factory.mktemp("mixes") / "data"
    (data / "otel").mkdir(parents=True)
    for case, name in enumerate(NAMES):
        for f in sorted((MIXES / name).glob("*.jsonl")):
            lines = _rewrite_ids(_lines(f), case)
            (data / "otel" / f"{f.stem}-{name}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    result = CliRunner().invoke(cli, ["ingest", "--data", str(data), "--settle", "0s", "--missing-reward", "zero"])
    assert result.exit_code == 0, result.output
    con = connect(data)
    yield con, result.output, data
    con.close()


def _rows(con, sql: str, params: list | None = None) -> list[dict]:
    rel = con.execute(sql, params or [])
    cols = [d[0] for d in rel.description]
    return [dict(zip(cols, r, strict=True)) for r in rel.fetchall()]


def _expected(name: str) -> tuple[list[str], Counter]:
    """The response ids the fake server gave (with this mix's case suffix) and the tool calls it made."""
    case = NAMES.index(name)
    exchanges = json.loads((MIXES / name / "exchanges.json").read_text())
    ids = sorted(_case_id(resp["id"], case) for _, resp in exchanges)
    calls = Counter((tc["function"]["name"], json.dumps(json.loads(tc["function"]["arguments"]), sort_keys=True))
                    for _, resp in exchanges for tc in resp["choices"][0]["message"].get("tool_calls") or [])
    return ids, calls


@pytest.mark.parametrize("name", NAMES)
def test_each_model_request_is_one_row_with_its_tool_calls(lake, name) -> None:
    con, *_ = lake
    ids, calls = _expected(name)
    rows = _rows(con, "SELECT trace_id, span_id, response_id, input_messages IS NULL AS hidden FROM llm_calls "
                      "WHERE list_contains(?, response_id) ORDER BY response_id", [ids])
    assert [r["response_id"] for r in rows] == ids  # every request once, none twice
    traces = sorted({r["trace_id"] for r in rows})
    if name in HIDDEN:  # nothing to read: each call counted, none with a prompt made of a marker
        assert all(r["hidden"] for r in rows)
        counted = _rows(con, "SELECT span_id FROM coverage WHERE missing_input AND missing_output "
                             "AND list_contains(?, trace_id)", [traces])
        assert sorted(c["span_id"] for c in counted) == sorted(r["span_id"] for r in rows)
        return
    assert not any(r["hidden"] for r in rows)
    got = Counter((t["tool_name"], json.dumps(json.loads(t["arguments"]), sort_keys=True))
                  for t in _rows(con, "SELECT tool_name, arguments FROM tool_calls WHERE list_contains(?, trace_id)",
                                 [traces]))
    assert got == calls


@pytest.mark.parametrize("name", NAMES)
def test_every_attempt_is_a_rollout_and_no_air_hit_on_a_correct_run(lake, name) -> None:
    con, *_ = lake
    case = NAMES.index(name)
    scenario = json.loads((MIXES / name / "scenario.json").read_text())
    rollouts = _rows(con, "SELECT rollout_id, task_id, n_llm_calls FROM rollouts WHERE task_id LIKE ? ORDER BY 1",
                     [f"{name}-%"])
    assert len(rollouts) == scenario["attempts"], rollouts
    assert all(re.fullmatch(rf"{name}-\d+-c{case}", r["task_id"]) for r in rollouts), rollouts
    per_attempt = len(scenario["script"])
    assert [r["n_llm_calls"] for r in rollouts] == [per_attempt] * scenario["attempts"]
    hits = _rows(con, "SELECT name FROM rewards WHERE source = 'air' AND list_contains(?, rollout_id)",
                 [[r["rollout_id"] for r in rollouts]])
    assert hits == []


def test_the_night_says_what_it_could_not_read(lake) -> None:
    _, output, _ = lake
    out = " ".join(output.split())
    assert "snapshot: written" in out
    assert "OPENINFERENCE_HIDE_INPUTS" in out  # the hidden mix's calls, with the switch that hid them
    assert "Traceback" not in out


def test_every_record_of_a_request_names_its_response_id(lake) -> None:
    """LangGraph (langgraph-react): OpenInference LangChain keeps the response id only inside LangChain's output
    (``llm_output.id``). Read, it ties that record to the server's span of the request (another trace, another
    process) by id; unread, a request served by ``spanrl serve`` was two rows when content alone could not pair
    them (seen on a live run with SmolLM2: 10 rows for 9 requests)."""
    con, *_ = lake
    ids, _ = _expected("langgraph-react")
    rows = _rows(con, "SELECT c.response_id FROM llm_calls_openinference AS c JOIN spans AS s USING (trace_id, span_id) "
                      "WHERE s.service_name = 'langgraph-react'")
    got = [r["response_id"] for r in rows]  # OpenInference LangChain's and OpenInference OpenAI's records
    assert None not in got and sorted(set(got)) == ids and len(got) == 2 * len(ids), got


@pytest.mark.parametrize("name", ["langgraph-react", "agents-sdk-handoff"])
def test_the_framework_recordings_train_with_no_template_error(lake, name) -> None:
    """The recorded LangGraph and Agents SDK runs (no engine ids: text rows) through the trainer's text path
    with the demo model's tokenizer, a template that knows no tools: every row renders (before the shared
    renderer, every tool-call conversation failed the template: "template_error=176")."""
    import pyarrow as pa

    from spanrl.trainer.data import build_sequences
    from spanrl.transitions import read_snapshot
    from tests.helpers.demo_tokenizer import demo_tokenizer

    con, _, data = lake
    table, _ = read_snapshot(data)
    rollouts = {r["rollout_id"] for r in _rows(con, "SELECT rollout_id FROM rollouts WHERE task_id LIKE ?", [f"{name}-%"])}
    rows = [r for r in table.to_pylist() if r["rollout_id"] in rollouts]
    assert rows and {r["token_source"] for r in rows} == {"text"}
    seqs, stats = build_sequences(pa.Table.from_pylist(rows, schema=table.schema), demo_tokenizer(), 4096, 4096)
    assert stats.template_error == 0 and stats.skipped == 0, stats.summary()
    assert len(seqs) == len(rows) == len(_expected(name)[0])
