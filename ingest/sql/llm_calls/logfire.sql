-- name: llm_calls_logfire
-- Pydantic Logfire OpenAI spans: request_data (the request body: messages, tools,
-- model, temperature) and response_data ({"message", "usage"} or a whole ChatCompletion) as JSON.
-- Pending-span records (logfire.span_type = pending_span) are not calls. Hand-made fixtures.
WITH src AS (
    SELECT trace_id, span_id, attributes AS a,
           json_or_text(json_extract(attributes, '$.request_data')) AS rq,
           json_or_text(json_extract(attributes, '$.response_data')) AS rs
    FROM _llm_spans
    WHERE contains(CAST(attributes AS VARCHAR), 'request_data') AND json_exists(attributes, '$.request_data')  -- cheap test first
      AND coalesce(json_extract_string(attributes, '$."logfire.span_type"'), '') <> 'pending_span'
)
SELECT trace_id, span_id, 'logfire' AS convention,
       to_json(list_transform(json_extract(rq, '$.messages[*]'), lambda m: chat_from_any(m, 'user'))) AS input_messages,
       CASE WHEN coalesce(json_extract(rs, '$.message'), json_extract(rs, '$.choices[0].message')) IS NOT NULL
            THEN chat_from_any(coalesce(json_extract(rs, '$.message'), json_extract(rs, '$.choices[0].message')), 'assistant') END
           AS output_message,
       chat_tools(json_extract(rq, '$.tools')) AS tools,
       json_extract_string(rs, '$.choices[0].finish_reason') AS finish_reason,
       json_extract_string(rq, '$.model') AS model,
       try_cast(coalesce(json_extract(rs, '$.usage.prompt_tokens'), json_extract(rs, '$.usage.input_tokens')) AS BIGINT) AS input_tokens,
       try_cast(coalesce(json_extract(rs, '$.usage.completion_tokens'), json_extract(rs, '$.usage.output_tokens')) AS BIGINT) AS output_tokens,
       try_cast(json_extract(rq, '$.temperature') AS DOUBLE) AS temperature,
       json_extract_string(rs, '$.id') AS response_id,
       4 AS priority
FROM src
