package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:categories=convoy
// +kubebuilder:printcolumn:name="Secret",type=string,JSONPath=`.spec.kubeConfig.secretRef.name`
// +kubebuilder:printcolumn:name="Key",type=string,JSONPath=`.spec.kubeConfig.secretRef.key`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// Cluster is a target cluster that Releases of its namespace can name.
type Cluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec ClusterSpec `json:"spec"`
}

// ClusterSpec says how to reach a target cluster.
type ClusterSpec struct {
	KubeConfig KubeConfigReference `json:"kubeConfig"`
}

// KubeConfigReference points at a kubeconfig in a Secret.
type KubeConfigReference struct {
	SecretRef SecretKeyReference `json:"secretRef"`
}

// SecretKeyReference names a key of a Secret in the same namespace.
type SecretKeyReference struct {
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// +optional
	// +kubebuilder:default=value
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	Key string `json:"key,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// ClusterList is a list of Clusters.
type ClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Cluster `json:"items"`
}
