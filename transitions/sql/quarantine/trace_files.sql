-- name: trace_files
-- The span files each quarantined trace (_q_traces) came from, as the collector wrote them.
SELECT trace_id, list_sort(list(DISTINCT source_file)) AS files
FROM lake_catalog.main.spans WHERE trace_id IN (SELECT trace_id FROM _q_traces) GROUP BY trace_id
