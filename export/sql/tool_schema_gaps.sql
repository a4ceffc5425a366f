-- name: tool_schema_gaps
-- Transitions whose response calls tools while the row holds no tool definitions (`tools` NULL or
-- empty): the instrumentation recorded the call's tool calls but not the request's tools, so a trainer
-- sees a call to a function it was never shown. Counted per agent for the card and stderr.
SELECT coalesce(agent_name, '(no agent name)') AS agent_name, count(*) AS n
FROM transitions
WHERE coalesce(json_array_length(json_extract(response_message, '$.tool_calls')), 0) > 0
  AND coalesce(json_array_length(CAST(tools AS JSON)), 0) = 0
GROUP BY 1
ORDER BY n DESC, agent_name
