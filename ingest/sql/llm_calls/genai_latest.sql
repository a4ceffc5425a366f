-- name: llm_calls_genai_latest
-- OTel GenAI semconv >= 1.37: gen_ai.input.messages, gen_ai.output.messages,
-- gen_ai.system_instructions, gen_ai.tool.definitions as JSON (strings on spans with
-- OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental + content SPAN_ONLY; structured values in
-- the gen_ai.client.inference.operation.details log event). OpenLLMetry >= 0.55 writes the same.
WITH src AS (  -- v: every attribute read below, from one parse of the attributes
    SELECT trace_id, span_id, scope_name, 'span' AS origin, json_extract(attributes,
        ['$."gen_ai.input.messages"', '$."gen_ai.output.messages"', '$."gen_ai.system_instructions"',
        '$."gen_ai.tool.definitions"', '$."gen_ai.openai.api_base"',
        '$."gen_ai.response.finish_reasons"[0]']) AS v
    FROM _llm_spans
    WHERE contains(attributes, '"gen_ai.input.messages":') OR contains(attributes, '"gen_ai.output.messages":')
    UNION ALL
    SELECT trace_id, span_id, scope_name, 'log' AS origin, json_extract(attributes,
        ['$."gen_ai.input.messages"', '$."gen_ai.output.messages"', '$."gen_ai.system_instructions"',
        '$."gen_ai.tool.definitions"', '$."gen_ai.openai.api_base"',
        '$."gen_ai.response.finish_reasons"[0]']) AS v
    FROM logs
    WHERE event_name = 'gen_ai.client.inference.operation.details' AND span_id IS NOT NULL
),
parsed AS (
    SELECT *, genai_messages(json_or_text(v[1])) AS im, genai_messages(json_or_text(v[2])) AS om,
           json_or_text(v[3]) AS si, json_or_text(v[4]) AS td
    FROM src
    WHERE origin = 'log' OR v[1] IS NOT NULL OR v[2] IS NOT NULL
)
SELECT trace_id, span_id,
       CASE WHEN scope_name LIKE 'opentelemetry.instrumentation.openai.v%' OR v[5] IS NOT NULL
            THEN 'openllmetry' WHEN origin = 'log' THEN 'genai_semconv_latest_event' ELSE 'genai_semconv_latest' END AS convention,
       to_json(CASE WHEN si IS NOT NULL AND json_array_length(si) > 0
                    THEN [chat_message('system', content_text(si), NULL, NULL)] ELSE [] END
               || flatten(list_transform(im, lambda m: parts_messages(m)))) AS input_messages,
       CASE WHEN len(om) > 0 THEN chat_message('assistant', parts_text(om[1]), parts_tool_calls(om[1]), NULL) END
           AS output_message,
       chat_tools(td) AS tools,
       coalesce(om[1].finish_reason, json_extract_string(v[6], '$')) AS finish_reason,
       1 AS priority
FROM parsed
