"""Capture stage: OTLP in (HTTP + gRPC), collector-identical JSON span files out (DESIGN §2)."""
