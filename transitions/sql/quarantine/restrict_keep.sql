-- name: restrict_keep
-- lake_catalog: the lake connection's database (quarantine.py names it): a temp view named spans that read
-- main.spans would read itself.
-- A quarantine probe's lake (quarantine.py): only the traces of _q_traces, and every log record with no
-- trace id (it may name a kept call's response id). Temp views shadow the lake's inside later views.
CREATE OR REPLACE TEMP VIEW spans AS SELECT * FROM lake_catalog.main.spans WHERE trace_id IN (SELECT trace_id FROM _q_traces);
CREATE OR REPLACE TEMP VIEW logs AS
SELECT * FROM lake_catalog.main.logs WHERE trace_id IN (SELECT trace_id FROM _q_traces) OR coalesce(trace_id, '') = '';
