-- name: rollout_previews($ended_ns, $rollout_ids, $started_ns)
-- For the rollouts of one Rollouts page: the last user message of the first LLM call (the request, after
-- any worked examples the agent keeps in its conversation; the column keeps its name) and the final
-- answer (the last call's response text, else the tool it called), whitespace collapsed and cut to
-- 120 characters, so the list reads as questions and outcomes instead of ids. The page's time span
-- ($started_ns..$ended_ns) lets the scan skip other times' row groups (as rollout_calls.sql).
WITH traces AS (
    SELECT rollout_id, unnest(trace_ids) AS trace_id
    FROM rollouts WHERE rollout_id IN (SELECT unnest($rollout_ids))
),
ends AS (
    SELECT t.rollout_id, arg_min(c.input_messages, (c.start_ns, c.span_id)) AS prompt,
           arg_max(c.output_message, (c.start_ns, c.span_id)) AS answer
    FROM llm_calls c JOIN traces t USING (trace_id)
    WHERE c.start_ns BETWEEN $started_ns AND $ended_ns
    GROUP BY t.rollout_id
),
texts AS (
    SELECT rollout_id,
           regexp_replace(list_filter(CAST(prompt -> '$[*]' AS JSON[]), lambda m: (m ->> 'role') = 'user')[-1] ->> 'content',
                          '\s+', ' ', 'g') AS first_user,
           regexp_replace(coalesce(answer ->> 'content',
                                   '(calls ' || (answer -> 'tool_calls' -> 0 -> 'function' ->> 'name') || ')'),
                          '\s+', ' ', 'g') AS final_answer
    FROM ends
)
SELECT rollout_id,
       CASE WHEN length(first_user) > 120 THEN left(first_user, 119) || '…' ELSE first_user END AS first_user,
       CASE WHEN length(final_answer) > 120 THEN left(final_answer, 119) || '…' ELSE final_answer END AS final_answer
FROM texts
