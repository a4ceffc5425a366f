-- name: _llm_call_columns
-- The columns a convention row can have (the union of every llm_calls/*.sql), typed, and no row: the
-- first member of the _llm_call_conventions stack (views.register_conventions), so llm_calls.sql
-- binds whichever conventions the stack holds, none included. tests/ingest/test_registry.py checks
-- that these are exactly the full stack's columns and types.
SELECT NULL::VARCHAR AS trace_id, NULL::VARCHAR AS span_id, NULL::VARCHAR AS convention,
       NULL::JSON AS input_messages, NULL::JSON AS output_message, NULL::JSON AS tools,
       NULL::VARCHAR AS finish_reason, NULL::INTEGER AS priority, NULL::VARCHAR AS model,
       NULL::VARCHAR AS provider, NULL::BIGINT AS input_tokens, NULL::BIGINT AS output_tokens,
       NULL::DOUBLE AS temperature, NULL::VARCHAR AS response_id, NULL::INTEGER[] AS prompt_token_ids,
       NULL::INTEGER[] AS response_token_ids, NULL::VARCHAR AS payload_source
WHERE false
