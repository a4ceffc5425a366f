"""``spanrl report``: reward per cycle (training rollouts, held-out, validation), the promotion gate,
loss, tokens, tool-error rate and AIR hits.

Reads only files (no model, no server), so it is fast and can run while a demo is going:
``adapters/cycles.jsonl`` (one line per trained adapter, written by ``spanrl train``), each
snapshot's ``manifest.json`` and parts (AIR hits = transitions with a non-zero ``step_reward``),
``eval/cycle-N.jsonl`` (held-out rollouts of policy N), ``demo/rollouts/cycle-N.jsonl`` (training
rollouts of policy N) and ``demo/cycles.jsonl`` (the demo's record: validation rewards and the
gate's decision). Writes ``DATA/report.png`` and ``DATA/report.html``.

Row N is "policy N" (0 = the base model, N = after N training cycles): its training-rollout
reward and tool-error rate, its held-out reward (all tasks evaluated, and the fixed first
``SUBSET`` tasks, comparable across every cycle), its validation reward, then the candidate
trained on its rollouts: validation reward, promoted or kept, loss, tokens trained, AIR hits.
"""

from __future__ import annotations

import functools
import html
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from spanrl.errors import InputError
from spanrl.trainer.adapter import adapters_dir, read_cycles
from spanrl.transitions.snapshot import snapshot_dataset, snapshot_exists

SUBSET = 16  # held-out tasks evaluated at every cycle (DemoConfig.eval_subset)
COLUMNS = [  # (key, header, format)
    ("cycle", "cycle", "{}"),
    ("policy", "policy", "{}"),
    ("train_reward", "train reward", "{:.3f}"),
    ("eval_reward", "held-out reward", "{:.3f}"),
    ("eval_accuracy", "held-out acc.", "{:.3f}"),
    ("eval_n", "held-out n", "{}"),
    ("eval_subset_reward", f"held-out first {SUBSET}", "{:.3f}"),
    ("val_reward", "val reward", "{:.3f}"),
    ("candidate_val_reward", "candidate val", "{:.3f}"),
    ("gate", "gate", "{}"),
    ("train_loss", "train loss", "{:.4f}"),
    ("response_tokens", "tokens trained", "{}"),
    ("tool_error_rate", "tool err rate", "{:.2f}"),
    ("air_hits", "AIR hits", "{}"),
    ("train_time_s", "train s", "{:.0f}"),
]


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}:{number}: not a JSON line ({exc}); fix or remove that line") from None
    return rows


def _cycle_files(folder: Path) -> dict[int, Path]:
    found = {}
    for path in folder.glob("cycle-*.jsonl"):
        m = re.fullmatch(r"cycle-(\d+)\.jsonl", path.name)
        if m:
            found[int(m.group(1))] = path
    return found


def _mean(values: list[Any]) -> float | None:
    vals = [float(v) for v in values if v is not None]
    return sum(vals) / len(vals) if vals else None


def air_hits(data: Path, snapshot_id: str | None) -> int | None:
    """Transitions of a snapshot that carry an AIR (intermediate) reward (counted by the Parquet
    scan: a snapshot of millions of rows never reaches Python)."""
    import pyarrow.dataset as ds

    if not snapshot_id or not snapshot_exists(data, snapshot_id):
        return None
    return snapshot_dataset(data, snapshot_id).count_rows(filter=ds.field("step_reward") != 0)


def tool_error_rate(rows: list[dict[str, Any]]) -> float | None:
    """Failed tool calls / tool calls over the agent's result rows (None when no tool was called)."""
    errors = sum(int(r.get("tool_errors") or 0) for r in rows)
    calls = errors + sum(int(r.get("tool_ok") or 0) for r in rows)
    return errors / calls if calls else None


