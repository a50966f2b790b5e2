#!/usr/bin/env bash
# Fails when a generated file differs from what hack/update-codegen.sh makes.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

generated=(apis pkg/generated artifacts/crds artifacts/rules artifacts/deploy/base/copies artifacts/charts/convoy-apiserver/crds artifacts/charts/convoy-apiserver/files artifacts/monitoring hack/api-rules-violations.list docs/reference)
snapshot=$(mktemp -d)
trap 'rm -rf "$snapshot"' EXIT
for p in "${generated[@]}"; do
  mkdir -p "$snapshot/$(dirname "$p")"
  cp -a "$p" "$snapshot/$p"
done

hack/update-codegen.sh >/dev/null

status=0
for p in "${generated[@]}"; do
  if ! diff -ruN "$snapshot/$p" "$p"; then
    status=1
  fi
done
if [[ $status -ne 0 ]]; then
  echo "generated files are stale: run hack/update-codegen.sh and commit the result" >&2
  # put the tree back as it was
  for p in "${generated[@]}"; do rm -rf "$p"; cp -a "$snapshot/$p" "$p"; done
fi
exit $status
