#!/usr/bin/env bash
# phase.sh NAME COMMAND [ARG...] runs COMMAND as the phase NAME of make test
# or CI: it prints when the phase starts and how long it took. With
# CONVOY_PHASES_DIR set, the phase's output is also kept in
# $CONVOY_PHASES_DIR/NAME.log and "NAME SECONDS EXIT START END" appended to
# $CONVOY_PHASES_DIR/phases, which hack/phase-report.sh summarizes.
set -uo pipefail
name=$1
shift
start=$(date +%s)
echo "==> $name: $*"
if [[ -n ${CONVOY_PHASES_DIR:-} ]]; then
  mkdir -p "$CONVOY_PHASES_DIR"
  "$@" 2>&1 | tee "$CONVOY_PHASES_DIR/$name.log"
  status=${PIPESTATUS[0]}
else
  "$@"
  status=$?
fi
took=$(($(date +%s) - start))
printf '==> %s: %dm%02ds, exit %d\n' "$name" $((took / 60)) $((took % 60)) "$status"
if [[ -n ${CONVOY_PHASES_DIR:-} ]]; then
  echo "$name $took $status $start $((start + took))" >>"$CONVOY_PHASES_DIR/phases"
fi
exit "$status"
