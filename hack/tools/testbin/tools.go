//go:build tools

// Package testbin pins the kube-apiserver and etcd that the local control plane
// and the e2e tests run. hack/testbin.sh builds them into a cache outside the
// checkout; nothing in the repository imports this package.
package testbin

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
