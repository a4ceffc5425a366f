#!/bin/bash
# Record LiteLLM's real spans for tests/ingest/test_captured_litellm.py (run once, by hand; needs the
# network for pip). The agent runs in its own venv (litellm is not a project dependency); the fake
# server (../captured_openlit/serve_fake.py) and the collector run from the project's .venv.
#   bash tests/data/ingest/captured_litellm/record.sh
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd); ROOT=$(cd "$HERE/../../../.." && pwd); TMP=$(mktemp -d)
python3 -m venv "$TMP/venv"
"$TMP/venv/bin/pip" install -q "litellm==1.106.2" mcp "opentelemetry-sdk==1.45.2" "opentelemetry-exporter-otlp-proto-http==1.45.2"
"$ROOT/.venv/bin/python" "$HERE/../captured_openlit/serve_fake.py" "$TMP/url" "$TMP/exchanges.json" & FAKE=$!
"$ROOT/.venv/bin/spanrl" collector --embedded --data "$TMP/data" --http-port 14338 --grpc-port 14337 & COL=$!
sleep 4
"$TMP/venv/bin/python" "$HERE/agent.py" http://127.0.0.1:14338 "$TMP/url"
sleep 2; kill -TERM $COL $FAKE; wait $COL $FAKE || true
cp "$TMP/data/otel/traces.jsonl" "$HERE/traces-2026-11-23T23-20-00.000.jsonl"
cp "$TMP/exchanges.json" "$HERE/exchanges.json"
"$TMP/venv/bin/pip" list 2>/dev/null | grep -iE "^(litellm|openai|opentelemetry-sdk) " > "$HERE/versions.txt"
rm -rf "$TMP"
