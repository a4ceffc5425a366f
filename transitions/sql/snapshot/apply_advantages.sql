-- name: apply_advantages($gamma, $credit)
-- Returns and advantages of transition rows (relation transition_rows) from their rollout's reward
-- and advantage (relation _rollout_adv: rollout_id, r, a_r; rollout_advantages.sql). Re-runnable
-- over a snapshot on its own (docs/architecture.md); every reader of a snapshot fills `advantage` this way.
--   credit  identical: return = r, advantage = A_r on every call; air: return = r + r_t with
--           r_t = step_reward, the AIR rewards this call set off itself; advantage = a_air +
--           (r_t - s_mean) / air_scale: the rollout's AIR-shaped group advantage (AIR is part of the
--           group statistics, rollout_advantages.sql), moved within the rollout towards the calls
--           that did not break anything and away from the one that did, in the group's own units
--           (identical when no rule fired in the group; snapshots written before air_scale existed:
--           A_r + r_t); last: only the last call gets r, A_r (others 0);
--           discounted: return = gamma^(T-1-t) * r + AIR reward-to-go,
--           advantage = gamma^(T-1-t) * A_r + AIR reward-to-go.
WITH to_go AS (
    SELECT t.rollout_id, t.step,
           (SELECT coalesce(list_sum(list(pow($gamma, a.step - t.step) * a.step_reward ORDER BY a.step)), 0.0)
            FROM transition_rows a
            WHERE a.rollout_id = t.rollout_id AND a.step >= t.step AND a.step_reward <> 0) AS air_to_go
    FROM transition_rows t
    WHERE $credit = 'discounted'
)
SELECT tr.* REPLACE (
    CASE $credit
        WHEN 'identical' THEN adv.r
        WHEN 'air' THEN adv.r + coalesce(tr.step_reward, 0.0)
        WHEN 'last' THEN CASE WHEN tr.is_last THEN adv.r ELSE 0.0 END
        ELSE pow($gamma, tr.n_steps - 1 - tr.step) * adv.r + coalesce(g.air_to_go, 0.0)
    END AS "return",
    CASE $credit
        WHEN 'identical' THEN adv.a_r
        WHEN 'air' THEN CASE WHEN adv.air_scale IS NULL THEN adv.a_r + coalesce(tr.step_reward, 0.0)
                             ELSE adv.a_air + (coalesce(tr.step_reward, 0.0) - adv.s_mean) / adv.air_scale END
        WHEN 'last' THEN CASE WHEN tr.is_last THEN adv.a_r ELSE 0.0 END
        ELSE pow($gamma, tr.n_steps - 1 - tr.step) * adv.a_r + coalesce(g.air_to_go, 0.0)
    END AS advantage
)
FROM transition_rows tr
JOIN _rollout_adv adv USING (rollout_id)
LEFT JOIN to_go g USING (rollout_id, step)
ORDER BY tr.rollout_id, tr.step
