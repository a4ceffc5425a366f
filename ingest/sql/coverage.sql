-- name: coverage
-- The LLM calls whose content cannot be read (docs/lake.md, "Content coverage"): every llm_calls row
-- without input messages or without an output message, with what its span did carry (instrumentation
-- scope, attribute keys, span-event and log-record event names), to tell capture that was switched
-- off from a convention spanrl does not read. Empty when every call's content is readable.
WITH unreadable AS (
    SELECT trace_id, span_id, convention,
           coalesce(json_array_length(input_messages), 0) = 0 AS missing_input,
           output_message IS NULL AS missing_output
    FROM llm_calls
    WHERE coalesce(json_array_length(input_messages), 0) = 0 OR output_message IS NULL
),
log_names AS (  -- event names of the log records attached to those spans
    SELECT l.trace_id, l.span_id, list(DISTINCT l.event_name) AS names
    FROM logs AS l SEMI JOIN unreadable AS u ON u.trace_id = l.trace_id AND u.span_id = l.span_id
    WHERE l.event_name IS NOT NULL
    GROUP BY ALL
)
SELECT u.trace_id, u.span_id, s."name" AS span_name, u.convention, s.scope_name, s.scope_version,
       u.missing_input, u.missing_output,
       list_sort(json_keys(s.attributes)) AS attribute_keys,
       list_sort(list_distinct(coalesce(json_extract_string(s.events, '$[*].name'), []) || coalesce(g.names, [])))
           AS event_names
FROM unreadable AS u
JOIN spans AS s ON s.trace_id = u.trace_id AND s.span_id = u.span_id
LEFT JOIN log_names AS g ON g.trace_id = u.trace_id AND g.span_id = u.span_id
