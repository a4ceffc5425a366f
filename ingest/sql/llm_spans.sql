-- name: _llm_spans
-- The spans that can be an LLM call under some convention of llm_calls/*.sql, found by a
-- cheap substring test on the attributes text (no JSON parse). Every convention file reads this
-- instead of `spans`, so the JSON work runs on candidates only. (A view, also for the builder: as a
-- temp table it held every candidate's attributes in memory and saved no CPU time.)
-- The test must stay a superset of every convention's own WHERE: a convention that keys on an
-- attribute not matched here must add its key below. Keys are plain ASCII, so they appear verbatim
-- in the JSON text.
SELECT * FROM spans
WHERE contains(CAST(attributes AS VARCHAR), 'gen_ai.')                   -- GenAI semconv, OpenLLMetry, LangSmith
   OR contains(CAST(attributes AS VARCHAR), 'llm.')                      -- OpenInference llm.*, llm.request.type
   OR contains(CAST(attributes AS VARCHAR), 'openinference.span.kind')
   OR contains(CAST(attributes AS VARCHAR), 'ai.prompt.messages')        -- Vercel AI SDK
   OR contains(CAST(attributes AS VARCHAR), 'request_data')              -- Logfire
   OR contains(CAST(attributes AS VARCHAR), 'token_ids')                 -- docs/lake.md, token ids, Agent Lightning
   OR contains(CAST(attributes AS VARCHAR), '"langfuse.observation.type"') -- payload: Langfuse v3 generations
   OR contains(CAST(attributes AS VARCHAR), '"mlflow.spanInputs"')       -- payload: MLflow tracing
   OR contains(CAST(attributes AS VARCHAR), '"gcp.vertex.agent.llm_request"')  -- payload: Google ADK
