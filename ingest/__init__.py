"""Ingest stage: span files -> Parquet trace lake + the lake views (docs/lake.md).

Later stages read the lake, take its writer lock and reach its views through ``spanrl.ingest.lake``
(their small API; tests/test_layout.py allows them no other ingest module but ``ingest.config``).
"""
