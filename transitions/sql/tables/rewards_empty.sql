-- name: rewards_empty
-- rewards when the build stored no feedback rows: the segments' rows only.
-- reads: segment_rewards
-- creates: rewards
SELECT * FROM segment_rewards
