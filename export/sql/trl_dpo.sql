-- name: trl_dpo($reward_column)
-- TRL DPO, conversational preference pairs. Two responses pair only when they answer the identical
-- prompt: same task_id, same step, byte-identical prompt_messages and tools (in multi-call rollouts
-- the prompts usually diverge after the first call, e.g. by tool-call ids). Within one prompt the
-- rows are ranked by reward (ties broken by rollout_id, span_id) and the k-th best pairs with the k-th
-- worst while k <= n/2, when its reward is strictly higher and the two responses differ; so each row
-- is used at most once and the higher-return rollout's response is always `chosen`. Every row in no
-- pair comes back once with its drop_reason (the export counts them).
-- Parameters: $reward_column.
WITH base AS (
    SELECT *, md5(coalesce(task_id, '') || chr(0) || step || chr(0) || prompt_messages || chr(0)
                  || coalesce(tools, '')) AS prompt_key
    FROM export_base($reward_column)
    WHERE base_reason IS NULL AND reward IS NOT NULL
),
ranked AS (
    SELECT *,
           row_number() OVER (PARTITION BY prompt_key ORDER BY reward DESC, rollout_id, span_id) AS best_rank,
           row_number() OVER (PARTITION BY prompt_key ORDER BY reward ASC, rollout_id DESC, span_id DESC)
               AS worst_rank,
           count(*) OVER (PARTITION BY prompt_key) AS n_responses
    FROM base
),
pairs AS (
    SELECT c.prompt_key, c.rollout_id AS chosen_rollout_id, r.rollout_id AS rejected_rollout_id,
           c.step AS c_step, r.step AS r_step
    FROM ranked c JOIN ranked r ON c.prompt_key = r.prompt_key AND c.best_rank = r.worst_rank
    WHERE c.best_rank <= c.n_responses // 2
      AND c.reward > r.reward
      AND c.response_message <> r.response_message
),
paired AS (
    SELECT
        NULL::VARCHAR AS drop_reason,
        export_trl_messages(c.prompt_messages) AS prompt,
        [export_trl_message(c.response_message, 'assistant')] AS chosen,
        [export_trl_message(r.response_message, 'assistant')] AS rejected,
        c.tools, c.task_id, c.step, c.agent_name,
        c.rollout_id AS chosen_rollout_id, r.rollout_id AS rejected_rollout_id,
        c.reward AS chosen_reward, r.reward AS rejected_reward
    FROM pairs p
    JOIN ranked c ON c.prompt_key = p.prompt_key AND c.rollout_id = p.chosen_rollout_id AND c.step = p.c_step
    JOIN ranked r ON r.prompt_key = p.prompt_key AND r.rollout_id = p.rejected_rollout_id AND r.step = p.r_step
),
unpaired AS (
    SELECT CASE WHEN t.base_reason IS NOT NULL THEN t.base_reason
                WHEN t.reward IS NULL THEN 'no reward'
                WHEN k.n_responses = 1 THEN 'could not be paired: no other response to the same prompt'
                ELSE 'could not be paired: no other response to the same prompt with a different reward and text left'
           END AS drop_reason,
           t.task_id, t.step, t.agent_name
    FROM export_base($reward_column) t
    LEFT JOIN ranked k ON k.rollout_id = t.rollout_id AND k.step = t.step
    WHERE NOT EXISTS (SELECT 1 FROM pairs p WHERE p.chosen_rollout_id = t.rollout_id AND p.c_step = t.step)
      AND NOT EXISTS (SELECT 1 FROM pairs p WHERE p.rejected_rollout_id = t.rollout_id AND p.r_step = t.step)
)
SELECT * FROM paired
UNION ALL BY NAME
SELECT * FROM unpaired
ORDER BY task_id, step, chosen_rollout_id, rejected_rollout_id
