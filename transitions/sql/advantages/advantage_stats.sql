-- name: advantage_stats
-- Group bookkeeping over _rollout_rewards (rollout_id, task_id, r): task groups, zero-variance groups, batch fallbacks.
WITH per AS (SELECT rollout_id, task_id, coalesce(r, 0) AS r FROM _rollout_rewards),
     t AS (SELECT task_id, count(*) AS n, coalesce(stddev_samp(r), 0) AS sd FROM per GROUP BY task_id)
SELECT count(*) FILTER (WHERE n > 1 AND task_id IS NOT NULL) AS groups,
       count(*) FILTER (WHERE n > 1 AND task_id IS NOT NULL AND sd < 1e-12) AS zero_variance_groups,
       coalesce(sum(n) FILTER (WHERE n = 1 OR task_id IS NULL), 0) AS batch_fallback_rollouts
FROM t
