-- name: llm_calls_vercel_ai
-- Vercel AI SDK (experimental_telemetry) provider-call spans
-- (ai.generateText.doGenerate, ai.streamText.doStream, ...): ai.prompt.messages (JSON: content is a
-- string or parts text / tool-call / tool-result), ai.response.text, ai.response.toolCalls,
-- ai.prompt.tools, ai.usage.*, ai.model.id. Tested with documented hand-made fixtures.
WITH src AS (
    SELECT trace_id, span_id, attributes AS a,
           json_or_text(json_extract(attributes, '$."ai.prompt.messages"')) AS pm
    FROM _llm_spans WHERE contains(CAST(attributes AS VARCHAR), 'ai.prompt.messages') AND json_exists(attributes, '$."ai.prompt.messages"')  -- cheap test first
),
msgs AS (
    SELECT *, flatten(list_transform(json_extract(pm, '$[*]'), lambda m: CASE
        WHEN json_extract_string(m, '$.role') = 'tool' THEN list_transform(json_extract(m, '$.content[*]'),
            lambda p: chat_message('tool', json_text(coalesce(json_extract(p, '$.output.value'), json_extract(p, '$.output'),
                                                              json_extract(p, '$.result'))),
                                   NULL, json_extract_string(p, '$.toolCallId')))
        WHEN json_type(json_extract(m, '$.content')) = 'ARRAY' THEN [chat_message(json_extract_string(m, '$.role'),
            nullif(array_to_string(list_transform(list_filter(json_extract(m, '$.content[*]'),
                lambda p: json_extract_string(p, '$.type') = 'text'), lambda p: json_extract_string(p, '$.text')), ''), ''),
            to_json(list_transform(list_filter(json_extract(m, '$.content[*]'),
                lambda p: json_extract_string(p, '$.type') = 'tool-call'),
                lambda p: chat_tool_call(json_extract_string(p, '$.toolCallId'), json_extract_string(p, '$.toolName'),
                                         json_text(coalesce(json_extract(p, '$.input'), json_extract(p, '$.args')))))), NULL)]
        ELSE [chat_message(json_extract_string(m, '$.role'), json_extract_string(m, '$.content'), NULL, NULL)] END)) AS ins
    FROM src
)
SELECT trace_id, span_id, 'vercel_ai' AS convention,
       to_json(ins) AS input_messages,
       chat_message('assistant', json_extract_string(a, '$."ai.response.text"'),
           to_json(list_transform(json_extract(json_or_text(json_extract(a, '$."ai.response.toolCalls"')), '$[*]'),
               lambda t: chat_tool_call(json_extract_string(t, '$.toolCallId'), json_extract_string(t, '$.toolName'),
                                        json_text(coalesce(json_extract(t, '$.input'), json_extract(t, '$.args')))))), NULL)
           AS output_message,
       chat_tools(json_extract(a, '$."ai.prompt.tools"')) AS tools,
       json_extract_string(a, '$."ai.response.finishReason"') AS finish_reason,
       coalesce(json_extract_string(a, '$."ai.model.id"'), json_extract_string(a, '$."gen_ai.request.model"')) AS model,
       json_extract_string(a, '$."ai.model.provider"') AS provider,
       try_cast(coalesce(json_extract(a, '$."ai.usage.promptTokens"'), json_extract(a, '$."ai.usage.inputTokens"')) AS BIGINT) AS input_tokens,
       try_cast(coalesce(json_extract(a, '$."ai.usage.completionTokens"'), json_extract(a, '$."ai.usage.outputTokens"')) AS BIGINT) AS output_tokens,
       json_extract_string(a, '$."ai.response.id"') AS response_id,
       4 AS priority
FROM msgs
