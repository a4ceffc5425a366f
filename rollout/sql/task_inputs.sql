-- name: task_inputs
-- Tasks from past rollouts (relation _selected: the rollout_id column of the user's --sql result):
-- the first user message of each rollout's first LLM call (tree order), as text (a list of content
-- parts is joined), deduplicated by that text. task_id: the rollouts' own task id (so replays join
-- the original traffic's group), the smallest when one input was seen under several.
WITH first_call AS (
    SELECT c.rollout_id, arg_min(CAST(c.input_messages AS JSON), (c.order_path, c.span_id)) AS messages,
           min(c.start_ns) AS started_ns
    FROM _rollout_calls c
    WHERE c.rollout_id IN (SELECT rollout_id FROM _selected)
      AND contains(CAST(c.input_messages AS VARCHAR), '"user"')
    GROUP BY c.rollout_id
),
first_user AS (
    SELECT rollout_id, started_ns,
           list_filter(TRY_CAST(messages AS JSON[]), lambda m: m->>'role' = 'user')[1]->'content' AS content
    FROM first_call
),
texts AS (
    SELECT f.rollout_id, t.task_id, f.started_ns,
           CASE json_type(f.content)
               WHEN 'VARCHAR' THEN f.content->>'$'
               WHEN 'ARRAY' THEN array_to_string(json_extract_string(f.content, '$[*].text'), chr(10))
           END AS input
    FROM first_user f JOIN _rollout_tasks t USING (rollout_id)  -- not `rollouts`: its rewards cost seconds
)
SELECT min(task_id) AS task_id, input, count(*) AS rollouts, min(started_ns) AS first_seen_ns
FROM texts
WHERE input IS NOT NULL AND trim(input) <> ''
GROUP BY input
ORDER BY first_seen_ns, task_id, input
