-- name: llm_calls_litellm
-- LiteLLM's OpenTelemetry logger (litellm.callbacks = ["otel"]): under its `litellm_request` span, or
-- on the caller's current span when one is open, it sets GenAI attributes from its own conversion,
-- which drops assistant tool calls and tool-call ids, and, on a caller's span, mixes the attributes of
-- every call made under it. Its child span `raw_gen_ai_request` holds each provider request and
-- response as they were: llm.<provider>.messages / .tools / .choices / .id / .model / .usage /
-- .temperature, written as str() of Python objects (read by py_literal_json, ingest/pyliteral.py).
-- Those children are the calls: priority 0, so in llm_calls.sql the raw span's content wins over its
-- parent's (parent and child are one call, grouped by parent or by response id). OpenAI-shaped
-- requests (the OpenAI-compatible providers) are read whole; another provider's shape gives what
-- chat_from_any can read, and a call without readable content shows in the coverage view.
WITH raw AS (
    SELECT trace_id, span_id, attributes AS a,
           regexp_extract(list_filter(json_keys(attributes), lambda k: regexp_matches(k, '^llm\.[^.]+\.messages$'))[1],
                          '^llm\.([^.]+)\.messages$', 1) AS p
    FROM _llm_spans
    WHERE "name" = 'raw_gen_ai_request'
),
parsed AS (
    SELECT trace_id, span_id, p,
           try_cast(py_literal_json(json_extract_string(a, '$."llm.' || p || '.messages"')) AS JSON) AS msgs,
           try_cast(py_literal_json(json_extract_string(a, '$."llm.' || p || '.choices"')) AS JSON) AS choices,
           try_cast(py_literal_json(json_extract_string(a, '$."llm.' || p || '.tools"')) AS JSON) AS tdefs,
           try_cast(py_literal_json(json_extract_string(a, '$."llm.' || p || '.usage"')) AS JSON) AS usage,
           json_extract_string(a, '$."llm.' || p || '.id"') AS rid,
           json_extract_string(a, '$."llm.' || p || '.model"') AS model,
           try_cast(json_extract_string(a, '$."llm.' || p || '.temperature"') AS DOUBLE) AS temperature
    FROM raw
    WHERE coalesce(p, '') <> ''
)
SELECT trace_id, span_id, 'litellm' AS convention,
       CASE WHEN json_type(msgs) = 'ARRAY' THEN
           to_json(list_transform(json_extract(msgs, '$[*]'), lambda m: chat_from_any(m, 'user'))) END AS input_messages,
       CASE WHEN json_extract(choices, '$[0].message') IS NOT NULL
            THEN chat_from_any(json_extract(choices, '$[0].message'), 'assistant') END AS output_message,
       chat_tools(tdefs) AS tools,
       json_extract_string(choices, '$[0].finish_reason') AS finish_reason,
       p AS provider, model, nullif(rid, '') AS response_id, temperature,
       try_cast(json_extract_string(usage, '$.prompt_tokens') AS BIGINT) AS input_tokens,
       try_cast(json_extract_string(usage, '$.completion_tokens') AS BIGINT) AS output_tokens,
       0 AS priority
FROM parsed
