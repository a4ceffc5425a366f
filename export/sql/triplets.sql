-- name: triplets($reward_column)
-- Agent Lightning-style triplets (one per LLM call, as its TracerTraceToTriplet adapter yields them):
-- prompt {token_ids, raw_content}, response {token_ids, raw_content, logprobs}, reward, metadata.
-- Token ids are the engine's when the snapshot row has them; else the ids the --tokenizer rendered
-- (_rendered: rollout_id, step, prompt_token_ids, response_token_ids, render_error; empty without
-- --tokenizer, so text-only rows are left out and counted).
-- Parameters: $reward_column.
WITH rows AS (
    SELECT b.*,
           coalesce(len(b.prompt_token_ids) > 0 AND len(b.response_token_ids) > 0, false) AS has_ids,
           r.prompt_token_ids AS rendered_prompt_ids, r.response_token_ids AS rendered_response_ids,
           r.render_error, r.rollout_id IS NOT NULL AS rendered
    FROM export_base($reward_column) b
    LEFT JOIN _rendered r ON r.rollout_id = b.rollout_id AND r.step = b.step
)
SELECT
    CASE WHEN base_reason IS NOT NULL THEN base_reason
         WHEN has_ids THEN NULL
         WHEN NOT rendered THEN 'text only: pass --tokenizer PATH to render it'
         ELSE render_error
    END AS drop_reason,
    {'token_ids': CASE WHEN has_ids THEN prompt_token_ids ELSE rendered_prompt_ids END,
     'raw_content': prompt_messages} AS prompt,
    {'token_ids': CASE WHEN has_ids THEN response_token_ids ELSE rendered_response_ids END,
     'raw_content': response_message,
     'logprobs': CASE WHEN has_ids THEN response_logprobs END} AS response,
    reward,
    {'rollout_id': rollout_id, 'task_id': task_id, 'trace_id': trace_id, 'span_id': span_id, 'step': step,
     'n_steps': n_steps, 'is_last': is_last, 'agent_name': agent_name, 'model': model, 'tools': tools,
     'final_reward': final_reward, 'return': "return", 'advantage': advantage, 'step_reward': step_reward,
     'temperature': temperature, 'token_source': CASE WHEN has_ids THEN 'engine' ELSE 'tokenizer' END,
     'snapshot_id': snapshot_id} AS metadata
FROM rows
ORDER BY rollout_id, step
