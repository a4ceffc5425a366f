-- name: llm_calls_payload
-- LLM spans that carry the whole request / response BODY as JSON instead of
-- flattened messages, for the instrumentations no other convention file reads:
--   openinference  OpenInference LLM spans with only input.value / output.value (e.g. with
--                  OPENINFERENCE_HIDE_INPUT_MESSAGES, or instrumentations that write no llm.input_messages)
--   langfuse       Langfuse OTel SDK v3 generations: langfuse.observation.{type, input, output,
--                  model.name, model.parameters, usage_details}
--   mlflow         MLflow tracing: mlflow.spanType CHAT_MODEL | LLM, mlflow.spanInputs / spanOutputs,
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
      -- messages given by another convention: openinference, genai_latest / openllmetry >= 0.55,
      -- openllmetry <= 0.54 and langsmith, vercel_ai, logfire
      AND NOT contains(CAST(attributes AS VARCHAR), '"llm.input_messages.') AND NOT contains(CAST(attributes AS VARCHAR), '"llm.output_messages.')
      AND NOT contains(CAST(attributes AS VARCHAR), '"gen_ai.input.messages"') AND NOT contains(CAST(attributes AS VARCHAR), '"gen_ai.output.messages"')
      AND NOT contains(CAST(attributes AS VARCHAR), '"gen_ai.prompt') AND NOT contains(CAST(attributes AS VARCHAR), '"gen_ai.completion')
      AND NOT contains(CAST(attributes AS VARCHAR), '"ai.prompt.messages"') AND NOT contains(CAST(attributes AS VARCHAR), '"request_data"')
),
src AS (  -- v: every attribute read below, from one parse of the attributes
    SELECT trace_id, span_id, json_extract(a, ['$."openinference.span.kind"', '$."input.value"', '$."output.value"',
        '$."langfuse.observation.type"', '$."langfuse.observation.input"', '$."langfuse.observation.output"',
        '$."langfuse.observation.model.name"', '$."langfuse.observation.model.parameters"', '$."langfuse.observation.usage_details"',
        '$."mlflow.spanType"', '$."mlflow.spanInputs"', '$."mlflow.spanOutputs"', '$."mlflow.chat.tools"',
        '$."mlflow.chat.tokenUsage"', '$."mlflow.llm.model"', '$."mlflow.llm.provider"',
        '$."gcp.vertex.agent.llm_request"', '$."gcp.vertex.agent.llm_response"', '$.events', '$."llm.model_name"', '$.model_request_parameters']) AS v
    FROM cand
),
kinds AS (  -- which source the span is a call of (NULL: not a call, e.g. a CHAIN or TOOL span, an ADK
            -- tool span, whose llm_request is '{}')
    SELECT *, CASE WHEN json_extract_string(v[1], '$') = 'LLM' AND v[2] IS NOT NULL THEN 'openinference'
                   WHEN json_extract_string(v[4], '$') = 'generation' THEN 'langfuse'
                   WHEN json_extract_string(json_or_text(v[10]), '$') IN ('CHAT_MODEL', 'LLM') THEN 'mlflow'
                   WHEN json_exists(json_or_text(v[17]), '$.contents[0]') THEN 'google_adk'
                   WHEN json_type(json_or_text(v[19])) = 'ARRAY'
                        AND starts_with(json_extract_string(json_or_text(v[19]), '$[0]."event.name"'), 'gen_ai.') THEN 'pydantic_ai'
              END AS source
    FROM src
),
bodies AS (  -- one row per call: its request body, response body and the source's extras
    SELECT trace_id, span_id, source,
           CASE source WHEN 'openinference' THEN json_or_text(v[2]) WHEN 'langfuse' THEN json_or_text(v[5])
                       WHEN 'mlflow' THEN json_or_text(v[11]) WHEN 'google_adk' THEN json_or_text(v[17])
                       -- pydantic-ai v1: the request is the input events as a message list
                       ELSE to_json(list_filter(json_extract(json_or_text(v[19]), '$[*]'),
                                                lambda e: json_extract_string(e, '$."event.name"') <> 'gen_ai.choice')) END AS rq,
           CASE source WHEN 'openinference' THEN json_or_text(v[3]) WHEN 'langfuse' THEN json_or_text(v[6])
                       WHEN 'mlflow' THEN json_or_text(v[12]) WHEN 'google_adk' THEN json_or_text(v[18])
                       -- the response is the gen_ai.choice event's message
                       ELSE list_filter(json_extract(json_or_text(v[19]), '$[*]'),
                                        lambda e: json_extract_string(e, '$."event.name"') = 'gen_ai.choice')[1] -> '$.message' END AS rs,
           CASE source WHEN 'mlflow' THEN json_or_text(v[13])
                       WHEN 'pydantic_ai' THEN json_or_text(v[21]) -> '$.function_tools' END AS tools_j,
           CASE source WHEN 'langfuse' THEN json_or_text(v[9]) WHEN 'mlflow' THEN json_or_text(v[14]) END AS usage_j,
           CASE source WHEN 'langfuse' THEN json_or_text(v[8]) END AS params_j,
           CASE source WHEN 'openinference' THEN json_extract_string(v[20], '$') WHEN 'langfuse' THEN json_extract_string(v[7], '$')
                       WHEN 'mlflow' THEN json_extract_string(json_or_text(v[15]), '$') END AS attr_model,
           CASE source WHEN 'mlflow' THEN json_extract_string(json_or_text(v[16]), '$') END AS attr_provider,
           6 AS priority
    FROM kinds WHERE source IS NOT NULL
),
parsed AS MATERIALIZED (  -- q, r: every value read from the request / response body, one parse each
    SELECT *,
           json_extract(rq, ['$.messages', '$.contents', '$.input', '$.prompt', '$.system', '$.instructions',
               '$.config.system_instruction', '$.config.systemInstruction', '$.system_instruction', '$.systemInstruction',
               '$.tools', '$.config.tools', '$.temperature', '$.config.temperature', '$.generationConfig.temperature',
               '$.generation_config.temperature', '$.model']) AS q,
           json_extract(rs, ['$.choices[0].message', '$.choices[0].text', '$.candidates[0].content', '$.output',
               '$.generations[0][0]', '$.generations[0][0].message', '$.message', '$.content', '$.role', '$.tool_calls', '$.parts',
               '$.choices[0].finish_reason', '$.stop_reason', '$.candidates[0].finish_reason', '$.candidates[0].finishReason',
               '$.finish_reason', '$.finishReason', '$.usage.prompt_tokens', '$.usage.input_tokens',
               '$.usage_metadata.prompt_token_count', '$.usageMetadata.promptTokenCount', '$.usage.completion_tokens',
               '$.usage.output_tokens', '$.usage_metadata.candidates_token_count', '$.usageMetadata.candidatesTokenCount',
               '$.id', '$.response_id', '$.responseId', '$.model', '$.model_version', '$.modelVersion']) AS r,
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
                      WHEN rq_type = 'OBJECT' THEN coalesce(q[1], q[2], q[3], q[4], '[]'::JSON) ELSE rq END AS l
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
        WHEN r[1] IS NOT NULL THEN r[1]
        WHEN r[2] IS NOT NULL THEN json_object('role', 'assistant', 'content', r[2])
        WHEN r[3] IS NOT NULL THEN r[3]
        WHEN json_type(r[4]) = 'ARRAY' THEN json_object('role', 'assistant', 'content', to_json(flatten(
            list_transform(json_extract(r[4], '$[*]'), lambda o: CASE json_extract_string(o, '$.type')
                WHEN 'message' THEN json_extract(o, '$.content[*]') WHEN 'function_call' THEN [o] ELSE [] END))))
        WHEN r[5] IS NOT NULL THEN coalesce(r[6], r[5])
        WHEN json_type(r[7]) = 'OBJECT' THEN r[7]
        WHEN json_type(r[8]) = 'OBJECT' THEN r[8]
        WHEN r[8] IS NOT NULL OR r[9] IS NOT NULL OR r[10] IS NOT NULL OR r[11] IS NOT NULL THEN rs
        END AS m
    FROM parsed
),
items AS (  -- one row per body message: the inputs (i >= 1) and the response's message (i = 0)
    SELECT trace_id, span_id, e.i, e.m, 'user' AS default_role
    FROM (SELECT trace_id, span_id, unnest(list_transform(json_extract(l, '$[*]'), lambda m, i: {'i': i, 'm': m})) AS e FROM lists)
    UNION ALL
    SELECT trace_id, span_id, 0, m, 'assistant' FROM outs WHERE m IS NOT NULL
),
fields AS (  -- mv: every value read from the message, one parse
    SELECT *, json_extract(m, ['$.role', '$.type', '$.parts', '$.content', '$.lc', '$.id[#-1]', '$.kwargs.content', '$.text',
                               '$.kwargs.tool_calls', '$.tool_calls', '$.kwargs.tool_call_id', '$.tool_call_id', '$.id']) AS mv,
           json_type(m) AS m_type
    FROM items
),
shaped AS (  -- its role and, when it is made of blocks (Gemini parts, Anthropic / Responses content, a Responses item), the blocks
    SELECT *, list_filter(coalesce(blocks, []::JSON[]), lambda b: block_is_result(b)) AS results,
           list_filter(coalesce(blocks, []::JSON[]), lambda b: block_is_call(b)) AS calls
    FROM (SELECT *, chat_role(coalesce(mv[1] ->> '$', CASE WHEN mv[5] IS NOT NULL THEN mv[6] ->> '$' END,
                                       CASE mv[2] ->> '$' WHEN 'function_call' THEN 'assistant' WHEN 'function_call_output' THEN 'tool'
                                            WHEN 'message' THEN NULL ELSE mv[2] ->> '$' END, default_role)) AS role,
                 CASE WHEN json_type(mv[3]) = 'ARRAY' THEN json_extract(mv[3], '$[*]')
                      WHEN mv[2] ->> '$' IN ('function_call', 'function_call_output') THEN [m]
                      WHEN json_type(mv[4]) = 'ARRAY' THEN json_extract(mv[4], '$[*]') END AS blocks
          FROM fields WHERE m_type IN ('OBJECT', 'VARCHAR') AND coalesce(mv[2] ->> '$', '') <> 'reasoning')
),
chats AS (  -- each body message -> chat messages: one tool message per tool result (first, as Anthropic
            -- orders them), then the message itself (text + tool calls) unless it was only results
    SELECT trace_id, span_id, i,
           list_transform(results, lambda b: block_tool_message(b))
           || CASE WHEN len(results) = 0 OR text IS NOT NULL OR len(calls) > 0
                   THEN [chat_message(role, text, tool_calls, CASE WHEN len(results) = 0 THEN tool_call_id END)] ELSE [] END AS chat
    FROM (SELECT *,
                 body_text(CASE WHEN m_type = 'VARCHAR' THEN m WHEN blocks IS NOT NULL THEN to_json(blocks)
                                ELSE coalesce(mv[7], mv[4], mv[8]) END) AS text,
                 CASE WHEN len(calls) > 0 THEN to_json(list_transform(calls, lambda b: block_tool_call(b)))
                      ELSE chat_tool_calls(json_or_text(coalesce(mv[9], mv[10]))) END AS tool_calls,
                 coalesce(mv[11] ->> '$', mv[12] ->> '$', CASE WHEN role = 'tool' THEN mv[13] ->> '$' END) AS tool_call_id
          FROM shaped)
),
assembled AS (
    SELECT trace_id, span_id, flatten(list(chat ORDER BY i) FILTER (WHERE i > 0)) AS ins,
           (list(chat) FILTER (WHERE i = 0))[1][-1] AS om
    FROM chats GROUP BY trace_id, span_id
)
SELECT b.trace_id, b.span_id, 'payload' AS convention, b.source AS payload_source,
       CASE WHEN l.l IS NOT NULL
            THEN to_json(list_transform(list_filter([body_system_text(coalesce(b.q[5], b.q[6], b.q[7], b.q[8], b.q[9], b.q[10]))],
                                                    lambda t: t IS NOT NULL), lambda t: chat_message('system', t, NULL, NULL))
                         || coalesce(x.ins, [])) END AS input_messages,
       x.om AS output_message,
       chat_tools(coalesce(b.tools_j, b.q[11], b.q[12])) AS tools,
       json_extract_string(coalesce(b.r[12], b.r[13], b.r[14], b.r[15], b.r[16], b.r[17]), '$') AS finish_reason,
       coalesce(b.attr_model, json_extract_string(coalesce(b.q[17], b.r[29], b.r[30], b.r[31]), '$')) AS model,  -- request first, as llm_calls
       b.attr_provider AS provider,
       try_cast(coalesce(json_extract(b.usage_j, '$.input'), json_extract(b.usage_j, '$.input_tokens'),
                         json_extract(b.usage_j, '$.prompt_tokens'), b.r[18], b.r[19], b.r[20], b.r[21]) AS BIGINT) AS input_tokens,
       try_cast(coalesce(json_extract(b.usage_j, '$.output'), json_extract(b.usage_j, '$.output_tokens'),
                         json_extract(b.usage_j, '$.completion_tokens'), b.r[22], b.r[23], b.r[24], b.r[25]) AS BIGINT) AS output_tokens,
       try_cast(coalesce(json_extract(b.params_j, '$.temperature'), b.q[13], b.q[14], b.q[15], b.q[16]) AS DOUBLE) AS temperature,
       json_extract_string(coalesce(b.r[26], b.r[27], b.r[28]), '$') AS response_id,
       b.priority
FROM parsed AS b
LEFT JOIN lists AS l ON l.trace_id = b.trace_id AND l.span_id = b.span_id
LEFT JOIN assembled AS x ON x.trace_id = b.trace_id AND x.span_id = b.span_id
