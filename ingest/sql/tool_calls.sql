-- name: tool_calls
-- One row per tool execution (docs/lake.md).
-- From tool spans: GenAI execute_tool (gen_ai.operation.name / span name), OpenInference TOOL,
-- traceloop.span.kind = tool, LangSmith tool runs, Vercel ai.toolCall. llm_span_id is the LLM call
-- whose output asked for it: by tool_call_id, else the last call of the trace that ended before
-- the tool started; arguments are that call's own (JSON text as the model wrote it) when known. When a call's tool call has no tool span, the row comes from the call's output
-- (span_id NULL) and its result from the tool-role message of a later call in the trace; a tool call
-- the framework could not parse (LangChain's invalid_tool_calls, kept in an LLM span's output.value)
-- is a row with span_id NULL, the model's raw arguments and error_type 'invalid_tool_call'.
-- is_handoff: an agent transfer, not a tool run (docs/lake.md): an OpenInference Agents SDK handoff
-- span (TOOL, no tool.name, named "handoff to <agent>"; tool name, id and arguments are then the
-- model's one tool call of the asking call that no other tool span ran, e.g. transfer_to_<agent>),
-- or a tool whose result is a LangGraph Command with a goto (Command(goto=..., graph=PARENT)).
WITH calls AS MATERIALIZED (  -- one read of llm_calls; a message kept only where a tool call or tool result
                              -- may sit (a copy of every prompt made this spill at 600k spans)
    SELECT trace_id, span_id, start_ns, end_ns,
           CASE WHEN contains(CAST(output_message AS VARCHAR), '"tool_calls"') THEN output_message END AS tool_output,
           CASE WHEN contains(CAST(input_messages AS VARCHAR), '"tool"') THEN input_messages END AS tool_input
    FROM llm_calls
),
facts AS (  -- what marks a tool span, from the span facts (span_facts.sql): no attribute text read
    SELECT * FROM (
        SELECT trace_id, span_id, "name", start_ns, end_ns, status_code, status_message,
               span_fact(v, 'openinference.span.kind') AS oi_kind,  -- a scalar: cheaper than v through the joins
               small, small_attributes, small_events,
               coalesce(span_fact(v, 'gen_ai.operation.name') = 'execute_tool' OR starts_with("name", 'execute_tool ')
                        OR span_fact(v, 'openinference.span.kind') = 'TOOL' OR span_fact(v, 'traceloop.span.kind') = 'tool'
                        OR span_fact(v, 'langsmith.span.kind') = 'tool' OR "name" = 'ai.toolCall', false) AS is_tool,
               has_attr(attr_keys, 'output.value') AS has_output
        FROM _span_facts)
    WHERE is_tool OR has_output
),
whole AS (  -- their attribute and event text: kept in the facts for small spans, read from the lake for the others
    SELECT trace_id, span_id, small_attributes AS attributes, small_events AS events FROM facts WHERE small
    UNION ALL
    SELECT s.trace_id, s.span_id, s.attributes, s.events
    FROM spans AS s SEMI JOIN (SELECT trace_id, span_id FROM facts WHERE NOT small) AS b
        ON b.trace_id = s.trace_id AND b.span_id = s.span_id
),
marked AS MATERIALIZED (  -- tool spans, and spans that may hold an unparsed tool call (in output.value), whole
    SELECT * FROM (
        SELECT f.trace_id, f.span_id, f.start_ns, f.end_ns, f.status_code, f.status_message, w.events, w.attributes AS a,
               f."name", f.oi_kind, f.is_tool,
               -- the type value of a non-empty invalid_tool_calls list, quoted plain or inside a JSON string
               f.has_output AND (contains(CAST(w.attributes AS VARCHAR), 'invalid_tool_call"')
                                 OR contains(CAST(w.attributes AS VARCHAR), 'invalid_tool_call\"')) AS may_hold_invalid
        FROM facts AS f JOIN whole AS w ON w.trace_id = f.trace_id AND w.span_id = f.span_id)
    WHERE is_tool OR may_hold_invalid
),
tool_spans AS (
    SELECT trace_id, span_id, start_ns, end_ns, status_code, status_message, events, a, "name",
           oi_kind = 'TOOL' AND json_extract_string(a, '$."tool.name"') IS NULL
               AND ("name" = 'handoff' OR starts_with("name", 'handoff to ')) AS oi_handoff
    FROM marked
    WHERE is_tool
),
from_spans AS (
    SELECT trace_id, span_id, start_ns, end_ns, status_code,
           coalesce(json_extract_string(a, '$."gen_ai.tool.name"'), json_extract_string(a, '$."tool.name"'),
                    json_extract_string(a, '$."ai.toolCall.name"'), json_extract_string(a, '$."traceloop.entity.name"'),
                    nullif(regexp_extract("name", '^execute_tool (.+)$', 1), ''), "name") AS tool_name,
           CASE WHEN NOT oi_handoff THEN  -- a handoff span's input.value is the agent it left, not arguments
           json_text(coalesce(json_extract(a, '$."gen_ai.tool.call.arguments"'), json_extract(a, '$."input.value"'),
                              json_extract(a, '$."ai.toolCall.args"'), json_extract(a, '$."traceloop.entity.input"'))) END AS arguments,
           json_text(coalesce(json_extract(a, '$."gen_ai.tool.call.result"'), json_extract(a, '$."output.value"'),
                              json_extract(a, '$."ai.toolCall.result"'), json_extract(a, '$."traceloop.entity.output"'))) AS result,
           coalesce(json_extract_string(a, '$."gen_ai.tool.call.id"'), json_extract_string(a, '$."tool_call.id"'),
                    json_extract_string(a, '$."tool.id"'), json_extract_string(a, '$."ai.toolCall.id"')) AS tool_call_id,
           coalesce(json_extract_string(a, '$."error.type"'),
                    json_extract_string(events, '$[0].attributes."exception.type"'),
                    CASE WHEN status_code = 'ERROR' THEN coalesce(status_message, 'error') END) AS error_type,
           oi_handoff
    FROM tool_spans
),
asked AS (  -- every tool call an LLM output asked for (unnest in the select list: no join on the message)
    SELECT trace_id, llm_span_id, llm_end_ns,
           json_extract_string(t, '$.id') AS tool_call_id,
           json_extract_string(t, '$.function.name') AS tool_name,
           json_extract_string(t, '$.function.arguments') AS arguments
    FROM (SELECT trace_id, span_id AS llm_span_id, end_ns AS llm_end_ns,
                 unnest(json_extract(tool_output, '$.tool_calls[*]')) AS t
          FROM calls WHERE tool_output IS NOT NULL)
),
span_rows AS (
    SELECT f.*,
           f.oi_handoff OR coalesce(CASE WHEN starts_with(f.result, '{') AND json_valid(f.result)
                                         THEN json_exists(f.result, '$.graph') AND json_exists(f.result, '$.update')
                                              AND coalesce(json_extract_string(f.result, '$.goto'), '') NOT IN ('', '[]')
                                    END, false) AS is_handoff,
           coalesce((SELECT any_value(q.llm_span_id) FROM asked AS q
                     WHERE q.trace_id = f.trace_id AND q.tool_call_id = f.tool_call_id),
                    (SELECT arg_max(c.span_id, c.end_ns) FROM calls AS c
                     WHERE c.trace_id = f.trace_id AND c.end_ns <= f.start_ns)) AS llm_span_id
    FROM from_spans AS f
),
handoff_asks AS (  -- a handoff span without id: the asking call's one tool call (of its name, if it has one) no other span ran
    SELECT h.trace_id, h.span_id, any_value(q.tool_call_id) AS tool_call_id, any_value(q.tool_name) AS tool_name,
           any_value(q.arguments) AS arguments
    FROM span_rows AS h JOIN asked AS q ON q.trace_id = h.trace_id AND q.llm_span_id = h.llm_span_id
    WHERE h.is_handoff AND h.tool_call_id IS NULL AND (h.oi_handoff OR q.tool_name = h.tool_name)
      AND NOT EXISTS (SELECT 1 FROM span_rows AS o WHERE o.trace_id = q.trace_id AND o.span_id <> h.span_id
                      AND (o.tool_call_id = q.tool_call_id OR (o.llm_span_id = q.llm_span_id AND o.tool_name = q.tool_name)))
    GROUP BY h.trace_id, h.span_id
    HAVING count(*) = 1
),
invalid AS (  -- tool calls the framework could not parse: LangChain keeps them in the LLM span's output.value
    SELECT trace_id, llm_span_id, llm_end_ns, json_extract_string(t, '$.id') AS tool_call_id,
           json_extract_string(t, '$.name') AS tool_name, json_text(t->'args') AS arguments
    FROM (SELECT c.trace_id, c.span_id AS llm_span_id, c.end_ns AS llm_end_ns,
                 unnest(json_extract(TRY_CAST(json_extract_string(m.a, '$."output.value"') AS JSON),
                                     '$.generations[*][*].message.kwargs.invalid_tool_calls[*]')) AS t
          FROM marked AS m JOIN calls AS c USING (trace_id, span_id)
          WHERE m.may_hold_invalid)
),
pending AS (  -- asked for, and no tool span ran it
    SELECT * FROM asked AS q
    WHERE NOT EXISTS (SELECT 1 FROM span_rows AS r WHERE r.trace_id = q.trace_id
                      AND (r.tool_call_id = q.tool_call_id OR (r.tool_call_id IS NULL AND r.llm_span_id = q.llm_span_id)))
),
answers AS (  -- tool-role messages in later calls' inputs, in the traces of pending calls only
    SELECT trace_id, start_ns, json_extract_string(m, '$.tool_call_id') AS tool_call_id, json_extract_string(m, '$.content') AS result
    FROM (SELECT trace_id, start_ns, unnest(json_extract(tool_input, '$[*]')) AS m
          FROM calls WHERE trace_id IN (SELECT trace_id FROM pending) AND tool_input IS NOT NULL)
    WHERE json_extract_string(m, '$.role') = 'tool'
),
output_rows AS (
    SELECT q.trace_id, NULL::VARCHAR AS span_id, q.llm_span_id, q.tool_name, q.arguments,
           (SELECT arg_min(a.result, a.start_ns) FROM answers AS a
            WHERE a.trace_id = q.trace_id AND a.tool_call_id = q.tool_call_id AND a.start_ns >= q.llm_end_ns) AS result,
           'UNSET' AS status_code, NULL::VARCHAR AS error_type,
           q.llm_end_ns AS start_ns,
           (SELECT min(a.start_ns) FROM answers AS a
            WHERE a.trace_id = q.trace_id AND a.tool_call_id = q.tool_call_id AND a.start_ns >= q.llm_end_ns) AS end_ns,
           q.tool_call_id, false AS is_handoff
    FROM pending AS q
),
invalid_rows AS (  -- not already a tool call of the call's output (another instrumentation of it) nor run by a span
    SELECT v.trace_id, NULL::VARCHAR AS span_id, v.llm_span_id, v.tool_name, v.arguments, NULL::VARCHAR AS result,
           'UNSET' AS status_code, 'invalid_tool_call' AS error_type, v.llm_end_ns AS start_ns, NULL::BIGINT AS end_ns,
           v.tool_call_id, false AS is_handoff
    FROM invalid AS v
    WHERE NOT EXISTS (SELECT 1 FROM asked AS q WHERE q.trace_id = v.trace_id AND q.tool_call_id = v.tool_call_id)
      AND NOT EXISTS (SELECT 1 FROM span_rows AS r WHERE r.trace_id = v.trace_id AND r.tool_call_id = v.tool_call_id)
)
SELECT r.trace_id, r.span_id, r.llm_span_id, coalesce(h.tool_name, r.tool_name) AS tool_name,
       -- the arguments the model wrote (its tool call, by id, else the one call of that name it made)
       -- win over what the tool span recorded: instrumentations rewrite tool input (OpenInference
       -- unwraps a one-key dict to its value), and AIR judges the model's output, not the tool's view
       coalesce(h.arguments,
                (SELECT any_value(q.arguments) FROM asked AS q
                 WHERE q.trace_id = r.trace_id AND q.tool_call_id = r.tool_call_id),
                (SELECT CASE WHEN count(*) = 1 THEN any_value(q.arguments) END FROM asked AS q
                 WHERE q.trace_id = r.trace_id AND q.llm_span_id = r.llm_span_id AND q.tool_name = r.tool_name
                   AND r.tool_call_id IS NULL),
                r.arguments) AS arguments,
       r.result, r.status_code, r.error_type, r.start_ns, r.end_ns, coalesce(r.tool_call_id, h.tool_call_id) AS tool_call_id,
       r.is_handoff
FROM span_rows AS r
LEFT JOIN handoff_asks AS h USING (trace_id, span_id)
UNION ALL
SELECT trace_id, span_id, llm_span_id, tool_name, arguments, result, status_code, error_type, start_ns, end_ns, tool_call_id,
       is_handoff
FROM output_rows
UNION ALL
SELECT trace_id, span_id, llm_span_id, tool_name, arguments, result, status_code, error_type, start_ns, end_ns, tool_call_id,
       is_handoff
FROM invalid_rows
