-- name: _air_candidates
-- One row per span of every rollout, with what AIR rules (spanrl.toml [air]) test: the span's own
-- columns, its tool-call columns (tool_calls view), whether it is an LLM call / agent step, exception
-- events, argument validity against the tool's declared JSON schema, and LLM-call retries.
-- target_span_id: the LLM call whose output caused the span: itself for an LLM call, the call that
-- asked for a tool (tool_calls.llm_span_id), else the latest call of the rollout that ended before
-- the span's first exception (or its start).
WITH s AS (
    SELECT sp.trace_id, sp.span_id, nullif(sp.parent_span_id, '') AS parent_span_id, sp.name, sp.kind,
           sp.status_code, sp.status_message, sp.attributes, sp.events, sp.start_ns, sp.end_ns,
           r.rollout_id,
           CASE WHEN contains(CAST(sp.events AS VARCHAR), 'exception')  -- cheap test: most spans have no exception
                THEN list_filter(TRY_CAST(CAST(sp.events AS JSON) AS JSON[]), lambda e: e->>'name' = 'exception')
                ELSE [] END AS exc,
           -- one parse of the attributes for the agent test below
           json_extract_string(sp.attributes, ['$."gen_ai.operation.name"', '$."openinference.span.kind"',
                                               '$."traceloop.span.kind"', '$."gen_ai.agent.name"']) AS ak
    FROM spans sp JOIN _span_tree r USING (trace_id, span_id)
),
calls AS (
    SELECT rollout_id, trace_id, span_id, end_ns, tools,
           count(*) OVER (PARTITION BY rollout_id, hash(CAST(input_messages AS VARCHAR))
                          ORDER BY start_ns, span_id
                          ROWS BETWEEN 1 FOLLOWING AND UNBOUNDED FOLLOWING) > 0 AS retried
    FROM _rollout_calls
),
tools AS (
    SELECT tc.trace_id, tc.span_id, tc.llm_span_id, tc.tool_name, tc.arguments, tc.result, tc.error_type,
           (SELECT coalesce(d->'function'->'parameters', d->'parameters')
            FROM (SELECT unnest(TRY_CAST(CAST(asker.tools AS JSON) AS JSON[])) AS d)
            WHERE coalesce(d->'function'->>'name', d->>'name') = tc.tool_name
            LIMIT 1) AS tool_schema
    FROM tool_calls tc
    LEFT JOIN calls asker ON asker.trace_id = tc.trace_id AND asker.span_id = tc.llm_span_id
),
joined AS (
    SELECT s.*,
           t.span_id IS NOT NULL AS is_tool, t.tool_name, t.arguments, t.result, t.error_type, t.llm_span_id,
           t.tool_schema,
           spanrl_args_valid(t.arguments, t.tool_schema) AS args_valid,
           c.span_id IS NOT NULL AS is_llm_call,
           coalesce(c.retried, false) AS retried,
           coalesce(s.ak[1] = 'invoke_agent' OR s.ak[2] = 'AGENT' OR s.ak[3] = 'agent' OR s.ak[4] IS NOT NULL,
                    false) AS is_agent,
           coalesce(len(s.exc) > 0, false) AS has_exception,
           spanrl_is_error(s.status_code) AS is_error,
           coalesce(list_min(list_transform(s.exc, lambda e: spanrl_event_ns(e))), s.start_ns) AS anchor_ns
    FROM s
    LEFT JOIN tools t USING (trace_id, span_id)
    LEFT JOIN calls c USING (trace_id, span_id)
)
SELECT j.* EXCLUDE (exc, ak),
       CASE WHEN j.is_llm_call THEN j.span_id ELSE coalesce(j.llm_span_id, prev.span_id) END AS target_span_id
FROM joined j
ASOF LEFT JOIN (SELECT rollout_id, span_id, end_ns FROM calls) prev
    ON prev.rollout_id = j.rollout_id AND j.anchor_ns >= prev.end_ns
