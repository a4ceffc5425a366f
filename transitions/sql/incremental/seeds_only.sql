-- name: seeds_only
-- _touched := the seeds themselves, when none of them is a stored trace (closure.sql would add nothing).
CREATE OR REPLACE TEMP TABLE _touched AS SELECT DISTINCT trace_id FROM _seeds WHERE trace_id IS NOT NULL
