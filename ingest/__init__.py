"""Ingest stage: span files -> Parquet trace lake + the lake views (DESIGN §3-4).

Later stages read the lake through ``spanrl.ingest.views.connect`` (their small reader API).
"""
