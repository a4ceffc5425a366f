-- name: _rollout_status
-- Per rollout: its traces, time span, source files (relative to the data root) and completeness. Complete = every span of the
-- rollout is anchored (a root, a span whose parent arrived or was repaired, or the span carrying the
-- rollout key: OTel exports a span when it ends, so the root's presence means it ended) and nothing
-- of the rollout ended within the settle window before the lake's clock: the newest span end or
-- ingest time in the lake (data, not wall time: rebuilding the same lake gives the same answer).
-- A rollout run by `spanrl rollout` needs no settle window: the runner's own span (name spanrl.rollout,
-- spanrl.rollout.ended = true) is sent after the attempt's process exited, its SDK flushed, so a
-- rollout holding it is over and complete once every span is anchored. --settle is for open-ended traffic.
-- An incremental build reads only some traces, so it passes the whole lake's clock as the variable
-- spanrl_lake_now_ns (the same value, from every lake file); unset, it is computed from `spans`.
-- reads: spans, _span_tree
-- creates: _rollout_status
WITH clock AS (
    SELECT coalesce(getvariable('spanrl_lake_now_ns'),
                    (SELECT greatest(max(end_ns), max(epoch_ns(ingested_at))) FROM spans)) AS now_ns
),
ended AS (
    SELECT DISTINCT t.rollout_id
    FROM _span_tree t
    JOIN (SELECT trace_id, span_id FROM spans
          WHERE name = 'spanrl.rollout'
            AND spanrl_attr(attributes, resource, 'spanrl.rollout.ended') = 'true') r USING (trace_id, span_id)
)
SELECT t.rollout_id,
       list(DISTINCT t.trace_id ORDER BY t.trace_id) AS trace_ids,
       bool_and(t.anchored) AS anchored,
       min(t.start_ns) AS started_ns,
       max(t.end_ns) AS ended_ns,
       list(DISTINCT spanrl_rel_path(t.source_file) ORDER BY spanrl_rel_path(t.source_file)) AS source_files,
       bool_and(t.anchored) AND (bool_or(e.rollout_id IS NOT NULL) OR any_value(c.now_ns) - max(t.end_ns)
           >= coalesce(getvariable('spanrl_settle_ns'), 600000000000)) AS complete
FROM _span_tree t CROSS JOIN clock c
LEFT JOIN ended e USING (rollout_id)
GROUP BY t.rollout_id
