-- name: macros
-- The message shapes the export formats share (created once per connection). Inputs are the
-- snapshot's JSON columns: prompt_messages (a list of OpenAI chat messages), response_message (one
-- assistant message) and tools (a list of OpenAI tool definitions).

-- A message's content as plain text: a string as is; a list of parts as its text parts joined by a
-- newline (images and other non-text parts are left out: TRL's text models cannot take them).
CREATE OR REPLACE MACRO export_text(c) AS CASE json_type(c)
    WHEN 'VARCHAR' THEN json_extract_string(c, '$')
    WHEN 'ARRAY' THEN array_to_string(list_filter(
        list_transform(json_extract(c, '$[*]'),
                       lambda p: CASE WHEN json_type(p) = 'VARCHAR' THEN json_extract_string(p, '$')
                                      WHEN json_extract_string(p, 'type') IN ('text', 'input_text', 'output_text') THEN json_extract_string(p, 'text') END),
        lambda t: t IS NOT NULL), chr(10))
END;

-- One message as a typed struct (what TRL's conversational datasets hold): every message has the
-- same fields, NULL where the message has none; tool-call arguments stay a JSON string (OpenAI's).
CREATE OR REPLACE MACRO export_trl_message(m, role) AS {
    'role': coalesce(role, json_extract_string(m, 'role')),
    'content': export_text(json_extract(m, 'content')),
    'tool_calls': json_transform(json_extract(m, 'tool_calls'),
        '[{"id": "VARCHAR", "type": "VARCHAR", "function": {"name": "VARCHAR", "arguments": "VARCHAR"}}]'),
    'tool_call_id': json_extract_string(m, 'tool_call_id'),
    'name': json_extract_string(m, 'name')
};
CREATE OR REPLACE MACRO export_trl_messages(j) AS
    list_transform(json_extract(j, '$[*]'), lambda m: export_trl_message(m, NULL));

-- One message in OpenAI's fine-tuning shape: only the keys its schema allows for the role, no nulls
-- (json_merge_patch onto {} drops null members). weight (assistant only): 1 = trained on, 0 = context.
CREATE OR REPLACE MACRO export_openai_message(m, weight) AS json_merge_patch('{}', CASE json_extract_string(m, 'role')
    WHEN 'assistant' THEN json_object(
        'role', 'assistant', 'content', json_extract(m, 'content'), 'tool_calls', json_extract(m, 'tool_calls'), 'name', json_extract(m, 'name'),
        'weight', weight)
    WHEN 'tool' THEN json_object('role', 'tool', 'content', json_extract(m, 'content'), 'tool_call_id', json_extract(m, 'tool_call_id'))
    ELSE json_object('role', json_extract_string(m, 'role'), 'content', json_extract(m, 'content'), 'name', json_extract(m, 'name'))
END);

-- The reward an export ranks, filters or labels by: the column --reward-column names.
CREATE OR REPLACE MACRO export_reward(column_name, final_reward, ret, advantage) AS CASE column_name
    WHEN 'final_reward' THEN final_reward WHEN 'advantage' THEN advantage ELSE ret END;

-- Whether the engine cut the response at its token limit (OpenAI/vLLM 'length', Anthropic 'max_tokens',
-- Gemini 'MAX_TOKENS', the Responses API's 'max_output_tokens'): a half answer the imitation formats
-- must not teach as a finished turn (trainer/data.py CUT_REASONS, the same list).
CREATE OR REPLACE MACRO export_cut(finish_reason) AS
    coalesce(lower(finish_reason) IN ('length', 'max_tokens', 'max_output_tokens'), false);

-- The rows every format starts from: the snapshot with its reward and the reason a row cannot be
-- exported at all (NULL when it can).
CREATE OR REPLACE MACRO export_base(reward_column) AS TABLE
SELECT t.*,
       export_reward(reward_column, t.final_reward, t."return", t.advantage) AS reward,
       CASE WHEN NOT coalesce(json_valid(t.prompt_messages), false)
                 OR json_type(t.prompt_messages) <> 'ARRAY' OR json_array_length(t.prompt_messages) = 0
                THEN 'no prompt messages'
            WHEN NOT coalesce(json_valid(t.response_message), false) OR json_type(t.response_message) <> 'OBJECT'
                THEN 'no response message'
            WHEN t.tools IS NOT NULL AND NOT json_valid(t.tools) THEN 'tools column is not JSON'
       END AS base_reason
FROM transitions t;
