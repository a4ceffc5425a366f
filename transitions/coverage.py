"""Content coverage for stage 2's summary and manifest: LLM calls whose messages cannot be read.

An LLM call is any span a registered convention recognises as a model call (docs/lake.md, "What
counts as an LLM call"), readable or not. A call without input or output content still counts (it
is in ``llm_calls``) but gives no transition, so a rollout can end up without transitions in
silence; this module counts those calls per instrumentation scope, with the attribute keys and
event names seen on their spans (the ``coverage`` view's rows), and words the hint ``spanrl ingest``
prints.
"""

from __future__ import annotations

from typing import Any

# Which switch turns content capture on, by the convention that recognised the call.
CAPTURE_SWITCHES = {
    "genai": "set OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY (with "
             "OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental for util-genai based instrumentations)",
    "openllmetry": "set TRACELOOP_TRACE_CONTENT=true",
    "openinference": "unset OPENINFERENCE_HIDE_INPUTS / OPENINFERENCE_HIDE_OUTPUTS",
}


def coverage_hint(groups: list[dict[str, Any]]) -> str | None:
    """One short line for ``spanrl ingest`` when some calls have no readable content, else None."""
    if not groups:
        return None
    n_in = sum(g["without_input"] for g in groups)
    n_out = sum(g["without_output"] for g in groups)
    conventions = {c for g in groups for c in g["conventions"]}
    switches = [text for key, text in CAPTURE_SWITCHES.items() if any(c.startswith(key) for c in conventions)]
    scopes = ", ".join(f"{g['scope_name'] or '?'} {g['scope_version'] or ''}".strip() for g in groups[:3])
    fix = f"content capture looks disabled: {'; or '.join(switches)}" if switches else \
        "no convention read their content: map its attributes with [[conventions]] in spanrl.toml (docs/lake.md)"
    return (f"hint: {n_in} LLM call(s) without input content, {n_out} without output ({scopes}): {fix}. "
            "List them: spanrl sql \"select * from coverage\"")
