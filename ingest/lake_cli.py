"""``spanrl lake compact`` and ``spanrl lake prune``: housekeeping of the trace lake for long runs,
and the summaries ``spanrl ingest --keep-days`` prints too."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from spanrl.config import click_options, resolve
from spanrl.ingest.lake_config import LakeCommandConfig, LakeFlags
from spanrl.options import data_option

if TYPE_CHECKING:
    from spanrl.ingest.compact import CompactSummary
    from spanrl.ingest.prune import PruneSummary


@click.group()
def lake() -> None:
    """Housekeeping of the trace lake: compact small files, drop old date partitions, verify and collect an S3 root.

    \b
    Example:
      spanrl lake compact --data ./spanrl-data
      spanrl lake prune --keep-days 30 --dry-run
      spanrl lake verify --data s3://my-bucket/spanrl
      spanrl lake gc --data s3://my-bucket/spanrl --dry-run
    """


@lake.command("compact")
@data_option
@click_options(LakeCommandConfig, "min_files")
@click_options(LakeFlags, "dry_run")
@click_options(LakeCommandConfig, "memory_limit", "config_file")
def lake_compact(data: Path, dry_run: bool | None, **flags: object) -> None:
    """Rewrite each date partition's small Parquet files as one file (same rows, same schema).

    Crash-safe: the new file is complete and journalled (lake/_compacted.jsonl) before an old
    one is deleted; an interrupted run is finished by the next compact or ingest. Holds the
    lake's writer lock. Re-running is a no-op.

    \b
    Example:
      spanrl lake compact --data ./spanrl-data --min-files 4
    """
    from spanrl.ingest.config import check_memory_limit
    from spanrl.ingest.housekeeping import compact_lake

    cfg = resolve(LakeCommandConfig, {**flags, "data": data}, "lake")  # flags > [lake] in spanrl.toml > defaults
    check_memory_limit(cfg.memory_limit)
    print_compaction(compact_lake(cfg.data, min_files=cfg.min_files, dry_run=bool(dry_run),
                                  memory_limit=cfg.memory_limit))


@lake.command("prune")
@data_option
@click_options(LakeFlags, "keep_days", "dry_run")
def lake_prune(data: Path, keep_days: int, dry_run: bool | None) -> None:
    """Drop old date partitions of spans and logs (journalled in lake/_pruned.jsonl).

    Snapshots already written keep their rows: they hold their own Parquet files.

    \b
    Example:
      spanrl lake prune --keep-days 30
    """
    from spanrl.ingest.housekeeping import prune_lake

    flags = resolve(LakeFlags, {"data": data, "keep_days": keep_days, "dry_run": dry_run}, None)
    print_prune(prune_lake(data, flags.keep_days, dry_run=flags.dry_run))


@lake.command("verify")
@data_option
def lake_verify(data: Path) -> None:
    """Hash every object the current state of an S3 data root names; exit 2 listing the damaged ones.

    Each file of a root on object storage is stored as objects/<sha256 of its bytes>; this fetches each
    one the current manifest names and checks it (a read of the whole state; no lease, no mirror).
    Readers and writers check every object they fetch anyway; this checks the ones nobody fetched.

    \b
    Example:
      spanrl lake verify --data s3://my-bucket/spanrl
    """
    from spanrl.errors import InputError
    from spanrl.integrity import damaged_report, verify_root
    from spanrl.storage import is_remote

    if not is_remote(data):
        raise InputError(f"--data {data}: `spanrl lake verify` checks a data root on object storage "
                         "(--data s3://BUCKET/PREFIX), whose files are stored under their sha256; a local root "
                         "has no such record (its snapshots are checked against their content hash when read)")
    report = verify_root(str(data))
    if report.damaged:
        raise damaged_report(report)
    click.echo(report.summary())


@lake.command("gc")
@data_option
@click_options(LakeCommandConfig, "gc_keep_days")
@click_options(LakeFlags, "dry_run")
@click_options(LakeCommandConfig, "config_file")
def lake_gc(data: Path, dry_run: bool | None, **flags: object) -> None:
    """Delete the objects of an S3 data root that no state worth keeping names.

    Kept: the current state and every state replaced less than --keep-days ago (readers may still be
    on it), and every object their manifests name. Removed: the objects and manifests of runs killed
    before they published, and those of older states. Holds the root's lease like any writer (exit 2
    naming the holder while another writer runs). A local root is refused: it has no unreferenced
    objects (each file lives under its own path and is replaced by rename).

    \b
    Example:
      spanrl lake gc --data s3://my-bucket/spanrl --dry-run
      spanrl lake gc --data s3://my-bucket/spanrl --keep-days 30
    """
    from spanrl.errors import InputError
    from spanrl.garbage import collect_garbage
    from spanrl.storage import is_remote

    if not is_remote(data):
        raise InputError(f"--data {data}: `spanrl lake gc` collects a data root on object storage (--data "
                         "s3://BUCKET/PREFIX), where every state only adds immutable objects. A local root has no "
                         "unreferenced objects: each file lives under its own path and is replaced by rename (a killed "
                         "writer leaves only hidden drafts and work folders, .tmp-*, .trash-*, lake/_staging, that no "
                         "reader sees); old data goes with `spanrl lake prune`, `spanrl transitions clean` and "
                         "`spanrl adapters clean`")
    cfg = resolve(LakeCommandConfig, {**flags, "data": data}, "lake")  # flags > [lake] in spanrl.toml > defaults
    for line in collect_garbage(str(data), cfg.gc_keep_days, dry_run=bool(dry_run)).summary():
        click.echo(line)


def human_bytes(n: int) -> str:
    """1234567 -> '1.2 MB' (decimal units, like the ingest summary's MB)."""
    for unit in ("B", "KB", "MB", "GB"):
        if abs(n) < 1000 or unit == "GB":
            return f"{n:,.0f} {unit}" if unit == "B" else f"{n:,.1f} {unit}"
        n /= 1000
    return f"{n:,.1f} TB"


def print_compaction(summary: CompactSummary) -> None:
    """One row per partition (files before -> after, rows, MB before -> after), then a total."""
    from rich.console import Console
    from rich.table import Table

    console = Console(stderr=True)
    for line in summary.repaired:
        console.print(f"[yellow]repair[/] {line}", soft_wrap=True, highlight=False)
    for line in summary.skipped:
        console.print(f"[yellow]skipped[/] {line}", soft_wrap=True, highlight=False)
    if not summary.done:
        console.print(f"nothing to compact: no date partition holds {summary.min_files} or more Parquet files")
        return
    verb = "would compact" if summary.dry_run else "compacted"
    table = Table(title=f"{verb} {len(summary.done)} partition(s) in {summary.seconds:.2f}s")
    for col in ("partition", "files", "rows", "bytes before", "bytes after"):
        table.add_column(col, justify="left" if col == "partition" else "right")
    for c in summary.done:
        table.add_row(c.partition.name, f"{len(c.partition.files)} -> 1", f"{c.partition.rows:,}",
                      human_bytes(c.partition.bytes), "" if summary.dry_run else human_bytes(c.bytes_after))
    table.add_row("total", f"{summary.files_before} -> {len(summary.done)}", f"{summary.rows:,}",
                  human_bytes(sum(c.partition.bytes for c in summary.done)),
                  "" if summary.dry_run else human_bytes(sum(c.bytes_after for c in summary.done)), style="bold")
    console.print(table)


def print_prune(summary: PruneSummary) -> None:
    """What was dropped (or would be), and the cut-off date it was measured from."""
    from rich.console import Console

    console = Console(stderr=True)
    for line in summary.repaired:
        console.print(f"[yellow]repair[/] {line}", soft_wrap=True, highlight=False)
    if summary.newest is None:
        console.print("nothing to prune: the lake holds no date partition yet")
        return
    window = f"newest partition {summary.newest}, --keep-days {summary.keep_days}: older than {summary.older_than}"
    if not summary.partitions:
        console.print(f"nothing to prune ({window})", highlight=False)
        return
    verb = "would drop" if summary.dry_run else "dropped"
    console.print(f"{verb} {len(summary.partitions)} partition(s), {len(summary.files)} file(s), "
                  f"{human_bytes(summary.bytes)} ({window})", highlight=False)
    for rel in summary.partitions:
        console.print(f"  {rel}", highlight=False, soft_wrap=True)
