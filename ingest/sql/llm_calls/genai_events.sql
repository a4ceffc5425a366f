-- name: llm_calls_genai_events
-- OTel GenAI semconv <= 1.36. Inference spans (gen_ai.operation.name chat /
-- text_completion / generate_content, or OpenLLMetry's llm.request.type) whose content came as
-- per-message events: LOG RECORDS joined by trace/span id (opentelemetry-instrumentation-openai-v2
-- default mode, OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true) or SPAN EVENTS (Strands).
-- Events: gen_ai.{system,user,assistant,tool}.message in order, gen_ai.choice (index 0) = output.
-- A span with no content events still gives a row (content off): its messages are NULL.
WITH calls AS (
    SELECT trace_id, span_id, events
    FROM _llm_spans
    WHERE NOT contains(attributes, '"gen_ai.input.messages":')  -- >= 1.37 content: genai_latest.sql (cheap test first)
      -- a key's value is parsed only where its key appears, and once (`x IN (a, b, c)` re-read the
      -- attribute text once per value: four parses of every candidate span; the convention at 60k spans of
      -- recorded frameworks' traffic 0.67 -> 0.40 CPU s, bench/pieces/conventions.py)
      AND (contains(attributes, '"gen_ai.operation.name"')
               AND list_contains(['chat', 'text_completion', 'generate_content'], attributes->>'gen_ai.operation.name')
           OR contains(attributes, '"llm.request.type"')
               AND list_contains(['chat', 'completion'], attributes->>'llm.request.type'))
),
log_events AS (
    SELECT l.trace_id, l.span_id, l.event_name AS ev, coalesce(l.time_ns, l.observed_time_ns) AS t1,
           l.observed_time_ns AS t2, l.body AS b
    FROM logs AS l SEMI JOIN calls AS c ON c.trace_id = l.trace_id AND c.span_id = l.span_id
    WHERE l.event_name IN ('gen_ai.system.message', 'gen_ai.user.message', 'gen_ai.assistant.message',
                           'gen_ai.tool.message', 'gen_ai.choice')
),
span_events AS (
    SELECT trace_id, span_id, e.ev, e.t1, e.t2,
           -- Strands puts content blocks as JSON text in the event attributes
           json_merge_patch(e.a, json_object(
               'content', blocks_text(json_extract_string(e.a, '$.content')),
               'message', CASE WHEN json_type(json_extract(e.a, '$.message')) = 'VARCHAR'
                               THEN json_object('role', 'assistant', 'content', blocks_text(json_extract_string(e.a, '$.message')))
                               ELSE json_extract(e.a, '$.message') END)) AS b
    FROM (SELECT trace_id, span_id, unnest(list_transform(json_extract(events, '$[*]'), lambda x, i: {
              'ev': json_extract_string(x, '$.name'), 't1': CAST(json_extract(x, '$.time_ns') AS BIGINT),
              't2': i, 'a': json_extract(x, '$.attributes')})) AS e
          FROM calls WHERE events LIKE '%gen_ai.%')
    WHERE e.ev IN ('gen_ai.system.message', 'gen_ai.user.message', 'gen_ai.assistant.message',
                   'gen_ai.tool.message', 'gen_ai.choice')
),
grouped AS (
    SELECT trace_id, span_id,
           list(chat_from_any(b, CASE ev WHEN 'gen_ai.system.message' THEN 'system' WHEN 'gen_ai.user.message' THEN 'user'
                                         WHEN 'gen_ai.assistant.message' THEN 'assistant' ELSE 'tool' END)
                ORDER BY t1, t2) FILTER (WHERE ev <> 'gen_ai.choice') AS inputs,
           arg_min(b, coalesce(try_cast(json_extract(b, '$.index') AS INTEGER), 0)) FILTER (WHERE ev = 'gen_ai.choice') AS choice
    FROM (SELECT * FROM log_events UNION ALL SELECT * FROM span_events)
    GROUP BY ALL
)
SELECT c.trace_id, c.span_id,
       CASE WHEN g.span_id IS NULL THEN 'genai_semconv' WHEN EXISTS (SELECT 1 FROM log_events AS l WHERE l.span_id = c.span_id)
            THEN 'genai_semconv_log_events' ELSE 'genai_semconv_span_events' END AS convention,
       to_json(g.inputs) AS input_messages,
       CASE WHEN g.choice IS NOT NULL THEN chat_from_any(coalesce(json_extract(g.choice, '$.message'), g.choice), 'assistant') END
           AS output_message,
       NULL::JSON AS tools,
       json_extract_string(g.choice, '$.finish_reason') AS finish_reason,
       CASE WHEN g.inputs IS NULL THEN 8 ELSE 2 END AS priority
FROM calls AS c LEFT JOIN grouped AS g ON g.trace_id = c.trace_id AND g.span_id = c.span_id
