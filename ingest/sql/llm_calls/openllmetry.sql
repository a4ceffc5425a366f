-- name: llm_calls_openllmetry
-- Traceloop OpenLLMetry <= 0.54 flattened attributes:
-- gen_ai.prompt.{i}.{role,content,tool_call_id,tool_calls.{k}.{id,name,arguments}},
-- gen_ai.completion.{i}.{role,content,finish_reason,tool_calls...}, llm.request.functions.{i}.*.
-- (>= 0.55 writes gen_ai.input.messages: see genai_latest.sql.) List content (multimodal, Anthropic
-- blocks) arrives as JSON text of typed blocks: its text parts become the message content.
WITH src AS (
    SELECT trace_id, span_id, attributes AS a, json_keys(attributes) AS ks,
           -- every value from one parse (flat_attr reads the prompt's messages back by name); NULL when a key repeats
           json_transform(attributes, '"MAP(VARCHAR, VARCHAR)"') AS m
    FROM _llm_spans
    WHERE (contains(CAST(attributes AS VARCHAR), 'gen_ai.prompt.0.')  -- cheap test before the JSON lookups
           OR contains(CAST(attributes AS VARCHAR), 'gen_ai.completion.0.'))
      AND (json_exists(attributes, '$."gen_ai.prompt.0.role"') OR json_exists(attributes, '$."gen_ai.prompt.0.content"')
           OR json_exists(attributes, '$."gen_ai.completion.0.role"'))
)
SELECT trace_id, span_id, 'openllmetry' AS convention,
       to_json(list_transform(list_transform(flat_indices(ks, 'gen_ai.prompt.'), lambda i: 'gen_ai.prompt.' || i || '.'),
           lambda p: chat_message(flat_attr(a, mk, mv, p || 'role'), typed_blocks_text(flat_attr(a, mk, mv, p || 'content')),
               to_json(list_transform(flat_indices(ks, p || 'tool_calls.'), lambda k: chat_tool_call(
                   flat_attr(a, mk, mv, p || 'tool_calls.' || k || '.id'),
                   flat_attr(a, mk, mv, p || 'tool_calls.' || k || '.name'),
                   flat_attr(a, mk, mv, p || 'tool_calls.' || k || '.arguments')))),
               flat_attr(a, mk, mv, p || 'tool_call_id')))) AS input_messages,
       CASE WHEN json_exists(a, '$."gen_ai.completion.0.role"') OR json_exists(a, '$."gen_ai.completion.0.content"')
            OR json_exists(a, '$."gen_ai.completion.0.tool_calls.0.name"') THEN chat_message(
           coalesce(json_extract_string(a, '$."gen_ai.completion.0.role"'), 'assistant'),
           typed_blocks_text(json_extract_string(a, '$."gen_ai.completion.0.content"')),
           to_json(list_transform(flat_indices(ks, 'gen_ai.completion.0.tool_calls.'), lambda k: chat_tool_call(
               json_extract_string(a, '$."gen_ai.completion.0.tool_calls.' || k || '.id"'),
               json_extract_string(a, '$."gen_ai.completion.0.tool_calls.' || k || '.name"'),
               json_extract_string(a, '$."gen_ai.completion.0.tool_calls.' || k || '.arguments"')))), NULL) END AS output_message,
       nullif(to_json(list_transform(flat_indices(ks, 'llm.request.functions.'), lambda i: json_object('type', 'function',
           'function', json_object('name', json_extract_string(a, '$."llm.request.functions.' || i || '.name"'),
                                   'description', json_extract_string(a, '$."llm.request.functions.' || i || '.description"'),
                                   'parameters', json_or_text(json_extract(a, '$."llm.request.functions.' || i || '.parameters"')))))), '[]')
           AS tools,
       json_extract_string(a, '$."gen_ai.completion.0.finish_reason"') AS finish_reason,
       1 AS priority
FROM (SELECT *, map_keys(m) AS mk, map_values(m) AS mv FROM src)
