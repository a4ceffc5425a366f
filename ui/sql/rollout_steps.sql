-- name: rollout_steps($rollout_id)
-- The rollout's transitions in the registered snapshot: per LLM call its step, step reward (AIR),
-- return and advantage, and whether exact engine token ids were captured.
SELECT span_id, step, n_steps, agent_name, final_reward, step_reward, "return", advantage, token_source,
       len(prompt_token_ids) AS n_prompt_ids, len(response_token_ids) AS n_response_ids
FROM _ui_snapshot WHERE rollout_id = $rollout_id
ORDER BY step
