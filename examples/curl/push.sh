#!/bin/sh
# Pushes one alert to the on-call engineer in its own shape (the generic normaliser), firing or
# resolved: the smallest way to see an alert get in, and a start for scripts and tools that have
# no Alertmanager-style webhook.
#
#   SERVICE_INGEST_TOKEN=... ./push.sh [firing|resolved] [service] [name]
#
# ONCALL_URL defaults to http://localhost:8700. The source word `curl` (any lower-case word
# works) becomes the alert's labels.siem. Fields: plugins/normalisers/generic/README.md.
set -eu
status=${1:-firing}
service=${2:-payments}
name=${3:-HighErrorRate}
: "${SERVICE_INGEST_TOKEN:?set SERVICE_INGEST_TOKEN to the service's ingest token}"
curl -sS --fail-with-body -X POST "${ONCALL_URL:-http://localhost:8700}/v1/alerts/curl" \
  -H "Authorization: Bearer $SERVICE_INGEST_TOKEN" \
  -H 'Content-Type: application/json' \
  -d "{\"name\": \"$name\", \"severity\": \"critical\", \"status\": \"$status\", \"service\": \"$service\",
       \"labels\": {\"env\": \"prod\"}, \"summary\": \"5xx rate above 5% (pushed by examples/curl/push.sh)\"}"
echo
