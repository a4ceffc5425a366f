"""Trainer stage: transition snapshots -> LoRA adapters; plus serving, the demo loop and reports.

Imports nothing from ``spanrl.ingest``: snapshots arrive only through ``spanrl.transitions``.
"""
