"""The optimizer's budget and successive halving, on a stub runner (no agent runs): versions that do
not fit the budget are not scored, survivors get twice the samples, the beam is kept."""

from __future__ import annotations

from pathlib import Path

from spanrl.evaluate.run import EvalConfig
from spanrl.prompts.optimize import _halve, split_tasks
from spanrl.prompts.scoring import Score, Scorer
from spanrl.prompts.store import add_version
from spanrl.rollout.tasks import Task

QUALITY = {"0001": 0.1, "0002": 0.9, "0003": 0.5, "0004": 0.3, "0005": 0.7}


class StubScorer(Scorer):
    def score(self, version: str, split: str, n: int, concurrency: int | None = None) -> Score:
        self.used += self.cost(version, split, n)
        rewards = {f"t{i}": [QUALITY[version]] * n for i in range(self.tasks[split])}
        self.scores[(version, split)] = s = Score(version, split, n, rewards, f"run-{version}-{n}")
        return s


def _scorer(tmp_path: Path, budget: int) -> StubScorer:
    train = tmp_path / "train.jsonl"
    train.write_text('{"input": "a"}\n{"input": "b"}\n{"input": "c"}\n')
    base = EvalConfig(tasks=train, policies=["-"], command=["x"], score="s", data=tmp_path)
    return StubScorer(base, "calc", "http://gw", {"train": train, "validation": train}, budget)


def test_fit_counts_the_rung_as_a_whole_and_keeps_the_reserve(tmp_path) -> None:
    scorer = _scorer(tmp_path, budget=12)
    assert scorer.fit(["0001", "0002", "0003", "0004"], "train", 1, reserve=6) == ["0001", "0002"]  # 3 + 3 + 6
    scorer.score_all(["0001", "0002"], "train", 1)
    assert scorer.used == 6 and scorer.cost("0002", "train", 2) == 3  # resuming: only the new samples count


def test_halving_doubles_the_samples_of_the_better_half(tmp_path) -> None:
    scorer = _scorer(tmp_path, budget=100)
    pool = ["0002", "0003", "0004", "0005"]
    scorer.score_all(pool, "train", 1)
    assert _halve(scorer, pool, 1, reserve=0, keep=1) == ["0002"]
    assert {v: scorer.scores[(v, "train")].n for v in pool} == {"0002": 4, "0003": 1, "0004": 1, "0005": 2}
    assert scorer.used == 4 * 3 + 2 * 3 + 1 * 6  # rung 0, then 2 survivors at n=2, then 1 at n=4


def test_halving_stops_at_the_beam_and_at_the_budget(tmp_path) -> None:
    scorer = _scorer(tmp_path, budget=100)
    pool = ["0002", "0003", "0004", "0005"]
    scorer.score_all(pool, "train", 1)
    assert _halve(scorer, pool, 1, reserve=0, keep=2) == ["0002", "0005"]
    tight = _scorer(tmp_path, budget=14)
    tight.score_all(pool, "train", 1)  # 12 used: doubling two survivors would take 6 more
    assert _halve(tight, pool, 1, reserve=0, keep=1) == ["0002", "0005"] and tight.used == 12


def test_split_is_seeded_and_keeps_both_sides() -> None:
    tasks = [Task(f"t{i}", f"q{i}", {}) for i in range(5)]
    train, val = split_tasks(tasks, 0.5, seed=0)
    assert len(train) + len(val) == 5 and len(val) == 2 and not {t.task_id for t in train} & {t.task_id for t in val}
    assert split_tasks(tasks, 0.5, seed=0) == (train, val) and split_tasks(tasks, 0.5, seed=1) != (train, val)


def test_a_scoring_run_id_names_the_version_and_model_not_the_gateways_port(tmp_path) -> None:
    """optimize starts its gateway on a free port: a re-run after a stop must find its runs again."""
    tasks = tmp_path / "train.jsonl"
    tasks.write_text('{"input": "a"}\n')
    base = EvalConfig(tasks=tasks, policies=["-"], command=["agent"], score="s", data=tmp_path)
    a = add_version(tmp_path, "calc", "You are a calculator.", {"method": "original"}).version
    b = add_version(tmp_path, "calc", "You are a careful calculator.", {"method": "apo"}).version

    def run_id(root: str, version: str, policy: str = "http://model/v1") -> str:
        return Scorer(base, "calc", root, {"train": tasks}, 10, policy).run_id(version, "train")

    assert run_id("http://127.0.0.1:40001", a) == run_id("http://127.0.0.1:40999", a)  # another port: the same run
    assert run_id("http://gw", a).startswith("eval-")  # held out of training snapshots
    assert len({run_id("http://gw", a), run_id("http://gw", b), run_id("http://gw", a, "http://other/v1")}) == 3
