-- name: _rollout_status
-- Per rollout: its traces, time span, source files (relative to the data root) and completeness. Complete = every span of the
-- rollout is anchored (a root, a span whose parent arrived or was repaired, or the span carrying the
-- rollout key: OTel exports a span when it ends, so the root's presence means it ended) and nothing
-- of the rollout ended within the settle window before the lake's clock: the newest span end or
-- ingest time in the lake (data, not wall time: rebuilding the same lake gives the same answer).
-- An incremental build reads only some traces, so it passes the whole lake's clock as the variable
-- spanrl_lake_now_ns (the same value, from every lake file); unset, it is computed from `spans`.
WITH clock AS (
    SELECT coalesce(getvariable('spanrl_lake_now_ns'),
                    (SELECT greatest(max(end_ns), max(epoch_ns(ingested_at))) FROM spans)) AS now_ns
)
SELECT t.rollout_id,
       list(DISTINCT t.trace_id ORDER BY t.trace_id) AS trace_ids,
       bool_and(t.anchored) AS anchored,
       min(t.start_ns) AS started_ns,
       max(t.end_ns) AS ended_ns,
       list(DISTINCT spanrl_rel_path(t.source_file) ORDER BY spanrl_rel_path(t.source_file)) AS source_files,
       bool_and(t.anchored) AND any_value(c.now_ns) - max(t.end_ns)
           >= coalesce(getvariable('spanrl_settle_ns'), 600000000000) AS complete
FROM _span_tree t CROSS JOIN clock c
GROUP BY t.rollout_id
