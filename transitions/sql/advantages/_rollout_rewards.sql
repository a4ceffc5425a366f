-- name: _rollout_rewards
-- Per rollout of a bare transition table (compute_advantages): task, reward r and its AIR total s over n calls.
SELECT rollout_id, any_value(task_id) AS task_id, any_value(final_reward) AS r,
       any_value(a.s) AS s, any_value(a.n) AS n
FROM transition_rows JOIN _rollout_air a USING (rollout_id)
GROUP BY rollout_id
