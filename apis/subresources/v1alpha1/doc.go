// +k8s:openapi-gen=true
// +k8s:deepcopy-gen=package
// +k8s:openapi-model-package=io.kumodo.convoy.subresources.v1alpha1
// +groupName=subresources.convoy.kumodo.io

// Package v1alpha1 holds the types of the aggregated group
// subresources.convoy.kumodo.io that convoy-apiserver serves: a stub
// Release parent and its diff, preview, health and sync subresources.
package v1alpha1
