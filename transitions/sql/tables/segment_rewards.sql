-- name: segment_rewards(${files})
-- The build's reward rows over every segment (rewards.parquet; feedback rows are whole-lake: rewards.sql).
-- reads:
-- creates: segment_rewards
SELECT * FROM read_parquet(${files}, union_by_name = true)
