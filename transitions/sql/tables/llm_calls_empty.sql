-- name: llm_calls_empty
-- llm_calls when no segment holds any: every column of a segment's llm_calls, no rows.
-- reads:
-- creates: llm_calls
SELECT NULL::VARCHAR AS trace_id, NULL::VARCHAR AS span_id, NULL::VARCHAR AS parent_span_id,
       NULL::BIGINT AS start_ns, NULL::BIGINT AS end_ns, NULL::VARCHAR AS service_name,
       NULL::VARCHAR AS agent_name, NULL::VARCHAR AS convention, NULL::VARCHAR AS provider,
       NULL::VARCHAR AS model, NULL::JSON AS input_messages, NULL::JSON AS output_message,
       NULL::JSON AS tools, NULL::VARCHAR AS finish_reason, NULL::BIGINT AS input_tokens,
       NULL::BIGINT AS output_tokens, NULL::INTEGER[] AS prompt_token_ids,
       NULL::INTEGER[] AS response_token_ids, NULL::FLOAT[] AS response_logprobs,
       NULL::DOUBLE AS temperature, NULL::VARCHAR AS response_id, NULL::VARCHAR AS status_code,
       NULL::INTEGER AS restored_messages, NULL::STRUCT(trace_id VARCHAR, span_id VARCHAR)[] AS merged_spans,
       NULL::VARCHAR AS prompt_version
WHERE false
