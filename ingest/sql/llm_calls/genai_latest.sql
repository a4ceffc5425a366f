-- name: llm_calls_genai_latest
-- OTel GenAI semconv >= 1.37: gen_ai.input.messages, gen_ai.output.messages, gen_ai.system_instructions,
-- gen_ai.tool.definitions, in three carriers (opentelemetry-util-genai content capture modes):
--   span attributes  JSON strings on the inference span (SPAN_ONLY, SPAN_AND_EVENT);
--                    OpenLLMetry >= 0.55 writes the same
--   log record       the gen_ai.client.inference.operation.details event, structured values
--                    (EVENT_ONLY, SPAN_AND_EVENT), joined to its span by trace/span id
--   span event       the same event recorded on the span (JSON strings or structured values)
-- A call in two carriers (SPAN_AND_EVENT) is two members of one call in llm_calls.sql (same span
-- id): one row, from the span attributes (priority 1 before the events' 2).
-- gen_ai.system_instructions becomes the first (system) message, unless the input messages already
-- hold a system message with that text (OpenLIT writes the instructions in both places).
WITH events AS (  -- span events named gen_ai.client.inference.operation.details, read on the spans whose facts
                 -- (span_facts.sql) name one: without any, no scan of the spans
    SELECT s.trace_id, s.span_id, s.scope_name, unnest(json_extract(s.events, '$[*]')) AS e
    FROM _llm_spans AS s
    SEMI JOIN (SELECT trace_id, span_id FROM _span_facts
               WHERE list_contains(event_names, 'gen_ai.client.inference.operation.details')) AS f
        ON f.trace_id = s.trace_id AND f.span_id = s.span_id
),
src AS (  -- v: every attribute read below, from one parse of the attributes (read by name: latest_attr)
    SELECT trace_id, span_id, scope_name, 'span' AS origin, attr_values(attributes, latest_attribute_keys()) AS v
    FROM _llm_spans
    WHERE contains(attributes, '"gen_ai.input.messages":') OR contains(attributes, '"gen_ai.output.messages":')
    UNION ALL
    SELECT trace_id, span_id, scope_name, 'log_event' AS origin, attr_values(attributes, latest_attribute_keys()) AS v
    FROM logs
    WHERE event_name = 'gen_ai.client.inference.operation.details' AND span_id IS NOT NULL
    UNION ALL
    SELECT trace_id, span_id, scope_name, 'span_event' AS origin, attr_values(e -> '$.attributes', latest_attribute_keys()) AS v
    FROM events WHERE e ->> '$.name' = 'gen_ai.client.inference.operation.details'
),
parsed AS (
    SELECT *, genai_messages(latest_json(v, 'gen_ai.input.messages')) AS im,
           genai_messages(latest_json(v, 'gen_ai.output.messages')) AS om,
           latest_json(v, 'gen_ai.system_instructions') AS si,
           latest_json(v, 'gen_ai.tool.definitions') AS td
    FROM src
    WHERE origin <> 'span' OR latest_attr(v, 'gen_ai.input.messages') IS NOT NULL
       OR latest_attr(v, 'gen_ai.output.messages') IS NOT NULL
)
SELECT trace_id, span_id,
       CASE WHEN scope_name LIKE 'opentelemetry.instrumentation.openai.v%' OR latest_attr(v, 'gen_ai.openai.api_base') IS NOT NULL
            THEN 'openllmetry' WHEN origin = 'span' THEN 'genai_semconv_latest'
            ELSE 'genai_semconv_latest_' || origin END AS convention,
       CASE WHEN im IS NOT NULL OR si IS NOT NULL THEN
           to_json(CASE WHEN si IS NOT NULL AND json_array_length(si) > 0 AND NOT coalesce(list_bool_or(list_transform(
                            im, lambda m: m."role" IN ('system', 'developer') AND parts_text(m) = content_text(si))), false)
                        THEN [chat_message('system', content_text(si), NULL, NULL)] ELSE [] END
                   || coalesce(flatten(list_transform(im, lambda m: parts_messages(m))), [])) END AS input_messages,
       CASE WHEN len(om) > 0 THEN genai_chat_message('assistant', om[1]) END
           AS output_message,
       chat_tools(td) AS tools,
       coalesce(om[1].finish_reason,
                json_extract_string(latest_json(v, 'gen_ai.response.finish_reasons'), '$[0]')) AS finish_reason,
       CASE WHEN origin = 'span' THEN 1 ELSE 2 END AS priority
FROM parsed
