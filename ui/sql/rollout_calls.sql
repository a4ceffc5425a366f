-- name: rollout_calls($ended_ns, $started_ns, $trace_ids)
-- The LLM calls of a rollout's traces (llm_calls: any instrumentation, in OpenAI chat shape); the
-- rollout's time span skips other times' row groups (rollout_spans.sql).
SELECT trace_id, span_id, start_ns, end_ns, agent_name, convention, model, provider,
       CAST(input_messages AS VARCHAR) AS input_messages, CAST(output_message AS VARCHAR) AS output_message,
       CAST(tools AS VARCHAR) AS tools, input_tokens, output_tokens, temperature, finish_reason,
       prompt_token_ids IS NOT NULL AS has_prompt_ids, response_token_ids IS NOT NULL AS has_response_ids,
       len(prompt_token_ids) AS n_prompt_ids, len(response_token_ids) AS n_response_ids
FROM llm_calls
WHERE start_ns BETWEEN $started_ns AND $ended_ns AND trace_id IN (SELECT unnest($trace_ids))
ORDER BY start_ns, span_id
