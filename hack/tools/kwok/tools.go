//go:build tools

// Package kwok pins kwok (sigs.k8s.io/kwok), which simulates nodes and Pods
// without containers so that Deployments of the local control plane get Pods
// that become Ready. It is a module of its own because kwok's Kubernetes
// libraries are older than the ones convoy-apiserver and the control plane use.
// hack/testbin.sh builds it into the cache of the other binaries; nothing in
// the repository imports this package.
package kwok

import (
	_ "sigs.k8s.io/kwok/cmd/kwok"
)
