-- name: rollouts(${files})
-- The build's rollouts over every segment of its state (rollouts.parquet): what the summary and the snapshot read.
-- reads:
-- creates: rollouts
SELECT * FROM read_parquet(${files}, union_by_name = true)
