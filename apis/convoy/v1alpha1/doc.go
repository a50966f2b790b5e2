// +k8s:openapi-gen=true
// +k8s:deepcopy-gen=package
// +k8s:openapi-model-package=io.kumodo.convoy.v1alpha1
// +groupName=convoy.kumodo.io

// Package v1alpha1 holds the CRDs of convoy.kumodo.io: the contract between
// convoy's controller and the observer (convoy-apiserver).
package v1alpha1
