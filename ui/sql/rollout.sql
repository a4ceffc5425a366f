-- name: rollout($rollout_id)
-- One rollout's row (rollouts table) with its AIR hit count; both read by the constant key, which the
-- tables are sorted by (the scans skip every row group that cannot hold it).
SELECT r.*, (SELECT count(*) FROM rewards WHERE rollout_id = $rollout_id AND source = 'air') AS air_hits
FROM rollouts r WHERE r.rollout_id = $rollout_id
