-- name: _air_candidates
-- One row per span of every rollout, plus one per tool call no span ran (a tool call taken from the
-- call's output, or one the framework could not parse: span_id NULL, name = the tool's name), with what
-- AIR rules (spanrl.toml [air]) test: the span's own columns, its tool-call columns (tool_calls view),
-- whether it is an LLM call / agent step, exception events, argument validity against the tool's
-- declared JSON schema, and LLM-call retries.
-- Handoffs (tool_calls.is_handoff: an agent transfer) are not tools here: is_tool is false, is_handoff
-- true, args_valid true (there is no schema for a transfer). The schema is the one the asking call
-- offered, else the one the tool span declares (OpenInference tool.parameters).
-- tool_offered: for a tool, whether its name is one the asking call offered; NULL when that call's
-- offered tools are unknown (no tools captured, or no asking call) - never a guess - and for a non-tool.
-- retried: the call's exact prompt is sent again later in the rollout; a call whose prompt has no
-- content (not captured, or redacted) is never a retry, nor retried: equal nothings prove nothing.
-- Exception events that are a framework's control flow (LangGraph's GraphBubbleUp family:
-- ParentCommand for a Command(graph=PARENT) transfer, GraphInterrupt, NodeInterrupt) are not exceptions.
-- target_span_id: the LLM call whose output caused the span: itself for an LLM call, the call that
-- asked for a tool (tool_calls.llm_span_id), else the latest call of the rollout that ended before
-- the span's first exception (or its start).
-- reads: spans, _span_facts, tool_calls, _span_tree, _rollout_calls
-- creates: _air_candidates
WITH s AS (  -- the spans' columns from their facts (span_facts.sql); attributes and events are joined for
            -- the rules that read them (a rule that does not costs no read of the attribute text)
    SELECT f.trace_id, f.span_id, nullif(f.parent_span_id, '') AS parent_span_id, f."name", f.kind,
           f.status_code, f.status_message, sp.attributes, sp.events, f.start_ns, f.end_ns,
           r.rollout_id, f.tool_parameters, f.agent_span,
           CASE WHEN list_contains(f.event_names, 'exception')  -- most spans have no exception
                THEN list_filter(TRY_CAST(CAST(sp.events AS JSON) AS JSON[]),
                                 lambda e: e->>'name' = 'exception'
                                     AND NOT regexp_matches(coalesce(e->'attributes'->>'exception.type', ''),
                                                            '(^|\.)(GraphBubbleUp|GraphDrained|GraphInterrupt|NodeInterrupt|ParentCommand)$'))
                ELSE [] END AS exc
    FROM (SELECT trace_id, span_id, parent_span_id, "name", kind, status_code, status_message, start_ns, end_ns,
                 event_names, span_fact(v, 'tool.parameters') AS tool_parameters,  -- scalars: cheaper to join than v
                 coalesce(span_fact(v, 'gen_ai.operation.name') = 'invoke_agent' OR span_fact(v, 'openinference.span.kind') = 'AGENT'
                          OR span_fact(v, 'traceloop.span.kind') = 'agent' OR span_fact(v, 'gen_ai.agent.name') IS NOT NULL,
                          false) AS agent_span
          FROM _span_facts) f
    JOIN _span_tree r ON r.trace_id = f.trace_id AND r.span_id = f.span_id
    LEFT JOIN spans sp ON sp.trace_id = f.trace_id AND sp.span_id = f.span_id
),
calls AS (  -- the window sorts the prompts' hashes, not the prompts (at 600k spans: -0.4 CPU s)
    SELECT rollout_id, trace_id, span_id, end_ns, tools,
           prompt_hash IS NOT NULL
               AND count(*) OVER (PARTITION BY rollout_id, prompt_hash ORDER BY start_ns, span_id
                                  ROWS BETWEEN 1 FOLLOWING AND UNBOUNDED FOLLOWING) > 0 AS retried
    FROM (SELECT *, CASE WHEN regexp_matches(replace(txt, '"__REDACTED__"', 'null'),
                                             '"(content|tool_calls)":\s*("[^"]|\[)') THEN hash(txt) END AS prompt_hash
          -- content: some message has a non-empty content (text or parts) or tool calls; a text test on
          -- the prompt the hash reads anyway (OpenInference's redaction marker counts as none)
          FROM (SELECT *, CAST(input_messages AS VARCHAR) AS txt FROM _rollout_calls))
),
tools AS (
    SELECT tc.trace_id, tc.span_id, tc.llm_span_id, tc.tool_name, tc.arguments, tc.result, tc.error_type,
           tc.status_code, tc.start_ns, tc.end_ns, coalesce(tc.is_handoff, false) AS is_handoff, asker.rollout_id,
           (SELECT coalesce(d->'function'->'parameters', d->'parameters')
            FROM (SELECT unnest(TRY_CAST(CAST(asker.tools AS JSON) AS JSON[])) AS d)
            WHERE coalesce(d->'function'->>'name', d->>'name') = tc.tool_name
            LIMIT 1) AS offered_schema,
           (SELECT CASE WHEN tc.tool_name IS NULL THEN NULL
                        WHEN bool_or(n = tc.tool_name) THEN true              -- offered
                        WHEN count(n) = count(*) AND count(*) > 0 THEN false  -- every offered name known, none it
                        END                                                   -- no list, or a nameless entry
            FROM (SELECT coalesce(d->'function'->>'name', d->>'name') AS n
                  FROM (SELECT unnest(TRY_CAST(CAST(asker.tools AS JSON) AS JSON[])) AS d))) AS offered_name
    FROM tool_calls tc
    LEFT JOIN calls asker ON asker.trace_id = tc.trace_id AND asker.span_id = tc.llm_span_id
),
span_rows AS (
    SELECT s.* EXCLUDE (exc, tool_parameters, agent_span),
           t.span_id IS NOT NULL AND NOT t.is_handoff AS is_tool, coalesce(t.is_handoff, false) AS is_handoff,
           t.tool_name, t.arguments, t.result, t.error_type, t.llm_span_id,
           CASE WHEN NOT t.is_handoff
                THEN coalesce(t.offered_schema, TRY_CAST(s.tool_parameters AS JSON)) END AS tool_schema,
           CASE WHEN NOT t.is_handoff THEN t.offered_name END AS tool_offered,
           c.span_id IS NOT NULL AS is_llm_call,
           coalesce(c.retried, false) AS retried,
           s.agent_span AS is_agent,
           coalesce(len(s.exc) > 0, false) AS has_exception,
           spanrl_is_error(s.status_code) AS is_error,
           coalesce(list_min(list_transform(s.exc, lambda e: spanrl_event_ns(e))), s.start_ns) AS anchor_ns
    FROM s
    LEFT JOIN tools t USING (trace_id, span_id)
    LEFT JOIN calls c USING (trace_id, span_id)
),
spanless AS (  -- tool calls no span ran: the model's output is still judged (arguments, schema)
    SELECT trace_id, NULL::VARCHAR AS span_id, llm_span_id AS parent_span_id, tool_name AS "name", NULL AS kind,
           status_code, NULL::VARCHAR AS status_message, NULL AS attributes, NULL AS events, start_ns, end_ns,
           rollout_id, NOT is_handoff AS is_tool, is_handoff, tool_name, arguments, result, error_type, llm_span_id,
           CASE WHEN NOT is_handoff THEN offered_schema END AS tool_schema,
           CASE WHEN NOT is_handoff THEN offered_name END AS tool_offered, false AS is_llm_call, false AS retried,
           false AS is_agent, false AS has_exception, spanrl_is_error(status_code) AS is_error, start_ns AS anchor_ns
    FROM tools
    WHERE span_id IS NULL AND rollout_id IS NOT NULL
),
joined AS (
    SELECT * REPLACE (CASE WHEN is_tool THEN spanrl_args_valid(arguments, tool_schema) ELSE true END AS args_valid)
    FROM (SELECT *, NULL::BOOLEAN AS args_valid FROM span_rows UNION ALL BY NAME SELECT * FROM spanless)
)
SELECT j.*,
       CASE WHEN j.is_llm_call THEN j.span_id ELSE coalesce(j.llm_span_id, prev.span_id) END AS target_span_id
FROM joined j
ASOF LEFT JOIN (SELECT rollout_id, span_id, end_ns FROM calls) prev
    ON prev.rollout_id = j.rollout_id AND j.anchor_ns >= prev.end_ns
