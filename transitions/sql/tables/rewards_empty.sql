-- name: rewards_empty
-- rewards when the build stored no feedback rows: the segments' rows only.
CREATE VIEW rewards AS SELECT * FROM segment_rewards
