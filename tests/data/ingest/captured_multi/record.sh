#!/bin/bash
# Record one LangGraph agent under several OTel instrumentations at once, for
# tests/ingest/test_captured_multi.py (run once, by hand, from the project's .venv; no network needed).
#   bash tests/data/ingest/captured_multi/record.sh
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd); ROOT=$(cd "$HERE/../../../.." && pwd); TMP=$(mktemp -d)
PY="$ROOT/.venv/bin/python"
"$PY" "$HERE/../captured_openlit/serve_fake.py" "$TMP/url" "$TMP/exchanges.json" & FAKE=$!
"$ROOT/.venv/bin/spanrl" collector --embedded --data "$TMP/data" --http-port 14518 --grpc-port 14517 & COL=$!
sleep 4
export OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:14518 PYTHONWARNINGS=ignore
URL=$(cat "$TMP/url")
# live traffic (no rollout key): OpenInference LangChain + GenAI openai-v2 with content capture off
# (as it ships), then two identical requests at once
"$PY" "$HERE/agent.py" "$URL" --instrument langchain,openai-v2 --parallel
# two attempts of one task at the same time, as `spanrl rollout` runs them (it sets the resource):
# three instrumentations each, content on everywhere
for a in 0 1; do
  OTEL_RESOURCE_ATTRIBUTES="spanrl.rollout_id=multi-a$a,spanrl.task_id=weather" \
    "$PY" "$HERE/agent.py" "$URL" --instrument langchain,openai-v2,openinference-openai --v2-content & P[$a]=$!
done
wait "${P[0]}" "${P[1]}"
# the standard zero-code path: opentelemetry-instrument with every installed instrumentor (OpenInference
# LangChain and openai, openai-v2, OpenLLMetry openai, ...), an agent with no telemetry code at all;
# two attempts at once (spanrl rollout's resource) and one live run
ZC=(env OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf OTEL_SERVICE_NAME=zero-code-agent OTEL_METRICS_EXPORTER=none
    LANGSMITH_TRACING=false "$ROOT/.venv/bin/opentelemetry-instrument" "$PY" "$HERE/agent.py" "$URL" --instrument zero-code)
for a in 0 1; do OTEL_RESOURCE_ATTRIBUTES="spanrl.rollout_id=zero-a$a,spanrl.task_id=weather" "${ZC[@]}" & P[$a]=$!; done
wait "${P[0]}" "${P[1]}"
"${ZC[@]}"
sleep 2; kill -TERM $COL $FAKE; wait $COL $FAKE || true
rm -f "$HERE"/traces-*.jsonl "$HERE"/logs-*.jsonl
cp "$TMP/data/otel/traces.jsonl" "$HERE/traces-2026-11-26T16-50-00.000.jsonl"
cp "$TMP/exchanges.json" "$HERE/exchanges.json"
"$ROOT/.venv/bin/pip" list 2>/dev/null | grep -iE "^(openinference-instrumentation-langchain|openinference-instrumentation-openai|opentelemetry-instrumentation-openai-v2|opentelemetry-instrumentation-openai|opentelemetry-util-genai|opentelemetry-distro|langgraph|langchain-openai|openai|opentelemetry-sdk) " > "$HERE/versions.txt" || true
rm -rf "$TMP"
