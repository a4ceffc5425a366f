-- name: _span_tree
-- Every span with its rollout, its repaired parent and its place in the rollout's tree order.
-- Tree repair (Agent Lightning's rule): a span whose parent never arrived is re-attached under the
-- span of the same trace that encloses it most tightly in time (a strictly larger span, or an equal
-- one with a smaller id, so repairs cannot form cycles); with none it becomes a root.
-- order_path sorts spans depth-first, siblings by start time: the MDP step order of LLM calls.
WITH RECURSIVE s AS (
    SELECT r.rollout_id, sp.trace_id, sp.span_id, nullif(sp.parent_span_id, '') AS parent_span_id,
           sp.start_ns, sp.end_ns
    FROM spans sp JOIN _trace_rollouts r USING (trace_id)
),
orphans AS (
    SELECT o.trace_id, o.span_id, o.start_ns, o.end_ns
    FROM s o
    WHERE o.parent_span_id IS NOT NULL
      AND NOT EXISTS (SELECT 1 FROM s p WHERE p.trace_id = o.trace_id AND p.span_id = o.parent_span_id)
),
adopted AS (
    SELECT o.trace_id, o.span_id,
           arg_min(p.span_id, (p.end_ns - p.start_ns, -p.start_ns, p.span_id)) AS new_parent
    FROM orphans o JOIN s p
      ON p.trace_id = o.trace_id AND p.span_id <> o.span_id
     AND p.start_ns <= o.start_ns AND p.end_ns >= o.end_ns
     AND (p.end_ns - p.start_ns > o.end_ns - o.start_ns
          OR (p.end_ns - p.start_ns = o.end_ns - o.start_ns AND p.span_id < o.span_id))
    GROUP BY o.trace_id, o.span_id
),
tree AS (
    SELECT s.rollout_id, s.trace_id, s.span_id, s.start_ns,
           CASE WHEN o.span_id IS NULL THEN s.parent_span_id ELSE a.new_parent END AS parent_span_id,
           o.span_id IS NOT NULL AS orphan,
           a.new_parent IS NOT NULL AS repaired,
           s.parent_span_id IS NULL AS is_root,
           lpad(CAST(s.start_ns AS VARCHAR), 20, '0') || ':' || s.span_id AS sort_key
    FROM s
    LEFT JOIN orphans o USING (trace_id, span_id)
    LEFT JOIN adopted a USING (trace_id, span_id)
),
walk(trace_id, span_id, order_path, depth) AS (
    SELECT trace_id, span_id, [sort_key], 0 FROM tree WHERE parent_span_id IS NULL
    UNION ALL
    SELECT c.trace_id, c.span_id, list_append(w.order_path, c.sort_key), w.depth + 1
    FROM tree c JOIN walk w ON c.trace_id = w.trace_id AND c.parent_span_id = w.span_id
    WHERE w.depth < 200
)
SELECT t.rollout_id, t.trace_id, t.span_id, t.parent_span_id, t.start_ns, t.orphan, t.repaired, t.is_root,
       coalesce(w.order_path, [t.sort_key]) AS order_path
FROM tree t LEFT JOIN walk w USING (trace_id, span_id)
