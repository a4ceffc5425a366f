"""The LLM-call conventions one by one (ingest/sql/llm_calls/*.sql, the views llm_calls.sql stacks): what
reading each costs over the night, lean columns only, with its messages and with every column, and the
pre-filter they share (a convention no span of the night uses has no view: its lines say so)."""

from spanrl.ingest.views import LLM_CONVENTIONS as CONVENTIONS

BEFORE = "TEMP TABLE llm_calls AS"


VARIANTS = {"_llm_spans (the shared pre-filter)": "SELECT count(*), sum(strlen(CAST(attributes AS VARCHAR))) FROM _llm_spans"}
for _c in CONVENTIONS:
    VARIANTS[f"{_c}: lean"] = (f"SELECT count(*), count(span_id) FROM llm_calls_{_c}")
    VARIANTS[f"{_c}: with messages"] = (f"SELECT count(*), sum(strlen(CAST(input_messages AS VARCHAR))), "
                                        f"sum(strlen(CAST(output_message AS VARCHAR))) FROM llm_calls_{_c}")
    VARIANTS[f"{_c}: every column"] = f"SELECT count(*), max(COLUMNS(*)::VARCHAR) FROM llm_calls_{_c}"
