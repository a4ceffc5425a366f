"""Agent Lightning's v0.x trace-to-triplet cases (tests/transitions/agent_lightning_cases.py), sent
through the real chain (OTLP span file -> spanrl ingest -> snapshot), give the calls, token ids,
response ids, agent names and rewards Agent Lightning's adapter gives; plus hierarchy repair
(on, off, from spanrl.toml) and its overlap rule."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from spanrl.cli import cli
from spanrl.query import connect
from spanrl.transitions import read_snapshot
from tests.ingest.otlp_lines import write_lines
from tests.transitions.agent_lightning_cases import AGL, Case, build_cases


def _overlap_cases(start: int) -> list[Case]:
    """Agent spans that overlap one agent-less call: the overlap rule (not in Agent Lightning's tests)."""
    llm = {"gen_ai.prompt.0.role": "user", "gen_ai.prompt.0.content": "q", "gen_ai.completion.0.role": "assistant",
           "gen_ai.completion.0.content": "a"}
    reward = {"spanrl.reward": 1.0}
    shorter = Case("overlap-shorter-wins", start)  # A [1,6] and B [4,9] both hold the call; B is shorter
    shorter.add("root", "session", None, 0.0, 10.0, reward)
    shorter.add("a", "agent.node", "root", 1.0, 6.0, {"agent.name": "long-a"})
    shorter.add("b", "agent.node", "root", 4.0, 8.0, {"agent.name": "short-b"})
    shorter.add("llm", "openai.chat.completion", "root", 4.5, 5.0, llm)
    tie = Case("overlap-tie-ambiguous", start + 1)  # two agents over the call with equal durations
    tie.add("root", "session", None, 0.0, 10.0, reward)
    tie.add("a", "agent.node", "root", 1.0, 6.0, {"agent.name": "left"})
    tie.add("b", "agent.node", "root", 2.0, 7.0, {"agent.name": "right"})
    tie.add("llm", "openai.chat.completion", "root", 3.0, 4.0, llm)
    kept = Case("traced-agent-kept", start + 2)  # a call that has an agent keeps it, however tight another is
    kept.add("root", "session", None, 0.0, 10.0, reward)
    kept.add("outer", "agent.node", "root", 1.0, 9.0, {"agent.name": "outer"})
    kept.add("inner", "agent.node", "root", 2.0, 4.0, {"agent.name": "inner"})
    kept.add("llm", "openai.chat.completion", "outer", 2.5, 3.0, llm)
    return [shorter, tie, kept]


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data = tmp_path_factory.mktemp("agl") / "data"
    cases = build_cases()
    write_lines(data / "otel" / "traces.jsonl", [c.line() for c in [*cases, *_overlap_cases(len(cases) + 1)]])
    result = _spanrl("ingest", "--data", str(data), "--no-transitions")
    assert "rejects" in result
    return data


def _spanrl(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 0, result.output
    return result.output


_BUILDS: dict[tuple[str, ...], tuple[dict[str, list[dict]], str]] = {}


def _build(data: Path, *flags: str) -> tuple[dict[str, list[dict]], str]:
    """``spanrl transitions build`` with flags -> ({rollout_id: rows by step}, the printed summary).
    Each set of flags is built once per lake (a build takes seconds on the shared CI machine)."""
    key = (str(data), *flags, (data / "spanrl.toml").read_text() if (data / "spanrl.toml").exists() else "")
    if key not in _BUILDS:
        _BUILDS[key] = _build_now(data, *flags)
    return _BUILDS[key]


def _build_now(data: Path, *flags: str) -> tuple[dict[str, list[dict]], str]:
    out = _spanrl("transitions", "build", "--data", str(data), "--settle", "0s", "--missing-reward", "zero", *flags)
    rollouts: dict[str, list[dict]] = {}
    if "none written" in out:  # no transition at all: LATEST still names the previous snapshot
        return rollouts, out
    table, _ = read_snapshot(data)
    for row in sorted(table.to_pylist(), key=lambda r: (r["rollout_id"], r["step"])):
        rollouts.setdefault(row["rollout_id"], []).append(row)
    return rollouts, out


def test_calls_token_ids_response_ids_and_agent_names_match(lake: Path) -> None:
    rollouts, _ = _build(lake)
    response_ids = dict(connect(lake).execute("SELECT span_id, response_id FROM llm_calls").fetchall())
    for case, expected in AGL.items():
        got = [(row["prompt_token_ids"] or [], row["response_token_ids"] or [], response_ids[row["span_id"]],
                row["agent_name"]) for row in rollouts[case]]
        assert got == [e[:4] for e in expected], case


def test_rollout_return_is_agent_lightnings_final_reward(lake: Path) -> None:
    """Identical credit = what Agent Lightning's VERL daemon trains on: the rollout's last non-None
    triplet reward (reward_fillna_value 0 when none), copied to every call. (spanrl's default, air
    credit, adds the AIR rewards each call caused on top; identical is the Agent Lightning setting.)"""
    rollouts, _ = _build(lake, "--credit", "identical")
    for case, expected in AGL.items():
        final = next((e[4] for e in reversed(expected) if e[4] is not None), 0.0)
        assert [row["return"] for row in rollouts[case]] == [final] * len(expected), case


def test_credit_last_gives_agent_lightnings_triplet_rewards(lake: Path) -> None:
    """--credit last puts the reward on the call before it, as Agent Lightning's default
    FIRST_OCCURRENCE matching does for these cases (None there is 0 here)."""
    rollouts, _ = _build(lake, "--credit", "last")
    for case, expected in AGL.items():
        assert [row["return"] for row in rollouts[case]] == [e[4] or 0.0 for e in expected], case


def test_agent_match_needs_hierarchy_repair(lake: Path) -> None:
    """Agent Lightning: TracerTraceToTriplet(agent_match="planner") finds the root-parented call only
    with repair_hierarchy (its default); without it, nothing. spanrl: --agent, --no-hierarchy-repair."""
    repaired, summary = _build(lake, "--agent", "^planner$")
    assert sorted(repaired) == ["repair", "repair-reward"]
    assert repaired["repair-reward"][0]["response_token_ids"] == [8]
    assert repaired["repair-reward"][0]["final_reward"] == 0.3
    assert "hierarchy repair" in summary.replace("\n", " ").replace("│", " ")
    not_repaired, _ = _build(lake, "--agent", "^planner$", "--no-hierarchy-repair")
    assert not not_repaired


def test_hierarchy_repair_off_from_spanrl_toml(lake: Path) -> None:
    (lake / "spanrl.toml").write_text("[ingest]\nhierarchy_repair = false\n")
    try:
        rollouts, _ = _build(lake)
    finally:
        (lake / "spanrl.toml").unlink()
    assert rollouts["repair"][0]["agent_name"] is None
    assert rollouts["overlap-shorter-wins"][0]["agent_name"] is None
    assert _build(lake)[0]["repair"][0]["agent_name"] == "planner"


def test_overlapping_agent_spans(lake: Path) -> None:
    rollouts, summary = _build(lake)
    assert rollouts["overlap-shorter-wins"][0]["agent_name"] == "short-b"
    assert rollouts["overlap-tie-ambiguous"][0]["agent_name"] is None
    assert rollouts["traced-agent-kept"][0]["agent_name"] == "outer"
    flat = " ".join(summary.replace("│", " ").split())
    # repaired: repair, repair-reward, overlap-shorter-wins; ambiguous: overlap-tie-ambiguous
    assert "agents by hierarchy repair 3 calls (1 ambiguous, left without)" in flat


def test_multimodal_prompt_keeps_its_text_and_engine_ids(lake: Path) -> None:
    """Agent Lightning keeps the prompt's image URLs beside the token ids; spanrl keeps the text parts
    in prompt_messages (images left out) and the engine's ids, which already encode the image."""
    import json

    rows = _build(lake)[0]["multimodal"]
    assert json.loads(rows[0]["prompt_messages"]) == [
        {"role": "user", "content": "Question: How many food items are shown in the bar graph?"}]
    assert [r["token_source"] for r in rows] == ["engine", "text"]
    assert json.loads(rows[1]["response_message"])["content"] == "The bar graph shows 13 food items."
