-- name: discounted($gamma)
-- Credit discounted: gamma^(T-1-t) * r (and * A_r for the advantage) plus the call's AIR reward-to-go.
-- A credit mode: every column of transition_rows in its place, "return" and advantage replaced (identical.sql).
-- The AIR reward-to-go of call t is sum_{k>=t} gamma^(k-t) * r_k over the rollout's AIR step rewards;
-- $gamma is the stage-2 config's gamma (credit.py binds a mode's parameters by name from the config).
WITH to_go AS (
    SELECT t.rollout_id, t.step,
           (SELECT coalesce(list_sum(list(pow($gamma, a.step - t.step) * a.step_reward ORDER BY a.step)), 0.0)
            FROM transition_rows a
            WHERE a.rollout_id = t.rollout_id AND a.step >= t.step AND a.step_reward <> 0) AS air_to_go
    FROM transition_rows t
)
SELECT tr.* REPLACE (
    pow($gamma, tr.n_steps - 1 - tr.step) * adv.r + coalesce(g.air_to_go, 0.0) AS "return",
    pow($gamma, tr.n_steps - 1 - tr.step) * adv.a_r + coalesce(g.air_to_go, 0.0) AS advantage
)
FROM transition_rows tr
JOIN _rollout_adv adv USING (rollout_id)
LEFT JOIN to_go g USING (rollout_id, step)
