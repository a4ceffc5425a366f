"""Stage 1's flags for ``spanrl ingest``; the command itself (lake, then snapshot) is wired in
``spanrl.cli`` because it runs two stages, and a stage never imports a later one."""

from __future__ import annotations

import click


def stage1_options(func):
    """The flags only ``spanrl ingest`` reads: stage 1's, and the housekeeping it does around stage 2."""
    func = click.option("--keep-snapshots", type=int, default=None, metavar="N",
                        help="After the snapshot: keep the N newest snapshots (plus LATEST and every one a "
                             "training run used); spanrl.toml keep_snapshots.")(func)
    func = click.option("--keep-days", type=int, default=None, metavar="N",
                        help="After stage 1: drop lake date partitions older than the newest one minus N days; "
                             "spanrl.toml keep_days.")(func)
    func = click.option("--no-transitions", is_flag=True, default=None, help="Only build the lake (stage 1).")(func)
    return click.option("--input", "input", default=None, help="Glob of span files to read (default: DATA/otel/*).")(func)
