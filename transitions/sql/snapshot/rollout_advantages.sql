-- name: rollout_advantages($advantage, $eps)
-- One advantage per rollout, A_r, from per-rollout scalars only (relation _rollout_rewards:
-- rollout_id, task_id, r), so a snapshot stores it in a small table beside its rows and a nightly
-- build recomputes it for every rollout without rewriting a single transition row (docs/incremental.md).
--   r   = final_reward (NULL counts 0: only present with --missing-reward zero)
--   A_r group: (r - mean_task) / (std_task + eps) over the rollouts of the task (sample std; a
--           zero-variance task gives 0; a task seen once falls back to batch);
--       batch: the same over every rollout of the snapshot; none: r.
-- Every sum runs over a list in a fixed order (list_avg/list_stddev_samp), not as a parallel
-- aggregate: the float result must not depend on thread scheduling, or the same lake would give a
-- different content hash and a duplicate snapshot.
WITH per_rollout AS (
    SELECT rollout_id, task_id, coalesce(r, 0.0) AS r FROM _rollout_rewards
),
batch AS (
    SELECT list_avg(rs) AS mean_b, coalesce(list_stddev_samp(rs), 0.0) AS std_b
    FROM (SELECT list(r ORDER BY rollout_id) AS rs FROM per_rollout)
),
task AS (
    SELECT task_id, len(rs) AS n_task, list_avg(rs) AS mean_t, coalesce(list_stddev_samp(rs), 0.0) AS std_t
    FROM (SELECT task_id, list(r ORDER BY rollout_id) AS rs FROM per_rollout WHERE task_id IS NOT NULL GROUP BY task_id)
)
SELECT p.rollout_id, p.task_id, p.r,
       CASE
           WHEN $advantage = 'none' THEN p.r
           WHEN $advantage = 'group' AND coalesce(t.n_task, 1) > 1
               THEN CASE WHEN t.std_t < 1e-12 THEN 0.0 ELSE (p.r - t.mean_t) / (t.std_t + $eps) END
           ELSE CASE WHEN b.std_b < 1e-12 THEN 0.0 ELSE (p.r - b.mean_b) / (b.std_b + $eps) END
       END AS a_r,
       CASE WHEN $advantage = 'group' AND coalesce(t.n_task, 1) > 1 THEN 'group'
            WHEN $advantage = 'none' THEN 'none' ELSE 'batch' END AS baseline
FROM per_rollout p LEFT JOIN task t USING (task_id) CROSS JOIN batch b
ORDER BY p.rollout_id
