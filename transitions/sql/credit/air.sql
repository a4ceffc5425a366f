-- name: air()
-- Credit air: return = r + r_t, advantage = a_air + (r_t - s_mean) / air_scale (r_t: this call's own AIR reward).
-- A credit mode: every column of transition_rows in its place, "return" and advantage replaced (identical.sql).
-- a_air is the rollout's AIR-shaped group advantage (AIR is part of the group statistics,
-- rollout_advantages.sql); each call moves from it by how far its own AIR reward r_t = step_reward sits
-- from the rollout's mean, in the group's units, so the call that broke something sits below its
-- siblings (exactly identical when no rule fired in the group). A snapshot written before air_scale
-- existed keeps its old rule: advantage = A_r + r_t.
SELECT tr.* REPLACE (
    adv.r + coalesce(tr.step_reward, 0.0) AS "return",
    CASE WHEN adv.air_scale IS NULL THEN adv.a_r + coalesce(tr.step_reward, 0.0)
         ELSE adv.a_air + (coalesce(tr.step_reward, 0.0) - adv.s_mean) / adv.air_scale END AS advantage
)
FROM transition_rows tr
JOIN _rollout_adv adv USING (rollout_id)
