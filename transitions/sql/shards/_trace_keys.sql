-- name: _trace_keys
-- Per trace, the keys that tie it to other traces in stage 2, so a sharded build (--workers N) keeps
-- every tied trace in one shard: its rollout keys (spanrl.rollout_id, agentlightning.rollout_id, the
-- configured --rollout-key: a rollout may span traces, _span_tree.sql), its LLM calls' response ids (one
-- call recorded in two traces, or feedback naming it), and, for a service whose spans come from more
-- than one instrumentation scope, its process (service + resource: where llm_calls.sql looks for twins
-- without a response id). Conservative by design: a key too many only makes a shard bigger.
WITH multi_scope AS (
    SELECT coalesce(service_name, '') AS svc FROM spans GROUP BY 1 HAVING count(DISTINCT scope_name) > 1
)
SELECT DISTINCT trace_id, key FROM (
    SELECT trace_id, 'r1:' || spanrl_attr(attributes, resource, 'spanrl.rollout_id') AS key FROM spans
    UNION ALL
    SELECT trace_id, 'r2:' || spanrl_attr(attributes, resource, 'agentlightning.rollout_id') FROM spans
    UNION ALL
    SELECT trace_id, 'r3:' || spanrl_attr(attributes, resource, getvariable('spanrl_rollout_key')) FROM spans
    UNION ALL
    SELECT trace_id, 'g:' || spanrl_attr(attributes, resource, 'gen_ai.response.id') FROM spans
    UNION ALL
    SELECT trace_id, 'p:' || coalesce(service_name, '') || chr(31) || CAST(hash(resource) AS VARCHAR)
    FROM spans WHERE coalesce(service_name, '') IN (SELECT svc FROM multi_scope)
)
WHERE key IS NOT NULL
