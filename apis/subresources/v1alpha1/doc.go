// +k8s:openapi-gen=true
// +k8s:deepcopy-gen=package
// The OpenAPI model package is the reversed Go package path, the name that
// applyconfiguration-gen looks the models up by.
// +k8s:openapi-model-package=com.github.kumodo.convoy-apiserver.apis.subresources.v1alpha1
// +groupName=subresources.convoy.kumodo.io

// Package v1alpha1 holds the types of the aggregated group
// subresources.convoy.kumodo.io that convoy-apiserver serves: a stub
// Release parent and its diff, preview, health and sync subresources.
package v1alpha1
