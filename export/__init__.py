"""Snapshot -> datasets for the trainers that scale (TRL, OpenAI fine-tuning, verl-style triplets)."""

from spanrl.export.config import ExportConfig, ExportResult
from spanrl.export.export import export_snapshot
from spanrl.export.formats import FORMATS

__all__ = ["FORMATS", "ExportConfig", "ExportResult", "export_snapshot"]
