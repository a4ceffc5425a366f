"""Capture stage: OTLP in (HTTP + gRPC), collector-identical JSON span files out (docs/collector.md).

The names below load lazily, so ``spanrl --help`` does not import aiohttp and grpcio.
"""

from __future__ import annotations

from typing import Any

__all__ = ["CollectorConfig", "EmbeddedCollector", "logs_to_json", "traces_to_json"]

_WHERE = {
    "CollectorConfig": "spanrl.collector.config",
    "EmbeddedCollector": "spanrl.collector.server",
    "logs_to_json": "spanrl.collector.otlpjson",
    "traces_to_json": "spanrl.collector.otlpjson",
}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'spanrl.collector' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(_WHERE[name]), name)
