-- name: rollout
-- One rollout's row (rollouts view) with its AIR hit count.
SELECT r.*, (SELECT count(*) FROM rewards w WHERE w.rollout_id = r.rollout_id AND w.source = 'air') AS air_hits
FROM rollouts r WHERE r.rollout_id = $rollout_id
