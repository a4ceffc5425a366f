-- name: snapshot_counts
-- The snapshot's rows, rollouts and tasks, and its final rewards' spread (over the per-rollout digests).
SELECT coalesce(sum(n_rows), 0) AS n_rows, count(*) AS rollouts, count(DISTINCT task_id) AS tasks,
       min(r) AS reward_min, max(r) AS reward_max, avg(r) AS reward_mean, stddev_samp(r) AS reward_std
FROM _digests
