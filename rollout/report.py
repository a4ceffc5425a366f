"""The run summary printed at the end of ``spanrl rollout``."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from spanrl.rollout.runner import RunSummary
from spanrl.rollout.runs import ATTEMPTS

SHOWN_FAILURES = 5


def print_summary(s: RunSummary, console: Console) -> None:
    table = Table(title=f"rollout run {s.run_id}", show_header=False, title_justify="left")
    table.add_column("what", style="bold")
    table.add_column("value")
    total = s.tasks * s.n
    table.add_row("tasks x samples", f"{s.tasks} x {s.n} = {total}")
    table.add_row("this run", f"{s.samples_ok} ok, {s.samples_failed} failed "
                  f"(attempts: {', '.join(f'{k} {v}' for k, v in sorted(s.statuses.items())) or 'none'}; "
                  f"{s.retried} retried)")
    table.add_row("already done (skipped)", f"{s.skipped_ok} ok, {s.skipped_failed} failed")
    if s.statuses:
        table.add_row("agent spans", _agent_spans(s))
    if s.scored or s.score_failures:
        table.add_row("scored", f"{s.scored} -> {s.feedback_file}; {s.score_failures} scorer failure(s)")
    if s.mean_score is not None:
        table.add_row("mean score", f"{s.mean_score:.4g} over {s.n_scored} scored sample(s) of the run "
                                    "(each sample's last scored attempt)")
    if s.purpose == "eval":
        table.add_row("purpose", "eval: held out, left out of training snapshots (`spanrl ingest`; "
                                 "--include-eval keeps them)")
    if s.statuses:
        kept = (f"{_mb(s.output_kept)} kept of {_mb(s.output_bytes)} printed (head and tail of each stream)"
                if s.output_bytes > s.output_kept else f"{_mb(s.output_bytes)} printed, all kept")
        table.add_row("agent output", kept)
    if s.descendants_killed or s.orphans_stopped:
        table.add_row("processes stopped", f"{s.descendants_killed} left running by attempts; "
                      f"{len(s.orphans_stopped)} agent(s) of an earlier, killed runner of this run")
    table.add_row("run folder", str(s.run_dir))
    console.print(table)
    for att in s.failures[:SHOWN_FAILURES]:
        tail = " | ".join(att.stderr_tail.strip().splitlines()[-3:]) or "(no stderr)"
        console.print(f"  {att.status}: {att.rollout_id} exit {att.exit_code} after {att.duration_s:.1f}s: {tail}",
                      highlight=False, soft_wrap=True)
    if len(s.failures) > SHOWN_FAILURES:
        console.print(f"  ... {len(s.failures) - SHOWN_FAILURES} more in {s.run_dir}/{ATTEMPTS}", highlight=False)
    if s.identical_groups:
        names = ", ".join(s.identical_groups[:5]) + (" ..." if len(s.identical_groups) > 5 else "")
        console.print(f"[yellow]warning[/]: {len(s.identical_groups)} task(s) got identical responses in every "
                      f"sample ({names}): their group advantage is 0. Sample at a temperature above 0 "
                      "(`spanrl serve --temperature 0.8`, or --temperature with --model).", soft_wrap=True)
    if s.heldout_runs:
        console.print(f"[yellow]warning[/]: these tasks are held out: {len(s.heldout_runs)} evaluation run(s) used this "
                      f"very tasks file ({', '.join(s.heldout_runs[:3])}); these rollouts train on them. Sample "
                      "training rollouts from other tasks, or add --purpose eval for a baseline", soft_wrap=True,
                      highlight=False)
    if s.span_errors:
        console.print(f"[yellow]warning[/]: {len(s.span_errors)} runner span(s) not delivered "
                      f"({s.span_errors[0]}) to --otlp {s.otlp} over {s.otlp_protocol}; check the collector "
                      "is up and --otlp-protocol matches it", soft_wrap=True, highlight=False)
    missing = s.without_agent_spans
    if s.spans_checked and missing and (s.gateway or s.attempt_root):  # the server recorded their calls
        console.print(f"note: {len(missing)} attempt(s) sent no span of their own, e.g. {missing[0]}: their calls are "
                      f"recorded by the server at their per-attempt URL ({s.gateway or s.attempt_root}/r/...), so they "
                      "train; agent names and tool spans come only from an instrumented agent", soft_wrap=True,
                      highlight=False)
    elif s.spans_checked and missing:
        ok = sum(1 for rid in missing if rid in s.ok_ids)
        console.print(f"[yellow]warning[/]: {len(missing)} attempt(s) ({ok} of them ok) sent no span of their own, "
                      f"e.g. {missing[0]}: the lake has only the runner's span for them, so they train nothing. "
                      "Is the agent instrumented (`opentelemetry-instrument python agent.py` with "
                      "opentelemetry-distro and an instrumentor for its LLM client), exporting OTLP "
                      "(OTEL_TRACES_EXPORTER=otlp, not console/none), and not overriding the "
                      f"OTEL_EXPORTER_OTLP_* variables the runner sets? The agent's stderr: {s.run_dir}/logs",
                      soft_wrap=True, highlight=False)
    if s.spans_checked and s.spans_without_rollout_id:
        console.print(f"[yellow]warning[/]: {s.spans_without_rollout_id} span(s) arrived without spanrl.rollout_id: "
                      "the agent builds its OTel Resource without OTEL_RESOURCE_ATTRIBUTES (use "
                      "Resource.create(...), which reads it), so they cannot join their rollout",
                      soft_wrap=True, highlight=False)


def _mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 100_000 else f"{n:,} B"


def _agent_spans(s: RunSummary) -> str:
    """How many attempts of this invocation sent spans of their own; unknowable with --otlp."""
    if not s.spans_checked:
        return (f"not checked: spans go to --otlp or the collector already writing the data root, {s.otlp} "
                f"({s.otlp_protocol}), which the runner cannot see; "
                "`spanrl sql` after ingest shows rollouts with only the runner's span")
    counted = s.agent_spans
    missing = len(s.without_agent_spans)
    return (f"{len(counted) - missing} of {len(counted)} attempts sent spans ({sum(counted.values())} spans); "
            f"{missing} sent none")
