package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:categories=convoy
// +kubebuilder:printcolumn:name="API-Versions",type=string,JSONPath=`.spec.rules[*].apiVersion`
// +kubebuilder:printcolumn:name="Resources",type=string,JSONPath=`.spec.rules[*].resources[*]`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// HealthRuleSet holds health rules for the Releases of its namespace.
type HealthRuleSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec HealthRuleSetSpec `json:"spec"`
}

// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,categories=convoy
// +kubebuilder:printcolumn:name="API-Versions",type=string,JSONPath=`.spec.rules[*].apiVersion`
// +kubebuilder:printcolumn:name="Resources",type=string,JSONPath=`.spec.rules[*].resources[*]`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// GlobalHealthRuleSet holds health rules for the Releases of every namespace.
type GlobalHealthRuleSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec HealthRuleSetSpec `json:"spec"`
}

// HealthRuleSetSpec is a list of health rules.
type HealthRuleSetSpec struct {
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=256
	Rules []HealthRule `json:"rules"`
}

// HealthRule is a CEL expression that tells whether a resource is healthy.
type HealthRule struct {
	// apiVersion of the resources the rule applies to, e.g. apps/v1.
	// +kubebuilder:validation:MinLength=1
	APIVersion string `json:"apiVersion"`
	// resources are plural resource names, or * for all.
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	Resources []string `json:"resources"`
	// expression is CEL returning a bool; the live object is the variable object.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	Expression string `json:"expression"`
	// message when the expression returns false.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`
	// messageExpression is CEL returning the message as a string; it wins over message.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	MessageExpression string `json:"messageExpression,omitempty"`
	// whenFalse is the state of a resource this rule fails first: Progressing
	// (the default; Degraded once the Release's deadline passes) or Suspended
	// (the resource's controller stopped on purpose, e.g. a paused rollout:
	// not Healthy, but no deadline runs and it never turns Degraded).
	// +optional
	// +kubebuilder:validation:Enum=Progressing;Suspended
	WhenFalse FailState `json:"whenFalse,omitempty"`
}

// FailState is the state of a resource whose first failing rule is this one.
type FailState string

// States a failing rule gives.
const (
	// FailProgressing: Progressing, then Degraded at the Release's deadline.
	FailProgressing FailState = "Progressing"
	// FailSuspended: Suspended, for as long as the rule fails.
	FailSuspended FailState = "Suspended"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// HealthRuleSetList is a list of HealthRuleSets.
type HealthRuleSetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []HealthRuleSet `json:"items"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// GlobalHealthRuleSetList is a list of GlobalHealthRuleSets.
type GlobalHealthRuleSetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []GlobalHealthRuleSet `json:"items"`
}
