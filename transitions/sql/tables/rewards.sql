-- name: rewards(${files})
-- Every reward row of the build: the segments' and the whole-lake feedback rows (feedback_rewards.parquet).
-- reads: segment_rewards
-- creates: rewards
SELECT * FROM segment_rewards UNION ALL BY NAME SELECT * FROM read_parquet(${files})
