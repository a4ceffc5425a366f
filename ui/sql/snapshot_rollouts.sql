-- name: snapshot_rollouts
-- A snapshot's rows per rollout: calls, final reward, AIR step rewards, advantage range.
SELECT rollout_id, any_value(task_id) AS task_id, count(*) AS calls, any_value(final_reward) AS final_reward,
       count(*) FILTER (WHERE step_reward <> 0) AS air_steps, sum(step_reward) AS step_reward_sum,
       min(advantage) AS adv_min, max(advantage) AS adv_max,
       count(*) FILTER (WHERE token_source = 'engine') AS engine_calls,
       count(*) OVER () AS total
FROM _ui_snapshot
GROUP BY rollout_id
ORDER BY rollout_id
LIMIT $limit OFFSET $offset
