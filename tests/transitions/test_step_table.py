"""docs/architecture.md's step table ("Stage 2's steps") is pipeline.py's step lists, row by row: the
same steps in the same order, each with what it creates, reads, its SQL file and its kind."""

from __future__ import annotations

import re
from pathlib import Path

from spanrl.transitions.pipeline import PRIOR_INPUTS, STEP_LISTS, Step

DOC = Path(__file__).resolve().parents[2] / "docs" / "architecture.md"
SECTION = "## Stage 2's steps"


def _section() -> str:
    text = DOC.read_text()
    start = text.index(SECTION)
    end = text.find("\n## ", start + len(SECTION))
    return text[start:end if end >= 0 else None]


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _doc_rows() -> list[dict[str, object]]:
    """The table's rows: number, creates, reads (``_prior_*`` is PRIOR_INPUTS; a parenthesis is a
    remark), the first backquoted SQL file and the kind."""
    out = []
    for line in _section().splitlines():
        cells = _cells(line) if line.startswith("|") else []
        if len(cells) != 5 or not cells[0].isdigit():
            continue
        num, creates, reads, sql, kind = cells
        names: list[str] = []
        for name in re.sub(r"\([^)]*\)", "", reads).split(","):
            name = name.strip().strip("`")
            names.extend(PRIOR_INPUTS if name == "_prior_*" else [name] if name else [])
        first = re.search(r"`([^`]+)`", sql)
        out.append({"num": int(num), "creates": creates.strip("`"), "reads": tuple(names),
                    "sql": first[1] if first else None, "kind": kind})
    return out


def _steps() -> list[Step]:
    return [s for steps in STEP_LISTS.values() for s in steps]


def test_doc_step_table_is_pipeline_py() -> None:
    doc, steps = _doc_rows(), _steps()
    assert [r["num"] for r in doc] == list(range(1, len(doc) + 1)), "number the rows 1, 2, ..."
    assert [r["creates"] for r in doc] == [s.creates for s in steps], \
        "docs/architecture.md's step table: the steps of pipeline.STEP_LISTS, in their order"
    for row, step in zip(doc, steps, strict=True):
        assert row["reads"] == step.reads, f"step {row['num']} ({step.creates}) reads {step.reads} in pipeline.py"
        assert row["kind"] == step.kind, f"step {row['num']} ({step.creates}) is a {step.kind} in pipeline.py"
        if step.sql is not None:
            assert row["sql"] == step.sql, f"step {row['num']} ({step.creates}) runs {step.sql}.sql"


def test_doc_names_each_list_with_its_rows() -> None:
    """The sentence under the table says which rows each list holds ("Steps 1-13 (`STAGE2_STEPS`)")."""
    text, first = _section(), 1
    for name, steps in STEP_LISTS.items():
        last = first + len(steps) - 1
        span = f"{first}-{last}" if last > first else f"{first}"
        assert re.search(rf"\b{span}\b[^.]*?`{name}`", text), f"say which rows {name} is: {span} (`{name}`)"
        first = last + 1
