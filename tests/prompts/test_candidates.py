"""Demonstrations candidates (``prompts/candidates.py``): the best rollouts first, then seeded random draws
from the best ones, never a failure, never a task being scored, never the same set twice."""

from __future__ import annotations

from spanrl.prompts.candidates import DEMO_HEADER, demo_sets, with_demos
from spanrl.prompts.lake import Example

PROMPT = "You are a calculator."


def demonstrations(prompt: str, examples: list[Example], exclude_inputs: set[str], k: int, sets: int = 1,
                   seed: int = 0) -> list[str]:
    """Each set as the text candidate the optimizer stages (optimize.py): ``prompt`` + its worked examples."""
    return [with_demos(prompt, picked) for picked in demo_sets(examples, exclude_inputs, k, sets, seed)]


def _ex(i: int, reward: float) -> Example:
    return Example(f"t{i}", f"What is {i}+{i}?", [f'calculator({{"expression": "{i}+{i}"}}) -> {2 * i}'],
                   str(2 * i), reward, PROMPT, None, f"r{i:02d}")


def _shown(candidate: str) -> set[str]:
    return {line.split("+")[0].removeprefix("Task: What is ") for line in candidate.split(DEMO_HEADER)[1].splitlines()
            if line.startswith("Task: ")}


def test_the_first_set_is_the_best_rollouts_and_the_others_are_distinct_draws_from_the_best() -> None:
    examples = [_ex(i, 1.0) for i in range(1, 9)] + [_ex(i, 0.2) for i in range(9, 13)] + [_ex(13, 0.0)]
    sets = demonstrations(PROMPT, examples, exclude_inputs={"What is 2+2?"}, k=3, sets=4, seed=0)
    assert len(sets) == 4 and all(s.startswith(PROMPT + DEMO_HEADER) for s in sets)
    shown = [_shown(s) for s in sets]
    assert shown[0] == {"1", "3", "4"}  # the top reward, by rollout id; t2 is being scored
    assert len({frozenset(s) for s in shown}) == 4 and all(len(s) == 3 for s in shown)
    # the draws stay among the rollouts at the top reward: a 0.2 (tool ran, wrong answer) is no example
    assert set().union(*shown) <= {str(i) for i in range(1, 9)} - {"2"}
    assert demonstrations(PROMPT, examples, {"What is 2+2?"}, 3, 4, seed=0) == sets  # seeded
    assert demonstrations(PROMPT, examples, {"What is 2+2?"}, 3, 4, seed=1)[1:] != sets[1:]


def test_a_lucky_answer_without_steps_is_shown_only_when_too_few_rollouts_took_steps() -> None:
    lucky = [Example(f"l{i}", f"What is {i}+{i}?", [], str(2 * i), 1.0, PROMPT, None, f"a{i:02d}") for i in (20, 21)]
    examples = [_ex(i, 1.0) for i in range(1, 6)] + lucky  # the lucky ones sort first by rollout id
    sets = demonstrations(PROMPT, examples, set(), k=3, sets=4, seed=0)
    assert _shown(sets[0]) == {"1", "2", "3"} and len(sets) == 4
    assert not any({"20", "21"} & _shown(s) for s in sets)  # enough rollouts took steps: no lucky answer shown
    few = demonstrations(PROMPT, [_ex(1, 1.0), *lucky], set(), k=2, sets=4, seed=0)
    assert _shown(few[0]) == {"1", "20"}  # one took steps: it comes first, a lucky one fills the set


def test_only_the_upper_half_of_the_reward_range_is_shown_and_a_small_pool_gives_fewer_sets() -> None:
    examples = [_ex(1, 1.0), _ex(2, 0.2), _ex(3, 0.2), _ex(4, 0.0)]
    only = demonstrations(PROMPT, examples, set(), k=2, sets=4, seed=0)
    assert len(only) == 1 and _shown(only[0]) == {"1"}  # a partial credit (0.2 of 1) is no example to follow
    graded = [_ex(1, 0.9), _ex(2, 0.8), _ex(3, 0.7), _ex(4, 0.1)]  # a graded reward: the top three qualify
    sets = demonstrations(PROMPT, graded, set(), k=2, sets=4, seed=0)
    assert _shown(sets[0]) == {"1", "2"}  # the best first, then the best of the rest
    assert 1 < len(sets) <= 3 and all(_shown(s) <= {"1", "2", "3"} for s in sets)  # 3 eligible: 3 pairs at most
    assert len(demonstrations(PROMPT, graded, set(), k=3, sets=4, seed=0)) == 1  # 3 eligible, 3 asked: no draw
    assert demonstrations(PROMPT, [_ex(1, 0.0)], set(), k=2, sets=4) == []  # no success: no candidate


def test_every_set_covers_the_kinds_of_task_the_best_rollouts_show() -> None:
    """Rollouts of four kinds of task (the calculator agent's operators, worded differently); the lowest
    rollout ids are all additions. A set of 4 shows one rollout of each kind, however it starts, and
    never a lesser rollout while a success of the kind is left."""
    kinds = {"+": "{n} has {a} pens and gets {b} more. How many now?",
             "-": "A box holds {a} cards; {b} are taken out. How many stay?",
             "*": "There are {a} rows with {b} in each row. How many in all?",
             "/": "{n} shares {a} coins equally among {b} friends. How many each?"}
    examples = []
    for j, (op, text) in enumerate(kinds.items()):
        for i in range(4 if op == "+" else 2):
            a, b = 10 + 7 * i + j, 3 + i
            examples.append(Example(f"{op}{i}", text.format(n="Ana" if i % 2 else "Ben", a=a, b=b),
                                    [f'calculator({{"expression": "{a} {op} {b}"}}) -> 1'], "1", 1.0, PROMPT,
                                    None, f"r{j}{i}"))
    examples.append(Example("x", kinds["*"].format(a=5, b=6), ["calculator({}) -> 30"], "30", 0.2, PROMPT, None, "r00a"))
    sets = demonstrations(PROMPT, examples, set(), k=4, sets=3, seed=0)
    assert len(sets) == 3
    for s in sets:
        shown = [line for line in s.split(DEMO_HEADER)[1].splitlines() if line.startswith("Task: ")]
        marks = {"+": "more", "-": "taken out", "*": "each row", "/": "equally"}
        assert len(shown) == 4 and {op for op, mark in marks.items() for line in shown if mark in line} == set(kinds)
    assert "r00a" not in "".join(sets) and "5 rows" not in "".join(sets)
