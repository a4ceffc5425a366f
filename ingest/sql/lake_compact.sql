-- name: lake_compact($files)
-- The rows of one date partition's Parquet files exactly as stored (no `date` column: it lives in
-- the folder name), file after file: what `spanrl lake compact` writes into the partition's one new file.
SELECT * FROM read_parquet($files, hive_partitioning = false)
