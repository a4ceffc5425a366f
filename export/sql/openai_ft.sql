-- name: openai_ft($min_reward, $reward_column)
-- OpenAI chat fine-tuning (one JSON object per line): {"messages": [...], "tools": [...]}, the
-- prompt's assistant turns with weight 0 (context) and the response with weight 1 (trained on),
-- each message reduced to the keys the fine-tuning schema allows for its role, no null members.
-- A response the engine cut at its token limit is dropped (export_cut): imitating it teaches a
-- half answer as a finished turn.
-- Parameters: $reward_column, $min_reward (NULL: keep every row; else keep reward >= it).
SELECT
    CASE WHEN base_reason IS NOT NULL THEN base_reason
         WHEN export_cut(finish_reason) THEN 'response cut at the token limit (finish_reason ' || finish_reason || ')'
         WHEN CAST($min_reward AS DOUBLE) IS NOT NULL AND coalesce(reward < CAST($min_reward AS DOUBLE), true)
             THEN 'reward below --min-reward (or none)'
    END AS drop_reason,
    CASE WHEN base_reason IS NULL THEN json_merge_patch('{}', json_object(
        'messages', to_json(list_append(
            list_transform(json_extract(prompt_messages, '$[*]'), lambda m: export_openai_message(m, 0)),
            export_openai_message(json_merge_patch(response_message, '{"role": "assistant"}'), 1))),
        'tools', CAST(tools AS JSON))) END AS example
FROM export_base($reward_column)
ORDER BY rollout_id, step
