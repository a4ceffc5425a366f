-- name: mapped_convention
-- A [[conventions]] mapping of spanrl.toml (ingest/mapped.py) as a convention: table macro over
-- `spans`, mapping = the mapping as JSON: name, match_path / match_text (the attribute that marks a call),
-- and per field (prompt, response, tools, model, prompt_token_ids, response_token_ids) its place
-- {attr: JSON path over the attributes, path: JSON path inside that value (JSON text is parsed)}.
-- prompt: a message list (OpenAI, LangChain or GenAI-event shaped messages) or one string (a user
-- message); response: a message, a list (its last one) or a string (the assistant's text).
-- One field k of mapping m read from the attributes a (the mapping goes in whole: this DuckDB does not
-- substitute a table macro's parameter inside an expression handed to another macro).
CREATE OR REPLACE MACRO mapped_value(a, m, k) AS CASE
    WHEN json_extract_string(m, '$.' || k || '.attr') IS NULL THEN NULL
    WHEN json_extract_string(m, '$.' || k || '.path') IS NULL
    THEN json_or_text(json_extract(a, json_extract_string(m, '$.' || k || '.attr')))
    ELSE json_extract(json_or_text(json_extract(a, json_extract_string(m, '$.' || k || '.attr'))),
                      json_extract_string(m, '$.' || k || '.path')) END;

CREATE OR REPLACE MACRO mapped_convention(mapping) AS TABLE
SELECT trace_id, span_id, mapping ->> '$.name' AS convention,
       CASE WHEN json_type(p) = 'ARRAY' THEN to_json(list_transform(json_extract(p, '$[*]'), lambda x: chat_from_any(x, 'user')))
            WHEN p IS NOT NULL AND json_type(p) <> 'NULL' THEN to_json([chat_message('user', json_text(p), NULL, NULL)]) END
           AS input_messages,
       CASE WHEN json_type(r) = 'OBJECT' THEN chat_from_any(r, 'assistant')
            WHEN json_type(r) = 'ARRAY' AND json_array_length(r) > 0 THEN chat_from_any(json_extract(r, '$[#-1]'), 'assistant')
            WHEN r IS NOT NULL AND json_type(r) NOT IN ('NULL', 'ARRAY') THEN chat_message('assistant', json_text(r), NULL, NULL) END
           AS output_message,
       chat_tools(t) AS tools,
       json_extract_string(mo, '$') AS model,
       try_cast(pi AS INTEGER[]) AS prompt_token_ids,
       try_cast(ri AS INTEGER[]) AS response_token_ids,
       5 AS priority
FROM (SELECT trace_id, span_id,
             mapped_value(attributes, mapping, 'prompt') AS p, mapped_value(attributes, mapping, 'response') AS r,
             mapped_value(attributes, mapping, 'tools') AS t, mapped_value(attributes, mapping, 'model') AS mo,
             mapped_value(attributes, mapping, 'prompt_token_ids') AS pi,
             mapped_value(attributes, mapping, 'response_token_ids') AS ri
      FROM spans
      WHERE contains(CAST(attributes AS VARCHAR), mapping ->> '$.match_text')  -- cheap test before the JSON lookups
        AND json_exists(attributes, mapping ->> '$.match_path'))
