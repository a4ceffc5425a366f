-- name: flat
-- The snapshot itself as one self-contained Parquet file: every transition column, `return` and
-- `advantage` filled in (the snapshot's parts hold them NULL and its readers apply advantages.parquet
-- with the manifest's credit config), so polars, pandas or DuckDB alone read finished training rows.
-- Nothing is left out; the content hash, snapshot id and credit config travel in the file's metadata.
SELECT NULL::VARCHAR AS drop_reason, *
FROM transitions
ORDER BY rollout_id, step
