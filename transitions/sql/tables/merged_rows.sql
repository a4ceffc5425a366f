-- name: merged_rows(${files})
-- One table's rows of several segments, concatenated (merge_segments: a Parquet read and write, nothing recomputed).
SELECT * FROM read_parquet(${files}, union_by_name = true)
