"""Stage 1's flags for ``spanrl ingest``; the command itself (lake, then snapshot) is wired in
``spanrl.cli`` because it runs two stages, and a stage never imports a later one. The flags are
generated from ``LakeConfig``'s fields (``spanrl.config.click_options``): default, help and
spelling live on the field."""

from __future__ import annotations

from spanrl.config import click_options
from spanrl.ingest.config import LakeConfig

# the flags only ``spanrl ingest`` reads from stage 1 (the root command adds the composed config's
# --no-transitions and stage 2's --keep-snapshots)
stage1_options = click_options(LakeConfig, "input", "keep_days", "workers")
