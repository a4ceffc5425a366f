-- name: coverage_empty
-- coverage when no segment holds any: the columns the summary reads, no rows.
CREATE TABLE coverage AS
SELECT NULL::VARCHAR AS scope_name, NULL::VARCHAR AS scope_version, NULL::BOOLEAN AS missing_input,
       NULL::BOOLEAN AS missing_output, NULL::BOOLEAN AS missing_tool_schema, NULL::VARCHAR AS convention,
       []::VARCHAR[] AS attribute_keys, []::VARCHAR[] AS event_names
WHERE false
