-- name: transition_base
-- One row per LLM call that becomes a transition (docs/transitions.md MDP): calls of complete rollouts that
-- have a response, kept by --agent (spanrl_agent_regex, a search, like Agent Lightning's agent_match)
-- and by --missing-reward (drop: rollouts without reward are left out); evaluation rollouts (purpose 'eval',
-- from `spanrl eval`) are not training data unless --include-eval. step counts the kept calls
-- 0..n_steps-1 in span-tree order; step_reward sums the AIR rewards aimed at the call.
-- Returns and advantages are added afterwards by advantages.sql (a separate, re-runnable step). Rows come
-- unordered: the segment writer sorts them by (rollout_id, step), the digests by step (a sort here cost
-- 0.3 CPU s at 600k spans for nothing).
-- reads: rollouts, llm_calls, _rollout_calls, _rollout_status, _air_hits
-- creates: _transition_base
WITH kept AS (  -- the calls that become rows, on lean columns: the step numbering below sorts ids and tree
                -- paths, and each row's prompt and response are read once, at the end (from llm_calls)
    SELECT c.rollout_id, c.trace_id, c.span_id, c.order_path, c.start_ns, c.agent_name,
           r.task_id, r.final_reward, st.source_files
    FROM _rollout_calls c
    JOIN rollouts r USING (rollout_id)
    JOIN _rollout_status st USING (rollout_id)
    WHERE r.complete
      AND c.output_message IS NOT NULL
      AND (getvariable('spanrl_agent_regex') IS NULL
           OR regexp_matches(coalesce(c.agent_name, ''), getvariable('spanrl_agent_regex')))
      AND (r.final_reward IS NOT NULL OR coalesce(getvariable('spanrl_missing_reward'), 'drop') = 'zero')
      AND (r.purpose IS DISTINCT FROM 'eval' OR coalesce(getvariable('spanrl_include_eval'), false))
),
air AS (
    SELECT rollout_id, target_span_id, list_sum(list(value ORDER BY value)) AS step_reward  -- fixed order: same floats every run
    FROM _air_hits WHERE target_span_id IS NOT NULL GROUP BY rollout_id, target_span_id
),
numbered AS (
    SELECT k.*,
           CAST(row_number() OVER (PARTITION BY k.rollout_id ORDER BY k.order_path, k.start_ns, k.span_id) - 1
                AS INTEGER) AS step,
           CAST(count(*) OVER (PARTITION BY k.rollout_id) AS INTEGER) AS n_steps
    FROM kept k
)
SELECT
    CAST(NULL AS VARCHAR) AS snapshot_id,
    n.rollout_id, n.task_id, n.trace_id, n.span_id, n.step, n.n_steps, n.agent_name, w.model,
    CAST(w.input_messages AS VARCHAR) AS prompt_messages,
    CAST(w.tools AS VARCHAR) AS tools,
    CAST(w.output_message AS VARCHAR) AS response_message,
    CAST(w.finish_reason AS VARCHAR) AS finish_reason,
    TRY_CAST(w.prompt_token_ids AS INTEGER[]) AS prompt_token_ids,
    TRY_CAST(w.response_token_ids AS INTEGER[]) AS response_token_ids,
    TRY_CAST(w.response_logprobs AS FLOAT[]) AS response_logprobs,
    CASE WHEN w.response_token_ids IS NOT NULL AND len(TRY_CAST(w.response_token_ids AS INTEGER[])) > 0
         THEN 'engine' ELSE 'text' END AS token_source,
    CAST(w.temperature AS DOUBLE) AS temperature,
    CAST(n.final_reward AS DOUBLE) AS final_reward,
    coalesce(a.step_reward, 0.0) AS step_reward,
    CAST(NULL AS DOUBLE) AS "return",
    CAST(NULL AS DOUBLE) AS advantage,
    n.step = n.n_steps - 1 AS is_last,
    n.source_files
FROM numbered n
JOIN llm_calls w ON w.trace_id = n.trace_id AND w.span_id = n.span_id
LEFT JOIN air a ON a.rollout_id = n.rollout_id AND a.target_span_id = n.span_id
