-- llm_calls: one row per LLM inference, in OpenAI chat shape whatever the instrumentation (DESIGN §4).
-- Each convention is one file in llm_calls/ (registered as view llm_calls_<name>): they are stacked
-- here with UNION ALL BY NAME. A call seen twice (two instrumentations on one client, a client span
-- plus the serving engine's span) is ONE row: spans sharing gen_ai.response.id, or a call span whose
-- parent is a call span, form one group; the row comes from the member with messages, preferring
-- the client side and the richest convention; token ids come from whichever member has them.
-- agent_name: the nearest span at or above the call that is an agent (invoke_agent /
-- gen_ai.agent.name, OpenInference AGENT, agent.name, traceloop.span.kind = agent).
WITH RECURSIVE conv AS MATERIALIZED (
    SELECT * FROM llm_calls_genai_events
    UNION ALL BY NAME SELECT * FROM llm_calls_genai_latest
    UNION ALL BY NAME SELECT * FROM llm_calls_openinference
    UNION ALL BY NAME SELECT * FROM llm_calls_openllmetry
    UNION ALL BY NAME SELECT * FROM llm_calls_langsmith
    UNION ALL BY NAME SELECT * FROM llm_calls_vercel_ai
    UNION ALL BY NAME SELECT * FROM llm_calls_logfire
    UNION ALL BY NAME SELECT * FROM llm_calls_agent_lightning
),
members AS (
    SELECT c.trace_id, c.span_id, c.convention, c.priority, c.input_messages, c.output_message, c.tools,
           s.parent_span_id, s.start_ns, s.end_ns, s.service_name, s.kind, s.status_code, s.attributes AS a,
           coalesce(c.provider, json_extract_string(s.attributes, '$."gen_ai.provider.name"'),
                    json_extract_string(s.attributes, '$."gen_ai.system"'), json_extract_string(s.attributes, '$."llm.provider"'),
                    json_extract_string(s.attributes, '$."llm.system"')) AS m_provider,
           coalesce(json_extract_string(s.attributes, '$."gen_ai.request.model"'), c.model,
                    json_extract_string(s.attributes, '$."gen_ai.response.model"')) AS m_model,
           coalesce(c.finish_reason, json_extract_string(s.attributes, '$."gen_ai.response.finish_reasons"[0]')) AS m_finish,
           coalesce(try_cast(json_extract(s.attributes, '$."gen_ai.usage.input_tokens"') AS BIGINT),
                    try_cast(json_extract(s.attributes, '$."gen_ai.usage.prompt_tokens"') AS BIGINT), c.input_tokens) AS m_input_tokens,
           coalesce(try_cast(json_extract(s.attributes, '$."gen_ai.usage.output_tokens"') AS BIGINT),
                    try_cast(json_extract(s.attributes, '$."gen_ai.usage.completion_tokens"') AS BIGINT), c.output_tokens) AS m_output_tokens,
           coalesce(try_cast(json_extract(s.attributes, '$."gen_ai.request.temperature"') AS DOUBLE), c.temperature) AS m_temperature,
           max(coalesce(c.response_id, json_extract_string(s.attributes, '$."gen_ai.response.id"')))
               OVER (PARTITION BY c.trace_id, c.span_id) AS rid
    FROM conv AS c JOIN spans AS s ON s.trace_id = c.trace_id AND s.span_id = c.span_id
),
span_keys AS (
    SELECT DISTINCT trace_id, span_id, rid, CASE WHEN rid IS NOT NULL THEN 'r:' || rid ELSE 's:' || span_id END AS own_key
    FROM members
),
grouped AS (
    SELECT m.*,
           CASE WHEN p.span_id IS NOT NULL AND (p.rid IS NULL OR m.rid IS NULL OR p.rid = m.rid) THEN p.own_key
                ELSE k.own_key END AS call_key
    FROM members AS m
    JOIN span_keys AS k ON k.trace_id = m.trace_id AND k.span_id = m.span_id
    LEFT JOIN span_keys AS p ON p.trace_id = m.trace_id AND p.span_id = m.parent_span_id
),
ranked AS (
    SELECT *,
           row_number() OVER w_order AS rn,
           any_value(attr_int_list(a, 'spanrl.prompt_token_ids', 'prompt_token_ids')) OVER w AS g_prompt_ids,
           any_value(attr_int_list(a, 'spanrl.response_token_ids', 'response_token_ids')) OVER w AS g_response_ids,
           any_value(try_cast(json_or_text(json_extract(a, '$."spanrl.response_logprobs"')) AS FLOAT[])) OVER w AS g_logprobs,
           any_value(input_messages) OVER w AS g_inputs,
           any_value(output_message) OVER w AS g_output,
           any_value(tools) OVER w AS g_tools,
           any_value(rid) OVER w AS g_rid,
           any_value(m_provider) OVER w AS g_provider,
           any_value(m_model) OVER w AS g_model,
           any_value(m_finish) OVER w AS g_finish,
           any_value(m_input_tokens) OVER w AS g_input_tokens,
           any_value(m_output_tokens) OVER w AS g_output_tokens,
           any_value(m_temperature) OVER w AS g_temperature
    FROM grouped
    WINDOW w AS (PARTITION BY trace_id, call_key),
           w_order AS (PARTITION BY trace_id, call_key
                       ORDER BY input_messages IS NULL, kind = 'SERVER', priority, start_ns, span_id)
),
calls AS MATERIALIZED (SELECT * FROM ranked WHERE rn = 1),
tree AS (
    SELECT s.trace_id, s.span_id, s.parent_span_id,
           coalesce(json_extract_string(s.attributes, '$."gen_ai.agent.name"'),
                    json_extract_string(s.attributes, '$."agent.name"'),
                    CASE WHEN json_extract_string(s.attributes, '$."traceloop.span.kind"') = 'agent'
                         THEN json_extract_string(s.attributes, '$."traceloop.entity.name"') END,
                    nullif(regexp_extract(s."name", '^invoke_agent (.+)$', 1), ''),
                    CASE WHEN json_extract_string(s.attributes, '$."openinference.span.kind"') = 'AGENT'
                              OR json_extract_string(s.attributes, '$."gen_ai.operation.name"') = 'invoke_agent'
                         THEN s."name" END) AS agent
    FROM spans AS s SEMI JOIN calls AS c ON c.trace_id = s.trace_id
),
walk(trace_id, call_span_id, span_id, depth) AS (
    SELECT trace_id, span_id, span_id, 0 FROM calls
    UNION ALL
    SELECT w.trace_id, w.call_span_id, t.parent_span_id, w.depth + 1
    FROM walk AS w JOIN tree AS t ON t.trace_id = w.trace_id AND t.span_id = w.span_id
    WHERE t.parent_span_id IS NOT NULL AND w.depth < 64
),
agents AS (
    SELECT w.trace_id, w.call_span_id, arg_min(t.agent, w.depth) AS agent_name
    FROM walk AS w JOIN tree AS t ON t.trace_id = w.trace_id AND t.span_id = w.span_id
    WHERE t.agent IS NOT NULL
    GROUP BY ALL
)
SELECT c.trace_id, c.span_id, c.parent_span_id, c.start_ns, c.end_ns, c.service_name, ag.agent_name, c.convention,
       coalesce(c.m_provider, c.g_provider) AS provider,
       coalesce(c.m_model, c.g_model) AS model,
       coalesce(c.input_messages, c.g_inputs) AS input_messages,
       coalesce(c.output_message, c.g_output) AS output_message,
       coalesce(c.tools, c.g_tools) AS tools,
       coalesce(c.m_finish, c.g_finish) AS finish_reason,
       coalesce(c.m_input_tokens, c.g_input_tokens) AS input_tokens,
       coalesce(c.m_output_tokens, c.g_output_tokens) AS output_tokens,
       c.g_prompt_ids AS prompt_token_ids,
       c.g_response_ids AS response_token_ids,
       c.g_logprobs AS response_logprobs,
       coalesce(c.m_temperature, c.g_temperature) AS temperature,
       coalesce(c.rid, c.g_rid) AS response_id,
       c.status_code
FROM calls AS c
LEFT JOIN agents AS ag ON ag.trace_id = c.trace_id AND ag.call_span_id = c.span_id
