-- name: _rollout_tasks
-- Per rollout: the task it attempts, for group baselines. spanrl.task_id (span or resource), the
-- configured --task-key, else a hash of the last user message of the rollout's first call (tree order):
-- the user's request; worked examples or earlier turns an agent keeps in its conversation come before
-- it (the first user message made every rollout of such an agent one task group).
-- Also its purpose: spanrl.rollout.purpose (span or resource; `spanrl eval` sets 'eval'), NULL when untagged.
-- reads: _span_facts, llm_calls, _span_tree, _rollout_calls
-- creates: _rollout_tasks
WITH keyed AS (  -- span facts (span attribute, else resource; span_facts.sql)
    SELECT r.rollout_id, min(f.spanrl_task) AS spanrl_task, min(f.key_task) AS key_task, min(f.purpose) AS purpose
    FROM (SELECT trace_id, span_id,  -- scalars before the join (a list costs more to carry through it)
                 coalesce(span_fact(v, 'spanrl.task_id'), resource_fact(rv, 'spanrl.task_id')) AS spanrl_task,
                 task_key AS key_task,
                 coalesce(span_fact(v, 'spanrl.rollout.purpose'), resource_fact(rv, 'spanrl.rollout.purpose')) AS purpose
          FROM _span_facts) f
    JOIN _span_tree r USING (trace_id, span_id)
    GROUP BY r.rollout_id
),
first_call AS (  -- the first call (tree order) that can hold a user message, found on lean rows; its prompt
                 -- read and parsed once per rollout
    SELECT f.rollout_id, CAST(c.input_messages AS JSON) AS messages
    FROM (SELECT rollout_id, arg_min({'t': trace_id, 's': span_id}, (order_path, span_id)) AS k
          FROM _rollout_calls
          WHERE contains(CAST(input_messages AS VARCHAR), '"user"')
          GROUP BY rollout_id) AS f
    JOIN llm_calls AS c ON c.trace_id = f.k.t AND c.span_id = f.k.s
),
last_user AS (
    SELECT rollout_id,
           list_filter(TRY_CAST(messages AS JSON[]), lambda m: m->>'role' = 'user')[-1]->'content' AS content
    FROM first_call
)
SELECT k.rollout_id,
       coalesce(k.spanrl_task, k.key_task,
                'msg:' || substr(md5(CAST(f.content AS VARCHAR)), 1, 16)) AS task_id,
       k.purpose
FROM keyed k LEFT JOIN last_user f USING (rollout_id)