def _gate(record: dict[str, Any]) -> str | None:
    if record.get("promoted") is None:
        return None
    if record.get("gate") and not record["promoted"]:  # the evidence gate's verdict (spanrl.demo.gate)
        return "kept (no difference)" if record["gate"] == "no detectable difference" else f"kept ({record['gate']})"
    return "promoted" if record["promoted"] else f"kept {record.get('candidate')} as candidate"


def load_history(data: Path, air_hits_of: Callable[[str | None], int | None] | None = None) -> list[dict[str, Any]]:
    """One dict per policy/cycle, merged from the files above; empty when nothing ran yet.

    ``air_hits_of(snapshot_id)`` counts a snapshot's AIR hits (default: ``air_hits``, once per
    snapshot per call; ``spanrl ui`` passes one that remembers them across calls)."""
    if air_hits_of is None:
        air_hits_of = functools.cache(lambda sid: air_hits(data, sid))
    lines = read_cycles(adapters_dir(data))
    by_id = {line.get("cycle_id"): line for line in lines}
    cycles = {int(line.get("cycle", i + 1)): line for i, line in enumerate(lines)}
    record = {int(r["cycle"]): r for r in _read_jsonl(data / "demo" / "cycles.jsonl")}
    evals = _cycle_files(data / "eval")
    rollouts = _cycle_files(data / "demo" / "rollouts")
    last = max([0, *evals, *rollouts, *record, *(c - 1 for c in cycles)], default=0)
    if not (cycles or evals or rollouts or record):
        return []
    rows = []
    for n in range(last + 1):
        rec = record.get(n, {})
        # the adapter trained on policy n's rollouts: the demo's record names it; plain `spanrl train`
        # cycles are numbered one per adapter
        trained = by_id.get(rec["candidate"], {}) if rec.get("candidate") else ({} if rec else cycles.get(n + 1, {}))
        ev, ro = _read_jsonl(evals[n]) if n in evals else [], _read_jsonl(rollouts[n]) if n in rollouts else []
        subset = [r for r in ev if str(r.get("task_id", "")) < f"eval-{SUBSET:03d}"]
        row: dict[str, Any] = {
            "cycle": n,
            "policy": rec.get("policy") or cycles.get(n, {}).get("cycle_id", "base" if n == 0 else None),
            "train_reward": _mean([r.get("reward") for r in ro]) if ro else trained.get("mean_final_reward"),
            "train_accuracy": _mean([r.get("correct") for r in ro]),
            "eval_reward": _mean([r.get("reward") for r in ev]),
            "eval_accuracy": _mean([r.get("correct") for r in ev]),
            "eval_n": len(ev) or None,
            "eval_subset_reward": _mean([r.get("reward") for r in subset]),
            "val_reward": rec.get("val_reward"),
            "candidate_val_reward": rec.get("candidate_val_reward"),
            "gate": _gate(rec),
            "tool_errors": sum(int(r.get("tool_errors") or 0) for r in ro) if ro else None,
            "tool_error_rate": tool_error_rate(ro),
            "eval_tool_error_rate": tool_error_rate(ev),
            "adapter": trained.get("cycle_id"),
            "snapshot_id": trained.get("snapshot_id"),
            "train_loss": trained.get("train_loss"),
            "response_tokens": trained.get("response_tokens"),
            "train_time_s": trained.get("time_s"),
            "air_hits": air_hits_of(trained.get("snapshot_id")),
        }
        rows.append(row)
    return rows


def format_cell(row: dict[str, Any], key: str, spec: str) -> str:
    value = row.get(key)
    return "-" if value is None else spec.format(value)


def print_table(rows: list[dict[str, Any]], console: Any = None) -> None:
    from rich.console import Console
    from rich.table import Table

    console = console or Console()
    cells = [[format_cell(row, k, f) for k, _, f in COLUMNS] for row in rows]
    for part, group in enumerate(column_groups(cells, console.width)):  # console.width honours $COLUMNS
        title = "spanrl: reward per cycle" + (" (continued)" if part else "")
        table = Table(title=title)
        for i in group:  # wraps at spaces, never inside a word (rich would shrink a column below its longest word)
            table.add_column(COLUMNS[i][1], justify="right", min_width=_longest_word(cells, i))
        for line in cells:
            table.add_row(*(line[i] for i in group))
        console.print(table)


