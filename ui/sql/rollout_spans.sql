-- name: rollout_spans($ended_ns, $limit, $started_ns, $trace_ids)
-- Every span of a rollout's traces (the lake's spans, read by trace id), oldest first. The rollout's
-- time span [$started_ns, $ended_ns] (the rollouts row: its spans' first start, last end) holds every
-- such span's start, and as a constant filter it lets the scan skip every row group of other times.
SELECT trace_id, span_id, nullif(parent_span_id, '') AS parent_span_id, "name", kind, start_ns, end_ns,
       status_code, status_message, service_name, CAST(attributes AS VARCHAR) AS attributes,
       CAST(events AS VARCHAR) AS events
FROM spans
WHERE start_ns BETWEEN $started_ns AND $ended_ns AND trace_id IN (SELECT unnest($trace_ids))
ORDER BY start_ns, span_id
LIMIT $limit
