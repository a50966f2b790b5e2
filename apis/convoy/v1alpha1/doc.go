// +k8s:openapi-gen=true
// +k8s:deepcopy-gen=package
// The OpenAPI model package is the reversed Go package path, the name that
// applyconfiguration-gen looks the models up by.
// +k8s:openapi-model-package=com.github.kumodo.convoy-apiserver.apis.convoy.v1alpha1
// +groupName=convoy.kumodo.io

// Package v1alpha1 holds the CRDs of convoy.kumodo.io: the contract between
// convoy's controller and the observer (convoy-apiserver).
package v1alpha1
