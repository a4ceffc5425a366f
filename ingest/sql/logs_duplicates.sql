-- name: logs_duplicates(${staged}, ${lake})
-- How many staged log rows repeat a content key, within the run or against the lake.
SELECT (SELECT count(*) - count(DISTINCT log_key(s)) FROM read_parquet(${staged}) AS s)
     + (SELECT count(*) FROM read_parquet(${staged}) AS s
        WHERE log_key(s) IN (SELECT log_key(l) FROM read_parquet(${lake}) AS l)) AS duplicates
