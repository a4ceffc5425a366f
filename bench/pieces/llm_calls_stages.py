"""llm_calls (ingest/sql/llm_calls.sql) stage by stage: the statement's CTEs up to one of them, read whole
(its wide message column summed), so each line's difference from the one above is what that stage adds."""

BEFORE = "TEMP TABLE llm_calls AS"
_FINAL = "\nSELECT c.trace_id, c.span_id, c.parent_span_id"


def _upto(cte: str, columns: str = "count(*), sum(strlen(CAST(input_messages AS VARCHAR)))"):
    def variant(query: str) -> str:
        return query[:query.rindex(_FINAL)] + f"\nSELECT {columns} FROM {cte}"
    return variant


VARIANTS = {
    "conv, lean columns only": _upto("conv", "count(*), count(span_id)"),
    "tree (the spans of traces with a call)": _upto("tree", "count(*), count(agent)"),
    "walk (every member span up to its root)": _upto("walk", "count(*), max(depth)"),
    "agents": _upto("agents", "count(*), count(agent_name)"),
    "member_spans": _upto("member_spans", "count(*), count(a_provider), count(agent_name)"),
    "span_keys": _upto("span_keys", "count(*), count(own_key)"),
    "conv (the convention rows, materialized)": _upto("conv"),
    "grouped (+ member spans, agents, keys)": _upto("grouped", "count(*), count(call_key), count(agent_name)"),
    "single (+ the wide columns joined back)": _upto("single"),
    "calls (single + multi, materialized)": _upto("calls"),
    "tool_prompts (prompts with a tool result, parsed)": _upto("tool_prompts", "count(*), sum(len(listed))"),
    "restored": _upto("restored", "count(*)"),
    "the statement's query": lambda q: "SELECT count(*), sum(strlen(CAST(input_messages AS VARCHAR))) FROM ("
                                       + q + ")",
}