def interpret(rows: list[dict[str, Any]]) -> str:
    """Two sentences that say what the run showed: the held-out reward from the base model to the last
    policy (with the training tool-error rate), then the gate's decisions and how much the numbers weigh."""
    scored = [r for r in rows if r.get("eval_reward") is not None]
    if not scored:
        return "No held-out rollout finished, so there is nothing to compare yet; see DATA/demo/logs."
    first, last = scored[0], scored[-1]
    errors = [r["tool_error_rate"] for r in rows if r.get("tool_error_rate") is not None]
    tools = f"; tool calls failed in {sum(errors) / len(errors):.0%} of the training rollouts' calls" if errors else ""
    if last is first:
        one = f"The base model scored {first['eval_reward']:.3f} on {first.get('eval_n')} held-out tasks{tools}."
    elif last.get("policy") == first.get("policy"):  # no candidate was promoted: the same model, sampled twice
        one = (f"The policy did not change ({first.get('policy')}), so its held-out reward moving from "
               f"{first['eval_reward']:.3f} to {last['eval_reward']:.3f} over {last.get('eval_n')} tasks is sampling "
               f"noise{tools}.")
    else:
        move = last["eval_reward"] - first["eval_reward"]
        one = (f"Held-out reward went from {first['eval_reward']:.3f} (policy {first.get('policy')}) to "
               f"{last['eval_reward']:.3f} (policy {last.get('policy')}, {move:+.3f}) over {last.get('eval_n')} tasks{tools}.")
    gates = [r["gate"] for r in rows if r.get("gate")]
    promoted = sum(g == "promoted" for g in gates)
    decided = f"The gate promoted {promoted} of {len(gates)} candidates" if gates else "No candidate was trained"
    n = min(int(r.get("eval_n") or 0) for r in scored)
    weight = (f"; with {n} held-out tasks a difference this size is noise, not learning: `make demo` "
              "(64 tasks, 5 cycles) measures it" if n < 16 else
              "; docs/demo.md has the spread of this number over three seeds")
    return f"{one} {decided}{weight}."


def _longest_word(cells: list[list[str]], i: int) -> int:
    return max(len(w) for text in (COLUMNS[i][1], *(line[i] for line in cells)) for w in text.split())


def column_groups(cells: list[list[str]], width: int) -> list[list[int]]:
    """Column indexes split into tables that each fit ``width`` (each starts with the cycle column):
    a narrow terminal gets two tables rather than cut headers ("held-o…")."""
    def need(i: int) -> int:  # headers and cells wrap at their spaces: the longest word, padding and border
        return _longest_word(cells, i) + 3

    groups: list[list[int]] = [[0]]
    used = 1 + need(0)
    for i in range(1, len(COLUMNS)):
        if used + need(i) > width and len(groups[-1]) > 1:
            groups.append([0])
            used = 1 + need(0)
        groups[-1].append(i)
        used += need(i)
    return groups


