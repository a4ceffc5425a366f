-- name: llm_calls_payload
-- LLM spans that carry the whole request / response BODY as JSON instead of
-- flattened messages, for the instrumentations no other convention file reads:
--   openinference  OpenInference LLM spans with only input.value / output.value (e.g. with
--                  OPENINFERENCE_HIDE_INPUT_MESSAGES, or instrumentations that write no llm.input_messages)
--   langfuse       Langfuse OTel SDK v3 generations: langfuse.observation.{type, input, output,
--                  model.name, model.parameters, usage_details}
--   mlflow         MLflow tracing: mlflow.spanType CHAT_MODEL | LLM, mlflow.spanInputs / spanOutputs,
--                  mlflow.chat.messages (2.x: the standardised conversation, preferred when present),
--                  mlflow.chat.tools, mlflow.chat.tokenUsage, mlflow.llm.model/provider when present (values
--                  JSON-encoded)
--   google_adk     Google ADK call_llm spans: gcp.vertex.agent.llm_request / llm_response (Gemini
--                  contents / parts, config.system_instruction, function_declarations)
--   pydantic_ai    pydantic-ai instrumentation version 1: the `events` attribute (GenAI <= 1.36
--                  event dicts with event.name; gen_ai.choice = output)
-- Bodies may be OpenAI chat or Responses API, Anthropic Messages or Gemini (snake_case or camelCase):
-- each body is parsed once (all paths in one json_extract), its messages are unnested to one row
-- each, turned into chat messages (block_* / body_* macros in llm_macros.sql) and listed again. A
-- span some other convention gives messages for is skipped by a substring test on the attributes
-- text (no JSON parse), so the common case pays only that test.
-- Priority 6: specific conventions win. (openinference.sql also emits a body-only OpenInference span,
-- with NULL messages, so this row, which has them, ranks first: rows with messages come before.)
WITH cand AS (
    SELECT trace_id, span_id, attributes AS a
    FROM _llm_spans
    WHERE ((contains(CAST(attributes AS VARCHAR), '"input.value"') AND contains(CAST(attributes AS VARCHAR), '"LLM"'))  -- not CHAIN / TOOL
           OR contains(CAST(attributes AS VARCHAR), '"langfuse.observation.type"')
           OR contains(CAST(attributes AS VARCHAR), '"mlflow.spanInputs"') OR contains(CAST(attributes AS VARCHAR), '"gcp.vertex.agent.llm_request"')
           OR contains(CAST(attributes AS VARCHAR), '"events"'))
      -- messages given by another convention: openinference (unless its flattening lost what the body
      -- keeps: openinference_lossy), genai_latest / openllmetry >= 0.55, openllmetry <= 0.54 and
      -- langsmith, vercel_ai, logfire
      AND (NOT (contains(CAST(attributes AS VARCHAR), '"llm.input_messages.') OR contains(CAST(attributes AS VARCHAR), '"llm.output_messages.'))
           OR openinference_lossy(CAST(attributes AS VARCHAR)))
      AND NOT contains(CAST(attributes AS VARCHAR), '"gen_ai.input.messages"') AND NOT contains(CAST(attributes AS VARCHAR), '"gen_ai.output.messages"')
      AND NOT contains(CAST(attributes AS VARCHAR), '"gen_ai.prompt') AND NOT contains(CAST(attributes AS VARCHAR), '"gen_ai.completion')
      AND NOT contains(CAST(attributes AS VARCHAR), '"ai.prompt.messages"') AND NOT contains(CAST(attributes AS VARCHAR), '"request_data"')
),
src AS (  -- v: every attribute read below, from one parse (read by name: payload_attr)
    SELECT trace_id, span_id, attr_json_values(a, payload_attribute_keys()) AS v
    FROM cand
),
kinds AS (  -- which source the span is a call of (NULL: not a call, e.g. a CHAIN or TOOL span, an ADK
            -- tool span, whose llm_request is '{}')
    SELECT *, CASE WHEN json_extract_string(payload_attr(v, 'openinference.span.kind'), '$') = 'LLM' AND payload_attr(v, 'input.value') IS NOT NULL THEN 'openinference'
                   WHEN json_extract_string(payload_attr(v, 'langfuse.observation.type'), '$') = 'generation' THEN 'langfuse'
                   WHEN json_extract_string(json_or_text(payload_attr(v, 'mlflow.spanType')), '$') IN ('CHAT_MODEL', 'LLM') THEN 'mlflow'
                   WHEN json_exists(json_or_text(payload_attr(v, 'gcp.vertex.agent.llm_request')), '$.contents[0]') THEN 'google_adk'
                   WHEN json_type(json_or_text(payload_attr(v, 'events'))) = 'ARRAY'
                        AND starts_with(json_extract_string(json_or_text(payload_attr(v, 'events')), '$[0]."event.name"'), 'gen_ai.') THEN 'pydantic_ai'
              END AS source
    FROM src
),
mlflow_chats AS (  -- MLflow's standardised conversation (mlflow.chat.messages, set_span_chat_messages: the
            -- input messages, then the output message appended once the call returned): when present
            -- it is the request's messages, and its last assistant message the response (MLflow 2.x
            -- CHAT_MODEL spans whose inputs are not a chat body, e.g. a traced function's arguments)
    SELECT *, CASE WHEN json_array_length(cm) > 0 THEN json_extract(cm, '$[*]') END AS cm_list,
           coalesce(json_extract_string(cm, '$[#-1].role') = 'assistant' AND mlflow_out IS NOT NULL, false) AS cm_has_output
    FROM (SELECT *, CASE WHEN source = 'mlflow' THEN json_or_text(payload_attr(v, 'mlflow.chat.messages')) END AS cm,
                 json_or_text(payload_attr(v, 'mlflow.spanOutputs')) AS mlflow_out
          FROM kinds)
),
bodies AS (  -- one row per call: its request body, response body and the source's extras
    SELECT trace_id, span_id, source,
           CASE source WHEN 'openinference' THEN unredacted(json_or_text(payload_attr(v, 'input.value'))) WHEN 'langfuse' THEN json_or_text(payload_attr(v, 'langfuse.observation.input'))
                       WHEN 'mlflow' THEN CASE WHEN cm_list IS NULL THEN json_or_text(payload_attr(v, 'mlflow.spanInputs'))
                           ELSE json_merge_patch(coalesce(CASE WHEN json_type(json_or_text(payload_attr(v, 'mlflow.spanInputs'))) = 'OBJECT'
                                                               THEN json_or_text(payload_attr(v, 'mlflow.spanInputs')) END, '{}'),
                                                 json_object('messages', to_json(CASE WHEN cm_has_output THEN cm_list[1:-2] ELSE cm_list END))) END
                       WHEN 'google_adk' THEN json_or_text(payload_attr(v, 'gcp.vertex.agent.llm_request'))
                       -- pydantic-ai v1: the request is the input events as a message list
                       ELSE to_json(list_filter(json_extract(json_or_text(payload_attr(v, 'events')), '$[*]'),
                                                lambda e: json_extract_string(e, '$."event.name"') <> 'gen_ai.choice')) END AS rq,
           CASE source WHEN 'openinference' THEN unredacted(json_or_text(payload_attr(v, 'output.value'))) WHEN 'langfuse' THEN json_or_text(payload_attr(v, 'langfuse.observation.output'))
                       WHEN 'mlflow' THEN CASE WHEN NOT cm_has_output THEN mlflow_out
                           WHEN json_type(mlflow_out) = 'OBJECT' THEN json_merge_patch(mlflow_out, json_object('message', cm_list[-1]))
                           ELSE json_object('message', cm_list[-1]) END
                       WHEN 'google_adk' THEN json_or_text(payload_attr(v, 'gcp.vertex.agent.llm_response'))
                       -- the response is the gen_ai.choice event's message
                       ELSE list_filter(json_extract(json_or_text(payload_attr(v, 'events')), '$[*]'),
                                        lambda e: json_extract_string(e, '$."event.name"') = 'gen_ai.choice')[1] -> '$.message' END AS rs,
           CASE source WHEN 'mlflow' THEN json_or_text(payload_attr(v, 'mlflow.chat.tools'))
                       WHEN 'pydantic_ai' THEN json_or_text(payload_attr(v, 'model_request_parameters')) -> '$.function_tools' END AS tools_j,
           CASE source WHEN 'langfuse' THEN json_or_text(payload_attr(v, 'langfuse.observation.usage_details')) WHEN 'mlflow' THEN json_or_text(payload_attr(v, 'mlflow.chat.tokenUsage')) END AS usage_j,
           CASE source WHEN 'langfuse' THEN json_or_text(payload_attr(v, 'langfuse.observation.model.parameters')) END AS params_j,
           CASE source WHEN 'openinference' THEN json_extract_string(payload_attr(v, 'llm.model_name'), '$') WHEN 'langfuse' THEN json_extract_string(payload_attr(v, 'langfuse.observation.model.name'), '$')
                       WHEN 'mlflow' THEN json_extract_string(json_or_text(payload_attr(v, 'mlflow.llm.model')), '$') END AS attr_model,
           CASE source WHEN 'mlflow' THEN json_extract_string(json_or_text(payload_attr(v, 'mlflow.llm.provider')), '$') END AS attr_provider,
           6 AS priority
    FROM mlflow_chats WHERE source IS NOT NULL
),
parsed AS MATERIALIZED (  -- q, r: every value read from the request / response body, one parse each (req, resp)
    SELECT *,
           json_extract(rq, request_paths()) AS q,
           json_extract(rs, response_paths()) AS r,
           json_type(rq) AS rq_type, json_type(rs) AS rs_type
    FROM bodies
),
lists AS (  -- per call: the input messages as a list: OpenAI / Anthropic / LangChain "messages" (batched
            -- [[...]] -> the first), Gemini "contents", Responses "input", completion "prompt"; or the
            -- body itself when it is a list or a plain string; a body that does not parse has none
    SELECT trace_id, span_id, CASE WHEN json_type(l) <> 'ARRAY' THEN to_json([l])
                                   WHEN json_type(json_extract(l, '$[0]')) = 'ARRAY' THEN json_extract(l, '$[0]') ELSE l END AS l
    FROM (SELECT trace_id, span_id,
                 CASE WHEN rq_type NOT IN ('OBJECT', 'ARRAY', 'VARCHAR') OR body_is_broken(rq) THEN NULL
                      WHEN rq_type = 'OBJECT' THEN coalesce(req(q, '$.messages'), req(q, '$.contents'), req(q, '$.input'), req(q, '$.prompt'), '[]'::JSON) ELSE rq END AS l
          FROM parsed)
    WHERE l IS NOT NULL
),
outs AS (  -- per call: the one message of the response, still in its family's shape: OpenAI
           -- choices[0].message (or .text), Gemini candidates[0].content, Responses output items (as one
           -- message whose blocks are the output text parts and function_call items), LangChain
           -- generations[0][0], {"message": ...}, ADK LlmResponse {"content": {parts}}, Anthropic Message
           -- or a message itself, a list's last element, a plain string
    SELECT trace_id, span_id, CASE
        WHEN rs_type NOT IN ('OBJECT', 'ARRAY', 'VARCHAR') OR body_is_broken(rs) THEN NULL
        WHEN rs_type = 'VARCHAR' THEN rs
        WHEN rs_type = 'ARRAY' THEN json_extract(CASE WHEN json_type(json_extract(rs, '$[0]')) = 'ARRAY'
                                                      THEN json_extract(rs, '$[0]') ELSE rs END, '$[#-1]')
        WHEN resp(r, '$.choices[0].message') IS NOT NULL THEN resp(r, '$.choices[0].message')
        WHEN resp(r, '$.choices[0].text') IS NOT NULL THEN json_object('role', 'assistant', 'content', resp(r, '$.choices[0].text'))
        WHEN resp(r, '$.candidates[0].content') IS NOT NULL THEN resp(r, '$.candidates[0].content')
        WHEN json_type(resp(r, '$.output')) = 'ARRAY' THEN json_object('role', 'assistant', 'content', to_json(flatten(
            list_transform(json_extract(resp(r, '$.output'), '$[*]'), lambda o: CASE json_extract_string(o, '$.type')
                WHEN 'message' THEN json_extract(o, '$.content[*]') WHEN 'function_call' THEN [o] ELSE [] END))))
        WHEN resp(r, '$.generations[0][0]') IS NOT NULL THEN coalesce(resp(r, '$.generations[0][0].message'), resp(r, '$.generations[0][0]'))
        WHEN json_type(resp(r, '$.message')) = 'OBJECT' THEN resp(r, '$.message')
        WHEN json_type(resp(r, '$.content')) = 'OBJECT' THEN resp(r, '$.content')
        WHEN resp(r, '$.content') IS NOT NULL OR resp(r, '$.role') IS NOT NULL OR resp(r, '$.tool_calls') IS NOT NULL OR resp(r, '$.parts') IS NOT NULL THEN rs
        END AS m
    FROM parsed
),
items AS (  -- one row per body message: the inputs (i >= 1) and the response's message (i = 0)
    SELECT trace_id, span_id, e.i, e.m, 'user' AS default_role
    FROM (SELECT trace_id, span_id, unnest(list_transform(json_extract(l, '$[*]'), lambda m, i: {'i': i, 'm': m})) AS e FROM lists)
    UNION ALL
    SELECT trace_id, span_id, 0, m, 'assistant' FROM outs WHERE m IS NOT NULL
),
fields AS (  -- mv: every value read from the message, one parse (msg)
    SELECT *, json_extract(m, message_paths()) AS mv,
           json_type(m) AS m_type
    FROM items
),
shaped AS (  -- its role and, when it is made of blocks (Gemini parts, Anthropic / Responses content, a Responses item), the blocks
    SELECT *, list_filter(coalesce(blocks, []::JSON[]), lambda b: block_is_result(b)) AS results,
           list_filter(coalesce(blocks, []::JSON[]), lambda b: block_is_call(b)) AS calls
    FROM (SELECT *, chat_role(coalesce(msg(mv, '$.role') ->> '$', CASE WHEN msg(mv, '$.lc') IS NOT NULL THEN msg(mv, '$.id[#-1]') ->> '$' END,
                                       CASE msg(mv, '$.type') ->> '$' WHEN 'function_call' THEN 'assistant' WHEN 'function_call_output' THEN 'tool'
                                            WHEN 'message' THEN NULL ELSE msg(mv, '$.type') ->> '$' END, default_role)) AS role,
                 CASE WHEN json_type(msg(mv, '$.parts')) = 'ARRAY' THEN json_extract(msg(mv, '$.parts'), '$[*]')
                      WHEN msg(mv, '$.type') ->> '$' IN ('function_call', 'function_call_output') THEN [m]
                      WHEN json_type(msg(mv, '$.content')) = 'ARRAY' THEN json_extract(msg(mv, '$.content'), '$[*]') END AS blocks
          FROM fields WHERE m_type IN ('OBJECT', 'VARCHAR') AND coalesce(msg(mv, '$.type') ->> '$', '') <> 'reasoning')
),
chats AS (  -- each body message -> chat messages: one tool message per tool result (first, as Anthropic
            -- orders them), then the message itself (text + tool calls) unless it was only results
    SELECT trace_id, span_id, i,
           list_transform(results, lambda b: block_tool_message(b))
           || CASE WHEN len(results) = 0 OR text IS NOT NULL OR len(calls) > 0
                   THEN [chat_message(role, text, tool_calls, CASE WHEN len(results) = 0 THEN tool_call_id END)] ELSE [] END AS chat
    FROM (SELECT *,
                 body_text(CASE WHEN m_type = 'VARCHAR' THEN m WHEN blocks IS NOT NULL THEN to_json(blocks)
                                ELSE coalesce(msg(mv, '$.kwargs.content'), msg(mv, '$.content'), msg(mv, '$.text')) END) AS text,
                 CASE WHEN len(calls) > 0 THEN to_json(list_transform(calls, lambda b: block_tool_call(b)))
                      ELSE chat_tool_calls(json_or_text(coalesce(msg(mv, '$.kwargs.tool_calls'), msg(mv, '$.tool_calls')))) END AS tool_calls,
                 coalesce(msg(mv, '$.kwargs.tool_call_id') ->> '$', msg(mv, '$.tool_call_id') ->> '$', CASE WHEN role = 'tool' THEN msg(mv, '$.id') ->> '$' END) AS tool_call_id
          FROM shaped)
),
assembled AS (
    SELECT trace_id, span_id, flatten(list(chat ORDER BY i) FILTER (WHERE i > 0)) AS ins,
           (list(chat) FILTER (WHERE i = 0))[1][-1] AS om
    FROM chats GROUP BY trace_id, span_id
)
SELECT b.trace_id, b.span_id, 'payload' AS convention, b.source AS payload_source,
       CASE WHEN l.l IS NOT NULL
            THEN to_json(list_transform(list_filter([body_system_text(coalesce(req(b.q, '$.system'), req(b.q, '$.instructions'), req(b.q, '$.config.system_instruction'), req(b.q, '$.config.systemInstruction'), req(b.q, '$.system_instruction'), req(b.q, '$.systemInstruction')))],
                                                    lambda t: t IS NOT NULL), lambda t: chat_message('system', t, NULL, NULL))
                         || coalesce(x.ins, [])) END AS input_messages,
       x.om AS output_message,
       chat_tools(coalesce(b.tools_j, req(b.q, '$.tools'), req(b.q, '$.config.tools'))) AS tools,
       json_extract_string(coalesce(resp(b.r, '$.choices[0].finish_reason'), resp(b.r, '$.stop_reason'), resp(b.r, '$.candidates[0].finish_reason'), resp(b.r, '$.candidates[0].finishReason'), resp(b.r, '$.finish_reason'), resp(b.r, '$.finishReason')), '$') AS finish_reason,
       coalesce(b.attr_model, json_extract_string(coalesce(req(b.q, '$.model'), resp(b.r, '$.model'), resp(b.r, '$.model_version'), resp(b.r, '$.modelVersion')), '$')) AS model,  -- request first, as llm_calls
       b.attr_provider AS provider,
       try_cast(coalesce(json_extract(b.usage_j, '$.input'), json_extract(b.usage_j, '$.input_tokens'),
                         json_extract(b.usage_j, '$.prompt_tokens'), resp(b.r, '$.usage.prompt_tokens'), resp(b.r, '$.usage.input_tokens'), resp(b.r, '$.usage_metadata.prompt_token_count'), resp(b.r, '$.usageMetadata.promptTokenCount')) AS BIGINT) AS input_tokens,
       try_cast(coalesce(json_extract(b.usage_j, '$.output'), json_extract(b.usage_j, '$.output_tokens'),
                         json_extract(b.usage_j, '$.completion_tokens'), resp(b.r, '$.usage.completion_tokens'), resp(b.r, '$.usage.output_tokens'), resp(b.r, '$.usage_metadata.candidates_token_count'), resp(b.r, '$.usageMetadata.candidatesTokenCount')) AS BIGINT) AS output_tokens,
       try_cast(coalesce(json_extract(b.params_j, '$.temperature'), req(b.q, '$.temperature'), req(b.q, '$.config.temperature'), req(b.q, '$.generationConfig.temperature'), req(b.q, '$.generation_config.temperature')) AS DOUBLE) AS temperature,
       json_extract_string(coalesce(resp(b.r, '$.id'), resp(b.r, '$.response_id'), resp(b.r, '$.responseId'),
                                   resp(b.r, '$.llm_output.id'), resp(b.r, '$.generations[0][0].message.kwargs.response_metadata.id')), '$') AS response_id,
       b.priority
FROM parsed AS b
LEFT JOIN lists AS l ON l.trace_id = b.trace_id AND l.span_id = b.span_id
LEFT JOIN assembled AS x ON x.trace_id = b.trace_id AND x.span_id = b.span_id
