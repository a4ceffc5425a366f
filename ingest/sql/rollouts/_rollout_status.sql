-- name: _rollout_status
-- Per rollout: its traces, time span and completeness. Complete = every trace of the rollout has its
-- root span (OTel exports a span when it ends, so a root in the lake has ended) and nothing of the
-- rollout ended within the settle window before the lake's clock: the newest span end or ingest
-- time in the lake (deterministic: rebuilding the same lake gives the same answer).
WITH clock AS (
    SELECT greatest(max(end_ns), max(epoch_ns(ingested_at))) AS now_ns FROM spans
),
per_trace AS (
    SELECT rollout_id, trace_id, bool_or(is_root) AS has_root
    FROM _span_tree GROUP BY rollout_id, trace_id
),
times AS (
    SELECT r.rollout_id, min(sp.start_ns) AS started_ns, max(sp.end_ns) AS ended_ns,
           list(DISTINCT sp.source_file ORDER BY sp.source_file) AS source_files
    FROM spans sp JOIN _trace_rollouts r USING (trace_id)
    GROUP BY r.rollout_id
)
SELECT p.rollout_id,
       list(p.trace_id ORDER BY p.trace_id) AS trace_ids,
       bool_and(p.has_root) AS has_roots,
       any_value(t.started_ns) AS started_ns,
       any_value(t.ended_ns) AS ended_ns,
       any_value(t.source_files) AS source_files,
       bool_and(p.has_root)
           AND any_value(c.now_ns) - any_value(t.ended_ns)
               >= coalesce(getvariable('spanrl_settle_ns'), 600000000000) AS complete
FROM per_trace p JOIN times t USING (rollout_id) CROSS JOIN clock c
GROUP BY p.rollout_id