def plot_history(rows: list[dict[str, Any]], path: Path) -> Path:
    """Six panels: rewards, accuracy, validation + gate, loss, tokens, tool errors + AIR hits (matplotlib, Agg)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    x = [r["cycle"] for r in rows]

    def series(key: str) -> list[float]:
        return [float("nan") if r.get(key) is None else float(r[key]) for r in rows]

    fig, axes = plt.subplots(2, 3, figsize=(15, 7))
    ax = axes[0][0]
    ax.plot(x, series("train_reward"), "o-", label="training rollouts")
    ax.plot(x, series("eval_reward"), "s-", label="held-out (all evaluated)")
    ax.plot(x, series("eval_subset_reward"), "d:", label=f"held-out, first {SUBSET}")
    ax.set(title="mean reward per cycle", xlabel="cycle (policy after N trainings)", ylabel="reward")
    ax.legend(fontsize=8)
    ax = axes[0][1]
    ax.plot(x, series("train_accuracy"), "o-", label="training rollouts")
    ax.plot(x, series("eval_accuracy"), "s-", label="held-out")
    ax.set(title="correct final answer", xlabel="cycle", ylabel="fraction", ylim=(-0.02, 1.02))
    ax.legend(fontsize=8)
    ax = axes[0][2]
    ax.plot(x, series("val_reward"), "o-", label="policy")
    cand = series("candidate_val_reward")
    kept = [c if r.get("gate", "") and str(r.get("gate")).startswith("kept") else float("nan") for c, r in zip(cand, rows, strict=True)]
    promoted = [c if str(r.get("gate") or "").startswith("promoted") else float("nan") for c, r in zip(cand, rows, strict=True)]
    ax.plot(x, promoted, "^", color="tab:green", label="candidate (promoted)")
    ax.plot(x, kept, "x", color="tab:red", markersize=10, label="candidate kept (no difference or worse)")
    ax.set(title="validation reward and the promotion gate", xlabel="cycle", ylabel="reward")
    ax.legend(fontsize=8)
    ax = axes[1][0]
    ax.plot(x, series("train_loss"), "o-")
    ax.set(title="train loss (cycle N -> adapter N+1)", xlabel="cycle")
    ax = axes[1][1]
    ax.bar(x, series("response_tokens"), color="tab:gray")
    ax.set(title="response tokens trained", xlabel="cycle", ylabel="tokens")
    ax = axes[1][2]
    ax.plot(x, series("tool_error_rate"), "o-", label="tool error rate (training rollouts)")
    ax.plot(x, series("eval_tool_error_rate"), "s-", label="tool error rate (held-out)")
    ax.set(title="tool errors and AIR hits", xlabel="cycle", ylabel="failed / all tool calls", ylim=(-0.02, 1.02))
    ax.legend(fontsize=8, loc="upper left")
    twin = ax.twinx()
    twin.plot(x, series("air_hits"), "r^--", label="AIR hits (transitions)")
    twin.set_ylabel("AIR hits")
    twin.set_ylim(bottom=0, top=max([v for v in series("air_hits") if v == v] + [1]) * 1.1)  # counts: from 0
    twin.yaxis.get_major_locator().set_params(integer=True)
    twin.legend(fontsize=8, loc="center right")
    for a in axes.flat:
        a.set_xticks(x)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def write_html(rows: list[dict[str, Any]], data: Path, path: Path, png: Path) -> Path:
    head = "".join(f"<th>{html.escape(h)}</th>" for _, h, _ in COLUMNS)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(format_cell(r, k, f))}</td>" for k, _, f in COLUMNS) + "</tr>" for r in rows
    )
    path.write_text(
        "<!doctype html><meta charset='utf-8'><title>spanrl report</title>"
        "<style>body{font-family:sans-serif;margin:2em}td,th{padding:4px 10px;text-align:right;"
        "border-bottom:1px solid #ddd}</style>"
        f"<h1>spanrl report</h1><p>data root: <code>{html.escape(str(data))}</code></p>"
        f"<table><tr>{head}</tr>{body}</table><p><img src='{html.escape(png.name)}' alt='reward per cycle'></p>",
        encoding="utf-8",
    )
    return path


def write_report(data: Path) -> tuple[list[dict[str, Any]], Path, Path]:
    """Build the history, then DATA/report.png and DATA/report.html; InputError when there is none."""
    rows = load_history(data)
    if not rows:
        raise InputError(
            f"{data}: nothing to report yet (no adapters/cycles.jsonl, eval/ or demo/rollouts/); "
            "run `spanrl demo` or `spanrl train` first, or pass --data"
        )
    png = plot_history(rows, data / "report.png")
    page = write_html(rows, data, data / "report.html", png)
    return rows, png, page
