-- name: trl_sft($min_reward, $reward_column)
-- TRL SFT, conversational language modelling: `messages` = the call's prompt messages + its response
-- as the last (assistant) turn, `tools` as a JSON string (TRL's SFTTrainer json-loads it).
-- A response the engine cut at its token limit is dropped (export_cut): imitating it teaches a
-- half answer as a finished turn.
-- Parameters: $reward_column, $min_reward (NULL: keep every row; else keep reward >= it).
SELECT
    CASE WHEN base_reason IS NOT NULL THEN base_reason
         WHEN export_cut(finish_reason) THEN 'response cut at the token limit (finish_reason ' || finish_reason || ')'
         WHEN CAST($min_reward AS DOUBLE) IS NOT NULL AND coalesce(reward < CAST($min_reward AS DOUBLE), true)
             THEN 'reward below --min-reward (or none)'
    END AS drop_reason,
    CASE WHEN base_reason IS NULL THEN list_append(export_trl_messages(prompt_messages),
                                                   export_trl_message(response_message, 'assistant')) END AS messages,
    tools, rollout_id, task_id, step, agent_name, reward
FROM export_base($reward_column)
ORDER BY rollout_id, step
