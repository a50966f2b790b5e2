#!/usr/bin/env bash
# Builds the control-plane binaries the local cluster and the e2e tests run:
# kube-apiserver, kubectl and kube-controller-manager v1.37.2 (the e2e tests
# run only its ClusterRole aggregation controller) and etcd v3.7.0, from the
# Go module proxy,
# into a cache outside the checkout so that fresh clones (and CI) reuse them.
#
# Prints the directory that holds the binaries. The first build takes about
# 15 minutes on 2 cores; later calls return at once.
#
#   CONVOY_TESTBIN_DIR  cache root (default: ${XDG_CACHE_HOME:-~/.cache}/convoy/testbin)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mod="$root/hack/tools/testbin"

KUBE_VERSION=v1.37.2
ETCD_VERSION=v3.7.0
cache="${CONVOY_TESTBIN_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/convoy/testbin}"
# The directory name carries the versions and the helper go.sum, so a change of
# pins builds anew instead of reusing stale binaries.
sum=$(cat "$mod/go.mod" "$mod/go.sum" | sha256sum | cut -c1-12)
dir="$cache/kube-$KUBE_VERSION-etcd-$ETCD_VERSION-$sum"

if [[ -x "$dir/kube-apiserver" && -x "$dir/etcd" && -x "$dir/kubectl" && -x "$dir/kube-controller-manager" ]]; then
  echo "$dir"
  exit 0
fi

mkdir -p "$cache"
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

echo "building kube-apiserver, kubectl, kube-controller-manager $KUBE_VERSION and etcd $ETCD_VERSION into $dir (about 15 minutes the first time)" >&2
(
  cd "$mod"
  export CGO_ENABLED=0 GOFLAGS=-mod=readonly
  go build -trimpath -ldflags "$ldflags" -o "$tmp/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver
  go build -trimpath -ldflags "$ldflags" -o "$tmp/kubectl" k8s.io/kubernetes/cmd/kubectl
  go build -trimpath -ldflags "$ldflags" -o "$tmp/kube-controller-manager" k8s.io/kubernetes/cmd/kube-controller-manager
  go build -trimpath -ldflags "-s -w" -o "$tmp/etcd" go.etcd.io/etcd/server/v3
) >&2

mkdir -p "$dir"
mv "$tmp/kube-apiserver" "$tmp/kubectl" "$tmp/kube-controller-manager" "$tmp/etcd" "$dir/"
echo "$dir"
