-- name: _span_tree
-- Every span with its rollout, its repaired parent and its place in the rollout's tree order.
-- Rollout identity (docs/transitions.md): per trace, the first key kind present wins - spanrl.rollout_id (span
-- or resource attribute), agentlightning.rollout_id, the configured --rollout-key - and a span takes
-- the key of its nearest keyed ancestor-or-self, so one trace may hold several rollouts (episodes
-- under one eval span). Spans above every key join the trace's key when it has exactly one, else
-- the trace id; a trace without keys is one rollout named by its trace id. Rollouts may span traces.
-- One tree across instrumentations: a keyless trace whose every LLM-call span llm_calls merged into a
-- call that sits in another trace (llm_calls.merged_spans: a client instrumentation's root span in a
-- trace of its own, docs/lake.md "One call, one row") joins the rollout of that call.
-- Tree repair (Agent Lightning's rule): a span whose parent never arrived is re-attached under the
-- span of the same trace that encloses it most tightly in time (a strictly larger span, or an equal
-- one with a smaller id, so repairs cannot form cycles); with none it stays unanchored (a root that
-- is not a root: its rollout is incomplete until the parent arrives, unless it carries its own key).
-- order_path sorts spans depth-first, siblings by start time: the MDP step order of LLM calls.
-- reads: _span_facts, llm_calls
-- creates: _span_tree
WITH RECURSIVE s AS (  -- the keys are span facts (span attribute, else resource; span_facts.sql)
    SELECT trace_id, span_id, nullif(parent_span_id, '') AS parent_span_id, start_ns, end_ns,
           status_code, source_file,
           coalesce(span_fact(v, 'spanrl.rollout_id'), resource_fact(rv, 'spanrl.rollout_id')) AS k1,
           coalesce(span_fact(v, 'agentlightning.rollout_id'), resource_fact(rv, 'agentlightning.rollout_id')) AS k2,
           rollout_key AS k3
    FROM _span_facts
),
kinds AS (  -- which key kind this trace uses, and its key when it has exactly one
    SELECT trace_id,
           CASE WHEN count(k1) > 0 THEN 1 WHEN count(k2) > 0 THEN 2 WHEN count(k3) > 0 THEN 3 END AS kind,
           CASE WHEN count(k1) > 0 THEN CASE WHEN count(DISTINCT k1) = 1 THEN min(k1) END
                WHEN count(k2) > 0 THEN CASE WHEN count(DISTINCT k2) = 1 THEN min(k2) END
                WHEN count(k3) > 0 THEN CASE WHEN count(DISTINCT k3) = 1 THEN min(k3) END END AS only_key
    FROM s GROUP BY trace_id
),
keyed AS (
    SELECT s.*, k.only_key,
           CASE k.kind WHEN 1 THEN s.k1 WHEN 2 THEN s.k2 WHEN 3 THEN s.k3 END AS own_key
    FROM s JOIN kinds k USING (trace_id)
),
orphans AS (
    SELECT o.trace_id, o.span_id, o.start_ns, o.end_ns
    FROM keyed o
    WHERE o.parent_span_id IS NOT NULL
      AND NOT EXISTS (SELECT 1 FROM keyed p WHERE p.trace_id = o.trace_id AND p.span_id = o.parent_span_id)
),
adopted AS (
    SELECT o.trace_id, o.span_id,
           arg_min(p.span_id, (p.end_ns - p.start_ns, -p.start_ns, p.span_id)) AS new_parent
    FROM orphans o JOIN keyed p
      ON p.trace_id = o.trace_id AND p.span_id <> o.span_id
     AND p.start_ns <= o.start_ns AND p.end_ns >= o.end_ns
     AND (p.end_ns - p.start_ns > o.end_ns - o.start_ns
          OR (p.end_ns - p.start_ns = o.end_ns - o.start_ns AND p.span_id < o.span_id))
    GROUP BY o.trace_id, o.span_id
),
tree AS (
    SELECT s.*,
           CASE WHEN o.span_id IS NULL THEN s.parent_span_id ELSE a.new_parent END AS tree_parent,
           o.span_id IS NOT NULL AS orphan,
           a.new_parent IS NOT NULL AS repaired,
           s.parent_span_id IS NULL AS is_root,
           lpad(CAST(s.start_ns AS VARCHAR), 20, '0') || ':' || s.span_id AS sort_key
    FROM keyed s
    LEFT JOIN orphans o USING (trace_id, span_id)
    LEFT JOIN adopted a USING (trace_id, span_id)
),
walk(trace_id, span_id, order_path, depth, inherited) AS (
    SELECT trace_id, span_id, [sort_key], 0, own_key FROM tree WHERE tree_parent IS NULL
    UNION ALL
    SELECT c.trace_id, c.span_id, list_append(w.order_path, c.sort_key), w.depth + 1,
           coalesce(c.own_key, w.inherited)
    FROM tree c JOIN walk w ON c.trace_id = w.trace_id AND c.tree_parent = w.span_id
    WHERE w.depth < 200
),
base AS (
    SELECT coalesce(w.inherited, t.own_key, t.only_key, t.trace_id) AS rollout_id,
           t.trace_id, t.span_id, t.tree_parent AS parent_span_id, t.start_ns, t.end_ns, t.status_code,
           t.source_file, t.orphan, t.repaired, t.is_root,
           t.is_root OR t.tree_parent IS NOT NULL OR t.own_key IS NOT NULL AS anchored,
           coalesce(w.order_path, [t.sort_key]) AS order_path
    FROM tree t LEFT JOIN walk w USING (trace_id, span_id)
),
merged AS (  -- call spans merged into a call of another trace: (their trace, the call that holds them)
    SELECT * FROM (SELECT trace_id, span_id, unnest(merged_spans).trace_id AS from_trace
                   FROM llm_calls WHERE len(merged_spans) > 0)
    WHERE from_trace <> trace_id
),
moved AS (  -- keyless traces with no call row of their own: the rollout of the call that holds theirs
    SELECT m.from_trace AS trace_id, min(b.rollout_id) AS rollout_id
    FROM merged m
    JOIN base b ON b.trace_id = m.trace_id AND b.span_id = m.span_id
    JOIN kinds k ON k.trace_id = m.from_trace AND k.kind IS NULL
    WHERE NOT EXISTS (SELECT 1 FROM llm_calls c WHERE c.trace_id = m.from_trace)
    GROUP BY m.from_trace
)
SELECT coalesce(mv.rollout_id, b.rollout_id) AS rollout_id, b.* EXCLUDE (rollout_id)
FROM base b LEFT JOIN moved mv USING (trace_id)
