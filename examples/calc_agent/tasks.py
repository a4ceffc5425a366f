"""Seeded arithmetic word problems with a verifiable answer (the Calc-X shape, small enough for a 135M model).

Every task is a dict ``{"task_id", "question", "answer"}``. The generator is deterministic in its seed,
and the three splits never share a question:

- ``eval`` (held out, ``eval-000`` .. ``eval-063``): a fixed list from seed 7, used only for the
  numbers reported; never trained on, never used to choose anything. Its first 32 tasks are the
  held-out list of earlier versions (same seed, same draws).
- ``val`` (validation, ``val-000`` .. ``val-031``): a fixed list from seed 11, for every choice that is
  tuned or gated (the demo's promotion gate, learning rates, group sizes); never trained on.
- ``train``: fresh tasks per seed (``1000 + seed``), operators in rotation.

Numbers are two and three digits, so the model cannot reliably do the arithmetic in its head and has
to call the calculator.
"""

from __future__ import annotations

import random

NAMES = ["Ana", "Ben", "Chen", "Dara", "Eli", "Farah", "Gus", "Hana", "Ivan", "Jade", "Kofi", "Lena"]
ITEMS = ["apples", "books", "coins", "stamps", "marbles", "cards", "pens", "shells", "stickers", "cookies"]

# (template, operator, how to draw a and b). {n} name, {i} items.
TEMPLATES: list[tuple[str, str]] = [
    ("{n} has {a} {i} and gets {b} more. How many {i} does {n} have now?", "+"),
    ("A shop sold {a} {i} on Monday and {b} on Tuesday. How many {i} did it sell in total?", "+"),
    ("{n} had {a} {i} and gave away {b}. How many {i} are left?", "-"),
    ("A box holds {a} {i}. {b} of them are taken out. How many {i} stay in the box?", "-"),
    ("{n} buys {a} bags with {b} {i} in each bag. How many {i} is that?", "*"),
    ("There are {a} rows of {i} with {b} in each row. How many {i} are there?", "*"),
    ("{n} shares {a} {i} equally among {b} friends. How many {i} does each friend get?", "/"),
]

EVAL_SEED, EVAL_SIZE = 7, 64
VAL_SEED, VAL_SIZE = 11, 32


def _operands(rng: random.Random, op: str) -> tuple[int, int]:
    """Two- and three-digit operands; subtraction stays positive and division exact."""
    if op == "+":
        return rng.randint(12, 899), rng.randint(12, 899)
    if op == "-":
        a = rng.randint(60, 999)
        return a, rng.randint(11, a - 5)
    if op == "*":
        return rng.randint(12, 99), rng.randint(3, 29)
    b = rng.randint(3, 19)
    return b * rng.randint(12, 99), b


OPERATORS = ["+", "-", "*", "/"]


def make_task(rng: random.Random, task_id: str, op: str | None = None) -> dict[str, object]:
    """One word problem, its expression and its integer answer (of operator ``op`` when given)."""
    if op is None:
        template, op = rng.choice(TEMPLATES)
    else:
        template, op = rng.choice([t for t in TEMPLATES if t[1] == op])
    a, b = _operands(rng, op)
    answer = {"+": a + b, "-": a - b, "*": a * b, "/": a // b}[op]
    question = template.format(n=rng.choice(NAMES), i=rng.choice(ITEMS), a=a, b=b)
    return {"task_id": task_id, "question": question, "answer": answer, "expression": f"{a} {op} {b}"}


def make_tasks(split: str, n: int, seed: int = 0) -> list[dict[str, object]]:
    """``n`` tasks of a split. ``eval`` and ``val`` ignore ``seed``: they are fixed lists."""
    if split == "eval":
        if n > EVAL_SIZE:
            raise ValueError(f"the held-out split has {EVAL_SIZE} tasks; asked for {n}")
        rng = random.Random(EVAL_SEED)
        return [make_task(rng, f"eval-{k:03d}") for k in range(n)]
    if split == "val":
        if n > VAL_SIZE:
            raise ValueError(f"the validation split has {VAL_SIZE} tasks; asked for {n}")
        return _fresh_tasks(random.Random(VAL_SEED), "val-", n, _questions("eval"))
    if split != "train":
        raise ValueError(f"split must be 'train', 'val' or 'eval', got {split!r}")
    return _fresh_tasks(random.Random(1000 + seed), f"train-{seed}-", n, _questions("eval") | _questions("val"))


def _questions(split: str) -> set[object]:
    return {t["question"] for t in make_tasks(split, EVAL_SIZE if split == "eval" else VAL_SIZE)}


def _fresh_tasks(rng: random.Random, prefix: str, n: int, avoid: set[object]) -> list[dict[str, object]]:
    """Tasks whose question is not in ``avoid`` (another split's), operators in rotation: a run of 4
    tasks sees all four, so one cycle cannot push the policy towards a single operator (what the
    first measured run showed with random draws)."""
    tasks: list[dict[str, object]] = []
    while len(tasks) < n:
        op = OPERATORS[len(tasks) % len(OPERATORS)]
        task = make_task(rng, f"{prefix}{len(tasks):03d}", op)
        if task["question"] not in avoid:
            tasks.append(task)
    return tasks
