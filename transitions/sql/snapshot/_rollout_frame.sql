-- name: _rollout_frame
-- Per rollout of the new rows: task and final reward r, the frame the credit mode's SELECT reads in the
-- builder (as its _rollout_adv); the advantage columns stay NULL here (the snapshot's advantages table,
-- snapshot/rollout_advantages.sql, fills them over every segment).
-- reads: _transition_base
-- creates: _rollout_frame
SELECT rollout_id, any_value(task_id) AS task_id, coalesce(any_value(final_reward), 0.0) AS r,
       NULL::DOUBLE AS a_r, NULL::DOUBLE AS s_mean, NULL::DOUBLE AS a_air, NULL::DOUBLE AS air_scale
FROM _transition_base GROUP BY rollout_id
