-- name: llm_calls
-- One row per LLM inference, in OpenAI chat shape whatever the instrumentation (DESIGN §4).
-- Reads _llm_call_conventions: the registered conventions (LLM_CONVENTIONS in ingest/views.py, one
-- file llm_calls/<name>.sql each, plus [[conventions]] mappings from spanrl.toml) stacked with
-- UNION ALL BY NAME by views.register_conventions. Every row there is an LLM call, content or not
-- (docs/lake.md, "What counts as an LLM call"). A call seen twice (two instrumentations on one client, a client span
-- plus the serving engine's span) is ONE row: spans sharing gen_ai.response.id, or a call span whose
-- parent is a call span, form one group; the row comes from the member with messages, preferring
-- the client side and the richest convention; token ids from the best-ranked member that has them.
-- agent_name: the nearest span at or above the call that is an agent (invoke_agent /
-- gen_ai.agent.name, OpenInference AGENT, agent.name, traceloop.span.kind = agent, a LangGraph node).
WITH RECURSIVE conv AS MATERIALIZED (  -- every registered convention's rows (views.register_conventions)
    SELECT * FROM _llm_call_conventions
),
members AS (
    SELECT c.trace_id, c.span_id, c.convention, c.priority, c.input_messages, c.output_message, c.tools,
           c.provider, c.model, c.finish_reason, c.input_tokens, c.output_tokens, c.temperature, c.response_id,
           c.prompt_token_ids AS conv_prompt_ids, c.response_token_ids AS conv_response_ids,
           s.parent_span_id, s.start_ns, s.end_ns, s.service_name, s.kind, s.status_code, s.attributes AS a,
           attr_values(s.attributes, call_attribute_keys()) AS x  -- one parse; read by name (call_attr)
    FROM conv AS c JOIN spans AS s ON s.trace_id = c.trace_id AND s.span_id = c.span_id
),
member_values AS (
    SELECT *,
           coalesce(provider, call_attr(x, 'gen_ai.provider.name'), call_attr(x, 'gen_ai.system'),
                    call_attr(x, 'llm.provider'), call_attr(x, 'llm.system')) AS m_provider,
           coalesce(call_attr(x, 'gen_ai.request.model'), model, call_attr(x, 'gen_ai.response.model')) AS m_model,
           coalesce(finish_reason, json_extract_string(try_cast(call_attr(x, 'gen_ai.response.finish_reasons') AS JSON), '$[0]')) AS m_finish,
           coalesce(try_cast(call_attr(x, 'gen_ai.usage.input_tokens') AS BIGINT),
                    try_cast(call_attr(x, 'gen_ai.usage.prompt_tokens') AS BIGINT), input_tokens) AS m_input_tokens,
           coalesce(try_cast(call_attr(x, 'gen_ai.usage.output_tokens') AS BIGINT),
                    try_cast(call_attr(x, 'gen_ai.usage.completion_tokens') AS BIGINT), output_tokens) AS m_output_tokens,
           coalesce(try_cast(call_attr(x, 'gen_ai.request.temperature') AS DOUBLE), temperature) AS m_temperature,
           coalesce(response_id, call_attr(x, 'gen_ai.response.id')) AS member_rid,
           CASE WHEN contains(a, 'token_ids') OR contains(a, 'spanrl.response_logprobs') THEN a END AS token_attrs
    FROM members
),
span_keys AS (  -- per span: its response id (any member's) and the key it groups under
    SELECT trace_id, span_id, rid, CASE WHEN rid IS NOT NULL THEN 'r:' || rid ELSE 's:' || span_id END AS own_key
    FROM (SELECT trace_id, span_id, max(member_rid) AS rid FROM member_values GROUP BY trace_id, span_id)
),
grouped AS MATERIALIZED (
    SELECT m.* EXCLUDE (a, x, member_rid), k.rid,
           CASE WHEN p.span_id IS NOT NULL AND (p.rid IS NULL OR k.rid IS NULL OR p.rid = k.rid) THEN p.own_key
                ELSE k.own_key END AS call_key,
           {'no_messages': m.input_messages IS NULL, 'server': m.kind = 'SERVER', 'priority': m.priority,
            'start': m.start_ns, 'span': m.span_id} AS rank_key
    FROM member_values AS m
    JOIN span_keys AS k ON k.trace_id = m.trace_id AND k.span_id = m.span_id
    LEFT JOIN span_keys AS p ON p.trace_id = m.trace_id AND p.span_id = m.parent_span_id
),
group_sizes AS (  -- members per call, on the lean key columns only
    SELECT trace_id, call_key, count(*) AS n FROM grouped GROUP BY trace_id, call_key
),
single AS (  -- the common case, a call captured once: its member's row as it is (no aggregation of wide rows)
    SELECT g.trace_id, g.span_id, g.parent_span_id, g.start_ns, g.end_ns, g.service_name, g.convention,
           g.m_provider AS provider, g.m_model AS model, g.input_messages, g.output_message, g.tools,
           g.m_finish AS finish_reason, g.m_input_tokens AS input_tokens, g.m_output_tokens AS output_tokens,
           coalesce(g.conv_prompt_ids, attr_int_list(g.token_attrs, 'spanrl.prompt_token_ids', 'prompt_token_ids')) AS prompt_token_ids,
           coalesce(g.conv_response_ids, attr_int_list(g.token_attrs, 'spanrl.response_token_ids', 'response_token_ids')) AS response_token_ids,
           try_cast(json_or_text(json_extract(g.token_attrs, '$."spanrl.response_logprobs"')) AS FLOAT[]) AS response_logprobs,
           g.m_temperature AS temperature, g.rid AS response_id, g.status_code
    FROM grouped AS g JOIN group_sizes AS z ON z.trace_id = g.trace_id AND z.call_key = g.call_key
    WHERE z.n = 1
),
multi AS (  -- a call seen twice or more: the best-ranked member, filled in from the others
    SELECT trace_id,
           arg_min(span_id, rank_key) AS span_id,
           arg_min(parent_span_id, rank_key) AS parent_span_id,
           arg_min(start_ns, rank_key) AS start_ns,
           arg_min(end_ns, rank_key) AS end_ns,
           arg_min(service_name, rank_key) AS service_name,
           arg_min(convention, rank_key) AS convention,
           coalesce(arg_min(m_provider, rank_key), any_value(m_provider)) AS provider,
           coalesce(arg_min(m_model, rank_key), any_value(m_model)) AS model,
           arg_min(input_messages, rank_key) AS input_messages,
           coalesce(arg_min(output_message, rank_key), any_value(output_message)) AS output_message,
           coalesce(arg_min(tools, rank_key), any_value(tools)) AS tools,
           coalesce(arg_min(m_finish, rank_key), any_value(m_finish)) AS finish_reason,
           coalesce(arg_min(m_input_tokens, rank_key), any_value(m_input_tokens)) AS input_tokens,
           coalesce(arg_min(m_output_tokens, rank_key), any_value(m_output_tokens)) AS output_tokens,
           -- token ids: the best-ranked member that has them (the first of two spans sharing a response id)
           -- (a [[conventions]] mapping's own token ids first, then the token-id attributes)
           coalesce(arg_min(conv_prompt_ids, rank_key) FILTER (WHERE conv_prompt_ids IS NOT NULL),
                    arg_min(attr_int_list(token_attrs, 'spanrl.prompt_token_ids', 'prompt_token_ids'), rank_key)
                        FILTER (WHERE attr_int_list(token_attrs, 'spanrl.prompt_token_ids', 'prompt_token_ids') IS NOT NULL)) AS prompt_token_ids,
           coalesce(arg_min(conv_response_ids, rank_key) FILTER (WHERE conv_response_ids IS NOT NULL),
                    arg_min(attr_int_list(token_attrs, 'spanrl.response_token_ids', 'response_token_ids'), rank_key)
                        FILTER (WHERE attr_int_list(token_attrs, 'spanrl.response_token_ids', 'response_token_ids') IS NOT NULL)) AS response_token_ids,
           arg_min(try_cast(json_or_text(json_extract(token_attrs, '$."spanrl.response_logprobs"')) AS FLOAT[]), rank_key)
               FILTER (WHERE json_extract(token_attrs, '$."spanrl.response_logprobs"') IS NOT NULL) AS response_logprobs,
           -- the engine's temperature when a member sampled (token ids): what its log-probs were taken at
           -- (`spanrl serve --temperature` overrides the client's request)
           coalesce(any_value(m_temperature) FILTER (WHERE token_attrs IS NOT NULL),
                    arg_min(m_temperature, rank_key), any_value(m_temperature)) AS temperature,
           any_value(rid) AS response_id,
           arg_min(status_code, rank_key) AS status_code
    FROM grouped AS g
    WHERE EXISTS (SELECT 1 FROM group_sizes AS z WHERE z.trace_id = g.trace_id AND z.call_key = g.call_key AND z.n > 1)
    GROUP BY trace_id, call_key
),
calls AS MATERIALIZED (  -- one row per call
    SELECT * FROM single UNION ALL BY NAME SELECT * FROM multi
),
-- Restored prompts. Some instrumentations (OpenLIT 1.45) record a prompt's tool results but drop the
-- assistant message that made those tool calls. Such a tool result is restored from the call of the
-- same trace that made it: the latest earlier call whose response lists that tool-call id; its
-- response goes back in front of the first tool result it answers. restored_messages counts them (and
-- stage 2 reports them per rollout), so the repair is never silent.
tool_prompts AS (  -- calls whose prompt holds a tool result: its messages and the tool-call ids it lists
    SELECT trace_id, span_id, start_ns, msgs,
           flatten(list_transform(msgs, lambda m: coalesce(json_extract_string(m, '$.tool_calls[*].id'), []))) AS listed
    FROM (SELECT trace_id, span_id, start_ns, json_extract(input_messages, '$[*]') AS msgs
          FROM calls WHERE contains(CAST(input_messages AS VARCHAR), '"tool_call_id"'))
),
orphans AS (  -- tool results whose tool call is not in the prompt
    SELECT trace_id, span_id, start_ns, msgs, orphan_ids
    FROM (SELECT *, list_filter(list_transform(msgs, lambda m: CASE WHEN json_extract_string(m, '$.role') = 'tool'
                                                                   THEN json_extract_string(m, '$.tool_call_id') END),
                                lambda x: x IS NOT NULL AND NOT list_contains(listed, x)) AS orphan_ids
          FROM tool_prompts)
    WHERE len(orphan_ids) > 0
),
restore_from AS (  -- per orphan tool-call id: the response that made the call
    SELECT o.trace_id, o.span_id, o.oid, arg_max(c.span_id, c.start_ns) AS src, arg_max(c.output_message, c.start_ns) AS msg
    FROM (SELECT trace_id, span_id, start_ns, unnest(orphan_ids) AS oid FROM orphans) AS o
    JOIN calls AS c ON c.trace_id = o.trace_id AND c.start_ns < o.start_ns
        AND list_contains(json_extract_string(c.output_message, '$.tool_calls[*].id'), o.oid)
    GROUP BY ALL
),
restored AS (
    SELECT trace_id, span_id, to_json(flatten(list_transform(range(1, len(msgs) + 1), lambda i: CASE
               WHEN restore_here(msgs, src_of, i) THEN [src_of[json_extract_string(msgs[i], '$.tool_call_id')].msg, msgs[i]]
               ELSE [msgs[i]] END))) AS input_messages,
           len(list_filter(range(1, len(msgs) + 1), lambda i: restore_here(msgs, src_of, i))) AS restored_messages
    FROM (SELECT o.trace_id, o.span_id, o.msgs, map_from_entries(list({'key': r.oid, 'value': {'src': r.src, 'msg': r.msg}}))
                     AS src_of
          FROM orphans AS o JOIN restore_from AS r ON r.trace_id = o.trace_id AND r.span_id = o.span_id
          GROUP BY ALL)
),
tree AS (
    SELECT trace_id, span_id, parent_span_id, spanrl_span_agent("name", attributes, x) AS agent
    FROM (SELECT s.trace_id, s.span_id, s.parent_span_id, s."name", s.attributes,
                 spanrl_agent_attrs(s.attributes) AS x  -- one parse of the attributes per span
          FROM spans AS s SEMI JOIN calls AS c ON c.trace_id = s.trace_id)
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
       c.provider, c.model, coalesce(r.input_messages, c.input_messages) AS input_messages, c.output_message, c.tools,
       c.finish_reason, c.input_tokens, c.output_tokens, c.prompt_token_ids, c.response_token_ids, c.response_logprobs,
       c.temperature, c.response_id, c.status_code, coalesce(r.restored_messages, 0)::INTEGER AS restored_messages
FROM calls AS c
LEFT JOIN agents AS ag ON ag.trace_id = c.trace_id AND ag.call_span_id = c.span_id
LEFT JOIN restored AS r ON r.trace_id = c.trace_id AND r.span_id = c.span_id
