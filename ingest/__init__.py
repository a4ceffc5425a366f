"""Ingest stage: span files -> Parquet trace lake + the lake views (docs/lake.md).

Later stages read the lake through ``spanrl.ingest.views.connect`` (their small reader API).
"""
