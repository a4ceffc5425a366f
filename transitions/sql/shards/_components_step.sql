-- name: _components_step
-- One round of label propagation over _trace_keys: each trace takes the smallest component label of
-- any trace sharing a key with it (repeated until nothing changes: connected traces, one label).
SELECT c.trace_id, least(c.comp, coalesce(min(k.m), c.comp)) AS comp, any_value(c.n_spans) AS n_spans
FROM _components c
LEFT JOIN _trace_keys t USING (trace_id)
LEFT JOIN (SELECT t.key, min(c.comp) AS m FROM _trace_keys t JOIN _components c USING (trace_id) GROUP BY t.key) k
    USING (key)
GROUP BY c.trace_id, c.comp
