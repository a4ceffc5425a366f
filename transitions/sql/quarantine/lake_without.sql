-- name: lake_without
-- lake_catalog: the lake connection's database (quarantine.py names it): a temp view named spans that read
-- main.spans would read itself.
-- The traces a build after a quarantine reads (quarantine.restrict_traces, as _lake_traces): every trace
-- of the lake's spans and log records but those of _q_traces.
SELECT trace_id FROM lake_catalog.main.spans WHERE trace_id IS NOT NULL
UNION
SELECT trace_id FROM lake_catalog.main.logs WHERE coalesce(trace_id, '') <> ''
EXCEPT
SELECT trace_id FROM _q_traces
