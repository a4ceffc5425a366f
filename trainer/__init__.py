"""Trainer stage: transition snapshots -> LoRA adapters. It owns the adapter folders, adapters/LATEST
and the cycle log (``adapter.py``). Snapshots arrive only through ``spanrl.transitions``.
"""
