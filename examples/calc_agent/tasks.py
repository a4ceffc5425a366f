"""Seeded arithmetic word problems with a verifiable answer (the Calc-X shape, small enough for a 135M model).

Every task is a dict ``{"task_id", "question", "answer"}``. The generator is deterministic in its seed,
and the two splits never share a task id: ``train`` draws from seeds 1000+ and ``eval`` (held out,
never used for training) is a fixed list drawn from seed 7. Numbers are two and three digits, so the
model cannot reliably do the arithmetic in its head and has to call the calculator.
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

EVAL_SEED = 7
EVAL_SIZE = 32


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
    """``n`` tasks of a split. ``eval`` ignores ``seed``: the held-out list is fixed."""
    if split == "eval":
        if n > EVAL_SIZE:
            raise ValueError(f"the held-out split has {EVAL_SIZE} tasks; asked for {n}")
        rng = random.Random(EVAL_SEED)
        return [make_task(rng, f"eval-{k:03d}") for k in range(n)]
    if split != "train":
        raise ValueError(f"split must be 'train' or 'eval', got {split!r}")
    rng = random.Random(1000 + seed)
    held_out = {t["question"] for t in make_tasks("eval", EVAL_SIZE)}
    tasks: list[dict[str, object]] = []
    while len(tasks) < n:  # a train question never repeats a held-out one
        # operators in rotation: a cycle of 4 tasks sees all four, so one cycle cannot push the
        # policy towards a single operator (what the first measured run showed with random draws)
        op = OPERATORS[len(tasks) % len(OPERATORS)]
        task = make_task(rng, f"train-{seed}-{len(tasks):03d}", op)
        if task["question"] not in held_out:
            tasks.append(task)
    return tasks
