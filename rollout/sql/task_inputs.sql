-- name: task_inputs
-- Tasks from past rollouts (relation _selected: the rollout_id column of the user's --sql result):
-- the last user message of each rollout's first LLM call (by start time: the user's request, after any
-- worked examples or earlier turns the agent keeps in its conversation), as text (a list of content
-- parts is joined), deduplicated by that text. task_id: the rollouts' own task id (so replays
-- join the original traffic's group), the smallest when one input was seen under several.
-- Reads only `rollouts` and `llm_calls`, the relations every lake serves: the stage-2 tables a build
-- materialised, or (a lake without a build yet) the same relations computed when connecting.
WITH picked AS (
    SELECT r.rollout_id, r.task_id, unnest(r.trace_ids) AS trace_id
    FROM rollouts r
    WHERE r.rollout_id IN (SELECT rollout_id FROM _selected)
),
first_call AS (
    SELECT p.rollout_id, any_value(p.task_id) AS task_id,
           arg_min(CAST(c.input_messages AS JSON), (c.start_ns, c.span_id)) AS messages,
           min(c.start_ns) AS started_ns
    FROM picked p JOIN llm_calls c USING (trace_id)
    WHERE contains(CAST(c.input_messages AS VARCHAR), '"user"')
    GROUP BY p.rollout_id
),
texts AS (
    SELECT rollout_id, task_id, started_ns,
           CASE json_type(content)
               WHEN 'VARCHAR' THEN content->>'$'
               WHEN 'ARRAY' THEN array_to_string(json_extract_string(content, '$[*].text'), chr(10))
           END AS input
    FROM (SELECT *, list_filter(TRY_CAST(messages AS JSON[]), lambda m: m->>'role' = 'user')[-1]->'content' AS content
          FROM first_call)
)
SELECT min(task_id) AS task_id, input, count(*) AS rollouts, min(started_ns) AS first_seen_ns
FROM texts
WHERE input IS NOT NULL AND trim(input) <> ''
GROUP BY input
ORDER BY first_seen_ns, task_id, input
