-- name: llm_calls_langsmith
-- LangSmith OTel export (LANGSMITH_OTEL_ENABLED) puts the whole input and output
-- as JSON strings in gen_ai.prompt / gen_ai.completion (langsmith.span.kind = llm). Inputs are
-- {"messages": [...]} (OpenAI or LangChain-serialised messages, possibly batched [[...]]); outputs
-- are {"choices":[{"message"}]}, {"generations":[[{"message"|"text"}]]} or a message.
-- Tested with documented hand-made fixtures (tests/data/ingest/conventions.jsonl).
WITH src AS (
    SELECT trace_id, span_id, attributes AS a,
           json_or_text(json_extract(attributes, '$."gen_ai.prompt"')) AS pj,
           json_or_text(json_extract(attributes, '$."gen_ai.completion"')) AS cj
    FROM _llm_spans
    WHERE contains(CAST(attributes AS VARCHAR), '"gen_ai.prompt"')  -- cheap test before the JSON lookups
      AND json_type(json_extract(attributes, '$."gen_ai.prompt"')) = 'VARCHAR'
      AND (json_exists(attributes, '$."langsmith.span.kind"') OR json_type(json_or_text(json_extract(attributes, '$."gen_ai.prompt"'))) IN ('OBJECT', 'ARRAY'))
),
norm AS (
    SELECT *, CASE WHEN json_type(json_extract(coalesce(json_extract(pj, '$.messages'), pj), '$[0]')) = 'ARRAY'
                   THEN json_extract(coalesce(json_extract(pj, '$.messages'), pj), '$[0]')
                   ELSE coalesce(json_extract(pj, '$.messages'), pj) END AS ms,
           coalesce(json_extract(cj, '$.choices[0].message'), json_extract(cj, '$.generations[0][0].message'),
                    json_extract(cj, '$.generations[0][0]'), json_extract(cj, '$.message'), cj) AS om
    FROM src
)
SELECT trace_id, span_id, 'langsmith' AS convention,
       to_json(list_transform(json_extract(ms, '$[*]'), lambda m: chat_from_any(m, 'user'))) AS input_messages,
       CASE WHEN om IS NOT NULL THEN chat_from_any(om, 'assistant') END AS output_message,
       chat_tools(coalesce(json_extract(pj, '$.tools'), json_extract(a, '$."gen_ai.tool.definitions"'))) AS tools,
       coalesce(json_extract_string(cj, '$.choices[0].finish_reason'),
                json_extract_string(cj, '$.generations[0][0].generation_info.finish_reason')) AS finish_reason,
       output_response_id(cj) AS response_id,
       4 AS priority
FROM norm
