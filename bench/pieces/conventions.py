"""The LLM-call conventions one by one (ingest/sql/llm_calls/*.sql, the views llm_calls.sql stacks): what
reading each costs over the night, lean columns only and with its messages, and the pre-filter they share
(a convention no span of the night uses has no view: its lines say so)."""

BEFORE = "TEMP TABLE llm_calls AS"
CONVENTIONS = ("genai_latest", "genai_events", "openinference", "openllmetry", "logfire", "langsmith", "vercel_ai",
               "litellm", "agent_lightning", "payload")


VARIANTS = {"_llm_spans (the shared pre-filter)": "SELECT count(*), sum(strlen(CAST(attributes AS VARCHAR))) FROM _llm_spans"}
for _c in CONVENTIONS:
    VARIANTS[f"{_c}: lean"] = (f"SELECT count(*), count(span_id) FROM llm_calls_{_c}")
    VARIANTS[f"{_c}: with messages"] = (f"SELECT count(*), sum(strlen(CAST(input_messages AS VARCHAR))), "
                                        f"sum(strlen(CAST(output_message AS VARCHAR))) FROM llm_calls_{_c}")
