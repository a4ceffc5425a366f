"""``spanrl ingest``'s stage 1 as the CLI shows it: a progress bar over the planned bytes, then the summary
table, the config file used, the first rejects and every warning."""

from __future__ import annotations

from spanrl.ingest.config import LakeConfig, describe_config_file
from spanrl.ingest.load import LakeSummary, load_lake, rejects_dir
from spanrl.ingest.scan import SpanFile


def load_lake_with_progress(cfg: LakeConfig) -> LakeSummary:
    """``load_lake`` with a rich progress bar over bytes and a summary table (what the CLI prints)."""
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn
    from rich.table import Table

    console = Console(stderr=True)
    with Progress(TextColumn("[bold]ingest[/] {task.description}"), BarColumn(), DownloadColumn(),
                  TimeRemainingColumn(), console=console, transient=True) as progress:
        task = progress.add_task("scanning", total=None)

        def on_plan(plan: list[SpanFile]) -> None:
            progress.update(task, total=sum(max(p.end - p.start, 0) for p in plan) or 1,
                            description=f"{len(plan)} file(s)")

        def on_progress(item: SpanFile, nbytes: int) -> None:
            progress.update(task, advance=nbytes, description=item.path.name)

        summary = load_lake(cfg, on_progress=on_progress, on_plan=on_plan)
    table = Table(title=f"trace lake: {cfg.data / 'lake'}")
    for col in ("files", "MB", "spans", "log records", "duplicates", "rejects", "seconds", "spans/s"):
        table.add_column(col, justify="right")
    table.add_row(str(summary.files), f"{summary.bytes / 1e6:.1f}", str(summary.spans), str(summary.logs),
                  str(summary.duplicates), str(summary.rejects), f"{summary.seconds:.2f}", f"{summary.spans_per_s:,.0f}")
    console.print(table)
    console.print(describe_config_file(cfg), soft_wrap=True, highlight=False)
    if not summary.files:
        console.print(f"no new span data under {cfg.input or cfg.data / 'otel'}")
    for r in summary.reject_samples:
        console.print(f"[yellow]reject[/] {r.file}:{r.line}: {r.error}", soft_wrap=True, highlight=False)
    for w in summary.warnings:
        console.print(f"[yellow]warning[/] {w}", soft_wrap=True, highlight=False)
    if summary.rejects:
        console.print(f"{summary.rejects} bad line(s) kept in {rejects_dir(cfg.data / 'lake')}; the rest was ingested.")
    return summary
