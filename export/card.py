"""The dataset card (README.md in the export folder): where each column came from, and how to load it.

Its YAML header is the Hugging Face dataset-card ``configs`` block, so ``load_dataset(OUT)`` finds
the data file without being told; the body names the snapshot (id, content hash), the options, the
row counts (with every reason a row was left out) and the provenance of each column.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from spanrl import __version__
from spanrl.export.config import ExportConfig, ExportResult, export_options

CARD_MARKER = "<!-- written by spanrl export -->"


def _short_type(duckdb_type: str) -> str:
    """DuckDB's type text, with the chat-message struct named instead of spelled out."""
    if "tool_call_id" in duckdb_type:
        return "list of message structs"
    return duckdb_type if len(duckdb_type) < 60 else "STRUCT (see the columns below it)"


def _front_matter(cfg: ExportConfig, file_name: str) -> str:
    return "\n".join([
        "---",
        "configs:",
        "- config_name: default",
        "  data_files:",
        "  - split: train",
        f"    path: {file_name}",
        "tags:",
        "- spanrl",
        f"- {cfg.format}",
        "---",
    ])


def write_card(path: Path, cfg: ExportConfig, result: ExportResult, manifest: dict[str, Any],
               types: dict[str, str]) -> None:
    """Write README.md; ``types`` maps the output columns to their DuckDB types."""
    fmt = cfg.spec
    out_cols = [c for c in types if c != "drop_reason"] if not fmt.line_column else list(fmt.columns)
    lines = [
        _front_matter(cfg, result.file.name),
        CARD_MARKER,
        f"# spanrl export: {fmt.name}",
        "",
        fmt.summary,
        "",
        f"- source: transition snapshot `{manifest['snapshot_id']}` (schema v{manifest.get('schema_version')}, "
        f"content hash `{manifest.get('content_hash', '')[:16]}`) under `{cfg.data}`",
        f"- written {datetime.now(UTC).isoformat(timespec='seconds')} by spanrl {__version__}: "
        f"`{result.file.name}` ({cfg.file_type})",
        f"- options: `{json.dumps(export_options(cfg), sort_keys=True)}`",
        f"- rows: {result.rows_in} transitions in, **{result.rows_out} rows out**",
    ]
    for reason, n in sorted(result.left_out.items()):
        lines.append(f"  - left out {n}: {reason}")
    for warning in result.warnings():
        lines.append(f"- **warning**: {warning}")
    lines += ["", "## Columns", "", "| column | type | where it came from |", "|---|---|---|"]
    for col, origin in fmt.columns.items():
        names = [c.strip() for c in col.split(",")]
        kind = ", ".join(dict.fromkeys(_short_type(types.get(n.split(".")[0], "JSON")) for n in names))
        if fmt.line_column:
            kind = "JSON"
        lines.append(f"| `{col}` | {kind} | {origin} |")
    missing = [c for c in out_cols if not any(c in [n.strip() for n in k.split(",")] or k.startswith(c + ".")
                                              for k in fmt.columns)]
    if missing:  # a column the SQL added without a provenance line: name it rather than hide it
        lines.append(f"| `{', '.join(missing)}` | | (not described) |")
    lines += ["", "## Load it", "", fmt.consumer.format(out=result.out), ""]
    path.write_text("\n".join(lines), encoding="utf-8")
