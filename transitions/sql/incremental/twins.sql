-- name: twins
-- Stored traces (_p_traces) a recomputed trace may share an LLM call with that this build did not read:
-- llm_calls.sql merges a call recorded by two instrumentations in two traces (the client
-- instrumentation's span a root of its own trace), and the two may reach the lake in different
-- nights. Such a pair always has one side whose LLM-call span is a trace root (lone_call) and times
-- that overlap: pairs of a lone stored trace with any recomputed one overlapping it, and of a lone
-- recomputed trace with any stored one. On traffic where every call sits under an agent span both sides
-- are empty. A superset of the real twins (llm_calls.sql decides); the build recomputes them together.
-- reads: llm_calls, _span_tree, _p_traces
-- creates: _twin_traces
WITH call_spans AS (
    SELECT trace_id, span_id FROM llm_calls
    UNION ALL
    SELECT m.trace_id, m.span_id FROM (SELECT unnest(merged_spans) AS m FROM llm_calls WHERE len(merged_spans) > 0)
),
now AS (  -- the traces this build computed: their time and whether one of their roots is an LLM call
    SELECT t.trace_id, min(t.start_ns) AS s, max(t.end_ns) AS e, coalesce(bool_or(t.is_root AND c.span_id IS NOT NULL), false) AS lone
    FROM _span_tree t LEFT JOIN call_spans c ON c.trace_id = t.trace_id AND c.span_id = t.span_id
    GROUP BY t.trace_id
),
stored AS (
    SELECT trace_id, start_ns AS s, end_ns AS e, lone_call AS lone FROM _p_traces
    WHERE trace_id NOT IN (SELECT trace_id FROM now)
)
SELECT p.trace_id FROM (SELECT * FROM stored WHERE lone) p JOIN now n ON p.s <= n.e AND n.s <= p.e
UNION
SELECT p.trace_id FROM stored p JOIN (SELECT * FROM now WHERE lone) n ON p.s <= n.e AND n.s <= p.e
