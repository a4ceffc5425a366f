"""Ingest stage: span files -> Parquet trace lake -> views -> transition snapshots (DESIGN §3-5)."""
