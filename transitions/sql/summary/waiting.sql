-- name: waiting($now, $settle)
-- Why rollouts are not complete: settling (their quiet time, $settle ns after their end, has not passed the
-- lake clock $now) or unanchored (a span whose parent never arrived, or quiet time passed); and the
-- complete rollouts without any LLM call.
WITH incomplete AS (SELECT rollout_id, ended_ns, trace_ids FROM rollouts WHERE NOT complete),
orphaned AS (
    SELECT DISTINCT i.rollout_id
    FROM (SELECT rollout_id, unnest(trace_ids) AS trace_id FROM incomplete) i JOIN _traces t USING (trace_id)
    WHERE t.orphan_spans > t.orphans_reattached
),
why AS (
    SELECT i.ended_ns, o.rollout_id IS NOT NULL OR ($now IS NOT NULL AND i.ended_ns + $settle <= $now)
               AS unanchored
    FROM incomplete i LEFT JOIN orphaned o USING (rollout_id)
)
SELECT count(*) FILTER (WHERE NOT unanchored) AS rollouts_settling,
       max(ended_ns) FILTER (WHERE NOT unanchored) + $settle AS settles_at_ns,
       count(*) FILTER (WHERE unanchored) AS rollouts_unanchored,
       (SELECT count(*) FROM rollouts WHERE complete AND n_llm_calls = 0) AS rollouts_complete_without_llm_calls
FROM why
