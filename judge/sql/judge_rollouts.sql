-- name: judge_rollouts
-- One row per rollout of a snapshot (relation snapshot: its transition rows): the task, whether an
-- explicit reward is known (final_reward NOT NULL: only rollouts without one are judged by default),
-- and its steps in order (the prompt it saw and the response it gave at each LLM call).
SELECT rollout_id,
       any_value(task_id) AS task_id,
       any_value(final_reward) AS final_reward,
       list({'prompt': prompt_messages, 'response': response_message} ORDER BY step) AS steps
FROM snapshot
GROUP BY rollout_id
ORDER BY task_id, rollout_id
