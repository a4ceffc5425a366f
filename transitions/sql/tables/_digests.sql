-- name: _digests(${files})
-- The build's per-rollout snapshot digests over every segment (digests.parquet).
-- reads:
-- creates: _digests
SELECT * FROM read_parquet(${files}, union_by_name = true)
