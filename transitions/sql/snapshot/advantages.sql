-- name: advantages($advantage, $eps, $gamma, $credit)
-- Returns and advantages for transition rows (relation transition_rows: snapshot rows or the
-- builder's transition_base). Re-runnable over a snapshot on its own (DESIGN §10).
-- Parameters: $credit (air | identical | discounted | last), $gamma, $advantage (group | batch | none), $eps.
--   R       = final_reward (NULL counts 0: only present with --missing-reward zero)
--   A_r     = one advantage per rollout: group: (R - mean_task) / (std_task + eps) over the rollouts of
--             the task (sample std; a zero-variance task gives 0; a task seen once falls back to batch);
--             batch: the same over every rollout of the snapshot; none: R.
--   credit  identical: return = R, advantage = A_r on every call; air: return = R + r_t,
--           advantage = A_r + r_t with r_t = step_reward, the AIR rewards this call caused itself
--           (identical when no rule fired); last: only the last call gets R, A_r (others 0);
--           discounted: return = gamma^(T-1-t) * R + AIR reward-to-go,
--           advantage = gamma^(T-1-t) * A_r + AIR reward-to-go.
-- Every sum runs over a list in a fixed order (list_avg/list_stddev_samp/list_sum), not as a
-- parallel aggregate: the float result must not depend on thread scheduling, or the same lake
-- would give a different content hash and a duplicate snapshot.
WITH per_rollout AS (
    SELECT rollout_id, any_value(task_id) AS task_id, coalesce(any_value(final_reward), 0.0) AS r
    FROM transition_rows GROUP BY rollout_id
),
batch AS (
    SELECT list_avg(rs) AS mean_b, coalesce(list_stddev_samp(rs), 0.0) AS std_b
    FROM (SELECT list(r ORDER BY rollout_id) AS rs FROM per_rollout)
),
task AS (
    SELECT task_id, len(rs) AS n_task, list_avg(rs) AS mean_t, coalesce(list_stddev_samp(rs), 0.0) AS std_t
    FROM (SELECT task_id, list(r ORDER BY rollout_id) AS rs FROM per_rollout WHERE task_id IS NOT NULL GROUP BY task_id)
),
adv AS (
    SELECT p.rollout_id, p.r,
           CASE
               WHEN $advantage = 'none' THEN p.r
               WHEN $advantage = 'group' AND coalesce(t.n_task, 1) > 1
                   THEN CASE WHEN t.std_t < 1e-12 THEN 0.0 ELSE (p.r - t.mean_t) / (t.std_t + $eps) END
               ELSE CASE WHEN b.std_b < 1e-12 THEN 0.0 ELSE (p.r - b.mean_b) / (b.std_b + $eps) END
           END AS a_r
    FROM per_rollout p LEFT JOIN task t USING (task_id) CROSS JOIN batch b
),
to_go AS (
    SELECT t.rollout_id, t.step,
           (SELECT coalesce(list_sum(list(pow($gamma, a.step - t.step) * a.step_reward ORDER BY a.step)), 0.0)
            FROM transition_rows a
            WHERE a.rollout_id = t.rollout_id AND a.step >= t.step AND a.step_reward <> 0) AS air_to_go
    FROM transition_rows t
)
SELECT tr.* REPLACE (
    CASE $credit
        WHEN 'identical' THEN adv.r
        WHEN 'air' THEN adv.r + coalesce(tr.step_reward, 0.0)
        WHEN 'last' THEN CASE WHEN tr.is_last THEN adv.r ELSE 0.0 END
        ELSE pow($gamma, tr.n_steps - 1 - tr.step) * adv.r + g.air_to_go
    END AS "return",
    CASE $credit
        WHEN 'identical' THEN adv.a_r
        WHEN 'air' THEN adv.a_r + coalesce(tr.step_reward, 0.0)
        WHEN 'last' THEN CASE WHEN tr.is_last THEN adv.a_r ELSE 0.0 END
        ELSE pow($gamma, tr.n_steps - 1 - tr.step) * adv.a_r + g.air_to_go
    END AS advantage
)
FROM transition_rows tr
JOIN adv USING (rollout_id)
JOIN to_go g USING (rollout_id, step)
ORDER BY tr.rollout_id, tr.step
