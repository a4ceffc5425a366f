-- name: rollouts(${files})
-- The build's rollouts over every segment of its state (rollouts.parquet): what the summary and the snapshot read.
CREATE VIEW rollouts AS SELECT * FROM read_parquet(${files}, union_by_name = true)
