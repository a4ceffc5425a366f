"""The span facts (ingest/sql/span_facts.sql): the scan, the one parse for the attribute values, the
second for the attribute keys, the agent, the small-span copies."""

BEFORE = "TEMP TABLE _span_facts AS"
VARIANTS = {
    "the statement's query": lambda q: "SELECT count(*), sum(hash(COLUMNS(*))) FROM (" + q + ")",
    "scan (attributes, events, resource)": "SELECT count(*), sum(strlen(CAST(attributes AS VARCHAR))), "
                                           "sum(strlen(CAST(events AS VARCHAR))), sum(strlen(CAST(resource AS VARCHAR))) FROM spans",
    "attribute values (one parse)": "SELECT sum(len(attr_values(attributes, span_fact_keys()))) FROM spans",
    "attribute keys (a second parse)": "SELECT sum(strlen(array_to_string(json_keys(attributes), chr(31)))) FROM spans",
    "agent": "SELECT count(spanrl_span_agent(\"name\", attr_values(attributes, span_fact_keys()))) FROM spans",
}
