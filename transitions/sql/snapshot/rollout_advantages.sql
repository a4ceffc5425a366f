-- name: rollout_advantages($advantage, $eps)
-- One advantage per rollout, A_r, from per-rollout scalars only (relation _rollout_rewards:
-- rollout_id, task_id, r, s, n), so a snapshot stores it in a small table beside its rows and a nightly
-- build recomputes it for every rollout without rewriting a single transition row (docs/incremental.md).
--   r   = final_reward (NULL counts 0: only present with --missing-reward zero)
--   A_r group: (r - mean_task) / (std_task + eps) over the rollouts of the task (sample std; a
--           zero-variance task gives 0; a task seen once falls back to batch);
--       batch: the same over every rollout of the snapshot; none: r.
--   AIR in the group statistics (what credit `air` spreads, apply_advantages.sql): the shaped reward
--   R = r + s, s = the sum of the AIR rewards its calls set off (n calls), through the same baseline:
--   a_air = (R - mean R) / (std R + eps) (none: R; no spread: 0), air_scale = that divisor (1 with
--   none or no spread), s_mean = s / n. Without an AIR hit in the group, a_air = A_r.
-- Every sum runs over a list in a fixed order (list_avg/list_stddev_samp), not as a parallel
-- aggregate: the float result must not depend on thread scheduling, or the same lake would give a
-- different content hash and a duplicate snapshot.
-- reads: _rollout_rewards
-- creates: _rollout_adv
WITH per_rollout AS (
    SELECT rollout_id, task_id, coalesce(r, 0.0) AS r, coalesce(s, 0.0) AS s, greatest(coalesce(n, 1), 1) AS n,
           coalesce(r, 0.0) + coalesce(s, 0.0) AS shaped
    FROM _rollout_rewards
),
batch AS (
    SELECT list_avg(rs) AS mean_b, coalesce(list_stddev_samp(rs), 0.0) AS std_b,
           list_avg(ss) AS mean_bs, coalesce(list_stddev_samp(ss), 0.0) AS std_bs
    FROM (SELECT list(r ORDER BY rollout_id) AS rs, list(shaped ORDER BY rollout_id) AS ss FROM per_rollout)
),
task AS (
    SELECT task_id, len(rs) AS n_task, list_avg(rs) AS mean_t, coalesce(list_stddev_samp(rs), 0.0) AS std_t,
           list_avg(ss) AS mean_ts, coalesce(list_stddev_samp(ss), 0.0) AS std_ts
    FROM (SELECT task_id, list(r ORDER BY rollout_id) AS rs, list(shaped ORDER BY rollout_id) AS ss
          FROM per_rollout WHERE task_id IS NOT NULL GROUP BY task_id)
),
chosen AS (  -- per rollout: which baseline, and that baseline's statistics of r and of the shaped reward
    SELECT p.*,
           CASE WHEN $advantage = 'group' AND coalesce(t.n_task, 1) > 1 THEN 'group'
                WHEN $advantage = 'none' THEN 'none' ELSE 'batch' END AS baseline,
           CASE WHEN $advantage = 'group' AND coalesce(t.n_task, 1) > 1 THEN t.mean_t ELSE b.mean_b END AS mean_r,
           CASE WHEN $advantage = 'group' AND coalesce(t.n_task, 1) > 1 THEN t.std_t ELSE b.std_b END AS std_r,
           CASE WHEN $advantage = 'group' AND coalesce(t.n_task, 1) > 1 THEN t.mean_ts ELSE b.mean_bs END AS mean_s,
           CASE WHEN $advantage = 'group' AND coalesce(t.n_task, 1) > 1 THEN t.std_ts ELSE b.std_bs END AS std_s
    FROM per_rollout p LEFT JOIN task t USING (task_id) CROSS JOIN batch b
)
SELECT rollout_id, task_id, r,
       CASE WHEN baseline = 'none' THEN r
            WHEN std_r < 1e-12 THEN 0.0 ELSE (r - mean_r) / (std_r + $eps) END AS a_r,
       baseline,
       s, s / n AS s_mean,
       CASE WHEN baseline = 'none' THEN shaped
            WHEN std_s < 1e-12 THEN 0.0 ELSE (shaped - mean_s) / (std_s + $eps) END AS a_air,
       CASE WHEN baseline = 'none' OR std_s < 1e-12 THEN 1.0 ELSE std_s + $eps END AS air_scale
FROM chosen
ORDER BY rollout_id
