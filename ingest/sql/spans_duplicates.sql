-- name: spans_duplicates(${staged}, ${lake})
-- How many staged span rows repeat a key, within the run or against the lake.
-- Reads only the two key columns. Literals: ${staged}, ${lake}.
SELECT (SELECT count(*) - count(DISTINCT (trace_id, span_id)) FROM read_parquet(${staged}))
     + (SELECT count(*) FROM read_parquet(${staged}) AS s
        SEMI JOIN read_parquet(${lake}) AS l USING (trace_id, span_id)) AS duplicates
