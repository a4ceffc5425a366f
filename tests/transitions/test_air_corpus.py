"""AIR precision and recall on spans recorded from real frameworks (tests/data/air_corpus/, recorded by
its record.py from tests/helpers/air_agents.py against the local fake OpenAI server).

Every default rule: zero hits on every correct run (LangGraph ReAct, parallel, streaming, a
Command/goto handoff; the Agents SDK with handoffs, streaming, parallel, the Responses model; Pydantic AI; the official
GenAI instrumentation with parallel calls, streaming and content capture off) and a hit on each
injected fault it targets, found by rollout (the scenario's name). The table in docs/transitions.md
("AIR on real frameworks") is rendered from these numbers; the test fails when they disagree.
Regenerate it after re-recording: ``.venv/bin/python -m tests.transitions.test_air_corpus``.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from spanrl.transitions.air import default_rules
from tests.helpers.air_agents import SCENARIOS
from tests.ingest.conftest import ROOT, ingest, stage2_connection

CORPUS = ROOT / "tests" / "data" / "air_corpus"
DOC = ROOT / "docs" / "transitions.md"
RULES = [r.name for r in default_rules()]
# fault scenario -> (the rules it targets, rules that may fire as well, and why)
FAULTS: dict[str, tuple[set[str], set[str]]] = {
    "langgraph_fault_tool_raises": ({"tool_error"}, set()),
    "agents_fault_tool_raises": ({"tool_error"}, set()),
    "agents_fault_tool_timeout": ({"tool_error"}, set()),
    "pydantic_ai_fault_tool_timeout": ({"tool_error"}, set()),
    # the framework's argument validation fails the tool span too
    "langgraph_fault_args_schema": ({"bad_tool_arguments"}, {"tool_error"}),
    "agents_fault_args_schema": ({"bad_tool_arguments"}, {"tool_error"}),
    "pydantic_ai_fault_args_schema": ({"bad_tool_arguments"}, {"tool_error"}),
    "agents_fault_args_not_json": ({"bad_tool_arguments"}, {"tool_error"}),
    "langgraph_fault_args_not_json": ({"bad_tool_arguments"}, set()),
    "openai_fault_args_not_json": ({"bad_tool_arguments"}, set()),
    "langgraph_fault_retry": ({"retried_llm_call"}, set()),
    "openai_fault_retry": ({"retried_llm_call"}, set()),
    # a tool the agent never offered: no tool runs it (the Agents SDK ends the run; LangGraph's ToolNode
    # and Pydantic AI tell the model), the call is a spanless tool call from the model's output
    "agents_fault_unknown_tool": ({"unknown_tool"}, set()),
    "langgraph_fault_unknown_tool": ({"unknown_tool"}, set()),
    "pydantic_ai_fault_unknown_tool": ({"unknown_tool"}, set()),
    # bad arguments past the tool's retries: the agent run fails
    "pydantic_ai_fault_gives_up": ({"exception"}, {"bad_tool_arguments", "tool_error"}),
}
# faults the recorded spans cannot show: no default rule may claim them, and the docs say why
BLIND = {
    "agents_blind_tool_timeout": "the Agents SDK's default timeout handling (error_as_result) ends the tool span OK "
                                 "and tells only the model",
    "openai_blind_args_schema": "opentelemetry-instrumentation-openai-v2 2.4b0 records no tool definitions, so "
                                "there is no schema to judge against (arguments are valid JSON)",
    "agents_blind_unknown_tool": "OpenInference openai-agents 2.6.0 records no tool definitions on the Agents SDK's "
                                 "Chat Completions generation span, so which tools were offered is unknown "
                                 "(tool_offered NULL; on the Responses model it is recorded: agents_fault_unknown_tool)",
}
CORRECT = sorted(set(SCENARIOS) - set(FAULTS) - set(BLIND))
HANDOFFS = {"agents_handoff", "agents_streaming", "agents_responses", "langgraph_handoff"}
INSTRUMENTATION = {"openinference-langchain": "OpenInference LangChain", "openai-v2": "GenAI openai-v2",
                   "openinference-openai-agents": "OpenInference Agents SDK", "pydantic-ai": "Pydantic AI",
                   "openai-v2-no-content": "GenAI openai-v2, no content",
                   "openinference-langchain+openai-v2-no-content": "OpenInference LangChain + GenAI openai-v2, no content"}
START, END = "<!-- air-corpus-table:start -->", "<!-- air-corpus-table:end -->"


def load_corpus(data: Path):
    """The corpus ingested into DATA (stage 1 + stage 2 with the default AIR rules): (connection, hits)
    with hits = {scenario: {rule: count}}."""
    (data / "otel").mkdir(parents=True)
    for f in CORPUS.glob("*.jsonl*"):
        shutil.copy(f, data / "otel" / f.name)
    assert ingest(data).rejects == 0
    con = stage2_connection(data)
    hits: dict[str, dict[str, int]] = {name: dict.fromkeys(RULES, 0) for name in SCENARIOS}
    for rollout, rule, n in con.execute("SELECT rollout_id, name, count(*) FROM rewards WHERE source = 'air' "
                                        "GROUP BY ALL").fetchall():
        hits.setdefault(rollout, dict.fromkeys(RULES, 0))[rule] = n
    return con, hits


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """The corpus ingested once for the module."""
    return load_corpus(tmp_path_factory.mktemp("air_corpus") / "data")


def test_every_recorded_scenario_is_one_rollout_and_classified(corpus) -> None:
    con, hits = corpus
    runs = json.loads((CORPUS / "runs.json").read_text())
    assert set(runs) == set(SCENARIOS), "re-record the corpus: tests/data/air_corpus/record.py"
    rollouts = {r for (r,) in con.execute("SELECT rollout_id FROM rollouts").fetchall()}
    assert rollouts == set(SCENARIOS)
    assert set(hits) == set(SCENARIOS)  # no hit outside a scenario's rollout
    assert set(FAULTS) | set(BLIND) <= set(SCENARIOS) and not set(FAULTS) & set(BLIND)
    for name in FAULTS:
        assert "fault" in name and runs[name]["trace_id"]
    # every rule is some fault's target, so every rule's recall is tested
    assert set(RULES) == set().union(*(targets for targets, _ in FAULTS.values()))


@pytest.mark.parametrize("scenario", CORRECT)
def test_no_hit_on_a_correct_run(corpus, scenario: str) -> None:
    _, hits = corpus
    assert hits[scenario] == dict.fromkeys(RULES, 0)


@pytest.mark.parametrize("scenario", sorted(FAULTS))
def test_each_fault_is_hit_by_the_rules_it_targets(corpus, scenario: str) -> None:
    con, hits = corpus
    targets, also = FAULTS[scenario]
    fired = {rule for rule, n in hits[scenario].items() if n}
    assert targets <= fired, f"{scenario}: {sorted(targets - fired)} did not fire"
    assert fired <= targets | also, f"{scenario}: unexpected {sorted(fired - targets - also)}"
    # each hit is aimed at an LLM call of the rollout (the call whose output caused it)
    aimed = con.execute("""SELECT count(*) FILTER (WHERE c.span_id IS NULL) FROM rewards r
                           LEFT JOIN llm_calls c ON c.trace_id = r.trace_id AND c.span_id = r.target_span_id
                           WHERE r.source = 'air' AND r.rollout_id = ?""", [scenario]).fetchone()[0]
    assert aimed == 0


@pytest.mark.parametrize("scenario", sorted(BLIND))
def test_a_fault_the_spans_cannot_show_gets_no_hit(corpus, scenario: str) -> None:
    _, hits = corpus
    assert hits[scenario] == dict.fromkeys(RULES, 0), f"{scenario} is visible now: move it to FAULTS"


def test_handoffs_are_flagged_and_linked_to_the_call_that_asked(corpus) -> None:
    con, _ = corpus
    rows = con.execute("""SELECT r.rollout_id, t.tool_name, t.tool_call_id, t.llm_span_id IS NOT NULL
                          FROM tool_calls t JOIN (SELECT DISTINCT rollout_id, trace_id FROM _span_tree) r USING (trace_id)
                          WHERE t.is_handoff ORDER BY 1""").fetchall()
    assert {r[0] for r in rows} == HANDOFFS and all(r[3] for r in rows)
    agents = [r for r in rows if r[0] == "agents_handoff"]
    # the Agents SDK exposes the handoff to the model as a function: the span takes its name and id
    assert [(name, tid.startswith("call_")) for _, name, tid, _ in agents] == [("transfer_to_math_agent", True)]
    # no handoff is a tool for AIR, and none is judged for its arguments
    assert con.execute("SELECT count(*) FROM _air_candidates WHERE is_handoff AND (is_tool OR NOT args_valid)"
                       ).fetchone()[0] == 0


def test_an_unknown_tool_is_the_asking_calls_spanless_tool_call(corpus) -> None:
    """No framework runs a span for a tool it does not have: the call is read from the model's output
    (span_id NULL), judged against the tools that call offered, and blamed on it."""
    con, _ = corpus
    rows = con.execute("""SELECT rollout_id, span_id IS NULL, tool_name, target_span_id = llm_span_id
                          FROM _air_candidates WHERE tool_offered = false ORDER BY 1""").fetchall()
    assert rows == [(name, True, "calculate_total_remaining", True) for name in sorted(FAULTS)
                    if "unknown_tool" in FAULTS[name][0]]
    # unknown offered tools are never a guess: NULL where the asking call's tools were not captured
    assert con.execute("SELECT DISTINCT tool_offered FROM _air_candidates WHERE rollout_id = 'agents_blind_unknown_tool'"
                       " AND is_tool").fetchall() == [(None,)]
    assert con.execute("SELECT count(*) FROM _air_candidates WHERE tool_offered IS NOT NULL AND NOT is_tool"
                       ).fetchone()[0] == 0


def render_table(hits: dict[str, dict[str, int]]) -> str:
    """The docs table: one row per scenario, one column per default rule (targeted cells in bold)."""
    head = ["scenario", "instrumentation", "run"] + [f"`{r}`" for r in RULES]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for kind, names in (("correct", CORRECT), ("fault", sorted(FAULTS)), ("blind", sorted(BLIND))):
        for name in names:
            targets = FAULTS.get(name, (set(), set()))[0]
            cells = [f"**{hits[name][r]}**" if r in targets else str(hits[name][r]) for r in RULES]
            lines.append(f"| `{name}` | {INSTRUMENTATION[SCENARIOS[name][0]]} | {kind} | " + " | ".join(cells) + " |")
    correct = [str(sum(hits[n][r] for n in CORRECT)) for r in RULES]
    lines.append(f"| **hits on the {len(CORRECT)} correct runs** | | | " + " | ".join(correct) + " |")
    recall = []
    for r in RULES:
        aimed = [n for n, (t, _) in FAULTS.items() if r in t]
        recall.append(f"{sum(1 for n in aimed if hits[n][r])} of {len(aimed)}")
    lines.append("| **targeted faults hit** | | | " + " | ".join(recall) + " |")
    return "\n".join(lines)


def doc_table() -> str | None:
    text = DOC.read_text()
    m = re.search(re.escape(START) + r"\n(.*?)\n" + re.escape(END), text, re.S)
    return m.group(1) if m else None


def test_the_docs_table_is_what_this_test_measures(corpus) -> None:
    _, hits = corpus
    assert doc_table() == render_table(hits), (
        "docs/transitions.md's AIR corpus table is stale: run .venv/bin/python -m tests.transitions.test_air_corpus")


def main() -> None:
    """Ingest the corpus and write the table into docs/transitions.md (between the markers)."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        con, hits = load_corpus(Path(tmp) / "data")
        con.close()
        table = render_table(hits)
    text = DOC.read_text()
    if START not in text:
        raise SystemExit(f"{DOC}: add the markers {START} / {END} where the table goes")
    head, rest = text.split(START, 1)
    DOC.write_text(head + START + "\n" + table + "\n" + END + rest.split(END, 1)[1])
    print(table)


if __name__ == "__main__":
    main()
