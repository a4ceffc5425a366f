-- name: trl_kto($reward_column, $threshold)
-- TRL KTO, conversational unpaired preference: `prompt` = the call's prompt messages, `completion` =
-- its response (one assistant turn), `label` = reward >= $threshold. Rows without reward are left out.
-- Parameters: $reward_column, $threshold.
SELECT
    CASE WHEN base_reason IS NOT NULL THEN base_reason WHEN reward IS NULL THEN 'no reward' END AS drop_reason,
    CASE WHEN base_reason IS NULL THEN export_trl_messages(prompt_messages) END AS prompt,
    CASE WHEN base_reason IS NULL THEN [export_trl_message(response_message, 'assistant')] END AS completion,
    reward >= CAST($threshold AS DOUBLE) AS label,
    tools, rollout_id, task_id, step, agent_name, reward
FROM export_base($reward_column)
ORDER BY rollout_id, step
