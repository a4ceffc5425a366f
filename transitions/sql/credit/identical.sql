-- name: identical()
-- Credit identical (LightningRL): every call of a rollout gets its return r and its advantage A_r.
-- A credit mode (docs/transitions.md, "Credit and advantages"): the rows of transition_rows that have a
-- rollout in _rollout_adv (rollout_advantages.sql: r, a_r, s_mean, a_air, air_scale), every column in
-- its place, "return" and advantage replaced; apply_advantages.sql orders them.
SELECT tr.* REPLACE (adv.r AS "return", adv.a_r AS advantage)
FROM transition_rows tr
JOIN _rollout_adv adv USING (rollout_id)
