#!/usr/bin/env bash
# The phases of make test after setup and modules: the unit tests (make
# test-unit's) with the control plane's build (hack/testbin.sh) beside them,
# then the control plane's own tests and the e2e tests. On a warm machine
# the build returns at once; on a fresh one both compile for minutes
# (2026-12-06, 2 cores: unit 26m41s with the build's 28m0s beside it; no
# run one after the other was measured to compare). Each phase prints its
# time (hack/phase.sh); the build's output is printed when it ends.
#
#   GO, GOTEST_FLAGS, UNIT_TIMEOUT, E2E_TIMEOUT, E2E_PARALLEL  as make test passes them
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
GO=${GO:-go}
GOTEST_FLAGS=${GOTEST_FLAGS:-}
E2E_TIMEOUT=${E2E_TIMEOUT:-40m}
E2E_PARALLEL=${E2E_PARALLEL:-4}

log=$(mktemp)
trap 'rm -f "$log"' EXIT
hack/phase.sh testbin sh -c 'hack/testbin.sh >/dev/null' >"$log" 2>&1 &
testbin=$!
make --no-print-directory unit-phases GO="$GO" GOTEST_FLAGS="$GOTEST_FLAGS" ${UNIT_TIMEOUT:+UNIT_TIMEOUT="$UNIT_TIMEOUT"}
unit=$?
wait "$testbin"
built=$?
cat "$log"
if [[ $unit -ne 0 || $built -ne 0 ]]; then
  exit 1
fi
# shellcheck disable=SC2086 # GOTEST_FLAGS holds several flags
CONVOY_TESTBIN=$(hack/testbin.sh) exec hack/phase.sh e2e "$GO" test $GOTEST_FLAGS -timeout "$E2E_TIMEOUT" -parallel "$E2E_PARALLEL" ./internal/controlplane/... ./test/e2e/...
