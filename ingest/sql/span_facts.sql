-- name: _span_facts
-- Every span's narrow facts: its own columns without the attribute text, and what the later steps
-- read of that text, from ONE parse of it (docs/architecture.md, "Span facts"). The steps that used to
-- re-read and re-test every span's attributes (the convention probe, tool spans, the agent walk,
-- rollout keys, tasks) read these instead; the few that need the full text join back to `spans` for
-- the spans these columns pick. The snapshot builder makes it a table once per build; a query
-- connection has it as a view.
--   v           the values of span_fact_keys() (llm_macros.sql; span_fact(v, key) reads one back)
--   agent       the agent the span names (spanrl_span_agent), NULL when none
--   attr_keys   every top-level attribute key, each between chr(31)s (has_attr(attr_keys, key))
--   event_names the span events' names ([] without events)
--   res         hash(resource): which process (llm_calls.sql's twins)
--   rv          the resource's values of resource_fact_keys() (resource_fact(rv, key))
--   rollout_key, task_key  the values of --rollout-key / --task-key (span attribute, else resource)
--   small, small_attributes, small_events  a span whose attribute and event texts both fit in 512 bytes (most
--               spans but LLM calls) is kept whole: a step that needs a few spans whole (tool spans, reward
--               spans) reads the small ones here and the lake only for the others (none: no scan)
SELECT trace_id, span_id, parent_span_id, "name", kind, start_ns, end_ns, status_code, status_message, source_file,
       service_name,
       coalesce(scope_name, '') AS scope_name, hash(resource) AS res, v,
       spanrl_span_agent("name", v) AS agent,
       chr(31) || coalesce(array_to_string(json_keys(attributes), chr(31)), '') || chr(31) AS attr_keys,
       CASE WHEN events IS NULL THEN [] ELSE coalesce(json_extract_string(events, '$[*].name'), []) END AS event_names,
       -- resources are small and few keys are looked for: a substring test skips the parse of most
       CASE WHEN contains(CAST(resource AS VARCHAR), 'spanrl.') OR contains(CAST(resource AS VARCHAR), 'agentlightning.')
            THEN attr_values(resource, resource_fact_keys()) END AS rv,
       CASE WHEN getvariable('spanrl_rollout_key') IS NOT NULL
            THEN coalesce(json_extract_string(attributes, '$."' || getvariable('spanrl_rollout_key') || '"'),
                          json_extract_string(resource, '$."' || getvariable('spanrl_rollout_key') || '"')) END AS rollout_key,
       CASE WHEN getvariable('spanrl_task_key') IS NOT NULL
            THEN coalesce(json_extract_string(attributes, '$."' || getvariable('spanrl_task_key') || '"'),
                          json_extract_string(resource, '$."' || getvariable('spanrl_task_key') || '"')) END AS task_key,
       small, CASE WHEN small THEN attributes END AS small_attributes, CASE WHEN small THEN events END AS small_events
FROM (SELECT *, attr_values(attributes, span_fact_keys()) AS v,
             coalesce(strlen(CAST(attributes AS VARCHAR)), 0) <= 512
                 AND coalesce(strlen(CAST(events AS VARCHAR)), 0) <= 512 AS small
      FROM spans)
