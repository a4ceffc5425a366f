-- name: coverage
-- The LLM calls whose content cannot be read, or whose tool calls have no schema (docs/lake.md,
-- "Content coverage"): every llm_calls row without input messages, without an output message, or
-- with tool calls in its output but no tool definitions (missing_tool_schema: a trainer gets tool
-- calls it cannot check), with what its spans did carry (instrumentation scope, attribute keys,
-- span-event and log-record event names, over the row's span and every span merged into it: a
-- call is unreadable only when no instrumentation of it captured the content), to tell capture that
-- was switched off from a convention spanrl does not read. Empty when every call is complete.
WITH flagged AS (
    SELECT trace_id, span_id, convention, merged_spans,
           coalesce(json_array_length(input_messages), 0) = 0 AS missing_input,
           output_message IS NULL AS missing_output,
           tools IS NULL AND coalesce(json_array_length(output_message, '$.tool_calls'), 0) > 0 AS missing_tool_schema
    FROM llm_calls
    WHERE coalesce(json_array_length(input_messages), 0) = 0 OR output_message IS NULL
       OR (tools IS NULL AND contains(CAST(output_message AS VARCHAR), '"tool_calls"'))
),
unreadable AS (
    SELECT * FROM flagged WHERE missing_input OR missing_output OR missing_tool_schema
),
member_spans AS (  -- the row's own span and the spans merged into it
    SELECT trace_id, span_id, trace_id AS m_trace, span_id AS m_span FROM unreadable
    UNION ALL
    SELECT trace_id, span_id, m.trace_id, m.span_id FROM (SELECT trace_id, span_id, unnest(merged_spans) AS m FROM unreadable)
),
carried AS (
    SELECT m.trace_id, m.span_id, flatten(list(json_keys(s.attributes))) AS keys,
           flatten(list(coalesce(json_extract_string(s.events, '$[*].name'), []))) AS span_events
    FROM member_spans AS m JOIN spans AS s ON s.trace_id = m.m_trace AND s.span_id = m.m_span
    GROUP BY m.trace_id, m.span_id
),
log_names AS (  -- event names of the log records attached to those spans
    SELECT m.trace_id, m.span_id, list(DISTINCT l.event_name) AS names
    FROM logs AS l JOIN member_spans AS m ON m.m_trace = l.trace_id AND m.m_span = l.span_id
    WHERE l.event_name IS NOT NULL
    GROUP BY m.trace_id, m.span_id
)
SELECT u.trace_id, u.span_id, s."name" AS span_name, u.convention, s.scope_name, s.scope_version,
       u.missing_input, u.missing_output, u.missing_tool_schema,
       list_sort(list_distinct(c.keys)) AS attribute_keys,
       list_sort(list_distinct(c.span_events || coalesce(g.names, []))) AS event_names
FROM unreadable AS u
JOIN spans AS s ON s.trace_id = u.trace_id AND s.span_id = u.span_id
LEFT JOIN carried AS c ON c.trace_id = u.trace_id AND c.span_id = u.span_id
LEFT JOIN log_names AS g ON g.trace_id = u.trace_id AND g.span_id = u.span_id
