#!/usr/bin/env bash
# phase-report.sh DIR summarizes the phases hack/phase.sh recorded in DIR:
# each phase's time, the total, the wall time of each test package, the
# count of tests and subtests that ran (from go test -v output), and the
# ten slowest e2e tests.
set -euo pipefail
dir=$1
[[ -f $dir/phases ]] || exit 0
echo "== phases"
# The total is the wall time from the first start to the last end: a phase
# that runs beside another (testbin beside unit) is not counted twice.
awk '{ printf "%-12s %4dm%02ds  exit %s\n", $1, $2 / 60, $2 % 60, $3
    if (first == "" || $4 < first) first = $4
    if ($5 > last) last = $5 }
  END { total = last - first; printf "%-12s %4dm%02ds (wall)\n", "total", total / 60, total % 60 }' "$dir/phases"
logs=("$dir"/*.log)
echo "== test packages, slowest first (seconds)"
grep -hE '^(ok|FAIL)[[:space:]]+[^[:space:]]+[[:space:]]+[0-9.]+s' "${logs[@]}" |
  awk '{ sub(/s$/, "", $3); printf "%9.1f  %s\n", $3, $2 }' | sort -rn | head -n 15
echo "== tests that ran (go test -v): top-level, subtests"
top=$(cat "${logs[@]}" | grep -cE '^--- (PASS|FAIL|SKIP): ' || true)
sub=$(cat "${logs[@]}" | grep -cE '^[[:space:]]+--- (PASS|FAIL|SKIP): ' || true)
echo "$top $sub"
if [[ -f $dir/e2e.log ]]; then
  echo "== the ten slowest e2e tests (seconds)"
  grep -E '^--- (PASS|FAIL): ' "$dir/e2e.log" | sed -E 's/^--- [A-Z]+: ([^ ]+) \(([0-9.]+)s\)/\2 \1/' | sort -rn | head -n 10
fi
