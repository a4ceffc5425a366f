-- name: llm_calls
-- One row per LLM inference, in OpenAI chat shape whatever the instrumentation (docs/lake.md).
-- Reads _llm_call_conventions: the registered conventions (LLM_CONVENTIONS in ingest/views.py, one
-- file llm_calls/<name>.sql each, plus [[conventions]] mappings from spanrl.toml) stacked with
-- UNION ALL BY NAME by views.register_conventions. Every row there is an LLM call, content or not
-- (docs/lake.md, "What counts as an LLM call"). A call seen twice (two instrumentations on one client, a client span
-- plus the serving engine's span) is ONE row: spans sharing gen_ai.response.id, or a call span whose
-- parent is a call span, form one group in a trace; calls of two instrumentations in different traces
-- (or unlinked in one) that are the same request are twins and one group too (docs/lake.md, "One call,
-- one row": same response id, or same process, disjoint instrumentation scopes, overlapping time and
-- equal content; identical parallel twins are paired in start order; a group joins only when every
-- pair of its members matches). The row's content comes from the member with messages, preferring the
-- client side and the richest convention, each missing field (tools, tokens, token ids) from the
-- others, but the tools from a server member where one recorded them (what the engine rendered); its
-- place (trace, span) from a member inside an agent tree over a trace-root call span.
-- merged_spans lists every other member span, so no merge is silent.
-- agent_name: the nearest span at or above the call that is an agent (invoke_agent /
-- gen_ai.agent.name, OpenInference AGENT, agent.name, traceloop.span.kind = agent, a LangGraph node);
-- a merged call outside any agent tree takes the one agent its members name.
WITH RECURSIVE conv AS MATERIALIZED (  -- every registered convention's rows (views.register_conventions);
                                     -- conv_row names a row, so its wide columns (the messages, the tools)
                                     -- stay here while the merging below runs on lean rows, and are read
                                     -- once per row that keeps them (at 600k spans: llm_calls 9.5 -> 8.3 CPU s)
    SELECT *, gen_random_uuid() AS conv_row FROM _llm_call_conventions
),
tree AS (  -- the agent each span names: a span fact (span_facts.sql), no attribute text read here
    SELECT s.trace_id, s.span_id, s.parent_span_id, s.agent
    FROM _span_facts AS s SEMI JOIN conv AS c ON c.trace_id = s.trace_id
),
walk(trace_id, call_span_id, span_id, depth) AS (  -- up from every member span (a call's place is one of them)
    SELECT DISTINCT trace_id, span_id, span_id, 0 FROM conv
    UNION ALL
    SELECT w.trace_id, w.call_span_id, t.parent_span_id, w.depth + 1
    FROM walk AS w JOIN tree AS t ON t.trace_id = w.trace_id AND t.span_id = w.span_id
    WHERE t.parent_span_id IS NOT NULL AND w.depth < 64
),
agents AS (  -- per member span, lean: joined before the wide columns are (not to the wide call rows at the end)
    SELECT w.trace_id, w.call_span_id, arg_min(t.agent, w.depth) AS agent_name
    FROM walk AS w JOIN tree AS t ON t.trace_id = w.trace_id AND t.span_id = w.span_id
    WHERE t.agent IS NOT NULL
    GROUP BY ALL
),
member_spans AS (  -- the member spans' own columns and call attributes: span facts (span_facts.sql), so no
                   -- attribute text (prompts and all) is read or parsed here (at 600k spans: -0.8 CPU s); the
                   -- attributes as scalars, not the facts' list, which a join carries at a higher cost
    SELECT trace_id, span_id, parent_span_id, start_ns, end_ns, service_name, kind, status_code, scope_name, res,
           coalesce(call_attr(x, 'gen_ai.provider.name'), call_attr(x, 'gen_ai.system'),
                    call_attr(x, 'llm.provider'), call_attr(x, 'llm.system')) AS a_provider,
           call_attr(x, 'gen_ai.request.model') AS a_request_model, call_attr(x, 'gen_ai.response.model') AS a_response_model,
           json_extract_string(try_cast(call_attr(x, 'gen_ai.response.finish_reasons') AS JSON), '$[0]') AS a_finish,
           coalesce(try_cast(call_attr(x, 'gen_ai.usage.input_tokens') AS BIGINT),
                    try_cast(call_attr(x, 'gen_ai.usage.prompt_tokens') AS BIGINT)) AS a_input_tokens,
           coalesce(try_cast(call_attr(x, 'gen_ai.usage.output_tokens') AS BIGINT),
                    try_cast(call_attr(x, 'gen_ai.usage.completion_tokens') AS BIGINT)) AS a_output_tokens,
           try_cast(call_attr(x, 'gen_ai.request.temperature') AS DOUBLE) AS a_temperature,
           call_attr(x, 'gen_ai.response.id') AS a_response_id,
           -- spanrl gateway --prompts: the stored prompt it put in, <agent>@<version> (versions count per agent)
           CASE WHEN call_attr(x, 'spanrl.prompt.version') IS NOT NULL
                THEN coalesce(call_attr(x, 'spanrl.prompt.agent') || '@', '') || call_attr(x, 'spanrl.prompt.version')
           END AS a_prompt_version,
           agent_name, has_tokens
    FROM (SELECT f.*, f.v AS x, ag.agent_name,
                 contains(f.attr_keys, 'token_ids') OR has_attr(f.attr_keys, 'spanrl.response_logprobs') AS has_tokens
          FROM _span_facts AS f SEMI JOIN conv AS c ON c.trace_id = f.trace_id AND c.span_id = f.span_id
          LEFT JOIN agents AS ag ON ag.trace_id = f.trace_id AND ag.call_span_id = f.span_id)
),
members AS (  -- token-id attributes read only for the member spans whose keys name them (none: no scan of spans)
    SELECT c.conv_row, c.trace_id, c.span_id, c.convention, c.priority, c.input_messages IS NULL AS no_messages,
           c.provider, c.model, c.finish_reason, c.input_tokens, c.output_tokens, c.temperature, c.response_id,
           s.* EXCLUDE (trace_id, span_id, has_tokens),  -- a mapping's own token ids: read from conv where kept
           NULL::JSON AS token_attrs
    FROM conv AS c JOIN member_spans AS s ON s.trace_id = c.trace_id AND s.span_id = c.span_id
    WHERE NOT s.has_tokens
    UNION ALL
    SELECT c.conv_row, c.trace_id, c.span_id, c.convention, c.priority, c.input_messages IS NULL AS no_messages,
           c.provider, c.model, c.finish_reason, c.input_tokens, c.output_tokens, c.temperature, c.response_id,
           s.* EXCLUDE (trace_id, span_id, has_tokens), t.attributes AS token_attrs
    FROM conv AS c JOIN member_spans AS s ON s.trace_id = c.trace_id AND s.span_id = c.span_id
    JOIN spans AS t ON t.trace_id = c.trace_id AND t.span_id = c.span_id
    WHERE s.has_tokens
),
member_values AS (
    SELECT *,
           coalesce(provider, a_provider) AS m_provider,
           coalesce(a_request_model, model, a_response_model) AS m_model,
           coalesce(finish_reason, a_finish) AS m_finish,
           coalesce(a_input_tokens, input_tokens) AS m_input_tokens,
           coalesce(a_output_tokens, output_tokens) AS m_output_tokens,
           coalesce(a_temperature, temperature) AS m_temperature,
           coalesce(response_id, a_response_id) AS member_rid
    FROM members
),
span_keys AS (  -- per span: its response id (any member's) and the key it groups under
    SELECT trace_id, span_id, rid, CASE WHEN rid IS NOT NULL THEN 'r:' || rid ELSE 's:' || span_id END AS own_key
    FROM (SELECT trace_id, span_id, max(member_rid) AS rid FROM member_values GROUP BY trace_id, span_id)
),
grouped AS MATERIALIZED (
    SELECT m.* EXCLUDE (a_provider, a_request_model, a_response_model, a_finish, a_input_tokens, a_output_tokens,
                        a_temperature, a_response_id, member_rid), k.rid,
           CASE WHEN p.span_id IS NOT NULL AND (p.rid IS NULL OR k.rid IS NULL OR p.rid = k.rid) THEN p.own_key
                ELSE k.own_key END AS call_key,
           {'no_messages': m.no_messages, 'server': m.kind = 'SERVER', 'priority': m.priority,
            'start': m.start_ns, 'span': m.span_id} AS rank_key
    FROM member_values AS m
    JOIN span_keys AS k ON k.trace_id = m.trace_id AND k.span_id = m.span_id
    LEFT JOIN span_keys AS p ON p.trace_id = m.trace_id AND p.span_id = m.parent_span_id
),
group_sizes AS (  -- members per call, on the lean key columns only
    SELECT trace_id, call_key, count(*) AS n FROM grouped GROUP BY trace_id, call_key
),
-- Twins: the same request recorded by two instrumentations whose spans the steps above cannot link
-- (LangChain runs the client off the OTel context: the client instrumentation's span is a root in a
-- trace of its own). Only services whose calls carry more than one instrumentation scope, and
-- response ids that more than one trace holds, are looked at: on single-instrumentation traffic
-- both sets are empty and nothing below costs more than those two lean aggregates.
twin_services AS (
    SELECT coalesce(service_name, '') AS svc FROM grouped GROUP BY 1 HAVING min(scope_name) <> max(scope_name)
),
shared_rids AS (
    SELECT rid FROM span_keys WHERE rid IS NOT NULL GROUP BY rid HAVING min(trace_id) <> max(trace_id)
),
cand AS MATERIALIZED (  -- per such call: its time, process, instrumentations and what identifies it
    SELECT g.trace_id, g.call_key, min(g.start_ns) AS s, max(g.end_ns) AS e, coalesce(any_value(g.service_name), '') AS svc,
           any_value(g.res) AS res, list_sort(list(DISTINCT g.scope_name)) AS scopes, any_value(g.rid) AS rid,
           any_value(g.m_model) AS model, any_value(g.m_input_tokens) AS it, any_value(g.m_output_tokens) AS ot,
           any_value(spanrl_output_fp(wc.output_message)) FILTER (WHERE wc.output_message IS NOT NULL) AS out_fp,
           any_value(spanrl_input_fp(wc.input_messages))
               FILTER (WHERE coalesce(json_array_length(wc.input_messages), 0) > 0) AS in_fp
    FROM grouped AS g
    JOIN conv AS wc ON wc.conv_row = g.conv_row
    SEMI JOIN (SELECT DISTINCT trace_id, call_key FROM grouped
               WHERE coalesce(service_name, '') IN (SELECT svc FROM twin_services)
                  OR rid IN (SELECT rid FROM shared_rids)) AS w ON w.trace_id = g.trace_id AND w.call_key = g.call_key
    GROUP BY g.trace_id, g.call_key
),
evidence AS (  -- per call, the keys a twin must share with it: its output, its usage (for a twin
               -- without content), its response id
    SELECT trace_id, call_key, s, e, 'o' || svc || chr(31) || res || chr(31) || out_fp AS k, 0 AS side FROM cand WHERE out_fp IS NOT NULL
    UNION ALL
    SELECT trace_id, call_key, s, e, 't' || svc || chr(31) || res || chr(31) || it || chr(31) || ot,
           CASE WHEN out_fp IS NULL AND in_fp IS NULL THEN 1 ELSE 2 END
    FROM cand WHERE it IS NOT NULL AND ot IS NOT NULL
    UNION ALL
    SELECT trace_id, call_key, s, e, 'r' || rid, 0 FROM cand WHERE rid IS NOT NULL
),
clustered AS (  -- runs of calls with one key whose time intervals overlap one after the other: twins
                -- overlap, so only calls of one run are paired (identical requests made all day long
                -- are not compared with each other)
    SELECT *, sum(starts) OVER (PARTITION BY k ORDER BY s, trace_id, call_key) AS run
    FROM (SELECT *, CASE WHEN s > max(e) OVER (PARTITION BY k ORDER BY s, trace_id, call_key
                                               ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) THEN 1 ELSE 0 END AS starts
          FROM evidence)
),
pairs AS (  -- candidate twins: a key and a run in common (usage only between a content-less call and one with content)
    SELECT DISTINCT a.trace_id AS ta, a.call_key AS ka, b.trace_id AS tb, b.call_key AS kb
    FROM clustered AS a JOIN clustered AS b ON a.k = b.k AND a.run = b.run
    WHERE (a.trace_id, a.call_key) < (b.trace_id, b.call_key) AND a.side + b.side IN (0, 3)
),
pair_a AS MATERIALIZED (  -- each candidate pair with its first call's facts. Joined apart (pairs to one
                          -- side here, to the other in edges) so that each join has its keys: in one
                          -- three-way join DuckDB joined cand to itself on the time overlap alone, a
                          -- nested loop over every pair of candidate calls (quadratic in a night's calls;
                          -- 1 of 5 CPU s of this statement at 60k spans of recorded frameworks' traffic)
    SELECT p.ta, p.ka, p.tb, p.kb, a.s, a.e, a.scopes, a.out_fp, a.in_fp, a.rid, a.svc, a.res, a.model, a.it, a.ot
    FROM pairs AS p JOIN cand AS a ON a.trace_id = p.ta AND a.call_key = p.ka
),
edges AS (  -- the candidate pairs that are twins: overlapping in time, disjoint instrumentation
            -- scopes (two attempts of one agent, each against its own fake server numbering ids from
            -- 1, share response ids but never a scope set), nothing present on both sides differs
    SELECT a.ta, a.ka, a.tb, a.kb
    FROM pair_a AS a
    JOIN cand AS b ON b.trace_id = a.tb AND b.call_key = a.kb
    WHERE a.s <= b.e AND b.s <= a.e
      AND NOT list_has_any(a.scopes, b.scopes)  -- one instrumentation records a request once
      AND (a.out_fp IS NULL OR b.out_fp IS NULL OR a.out_fp = b.out_fp)
      AND (a.in_fp IS NULL OR b.in_fp IS NULL OR a.in_fp = b.in_fp)
      AND (a.rid = b.rid  -- a client and the serving engine: maybe two processes naming the model apart
           OR (a.rid IS NULL OR b.rid IS NULL) AND a.svc = b.svc AND a.res = b.res  -- else one process
              AND (a.model IS NULL OR b.model IS NULL OR a.model = b.model)
              AND (a.it IS NULL OR b.it IS NULL OR a.it = b.it)
              AND (a.ot IS NULL OR b.ot IS NULL OR a.ot = b.ot))
),
links AS (  -- the twin pairs both ways
    SELECT ta AS t1, ka AS k1, tb AS t2, kb AS k2 FROM edges UNION ALL SELECT tb, kb, ta, ka FROM edges
),
reach(t, k, rt, rk) AS (  -- connected sets of twins (tiny: only calls with a twin)
    SELECT DISTINCT t1, k1, t1, k1 FROM links
    UNION
    SELECT r.t, r.k, l.t2, l.k2 FROM reach AS r JOIN links AS l ON l.t1 = r.rt AND l.k1 = r.rk
),
slots AS (  -- within a connected set, the n-th call of each instrumentation (by start) pairs with the n-th of the others
    SELECT r.t, r.k, chr(30) || r.comp || chr(31) || row_number() OVER (PARTITION BY r.comp, c.scopes ORDER BY c.s, r.t, r.k) AS gk
    FROM (SELECT t, k, min(rt || chr(31) || rk) AS comp FROM reach GROUP BY t, k) AS r
    JOIN cand AS c ON c.trace_id = r.t AND c.call_key = r.k
),
twins AS MATERIALIZED (  -- calls that join a cross-trace group: only groups in which every pair is a twin pair
    SELECT s.t AS trace_id, s.k AS call_key, s.gk
    FROM slots AS s
    JOIN (SELECT gk, count(*) AS n FROM slots GROUP BY gk HAVING count(*) > 1) AS sz USING (gk)
    JOIN (SELECT x.gk, count(*) AS m FROM edges AS e
          JOIN slots AS x ON x.t = e.ta AND x.k = e.ka JOIN slots AS y ON y.t = e.tb AND y.k = e.kb
          WHERE x.gk = y.gk GROUP BY x.gk) AS ed USING (gk)
    WHERE ed.m = sz.n * (sz.n - 1) / 2
),
single AS (  -- the common case, a call captured once: its member's row as it is (no aggregation of wide rows)
    SELECT g.trace_id, g.span_id, g.parent_span_id, g.start_ns, g.end_ns, g.service_name, g.agent_name, g.convention,
           g.m_provider AS provider, g.m_model AS model, wc.input_messages, wc.output_message, wc.tools,
           g.m_finish AS finish_reason, g.m_input_tokens AS input_tokens, g.m_output_tokens AS output_tokens,
           coalesce(wc.prompt_token_ids, attr_int_list(g.token_attrs, 'spanrl.prompt_token_ids', 'prompt_token_ids')) AS prompt_token_ids,
           coalesce(wc.response_token_ids, attr_int_list(g.token_attrs, 'spanrl.response_token_ids', 'response_token_ids')) AS response_token_ids,
           try_cast(json_or_text(json_extract(g.token_attrs, '$."spanrl.response_logprobs"')) AS FLOAT[]) AS response_logprobs,
           g.m_temperature AS temperature, g.rid AS response_id, g.status_code, g.a_prompt_version AS prompt_version,
           []::STRUCT(trace_id VARCHAR, span_id VARCHAR)[] AS merged_spans
    FROM grouped AS g JOIN group_sizes AS z ON z.trace_id = g.trace_id AND z.call_key = g.call_key
    JOIN conv AS wc ON wc.conv_row = g.conv_row
    WHERE z.n = 1 AND NOT EXISTS (SELECT 1 FROM twins AS w WHERE w.trace_id = g.trace_id AND w.call_key = g.call_key)
),
multi_members AS (  -- members of calls seen twice or more, with the group they form
    SELECT g.*, wc.input_messages, wc.output_message, wc.tools, wc.prompt_token_ids AS conv_prompt_ids,
           wc.response_token_ids AS conv_response_ids, coalesce(w.gk, g.trace_id || chr(31) || g.call_key) AS gkey,
           -- where the row sits: a twin inside a trace's tree over a twin whose spans are a trace of their
           -- own (one of them a root: several client instrumentations nest their spans under the first)
           {'lone': w.gk IS NOT NULL AND bool_or(coalesce(g.parent_span_id, '') = '') OVER (PARTITION BY g.trace_id, g.call_key),
            'rank': g.rank_key} AS place_key
    FROM grouped AS g
    JOIN group_sizes AS z ON z.trace_id = g.trace_id AND z.call_key = g.call_key
    JOIN conv AS wc ON wc.conv_row = g.conv_row
    LEFT JOIN twins AS w ON w.trace_id = g.trace_id AND w.call_key = g.call_key
    WHERE z.n > 1 OR w.gk IS NOT NULL
),
multi AS (  -- a call seen twice or more: the best-ranked member, filled in from the others
    SELECT * EXCLUDE (all_spans),
           list_sort(list_filter(all_spans, lambda m: NOT (m.trace_id = trace_id AND m.span_id = span_id))) AS merged_spans
    FROM (
    SELECT arg_min(trace_id, place_key) AS trace_id,
           arg_min(span_id, place_key) AS span_id,
           arg_min(parent_span_id, place_key) AS parent_span_id,
           arg_min(start_ns, place_key) AS start_ns,
           arg_min(end_ns, place_key) AS end_ns,
           arg_min(service_name, place_key) AS service_name,
           -- the agent of the span the row sits on, else the one agent every member that has one names
           -- (a gateway's or server's twin sits outside the agent's tree; its client twin knows the agent)
           coalesce(arg_min_null(agent_name, place_key),
                    CASE WHEN count(DISTINCT agent_name) = 1 THEN any_value(agent_name) END) AS agent_name,
           arg_min(convention, rank_key) AS convention,
           coalesce(arg_min(m_provider, rank_key), any_value(m_provider)) AS provider,
           coalesce(arg_min(m_model, rank_key), any_value(m_model)) AS model,
           arg_min(input_messages, rank_key) AS input_messages,
           coalesce(arg_min(output_message, rank_key), any_value(output_message)) AS output_message,
           -- the tools the engine rendered into the prompt (a server member's record, verbatim) before the
           -- clients': GenAI's gen_ai.tool.definitions has no place for a function's `strict`, so the
           -- client's copy would train on a tool list the model was not shown
           coalesce(arg_min(tools, rank_key) FILTER (WHERE rank_key.server), arg_min(tools, rank_key)) AS tools,
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
           arg_min(status_code, rank_key) AS status_code,
           max(a_prompt_version) AS prompt_version,  -- the gateway's member span has it
           list(DISTINCT {'trace_id': trace_id, 'span_id': span_id}) AS all_spans
    FROM multi_members
    GROUP BY gkey)
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
)
SELECT c.trace_id, c.span_id, c.parent_span_id, c.start_ns, c.end_ns, c.service_name, c.agent_name, c.convention,
       c.provider, c.model, coalesce(r.input_messages, c.input_messages) AS input_messages, c.output_message, c.tools,
       c.finish_reason, c.input_tokens, c.output_tokens, c.prompt_token_ids, c.response_token_ids, c.response_logprobs,
       c.temperature, c.response_id, c.status_code, coalesce(r.restored_messages, 0)::INTEGER AS restored_messages,
       c.merged_spans, c.prompt_version
FROM calls AS c
LEFT JOIN restored AS r ON r.trace_id = c.trace_id AND r.span_id = c.span_id
