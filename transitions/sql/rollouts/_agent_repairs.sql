-- name: _agent_repairs
-- Hierarchy repair (Agent Lightning's repair_hierarchy, for agent attribution): an LLM call with no
-- agent at or above it (its parent is the session root, or no ancestor names an agent: context lost
-- across a thread or an async task) whose time lies inside an agent span of the same trace is
-- attributed to the tightest such span (shortest duration; spanrl_span_agent says which spans name
-- an agent). Overlap rule: when the tightest enclosing agent spans name different agents (two agents
-- run over the call with equal durations) the call stays unattributed and counts as ambiguous; a
-- shorter span always wins over a longer one, nested or merely overlapping. Calls that already have
-- an agent keep it. Off when the variable spanrl_hierarchy_repair is false (--no-hierarchy-repair).
-- One row per candidate call: agent_name (NULL when none encloses it or it is ambiguous), ambiguous.
-- reads: _span_facts, llm_calls
-- creates: _agent_repairs
WITH candidates AS (
    SELECT trace_id, span_id, start_ns, end_ns
    FROM llm_calls
    WHERE agent_name IS NULL AND coalesce(getvariable('spanrl_hierarchy_repair'), true)
),
agent_spans AS (
    SELECT trace_id, span_id, start_ns, end_ns, agent
    FROM (SELECT s.trace_id, s.span_id, s.start_ns, s.end_ns, s.agent
          FROM _span_facts AS s SEMI JOIN candidates AS c ON c.trace_id = s.trace_id
          ANTI JOIN llm_calls AS l ON l.trace_id = s.trace_id AND l.span_id = s.span_id)
    WHERE agent IS NOT NULL
),
enclosing AS (
    SELECT c.trace_id, c.span_id, a.agent, a.end_ns - a.start_ns AS duration
    FROM candidates AS c
    JOIN agent_spans AS a ON a.trace_id = c.trace_id AND a.start_ns <= c.start_ns AND a.end_ns >= c.end_ns
    QUALIFY duration = min(duration) OVER (PARTITION BY c.trace_id, c.span_id)
)
SELECT trace_id, span_id,
       CASE WHEN count(DISTINCT agent) = 1 THEN any_value(agent) END AS agent_name,
       count(DISTINCT agent) > 1 AS ambiguous
FROM enclosing
GROUP BY trace_id, span_id
