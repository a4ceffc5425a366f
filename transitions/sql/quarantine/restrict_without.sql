-- name: restrict_without
-- The lake a build after a quarantine reads (quarantine.py): every trace but those of _q_traces.
CREATE OR REPLACE TEMP VIEW spans AS
SELECT * FROM lake_catalog.main.spans WHERE trace_id IS NULL OR trace_id NOT IN (SELECT trace_id FROM _q_traces);
CREATE OR REPLACE TEMP VIEW logs AS
SELECT * FROM lake_catalog.main.logs WHERE trace_id IS NULL OR trace_id NOT IN (SELECT trace_id FROM _q_traces);
