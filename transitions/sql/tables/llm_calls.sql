-- name: llm_calls(${files})
-- The build's LLM calls over every segment (llm_calls.parquet).
-- reads:
-- creates: llm_calls
SELECT * FROM read_parquet(${files}, union_by_name = true)
