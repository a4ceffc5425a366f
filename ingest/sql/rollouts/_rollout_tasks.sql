-- name: _rollout_tasks
-- Per rollout: the task it attempts, for group baselines. spanrl.task_id (span or resource), the
-- configured --task-key, else a hash of the rollout's first user message (first call in tree order).
WITH keyed AS (
    SELECT r.rollout_id,
           min(spanrl_attr(sp.attributes, sp.resource, 'spanrl.task_id')) AS spanrl_task,
           min(spanrl_attr(sp.attributes, sp.resource, getvariable('spanrl_task_key'))) AS key_task
    FROM spans sp JOIN _trace_rollouts r USING (trace_id)
    GROUP BY r.rollout_id
),
first_user AS (
    SELECT rollout_id,
           arg_min(
               list_filter(CAST(CAST(input_messages AS JSON) AS JSON[]), lambda m: m->>'role' = 'user')[1]->'content',
               (order_path, span_id)
           ) AS content
    FROM _rollout_calls
    WHERE list_filter(CAST(CAST(input_messages AS JSON) AS JSON[]), lambda m: m->>'role' = 'user')[1] IS NOT NULL
    GROUP BY rollout_id
)
SELECT k.rollout_id,
       coalesce(k.spanrl_task, k.key_task,
                'msg:' || substr(md5(CAST(f.content AS VARCHAR)), 1, 16)) AS task_id
FROM keyed k LEFT JOIN first_user f USING (rollout_id)
