"""What one ``spanrl transitions clean`` call asks: ``CleanFlags`` (no section: how many snapshots to
keep is said per call, like ``--dry-run``; ``spanrl ingest``'s standing ``keep_snapshots`` is
``[ingest]``'s). Every field is a ``spanrl.config.knob`` and the flags are generated from them; ``--keep`` is
checked where it is used (``spanrl.options.check_keep``)."""

from __future__ import annotations

from dataclasses import dataclass

from spanrl.config import knob


@dataclass
class CleanFlags:
    """The switches of ``spanrl transitions clean``."""

    keep: int = knob(help="Keep the N newest snapshots (and every protected one).", required=True, metavar="N")
    dry_run: bool = knob(False, "Say what would be deleted; delete nothing.")
