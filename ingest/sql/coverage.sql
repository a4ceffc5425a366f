-- name: coverage
-- The LLM calls whose content cannot be read, or whose tool calls have no schema, or whose spans carry a
-- value spanrl could not read (docs/lake.md, "Content coverage"): every llm_calls row without input
-- messages, without an output message, with tool calls in its output but no tool definitions
-- (missing_tool_schema: a trainer gets tool calls it cannot check), or with an `unreadable` entry; with
-- what its spans did carry (instrumentation scope, attribute keys, span-event and log-record event names,
-- over the row's span and every span merged into it: a call is unreadable only when no instrumentation
-- of it captured the content), to tell capture that was switched off from a convention spanrl does not
-- read. `unreadable` names each value that was read as NULL instead of stopping the night (issue 42):
-- {span_id, key, reason}: a call attribute that should be a number and is not (any call), and, on a call
-- whose content is missing, a content attribute that is not JSON or not the JSON shape it should be (the
-- likely cause). Empty when every call is complete.
WITH calls AS (  -- a prompt whose text starts '[{' is an array with a message in it, and a reply without
                 -- '"tool_calls"' in its text has none: neither is parsed (parsing every prompt and reply:
                 -- 0.41 against 0.30 CPU s for the statement at 600k spans, bench/pieces/coverage.py)
    SELECT trace_id, span_id, convention, merged_spans,
           CASE WHEN starts_with(CAST(input_messages AS VARCHAR), '[{') THEN false
                ELSE coalesce(json_array_length(input_messages), 0) = 0 END AS missing_input,
           output_message IS NULL AS missing_output,
           CASE WHEN tools IS NOT NULL OR NOT contains(CAST(output_message AS VARCHAR), '"tool_calls"') THEN false
                ELSE coalesce(json_array_length(output_message, '$.tool_calls'), 0) > 0 END AS missing_tool_schema
    FROM llm_calls
),
all_members AS (  -- every call's own span and the spans merged into it (lean: ids only)
    SELECT trace_id, span_id, trace_id AS m_trace, span_id AS m_span FROM calls
    UNION ALL
    SELECT trace_id, span_id, m.trace_id, m.span_id FROM (SELECT trace_id, span_id, unnest(merged_spans) AS m FROM calls
                                                           WHERE len(merged_spans) > 0)
),
bad_numbers AS (  -- call attributes that should be numbers (span facts: no attribute text read here)
    SELECT m.trace_id, m.span_id, list({'span_id': m.m_span, 'key': k, 'reason': 'not a number'} ORDER BY m.m_span, k) AS bad
    FROM all_members AS m JOIN _span_facts AS f ON f.trace_id = m.m_trace AND f.span_id = m.m_span,
         unnest(coverage_number_keys()) AS n(k)
    WHERE span_fact(f.v, k) IS NOT NULL AND try_cast(span_fact(f.v, k) AS DOUBLE) IS NULL
    GROUP BY ALL
),
unreadable AS (
    SELECT c.*, b.bad FROM calls AS c LEFT JOIN bad_numbers AS b USING (trace_id, span_id)
    WHERE c.missing_input OR c.missing_output OR c.missing_tool_schema OR b.bad IS NOT NULL
),
member_spans AS (  -- the flagged row's own span and the spans merged into it
    SELECT m.* FROM all_members AS m SEMI JOIN unreadable AS u USING (trace_id, span_id)
),
bad_content AS (  -- on a call with content missing: which content attribute of its spans could not be read
    SELECT m.trace_id, m.span_id,
           list({'span_id': m.m_span, 'key': k, 'reason': coverage_content_problem(k, json_extract_string(s.attributes, '$."' || k || '"'))}
                ORDER BY m.m_span, k) FILTER (WHERE coverage_content_problem(k, json_extract_string(s.attributes, '$."' || k || '"')) IS NOT NULL) AS bad
    FROM member_spans AS m JOIN spans AS s ON s.trace_id = m.m_trace AND s.span_id = m.m_span
    SEMI JOIN unreadable AS u ON u.trace_id = m.trace_id AND u.span_id = m.span_id
                                 AND (u.missing_input OR u.missing_output OR u.missing_tool_schema),
         unnest(json_keys(s.attributes)) AS a(k)
    WHERE coverage_content_key(k)
    GROUP BY ALL
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
       list_sort(list_distinct(c.span_events || coalesce(g.names, []))) AS event_names,
       coalesce(u.bad, []) || coalesce(bc.bad, []) AS unreadable
FROM unreadable AS u
JOIN spans AS s ON s.trace_id = u.trace_id AND s.span_id = u.span_id
LEFT JOIN carried AS c ON c.trace_id = u.trace_id AND c.span_id = u.span_id
LEFT JOIN log_names AS g ON g.trace_id = u.trace_id AND g.span_id = u.span_id
LEFT JOIN bad_content AS bc ON bc.trace_id = u.trace_id AND bc.span_id = u.span_id
