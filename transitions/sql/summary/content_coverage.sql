-- name: content_coverage
-- Per instrumentation scope: LLM calls without input / output content (the stored coverage rows), with the
-- conventions that recognised them and the attribute keys and event names their spans carried.
SELECT scope_name, scope_version, count(*) FILTER (WHERE missing_input) AS without_input,
       count(*) FILTER (WHERE missing_output) AS without_output, list_sort(list_distinct(list(convention))) AS conventions,
       list_sort(list_distinct(flatten(list(attribute_keys)))) AS attribute_keys,
       list_sort(list_distinct(flatten(list(event_names)))) AS event_names
FROM coverage WHERE missing_input OR missing_output
GROUP BY ALL ORDER BY count(*) DESC, scope_name NULLS LAST, scope_version NULLS LAST
