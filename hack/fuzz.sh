#!/usr/bin/env bash
# Runs each native fuzz target of the project for FUZZTIME (a duration such
# as 1m, or a count of executions such as 500x). A crash is written by Go to
# testdata/fuzz/<Target>/ in the package, which `go test` then runs as a
# regular case: that, and only that, fails this script.
#
# Go 1.26's fuzz coordinator can end a duration-bound run with a bare
# "context deadline exceeded" and no input written (golang/go#75804, fixed in
# Go 1.27): such a run is reported as a flake, not a failure. CI uses a count
# (FUZZTIME=300x), which has no deadline to race: there the same error is a
# failure like any other, since nothing excuses it.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

FUZZTIME=${FUZZTIME:-1m}
# A count such as 300x runs without a deadline, so only a duration can lose
# the race above.
timed=1
[[ $FUZZTIME =~ ^[0-9]+x$ ]] && timed=0
targets=(
  ./pkg/render:FuzzManifests ./pkg/render:FuzzMutations ./pkg/render:FuzzStoreDecode ./pkg/render:FuzzValuesFiles
  ./pkg/cluster:FuzzKubeconfig ./pkg/egress:FuzzAddressPolicy ./pkg/compare:FuzzDiff
  ./pkg/redact:FuzzRedact ./pkg/health:FuzzCompile ./pkg/truncate:FuzzString
  ./pkg/helmrepo:FuzzIndex ./pkg/archive:FuzzUnbundle ./pkg/oci:FuzzDockerConfig ./pkg/git:FuzzRefCounter
  ./pkg/health:FuzzDefaultRules ./cmd/kubectl-convoy/cmd:FuzzReadObjects
  ./pkg/kustomize:FuzzCheck ./pkg/rulecases:FuzzLoadFile ./pkg/cosign:FuzzParsePayload ./pkg/cosign:FuzzKeylessLayer
  ./pkg/view:FuzzRequest
  ./pkg/gitverify:FuzzSplit ./pkg/gitverify:FuzzParseSSHLine ./pkg/gitverify:FuzzVerifyCommit
  ./pkg/webhook:FuzzParse ./pkg/webhook:FuzzNormalize ./pkg/receiver:FuzzHandler
)
# FUZZ_JOBS targets at once, each with -parallel of the cores shared
# among them (at least 1): by default one target per 2 cores, so that a
# 2-core machine runs one at a time with both workers, and a larger one
# runs several. The output of a target is printed whole when it ends.
cores=$(nproc 2>/dev/null || echo 2)
FUZZ_JOBS=${FUZZ_JOBS:-$(( cores / 2 > 1 ? cores / 2 : 1 ))}
workers=$(( cores / FUZZ_JOBS > 1 ? cores / FUZZ_JOBS : 1 ))
results=$(mktemp -d)
trap 'rm -rf "$results"' EXIT

# Each package's fuzz test binary is built once (go test -c -fuzz: the
# coverage instrumentation of go test -fuzz), one build per core at once
# (the link, most of a warm build, runs on one), and run for each of its
# targets as go test -fuzz runs it: in the package's directory, with the
# package's cache of interesting inputs under GOCACHE/fuzz. A package of
# several targets is linked once, not once per target.
fuzzcache="$(go env GOCACHE)/fuzz"
mkdir -p "$results/bin"
declare -A built
building=0
for t in "${targets[@]}"; do
  pkg=${t%%:*}
  [[ -n ${built[$pkg]:-} ]] && continue
  bin="$results/bin/$(basename "$pkg")-$(echo "$pkg" | sha256sum | cut -c1-8).test"
  built[$pkg]=$bin
  if [[ $building -ge $cores ]]; then
    wait -n
    building=$((building - 1))
  fi
  go test -c -fuzz=. -o "$bin" "$pkg" >"$bin.out" 2>&1 &
  building=$((building + 1))
done
wait
for pkg in "${!built[@]}"; do
  if [[ ! -x ${built[$pkg]} ]]; then
    echo "FAIL: the fuzz test binary of $pkg does not build"
    cat "${built[$pkg]}.out"
    exit 1
  fi
done

# fuzz_one TARGET: runs one target and writes its report and verdict
# (0 passed, 1 failed) to $results/NAME.
fuzz_one() {
  local t=$1 pkg imp name corpus before after out status verdict=0
  pkg=${t%%:*} name=${t#*:}
  corpus="$pkg/testdata/fuzz/$name"
  before=$(ls "$corpus" 2>/dev/null | wc -l)
  imp=$(go list "$pkg")
  out=$(cd "$pkg" && "${built[$pkg]}" -test.run '^$' -test.fuzz "^$name\$" -test.fuzztime "$FUZZTIME" \
    -test.parallel "$workers" -test.fuzzcachedir "$fuzzcache/$imp" 2>&1)
  status=$?
  after=$(ls "$corpus" 2>/dev/null | wc -l)
  {
    echo "fuzz $name ($pkg) for $FUZZTIME"
    echo "$out" | grep -v '^fuzz: elapsed' | tail -n 20
    echo "$out" | grep '^fuzz: elapsed' | tail -n 1
    if [[ $status -ne 0 ]]; then
      if [[ $after -gt $before ]]; then
        echo "FAIL: $name found a failing input in $corpus"
        verdict=1
      elif [[ $timed -eq 1 ]] && grep -q 'context deadline exceeded' <<<"$out"; then
        echo "flake: $name ended with Go's fuzztime deadline race (golang/go#75804), no input written"
      else
        echo "FAIL: $name"
        verdict=1
      fi
    fi
  } > "$results/$name.out"
  echo "$verdict" > "$results/$name.verdict"
  cat "$results/$name.out"
}

echo "fuzz: ${#targets[@]} targets, $FUZZ_JOBS at a time, -parallel $workers each"
running=0
for t in "${targets[@]}"; do
  if [[ $running -ge $FUZZ_JOBS ]]; then
    wait -n
    running=$((running - 1))
  fi
  fuzz_one "$t" &
  running=$((running + 1))
done
wait
failed=0
for t in "${targets[@]}"; do
  name=${t#*:}
  [[ "$(cat "$results/$name.verdict" 2>/dev/null)" == 0 ]] || failed=1
done
exit $failed
