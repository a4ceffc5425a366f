"""_rollout_tasks (transitions/sql/rollouts/_rollout_tasks.sql): its second read of the task keys from the span
facts, joined to the span tree: what fusing the keys into the span tree's pass could save."""

BEFORE = "TEMP TABLE _rollout_tasks AS"
VARIANTS = {
    "the statement's query": lambda q: "SELECT count(*), count(task_id) FROM (" + q + ")",
    "task keys from the facts, joined to the tree": """
        SELECT count(*), count(t) FROM (
            SELECT r.rollout_id, min(coalesce(span_fact(f.v, 'spanrl.task_id'), resource_fact(f.rv, 'spanrl.task_id'))) AS t,
                   min(coalesce(span_fact(f.v, 'spanrl.rollout.purpose'), resource_fact(f.rv, 'spanrl.rollout.purpose'))) AS p
            FROM _span_facts f JOIN _span_tree r USING (trace_id, span_id) GROUP BY r.rollout_id)""",
    "grouping the tree alone": "SELECT count(*) FROM (SELECT rollout_id, count(*) FROM _span_tree GROUP BY rollout_id)",
}
