-- name: llm_calls_openinference
-- Arize OpenInference LLM spans (openinference.span.kind = LLM) with the
-- flattened llm.input_messages.{i}.message.{role,content,contents.{j}...,tool_call_id,
-- tool_calls.{k}.tool_call.{id,function.name,function.arguments}}, llm.output_messages.{i}...,
-- llm.tools.{i}.tool.json_schema, llm.token_count.*, llm.model_name, llm.invocation_parameters.
WITH src AS (
    SELECT trace_id, span_id, attributes AS a, json_keys(attributes) AS ks
    FROM _llm_spans WHERE contains(CAST(attributes AS VARCHAR), 'openinference.span.kind') AND attributes->>'openinference.span.kind' = 'LLM'  -- cheap test first
),
msgs AS (
    SELECT trace_id, span_id, a, ks,
           list_transform(flat_indices(ks, 'llm.input_messages.'), lambda i: 'llm.input_messages.' || i || '.message.') AS ins,
           list_transform(flat_indices(ks, 'llm.output_messages.'), lambda i: 'llm.output_messages.' || i || '.message.') AS outs,
           flat_indices(ks, 'llm.tools.') AS tools_idx,
           json_transform(a, '"MAP(VARCHAR, VARCHAR)"') AS m  -- every value, one parse; NULL when a key repeats
    FROM src
),
vals AS (SELECT *, map_keys(m) AS mk, map_values(m) AS mv FROM msgs)
SELECT trace_id, span_id, 'openinference' AS convention,
       -- NULL, not '[]', when the span has no flattened messages: then a body-only row (payload.sql) wins
       nullif(to_json(list_transform(ins, lambda p: openinference_message(a, mk, mv, ks, p, NULL))), '[]') AS input_messages,
       list_transform(outs, lambda p: openinference_message(a, mk, mv, ks, p, 'assistant'))[1] AS output_message,
       -- every other attribute from the map too (flat_attr / flat_json): a json_extract per key parsed the
       -- whole attribute text again, about ten times per span plus once per tool
       chat_tools(to_json(list_transform(tools_idx, lambda i: flat_json(a, mk, mv, 'llm.tools.' || i || '.tool.json_schema')))) AS tools,
       coalesce(flat_attr(a, mk, mv, 'llm.finish_reason'),
                json_extract_string(flat_json(a, mk, mv, 'output.value'), '$.choices[0].finish_reason')) AS finish_reason,
       flat_attr(a, mk, mv, 'llm.model_name') AS model,
       coalesce(flat_attr(a, mk, mv, 'llm.provider'), flat_attr(a, mk, mv, 'llm.system')) AS provider,
       try_cast(flat_attr(a, mk, mv, 'llm.token_count.prompt') AS BIGINT) AS input_tokens,
       try_cast(flat_attr(a, mk, mv, 'llm.token_count.completion') AS BIGINT) AS output_tokens,
       try_cast(json_extract(flat_json(a, mk, mv, 'llm.invocation_parameters'), '$.temperature') AS DOUBLE) AS temperature,
       output_response_id(flat_json(a, mk, mv, 'output.value')) AS response_id,
       -- after the body's row (payload.sql, 6) when flattening lost tool-call ids or the system prompt
       CASE WHEN openinference_lossy(CAST(a AS VARCHAR)) THEN 7 ELSE 3 END AS priority
FROM vals
