-- name: agent_rollouts($agent, $sha)
-- The rewarded, complete training rollouts of one agent (spanrl prompts optimize): a rollout is the agent's when
-- one of its LLM calls names it (agent_name or model = $agent) or sent the system prompt whose sha256
-- is $sha. Per rollout: its task, reward, purpose, the prompt version the gateway applied, the first
-- call's system prompt and its last user message (the task: worked examples an agent keeps in its
-- conversation come before it; as text, a list of content parts joined), the first call's message
-- count, and the last call's prompt and answer (JSON text: the rollout's own tool calls and results are
-- the messages of that prompt past the first call's).
WITH picked AS (
    SELECT rollout_id, task_id, final_reward, purpose, prompt_version, unnest(trace_ids) AS trace_id
    FROM rollouts
    WHERE complete AND final_reward IS NOT NULL
      -- never a held-out run (`spanrl eval`, `rollout --purpose eval`, the optimizer's own scoring runs):
      -- a held-out task's answer shown as a demonstration or to the critic would leak into the prompt
      -- that is then evaluated on it
      AND purpose IS DISTINCT FROM 'eval'
),
calls AS (
    SELECT p.rollout_id, p.task_id, p.final_reward, p.purpose, p.prompt_version, c.start_ns, c.span_id,
           c.agent_name, c.model, CAST(c.input_messages AS VARCHAR) AS prompt, CAST(c.output_message AS VARCHAR) AS answer,
           list_filter(TRY_CAST(CAST(c.input_messages AS JSON) AS JSON[]),
                       lambda m: m->>'role' IN ('system', 'developer'))[1]->'content' AS sys_content,
           list_filter(TRY_CAST(CAST(c.input_messages AS JSON) AS JSON[]), lambda m: m->>'role' = 'user')[-1]->'content'
               AS user_content,
           coalesce(json_array_length(CAST(c.input_messages AS JSON)), 0) AS n_messages
    FROM picked AS p JOIN llm_calls AS c USING (trace_id)
),
texts AS (
    SELECT *,
           CASE json_type(sys_content) WHEN 'VARCHAR' THEN sys_content->>'$'
               WHEN 'ARRAY' THEN array_to_string(json_extract_string(sys_content, '$[*].text'), '') END AS system_text,
           CASE json_type(user_content) WHEN 'VARCHAR' THEN user_content->>'$'
               WHEN 'ARRAY' THEN array_to_string(json_extract_string(user_content, '$[*].text'), chr(10)) END AS user_text
    FROM calls
)
SELECT rollout_id, any_value(task_id) AS task_id, any_value(final_reward) AS reward, any_value(purpose) AS purpose,
       any_value(prompt_version) AS prompt_version,
       arg_min(system_text, (start_ns, span_id)) AS system_prompt,
       arg_min(user_text, (start_ns, span_id)) AS input,
       arg_min(n_messages, (start_ns, span_id)) AS first_prompt_messages,
       arg_max(prompt, (start_ns, span_id)) AS last_prompt,
       arg_max(answer, (start_ns, span_id)) AS last_answer,
       min(start_ns) AS started_ns
FROM texts
GROUP BY rollout_id
HAVING bool_or(agent_name = $agent OR model = $agent OR sha256(coalesce(system_text, '')) = coalesce($sha, ''))
ORDER BY started_ns, rollout_id
