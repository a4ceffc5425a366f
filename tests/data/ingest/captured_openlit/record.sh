#!/bin/bash
# Record OpenLIT's real spans for tests/ingest/test_captured_openlit.py (run once, by hand; needs the
# network for pip). openlit pins openai < 3, which the project's test venv does not have, so the agent
# runs in its own venv; the fake server and the collector run from the project's .venv.
#   bash tests/data/ingest/captured_openlit/record.sh
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd); ROOT=$(cd "$HERE/../../../.." && pwd); TMP=$(mktemp -d)
python3 -m venv "$TMP/venv"
"$TMP/venv/bin/pip" install -q --no-deps "openlit==1.45.0"
"$TMP/venv/bin/pip" install -q "openai<3" "opentelemetry-sdk==1.45.2" "opentelemetry-exporter-otlp-proto-http==1.45.2" \
    "opentelemetry-instrumentation==0.66b2" "opentelemetry-semantic-conventions==0.66b2" pydantic requests schedule xmltodict wrapt
"$ROOT/.venv/bin/python" "$HERE/serve_fake.py" "$TMP/url" "$TMP/exchanges.json" & FAKE=$!
"$ROOT/.venv/bin/spanrl" collector --embedded --data "$TMP/data" --http-port 14318 --grpc-port 14317 & COL=$!
sleep 4
"$TMP/venv/bin/python" "$HERE/agent.py" http://127.0.0.1:14318 "$TMP/url"
sleep 2; kill -TERM $COL $FAKE; wait $COL $FAKE || true
cp "$TMP/data/otel/traces.jsonl" "$HERE/traces-2026-11-23T22-50-00.000.jsonl"
cp "$TMP/data/otel/logs.jsonl" "$HERE/logs-2026-11-23T22-50-00.000.jsonl"
cp "$TMP/exchanges.json" "$HERE/exchanges.json"
"$TMP/venv/bin/pip" list 2>/dev/null | grep -iE "^(openlit|openai|opentelemetry-sdk) " > "$HERE/versions.txt"
rm -rf "$TMP"
