-- name: llm_macros
-- Helpers the llm_calls/*.sql and tool_calls.sql views share (registered by views.py
-- before the views). They turn every convention's message encoding into OpenAI chat shape:
-- {"role", "content", "tool_calls": [{"id", "type": "function", "function": {"name", "arguments"}}],
--  "tool_call_id"}; keys whose value would be null (tool_calls, tool_call_id) are left out.

-- Many attribute values from ONE parse, read back by name. json_extract_string over a list of
-- paths is 2x faster than json_transform and 4x faster than one call per key (measured); the
-- key list is a constant (a macro below), so list_position folds away when a query is bound and
-- attr_value costs a list index. The attribute key is the value's name: path and name are one.
CREATE OR REPLACE MACRO attr_values(a, keys) AS json_extract_string(a, list_transform(keys, lambda k: '$."' || k || '"'));
CREATE OR REPLACE MACRO attr_value(x, keys, k) AS x[list_position(keys, k)];

-- The attributes llm_calls.sql reads on every member span of a call (provider, model, usage, ...).
CREATE OR REPLACE MACRO call_attribute_keys() AS [
    'gen_ai.provider.name', 'gen_ai.system', 'llm.provider', 'llm.system', 'gen_ai.request.model',
    'gen_ai.response.model', 'gen_ai.response.finish_reasons', 'gen_ai.usage.input_tokens',
    'gen_ai.usage.prompt_tokens', 'gen_ai.usage.output_tokens', 'gen_ai.usage.completion_tokens',
    'gen_ai.request.temperature', 'gen_ai.response.id', 'spanrl.prompt.version',
    'spanrl.prompt.agent'];

-- The attributes that name an agent (llm_calls.sql's agent_name walk), on every span of a call's trace.
CREATE OR REPLACE MACRO agent_attribute_keys() AS [
    'gen_ai.agent.name', 'agent.name', 'traceloop.span.kind', 'traceloop.entity.name', 'openinference.span.kind',
    'gen_ai.operation.name', 'traceloop.association.properties.langgraph_node', 'langsmith.metadata.langgraph_node',
    'metadata'];
CREATE OR REPLACE MACRO agent_attr(x, k) AS attr_value(x, agent_attribute_keys(), k);

-- _span_facts (span_facts.sql): what later steps read of every span's attributes, in one parse. It
-- starts with agent_attribute_keys(), so its first values are spanrl_span_agent's x; it ends with
-- call_attribute_keys() (llm_calls.sql's call_attr). span_fact(v, k)
-- reads one back by name; resource_fact(r, k) the same of the resource's values.
CREATE OR REPLACE MACRO span_fact_keys() AS list_concat(list_concat(agent_attribute_keys(), [
    'langsmith.span.kind', 'llm.request.type', 'spanrl.rollout_id', 'agentlightning.rollout_id', 'spanrl.task_id',
    'spanrl.rollout.purpose', 'tool.parameters']), call_attribute_keys());
CREATE OR REPLACE MACRO span_fact(v, k) AS attr_value(v, span_fact_keys(), k);
CREATE OR REPLACE MACRO call_attr(x, k) AS span_fact(x, k);  -- a call attribute (x: _span_facts.v)
CREATE OR REPLACE MACRO resource_fact_keys() AS ['spanrl.rollout_id', 'agentlightning.rollout_id', 'spanrl.task_id',
                                                'spanrl.rollout.purpose'];
CREATE OR REPLACE MACRO resource_fact(r, k) AS attr_value(r, resource_fact_keys(), k);
-- Does the span carry attribute key k (k_text: _span_facts.attr_keys, every key between chr(31)s)?
CREATE OR REPLACE MACRO has_attr(k_text, k) AS contains(k_text, chr(31) || k || chr(31));

-- The attributes llm_calls/genai_latest.sql reads on a span, a log record or a span event.
CREATE OR REPLACE MACRO latest_attribute_keys() AS [
    'gen_ai.input.messages', 'gen_ai.output.messages', 'gen_ai.system_instructions', 'gen_ai.tool.definitions',
    'gen_ai.openai.api_base', 'gen_ai.response.finish_reasons'];
CREATE OR REPLACE MACRO latest_attr(x, k) AS attr_value(x, latest_attribute_keys(), k);
-- ... as JSON (the content values are JSON text on spans, structured values on events: both read the same)
CREATE OR REPLACE MACRO latest_json(x, k) AS try_cast(latest_attr(x, k) AS JSON);

-- llm_calls/payload.sql: the attributes it reads, and the JSON paths into request bodies, response
-- bodies and messages; each list is parsed once per value and read back by name (the path is the name).
CREATE OR REPLACE MACRO attr_json_values(a, keys) AS json_extract(a, list_transform(keys, lambda k: '$."' || k || '"'));
CREATE OR REPLACE MACRO payload_attribute_keys() AS [
    'openinference.span.kind', 'input.value', 'output.value', 'langfuse.observation.type',
    'langfuse.observation.input', 'langfuse.observation.output', 'langfuse.observation.model.name',
    'langfuse.observation.model.parameters', 'langfuse.observation.usage_details', 'mlflow.spanType',
    'mlflow.spanInputs', 'mlflow.spanOutputs', 'mlflow.chat.messages', 'mlflow.chat.tools', 'mlflow.chat.tokenUsage',
    'mlflow.llm.model', 'mlflow.llm.provider', 'gcp.vertex.agent.llm_request',
    'gcp.vertex.agent.llm_response', 'events', 'llm.model_name', 'model_request_parameters'];
CREATE OR REPLACE MACRO payload_attr(x, k) AS attr_value(x, payload_attribute_keys(), k);
CREATE OR REPLACE MACRO request_paths() AS [
    '$.messages', '$.contents', '$.input', '$.prompt', '$.system', '$.instructions',
    '$.config.system_instruction', '$.config.systemInstruction', '$.system_instruction',
    '$.systemInstruction', '$.tools', '$.config.tools', '$.temperature', '$.config.temperature',
    '$.generationConfig.temperature', '$.generation_config.temperature', '$.model'];
CREATE OR REPLACE MACRO req(x, p) AS attr_value(x, request_paths(), p);
CREATE OR REPLACE MACRO response_paths() AS [
    '$.choices[0].message', '$.choices[0].text', '$.candidates[0].content', '$.output',
    '$.generations[0][0]', '$.generations[0][0].message', '$.message', '$.content', '$.role', '$.tool_calls',
    '$.parts', '$.choices[0].finish_reason', '$.stop_reason', '$.candidates[0].finish_reason',
    '$.candidates[0].finishReason', '$.finish_reason', '$.finishReason', '$.usage.prompt_tokens',
    '$.usage.input_tokens', '$.usage_metadata.prompt_token_count', '$.usageMetadata.promptTokenCount',
    '$.usage.completion_tokens', '$.usage.output_tokens', '$.usage_metadata.candidates_token_count',
    '$.usageMetadata.candidatesTokenCount', '$.id', '$.response_id', '$.responseId', '$.model',
    '$.model_version', '$.modelVersion', '$.llm_output.id', '$.generations[0][0].message.kwargs.response_metadata.id'];
CREATE OR REPLACE MACRO resp(x, p) AS attr_value(x, response_paths(), p);
-- The provider's response id in a recorded output: the API body's own ``id``, else where LangChain keeps
-- it (LLMResult.llm_output.id; the generation message's response_metadata.id): OpenInference LangChain
-- spans carry only that, and without it their row cannot meet the server's record of the same call.
CREATE OR REPLACE MACRO output_response_id(j) AS coalesce(
    json_extract_string(j, '$.id'), json_extract_string(j, '$.llm_output.id'),
    json_extract_string(j, '$.generations[0][0].message.kwargs.response_metadata.id'));
CREATE OR REPLACE MACRO message_paths() AS [
    '$.role', '$.type', '$.parts', '$.content', '$.lc', '$.id[#-1]', '$.kwargs.content', '$.text',
    '$.kwargs.tool_calls', '$.tool_calls', '$.kwargs.tool_call_id', '$.tool_call_id', '$.id'];
CREATE OR REPLACE MACRO msg(x, p) AS attr_value(x, message_paths(), p);

-- An OpenInference LLM span whose flattened messages lose what its request body (input.value) keeps,
-- tested on the attributes text: openinference-instrumentation-anthropic flattens tool_use blocks
-- without their ids and tool_result blocks as plain user text, and leaves out `system`
-- (_get_llm_input_messages); any flattened tool call without an id has lost the link to its result.
-- Such a span is read from its body (llm_calls/payload.sql) first.
CREATE OR REPLACE MACRO openinference_lossy(t) AS contains(t, '"input.value"') AND (
    contains(t, '"llm.provider":"anthropic"') OR contains(t, '"llm.system":"anthropic"')
    OR (contains(t, '.tool_call.function.name"') AND NOT contains(t, '.tool_call.id"')));

-- A JSON value that may be JSON text inside a string (attributes are strings in Python SDKs).
CREATE OR REPLACE MACRO json_or_text(j) AS CASE
    WHEN j IS NULL THEN NULL
    WHEN json_type(j) = 'VARCHAR' THEN coalesce(try_cast(json_extract_string(j, '$') AS JSON), j)
    ELSE j END;

-- A body an instrumentation hid (OpenInference's OPENINFERENCE_HIDE_INPUTS / _OUTPUTS write the marker
-- `__REDACTED__` in its place) is no content: read as a message it became a prompt of that one word, trained
-- on as if the model had seen it. NULL instead, so coverage counts the call as capture switched off.
CREATE OR REPLACE MACRO unredacted(j) AS CASE
    WHEN j IS NOT NULL AND json_type(j) = 'VARCHAR' AND json_extract_string(j, '$') = '__REDACTED__' THEN NULL ELSE j END;

-- JSON -> text as it should appear in a message: strings as they are, anything else serialised.
CREATE OR REPLACE MACRO json_text(j) AS CASE
    WHEN j IS NULL OR json_type(j) = 'NULL' THEN NULL
    WHEN json_type(j) = 'VARCHAR' THEN json_extract_string(j, '$')
    ELSE CAST(j AS VARCHAR) END;

-- Message content: a string, or a list of parts ({"type":"text","text"|"content"}) joined.
CREATE OR REPLACE MACRO content_text(j) AS CASE
    WHEN j IS NULL OR json_type(j) = 'NULL' THEN NULL
    WHEN json_type(j) = 'VARCHAR' THEN json_extract_string(j, '$')
    WHEN json_type(j) = 'ARRAY' THEN nullif(array_to_string(list_transform(json_extract(j, '$[*]'),
        lambda p: coalesce(json_extract_string(p, '$.text'), json_extract_string(p, '$.content'),
                           CASE WHEN json_type(p) = 'VARCHAR' THEN json_extract_string(p, '$') END, '')), ''), '')
    ELSE CAST(j AS VARCHAR) END;

-- Strands-style content: a string holding JSON content blocks [{"text": ...}] -> their text.
CREATE OR REPLACE MACRO blocks_text(s) AS CASE
    WHEN json_type(try_cast(s AS JSON)) = 'ARRAY' THEN content_text(try_cast(s AS JSON))
    ELSE s END;

-- A flattened content attribute that holds a JSON list of typed content blocks (OpenLLMetry writes
-- list content as json.dumps: [{"type": "text", "text": ...}, {"type": "image_url", ...}]) -> the
-- text of its text blocks; any other string (a user who typed "[1, 2]") is kept as it is.
CREATE OR REPLACE MACRO typed_blocks_text(s) AS CASE
    WHEN starts_with(ltrim(s), '[') AND json_type(try_cast(s AS JSON)) = 'ARRAY'
         AND json_array_length(try_cast(s AS JSON)) > 0
         AND list_bool_and(list_transform(json_extract(try_cast(s AS JSON), '$[*]'),
                                          lambda b: json_type(b) = 'OBJECT' AND json_exists(b, '$.type')))
    THEN content_text(try_cast(s AS JSON))
    ELSE s END;

CREATE OR REPLACE MACRO chat_tool_call(id, name, arguments) AS
    json_object('id', id, 'type', 'function', 'function', json_object('name', name, 'arguments', arguments));

-- {role, content}, then tool_calls when it is a non-empty array and tool_call_id when set, as JSON text
-- (the text a json_merge_patch of the two objects gave, at a third of the cost of the GenAI message
-- conversion). Each argument is written once, tool_calls twice as before: a macro's argument is
-- pasted wherever it is named, and the nested lambdas passed in here are costly to bind.
CREATE OR REPLACE MACRO chat_message(role, content, tool_calls, tool_call_id) AS CAST(
    left(CAST(json_object('role', role, 'content', content) AS VARCHAR), -1)
    || CASE WHEN json_array_length(tool_calls) > 0 THEN ',"tool_calls":' || to_json(tool_calls) ELSE '' END
    || coalesce(',"tool_call_id":' || to_json(tool_call_id), '') || '}' AS JSON);

-- LangChain / LangSmith message types and roles -> OpenAI roles.
CREATE OR REPLACE MACRO chat_role(x) AS CASE lower(x)
    WHEN 'human' THEN 'user' WHEN 'humanmessage' THEN 'user' WHEN 'ai' THEN 'assistant'
    WHEN 'aimessage' THEN 'assistant' WHEN 'aimessagechunk' THEN 'assistant' WHEN 'model' THEN 'assistant'
    WHEN 'systemmessage' THEN 'system' WHEN 'toolmessage' THEN 'tool' WHEN 'developer' THEN 'system'
    ELSE lower(x) END;

-- OpenAI-style ({"function": {...}}) or LangChain-style ({"name", "args"}) tool calls -> OpenAI.
CREATE OR REPLACE MACRO chat_tool_calls(j) AS to_json(list_transform(json_extract(j, '$[*]'),
    lambda t: chat_tool_call(json_extract_string(t, '$.id'),
        coalesce(json_extract_string(t, '$.function.name'), json_extract_string(t, '$.name')),
        json_text(coalesce(json_extract(t, '$.function.arguments'), json_extract(t, '$.args'),
                           json_extract(t, '$.arguments'))))));

-- Any message object we meet (OpenAI chat, LangChain serialised {"lc":1,"id":[...,"HumanMessage"],
-- "kwargs":{...}}, GenAI <= 1.36 event bodies) -> OpenAI chat shape; default_role when it has none.
CREATE OR REPLACE MACRO chat_from_any(m, default_role) AS chat_message(
    chat_role(coalesce(json_extract_string(m, '$.role'),
                       CASE WHEN json_exists(m, '$.lc') THEN json_extract_string(m, '$.id[#-1]') END,
                       json_extract_string(m, '$.type'), default_role)),
    content_text(coalesce(json_extract(m, '$.kwargs.content'), json_extract(m, '$.content'), json_extract(m, '$.text'))),
    chat_tool_calls(json_or_text(coalesce(json_extract(m, '$.kwargs.tool_calls'), json_extract(m, '$.tool_calls')))),
    coalesce(json_extract_string(m, '$.kwargs.tool_call_id'), json_extract_string(m, '$.tool_call_id'),
             CASE WHEN default_role = 'tool' THEN json_extract_string(m, '$.id') END));

-- GenAI >= 1.37 messages ([{"role", "parts": [{"type": "text"|"tool_call"|"tool_call_response", ...}],
-- "finish_reason"}]) are cast once to a struct list (one JSON parse), then handled as structs.
CREATE OR REPLACE MACRO genai_messages(j) AS try_cast(j AS STRUCT(
    "role" VARCHAR, parts STRUCT("type" VARCHAR, "content" VARCHAR, id VARCHAR, "name" VARCHAR,
                                 arguments JSON, response JSON, result JSON)[], finish_reason VARCHAR)[]);
CREATE OR REPLACE MACRO parts_text(m) AS CASE WHEN len(m.parts) = 1  -- most messages: no lambdas
    THEN CASE WHEN m.parts[1]."type" = 'text' THEN nullif(m.parts[1]."content", '') END
    ELSE nullif(array_to_string(list_transform(
        list_filter(m.parts, lambda p: p."type" = 'text'), lambda p: p."content"), ''), '') END;
CREATE OR REPLACE MACRO parts_tool_calls(m) AS to_json(list_transform(
    list_filter(m.parts, lambda p: p."type" = 'tool_call'),
    lambda p: chat_tool_call(p.id, p."name", json_text(p.arguments))));
CREATE OR REPLACE MACRO parts_have(m, t) AS list_contains(list_transform(m.parts, lambda p: p."type"), t);
-- one GenAI message as a chat message with `role`: a message without tool calls (most) is written from a
-- struct, the text chat_message gives it; chat_message (its tool calls built twice, then the text
-- parsed) only for those with tool calls (600k spans' input messages 2.84 -> 2.37 CPU s, bench/pieces/llm_calls.py)
CREATE OR REPLACE MACRO genai_chat_message(role, m) AS CASE
    WHEN parts_have(m, 'tool_call') THEN chat_message(role, parts_text(m), parts_tool_calls(m), NULL)
    ELSE to_json({'role': role, 'content': parts_text(m)}) END;
-- one GenAI message -> a list of chat messages (a tool message holds one result per call)
CREATE OR REPLACE MACRO parts_messages(m) AS CASE
    WHEN parts_have(m, 'tool_call_response')
    THEN list_transform(list_filter(m.parts, lambda p: p."type" = 'tool_call_response'),
        lambda p: chat_message('tool', json_text(coalesce(p.response, p.result)), NULL, p.id))
    ELSE [genai_chat_message(m."role", m)] END;

-- Flattened indexed attributes (OpenInference llm.input_messages.{i}..., OpenLLMetry gen_ai.prompt.{i}...):
-- the sorted distinct indices i that follow `prefix` among the keys ks.
CREATE OR REPLACE MACRO flat_indices(ks, prefix) AS list_sort(list_distinct(list_filter(list_transform(
    list_filter(ks, lambda k: starts_with(k, prefix)),
    lambda k: try_cast(split_part(k[length(prefix) + 1:], '.', 1) AS INTEGER)), lambda i: i IS NOT NULL)));

-- Token ids of docs/lake.md, token ids (spanrl.*) and Agent Lightning's plain names.
CREATE OR REPLACE MACRO attr_int_list(a, k1, k2) AS
    try_cast(json_or_text(coalesce(json_extract(a, '$."' || k1 || '"'), json_extract(a, '$."' || k2 || '"'))) AS INTEGER[]);

-- One flattened attribute of a span as text (an OpenInference or OpenLLMetry message field): from mk / mv,
-- its keys and values from one parse of the attributes (llm_calls/openinference.sql, openllmetry.sql), else
-- (attributes that repeat a key do not parse as a map) from the text a, as json_extract_string reads it.
CREATE OR REPLACE MACRO flat_attr(a, mk, mv, k) AS CASE
    WHEN mk IS NULL THEN json_extract_string(a, '$."' || k || '"') ELSE mv[list_position(mk, k)] END;
-- ... as JSON, JSON text inside a string read as that JSON: json_or_text(json_extract(a, k)) for the paths
-- read into it afterwards, without a parse of the whole attribute text per key
CREATE OR REPLACE MACRO flat_json(a, mk, mv, k) AS CASE
    WHEN mk IS NULL THEN json_or_text(json_extract(a, '$."' || k || '"'))
    ELSE coalesce(try_cast(mv[list_position(mk, k)] AS JSON), to_json(mv[list_position(mk, k)])) END;
-- One OpenInference flattened message under prefix p (e.g. 'llm.input_messages.0.message.'):
-- role (default_role when absent), content or its text parts, tool calls, tool_call_id. Read with flat_attr:
-- a parse of the attribute text per message and field made a span's cost grow with the square of its
-- conversation (bench/real_night.py's 60k-span night: 9.3k OpenInference calls 1.39 -> 0.71 CPU s).
CREATE OR REPLACE MACRO openinference_message(a, mk, mv, ks, p, default_role) AS chat_message(
    coalesce(flat_attr(a, mk, mv, p || 'role'), default_role),
    coalesce(flat_attr(a, mk, mv, p || 'content'),
             nullif(array_to_string(list_transform(flat_indices(ks, p || 'contents.'),
                 lambda j: flat_attr(a, mk, mv, p || 'contents.' || j || '.message_content.text')), ''), '')),
    to_json(list_transform(flat_indices(ks, p || 'tool_calls.'), lambda k: chat_tool_call(
        flat_attr(a, mk, mv, p || 'tool_calls.' || k || '.tool_call.id'),
        flat_attr(a, mk, mv, p || 'tool_calls.' || k || '.tool_call.function.name'),
        flat_attr(a, mk, mv, p || 'tool_calls.' || k || '.tool_call.function.arguments')))),
    flat_attr(a, mk, mv, p || 'tool_call_id'));

-- ---------------------------------------------------------------------------------------------
-- Whole request / response bodies (llm_calls/payload.sql): OpenAI chat and Responses API,
-- Anthropic Messages (content blocks), Gemini (contents / parts, snake_case or camelCase),
-- LangChain-serialised messages. Each macro takes JSON and never fails on an unknown shape.

-- Text of a content value: a string, or its text parts joined ({"type": "text" | "input_text" |
-- "output_text", "text"}, pydantic-ai {"kind": "text"}, a Gemini part {"text"} that is not a
-- "thought", a bare string); thinking, images and tool blocks are left out.
CREATE OR REPLACE MACRO body_text(j) AS CASE
    WHEN j IS NULL OR json_type(j) = 'NULL' THEN NULL
    WHEN json_type(j) = 'VARCHAR' THEN json_extract_string(j, '$')
    WHEN json_type(j) = 'ARRAY' THEN nullif(array_to_string(list_transform(json_extract(j, '$[*]'), lambda p: coalesce(CASE
        WHEN json_type(p) = 'VARCHAR' THEN json_extract_string(p, '$')
        WHEN coalesce(json_extract_string(p, '$.type'), json_extract_string(p, '$.kind'), 'text') IN ('text', 'input_text', 'output_text')
             AND coalesce(json_extract_string(p, '$.thought'), 'false') <> 'true'
        THEN json_extract_string(p, '$.text') END, '')), ''), '')
    ELSE CAST(j AS VARCHAR) END;

-- A system prompt: Anthropic "system" (string or text blocks), Gemini system_instruction (string,
-- a Content {"parts": [...]}, a Part {"text"}, or a list of them), OpenAI Responses "instructions".
CREATE OR REPLACE MACRO body_system_text(j) AS
    body_text(CASE WHEN json_type(j) = 'OBJECT' THEN coalesce(json_extract(j, '$.parts'), to_json([j])) ELSE j END);

-- One content block / part / Responses item: is it a tool call, a tool result?
CREATE OR REPLACE MACRO block_fn(b, k) AS coalesce(json_extract(b, '$.' || k), json_extract(b, '$.' || CASE k
    WHEN 'function_call' THEN 'functionCall' WHEN 'function_response' THEN 'functionResponse' END));
CREATE OR REPLACE MACRO block_is_call(b) AS
    coalesce(json_extract_string(b, '$.type') IN ('tool_use', 'function_call'), false) OR block_fn(b, 'function_call') IS NOT NULL;
CREATE OR REPLACE MACRO block_is_result(b) AS
    coalesce(json_extract_string(b, '$.type') IN ('tool_result', 'function_call_output'), false)
    OR block_fn(b, 'function_response') IS NOT NULL;
-- A tool call block -> OpenAI tool call: Anthropic tool_use {id, name, input}, Responses function_call
-- {call_id, name, arguments}, Gemini {function_call: {id?, name, args}} (no id: the name stands in).
CREATE OR REPLACE MACRO block_tool_call(b) AS chat_tool_call(
    CASE WHEN json_extract_string(b, '$.type') = 'function_call'
         THEN coalesce(json_extract_string(b, '$.call_id'), json_extract_string(b, '$.id'))
         ELSE coalesce(json_extract_string(b, '$.id'), json_extract_string(block_fn(b, 'function_call'), '$.id'),
                       json_extract_string(block_fn(b, 'function_call'), '$.name')) END,
    coalesce(json_extract_string(b, '$.name'), json_extract_string(block_fn(b, 'function_call'), '$.name')),
    json_text(coalesce(json_extract(b, '$.input'), json_extract(b, '$.arguments'), json_extract(block_fn(b, 'function_call'), '$.args'))));
-- A tool result block -> an OpenAI tool message: Anthropic tool_result {tool_use_id, content},
-- Responses function_call_output {call_id, output}, Gemini {function_response: {id?, name, response}}.
CREATE OR REPLACE MACRO block_tool_message(b) AS chat_message('tool',
    CASE WHEN json_extract_string(b, '$.type') = 'tool_result' THEN body_text(json_extract(b, '$.content'))
         ELSE json_text(coalesce(json_extract(b, '$.output'), json_extract(block_fn(b, 'function_response'), '$.response'))) END,
    NULL,
    coalesce(json_extract_string(b, '$.tool_use_id'), json_extract_string(b, '$.call_id'),
             json_extract_string(block_fn(b, 'function_response'), '$.id'), json_extract_string(block_fn(b, 'function_response'), '$.name')));

-- A string that should have been JSON (and did not parse) is malformed, not a prompt.
CREATE OR REPLACE MACRO body_is_broken(j) AS json_type(j) = 'VARCHAR' AND regexp_matches(json_extract_string(j, '$'), '^\s*[\[{]');

-- Tool definitions, as OpenAI {"type": "function", "function": {name, description, parameters}}, from:
-- OpenAI (kept as it is), flat {type?, name, description, parameters | input_schema (Anthropic) |
-- inputSchema (MCP, Vercel) | parameters_json_schema (pydantic-ai)}, Gemini {function_declarations:
-- [...]}; entries may be JSON text (Python SDK attributes). Anything else (no name) is left out.
CREATE OR REPLACE MACRO chat_tools(j) AS nullif(to_json(flatten(list_transform(
    list_transform(json_extract(j, '$[*]'), lambda t: json_or_text(t)), lambda t: CASE
    WHEN json_type(t) <> 'OBJECT' THEN []
    WHEN json_exists(t, '$.function') THEN [t]
    WHEN coalesce(json_extract(t, '$.function_declarations'), json_extract(t, '$.functionDeclarations')) IS NOT NULL
    THEN list_transform(json_extract(coalesce(json_extract(t, '$.function_declarations'), json_extract(t, '$.functionDeclarations')), '$[*]'),
        lambda d: json_object('type', 'function', 'function', json_object('name', json_extract_string(d, '$.name'),
            'description', json_extract_string(d, '$.description'),
            'parameters', coalesce(json_extract(d, '$.parameters'), json_extract(d, '$.parameters_json_schema'),
                                   json_extract(d, '$.parametersJsonSchema')))))
    WHEN json_exists(t, '$.name') THEN [json_object('type', coalesce(json_extract_string(t, '$.type'), 'function'),
        'function', json_object('name', json_extract_string(t, '$.name'), 'description', json_extract_string(t, '$.description'),
            'parameters', coalesce(json_or_text(json_extract(t, '$.parameters')), json_extract(t, '$.input_schema'),
                                   json_or_text(json_extract(t, '$.inputSchema')), json_extract(t, '$.parameters_json_schema'))))]
    ELSE [] END))), '[]');

-- The agent a span names (the agent_name of the LLM calls at or below it; NULL when it names none):
-- gen_ai.agent.name, agent.name (Agent Lightning, AgentOps), traceloop.span.kind = agent (its entity
-- name), "invoke_agent X" span names, OpenInference AGENT / gen_ai.operation.name = invoke_agent
-- (the span name), a LangGraph node: OpenInference keeps LangChain's run metadata as JSON text in
-- `metadata` (on the node's span and on the LLM span itself), OpenLLMetry as association
-- properties, LangSmith flat. x: the span's values of agent_attribute_keys(), in that order (the
-- first values of _span_facts.v: span_fact_keys() starts with them), parsed once per span.
CREATE OR REPLACE MACRO spanrl_span_agent(span_name, x) AS
    coalesce(agent_attr(x, 'gen_ai.agent.name'), agent_attr(x, 'agent.name'),
             CASE WHEN agent_attr(x, 'traceloop.span.kind') = 'agent' THEN agent_attr(x, 'traceloop.entity.name') END,
             nullif(regexp_extract(span_name, '^invoke_agent (.+)$', 1), ''),
             CASE WHEN agent_attr(x, 'openinference.span.kind') = 'AGENT'
                    OR agent_attr(x, 'gen_ai.operation.name') = 'invoke_agent' THEN span_name END,
             agent_attr(x, 'traceloop.association.properties.langgraph_node'),
             agent_attr(x, 'langsmith.metadata.langgraph_node'),
             CASE WHEN contains(agent_attr(x, 'metadata'), 'langgraph_node')  -- cheap test before the parse
                  THEN json_extract_string(try_cast(agent_attr(x, 'metadata') AS JSON), '$.langgraph_node') END);

-- Restored prompts (llm_calls.sql): is message i of msgs a tool result whose dropped tool call goes back
-- in front of it? src_of maps a tool-call id to {src: the span that made it, msg: its response}; only the
-- first of consecutive tool results answering the same response gets it.
CREATE OR REPLACE MACRO restore_here(msgs, src_of, i) AS
    json_extract_string(msgs[i], '$.role') = 'tool'
    AND src_of[json_extract_string(msgs[i], '$.tool_call_id')] IS NOT NULL
    AND NOT coalesce(i > 1 AND json_extract_string(msgs[i - 1], '$.role') = 'tool'
                     AND src_of[json_extract_string(msgs[i - 1], '$.tool_call_id')].src
                         = src_of[json_extract_string(msgs[i], '$.tool_call_id')].src, false);

-- Cross-trace twins (llm_calls.sql): what identifies a call's content whatever convention rendered
-- it. A message's text (a string, or its text parts joined); the output fingerprint: that text plus
-- each tool call's name and arguments (JSON minified, so `{"a": 1}` and `{"a":1}` are one); the input
-- fingerprint: the last prompt message's role and text (conventions differ in where they put the
-- system prompt and in restored messages, never in the message a request ends with).
CREATE OR REPLACE MACRO spanrl_msg_text(m) AS CASE WHEN json_type(m, '$.content') = 'ARRAY'
    THEN array_to_string(json_extract_string(m, '$.content[*].text'), '') ELSE coalesce(json_extract_string(m, '$.content'), '') END;
-- A tool call's arguments as the fingerprint sees them: JSON minified (json(), which minifies, under try();
-- a cast to JSON keeps the text as it is); text that is not JSON as it is (the CAST to VARCHAR keeps the
-- coalesce a VARCHAR: typed JSON, its '' fallback was cast to JSON and stopped the query); no arguments, an empty string and
-- `{}` are one (OpenInference leaves the attribute out of a call made with `{}`, a handoff's, while
-- the GenAI instrumentation of the same request writes `{}`).
CREATE OR REPLACE MACRO spanrl_args_fp(a) AS CASE
    WHEN a IS NULL OR trim(a) IN ('', '{}') THEN ''
    ELSE coalesce(CAST(try(json(a)) AS VARCHAR), a) END;
CREATE OR REPLACE MACRO spanrl_output_fp(m) AS md5(spanrl_msg_text(m) || chr(31) || coalesce(array_to_string(list_transform(
    json_extract(m, '$.tool_calls[*].function'),
    lambda f: coalesce(f->>'name', '') || chr(30) || spanrl_args_fp(f->>'arguments')), chr(29)), ''));
CREATE OR REPLACE MACRO spanrl_input_fp(msgs) AS
    md5(coalesce(json_extract_string(msgs, '$[#-1].role'), '') || chr(31) || spanrl_msg_text(json_extract(msgs, '$[#-1]')));

-- coverage.sql's `unreadable` (issue 42): the call attributes read as numbers, and the content attributes
-- some convention parses as JSON, with what is wrong with a value that was read as NULL instead.
CREATE OR REPLACE MACRO coverage_number_keys() AS [
    'gen_ai.usage.input_tokens', 'gen_ai.usage.prompt_tokens', 'gen_ai.usage.output_tokens',
    'gen_ai.usage.completion_tokens', 'gen_ai.request.temperature'];
CREATE OR REPLACE MACRO coverage_content_key(k) AS k IN (
    'gen_ai.input.messages', 'gen_ai.output.messages', 'gen_ai.system_instructions', 'gen_ai.tool.definitions',
    'input.value', 'output.value', 'llm.invocation_parameters', 'mlflow.spanInputs', 'mlflow.spanOutputs',
    'langfuse.observation.input', 'langfuse.observation.output', 'gcp.vertex.agent.llm_request',
    'gcp.vertex.agent.llm_response', 'ai.prompt.messages', 'ai.response.toolCalls', 'events', 'all_messages_events')
    OR (starts_with(k, 'llm.tools.') AND ends_with(k, '.tool.json_schema'))
    OR ends_with(k, '.tool_call.function.arguments');
-- A content value's problem, or NULL when it reads: JSON text that does not parse, or (for the GenAI message
-- and definition lists) JSON of another shape. Free text (input.value of a text/plain span) is fine.
CREATE OR REPLACE MACRO coverage_content_problem(k, t) AS CASE
    WHEN t IS NULL THEN NULL
    WHEN trim(t) = '' THEN CASE WHEN k IN ('gen_ai.input.messages', 'gen_ai.output.messages', 'gen_ai.tool.definitions',
                                           'gen_ai.system_instructions') THEN 'empty' END
    WHEN try_cast(t AS JSON) IS NULL THEN CASE
        WHEN regexp_matches(ltrim(t), '^[\[{"]') OR k IN ('gen_ai.input.messages', 'gen_ai.output.messages',
                                                         'gen_ai.tool.definitions') THEN 'not JSON' END
    WHEN k IN ('gen_ai.input.messages', 'gen_ai.output.messages', 'gen_ai.tool.definitions')
         AND json_type(try_cast(t AS JSON)) <> 'ARRAY' THEN 'not a JSON list'
    WHEN k IN ('gen_ai.input.messages', 'gen_ai.output.messages', 'gen_ai.tool.definitions')
         AND NOT list_bool_and(list_transform(json_extract(try_cast(t AS JSON), '$[*]'), lambda m: json_type(m) = 'OBJECT'))
         THEN 'not a list of objects'
    END;
