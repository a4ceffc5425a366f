-- name: search_chunk($hi, $lo, $needle)
-- Trace ids whose messages mention $needle (lower case), in one time chunk [$lo, $hi): the text of
-- span attributes and events (where GenAI, OpenInference, OpenLLMetry ... keep prompts and answers)
-- and of log records (GenAI events). A plain substring test on the stored JSON text.
SELECT DISTINCT trace_id FROM spans
WHERE start_ns >= $lo AND start_ns < $hi
  AND (contains(lower(CAST(attributes AS VARCHAR)), $needle) OR contains(lower(CAST(events AS VARCHAR)), $needle))
UNION
SELECT DISTINCT trace_id FROM logs
WHERE coalesce(time_ns, observed_time_ns) >= $lo AND coalesce(time_ns, observed_time_ns) < $hi
  AND trace_id IS NOT NULL
  AND (contains(lower(CAST(body AS VARCHAR)), $needle) OR contains(lower(CAST(attributes AS VARCHAR)), $needle))
