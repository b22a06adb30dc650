#!/usr/bin/env bash
# The whole test suite: lint, strict types, then unit, integration (real Apache Kafka) and e2e tests.
# Starts a single-node KRaft broker on 127.0.0.1 (scripts/kafka.sh) unless ALTM_TEST_KAFKA points at one,
# and stops it on exit. Extra arguments go to pytest.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
venv="$root/.venv/bin"

echo "== ruff"; "$venv/ruff" check altm tests benchmarks
echo "== mypy (strict)"; "$venv/mypy"
echo "== layers (import-linter: each layer imports only those below it)"; "$venv/lint-imports"
echo "== JSON Schemas up to date"; "$venv/altm" export-schemas --check

if [ -z "${ALTM_TEST_CHROMIUM:-}" ] && ! command -v chromium >/dev/null 2>&1; then
  echo "== installing Debian's Chromium for the memory browser tests"
  sudo=""; if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null 2>&1; then sudo="sudo -n"; fi
  { $sudo apt-get install -y -q chromium || { $sudo apt-get update -q && $sudo apt-get install -y -q chromium; }; } \
    >/tmp/altm-chromium-install.log 2>&1 \
    || echo "   could not install chromium (see /tmp/altm-chromium-install.log): the browser tests will skip"
fi

started=""
if [ -z "${ALTM_TEST_KAFKA:-}" ]; then
  echo "== starting Apache Kafka (KRaft) on 127.0.0.1"
  scripts/kafka.sh start
  started=1
  export ALTM_TEST_KAFKA="127.0.0.1:${ALTM_KAFKA_PORT:-19092}"
  # the broker's log segments, byte-searched by the crypto-shredding test
  export ALTM_TEST_KAFKA_DATA="${ALTM_KAFKA_RUN:-${ALTM_KAFKA_HOME:-.cache/kafka}/run}/data"
fi
cleanup() { if [ -n "$started" ]; then scripts/kafka.sh stop; fi; }
trap cleanup EXIT

echo "== pytest (unit, integration on $ALTM_TEST_KAFKA, e2e)"
mkdir -p "$root/.cache"
export ALTM_TEST_HANG_LOG="$root/.cache/test-hang.log"  # a test over ALTM_TEST_TIMEOUT_S (600) ends the run here
status=0
"$venv/pytest" tests "$@" || status=$?
if [ "$status" != 0 ] && [ -s "$ALTM_TEST_HANG_LOG" ]; then
  echo "== a test ran over ${ALTM_TEST_TIMEOUT_S:-600} s and was taken for a hang; every thread's stack:"
  cat "$ALTM_TEST_HANG_LOG"
fi
exit "$status"
