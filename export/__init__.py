"""Snapshot -> datasets for the trainers that scale (TRL, OpenAI fine-tuning, verl-style triplets)."""

from spanrl.export.export import ExportConfig, ExportResult, export_snapshot
from spanrl.export.formats import FORMATS

__all__ = ["FORMATS", "ExportConfig", "ExportResult", "export_snapshot"]
