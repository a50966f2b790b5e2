#!/usr/bin/env bash
# Builds the control-plane binaries the local cluster and the e2e tests run:
# kube-apiserver, kubectl, kube-controller-manager and kube-scheduler v1.37.2,
# etcd v3.7.0 and kwok v0.8.0 (simulated nodes and Pods), from the Go module
# proxy, into a cache outside the checkout so that fresh clones (and CI)
# reuse them. Each missing binary is built alone.
#
# Prints the directory that holds the binaries. The first build took 11m28s
# on 2 cores with empty caches; later calls return at once.
#
#   CONVOY_TESTBIN_DIR  cache root (default: ${XDG_CACHE_HOME:-~/.cache}/convoy/testbin)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mod="$root/hack/tools/testbin"

KUBE_VERSION=v1.37.2
ETCD_VERSION=v3.7.0
KWOK_VERSION=v0.8.0 # pinned in hack/tools/kwok/go.mod
cache="${CONVOY_TESTBIN_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/convoy/testbin}"
# The directory name carries the versions and the helper go.sum, so a change of
# pins builds anew instead of reusing stale binaries.
sum=$(cat "$mod/go.mod" "$mod/go.sum" | sha256sum | cut -c1-12)
dir="$cache/kube-$KUBE_VERSION-etcd-$ETCD_VERSION-$sum"

# kwok comes from a module of its own (hack/tools/kwok): its pins go into the
# name of its binary's stamp, so a change of them rebuilds kwok alone.
kwokmod="$root/hack/tools/kwok"
kwoksum=$(cat "$kwokmod/go.mod" "$kwokmod/go.sum" | sha256sum | cut -c1-12)

kube_bins=(kube-apiserver kubectl kube-controller-manager kube-scheduler)
missing=()
for bin in "${kube_bins[@]}" etcd; do
  [[ -x "$dir/$bin" ]] || missing+=("$bin")
done
kwok_missing=false
if [[ ! -x "$dir/kwok" || ! -f "$dir/kwok-stages.yaml" || "$(cat "$dir/kwok.sum" 2>/dev/null)" != "$kwoksum" ]]; then
  kwok_missing=true
fi
if [[ ${#missing[@]} -eq 0 && $kwok_missing == false ]]; then
  echo "$dir"
  exit 0
fi

mkdir -p "$cache" "$dir"
tmp=$(mktemp -d "$cache/.build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# Stamp the version like the Kubernetes release build does, so that
# `kubectl version` and /version report v1.37.2 instead of v0.0.0-master.
minor=${KUBE_VERSION#v1.}; minor=${minor%%.*}
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
  ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
done

[[ $kwok_missing == true ]] && missing+=(kwok)
echo "building ${missing[*]} (Kubernetes $KUBE_VERSION, etcd $ETCD_VERSION, kwok $KWOK_VERSION) into $dir (about 12 minutes on 2 cores for all of them the first time)" >&2
for bin in "${missing[@]}"; do
  (
    export CGO_ENABLED=0 GOFLAGS=-mod=readonly
    case "$bin" in
      etcd) cd "$mod" && go build -trimpath -ldflags "-s -w" -o "$tmp/etcd" go.etcd.io/etcd/server/v3 ;;
      kwok)
        cd "$kwokmod" && go build -trimpath -ldflags "-s -w" -o "$tmp/kwok" sigs.k8s.io/kwok/cmd/kwok
        # kwok simulates nothing without Stages: its own "fast" set (Nodes
        # Ready with a Lease heartbeat; Pods Ready at once, Pods of Jobs
        # Succeeded, deleted Pods removed), from the module's source.
        src=$(go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)/kustomize/stage
        for f in "$src"/node/fast/node-initialize.yaml "$src"/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml "$src"/pod/fast/pod-*.yaml; do
          echo "---"; cat "$f"
        done > "$tmp/kwok-stages.yaml"
        mv "$tmp/kwok-stages.yaml" "$dir/kwok-stages.yaml"
        ;;
      *) cd "$mod" && go build -trimpath -ldflags "$ldflags" -o "$tmp/$bin" "k8s.io/kubernetes/cmd/$bin" ;;
    esac
  ) >&2
  mv "$tmp/$bin" "$dir/$bin"
  [[ $bin == kwok ]] && echo "$kwoksum" > "$dir/kwok.sum"
done
echo "$dir"
