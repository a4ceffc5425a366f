-- name: llm_calls_agent_lightning
-- Spans that carry token ids (docs/lake.md, token ids: spanrl.prompt_token_ids,
-- spanrl.response_token_ids, spanrl.response_logprobs; Agent Lightning's prompt_token_ids /
-- response_token_ids), e.g. the serving engine's own span. Alone they are a call without messages;
-- next to a client span (parent/child or same gen_ai.response.id) they only add the token ids.
SELECT trace_id, span_id, 'token_ids' AS convention,
       NULL::JSON AS input_messages, NULL::JSON AS output_message, NULL::JSON AS tools, NULL AS finish_reason,
       -- (read from the attributes by llm_calls.sql; typed here so every stack has the columns a
       -- [[conventions]] mapping may fill)
       NULL::INTEGER[] AS prompt_token_ids, NULL::INTEGER[] AS response_token_ids,
       9 AS priority
FROM _llm_spans
WHERE contains(CAST(attributes AS VARCHAR), 'token_ids')  -- cheap test before the JSON lookups
  AND (json_exists(attributes, '$."spanrl.prompt_token_ids"') OR json_exists(attributes, '$."spanrl.response_token_ids"')
   OR json_exists(attributes, '$.prompt_token_ids') OR json_exists(attributes, '$.response_token_ids'))
