package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// LabelSelector has the JSON shape of metav1.LabelSelector, with the bounds
// and the operator enum that let the CRD reject a bad selector cheaply:
// CEL rules over metav1.LabelSelector's unbounded lists exceed the CRD cost
// budget. Convert it with AsMetav1.
type LabelSelector struct {
	// matchLabels is a map of {key,value} pairs; all must match.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	MatchLabels map[string]string `json:"matchLabels,omitempty"`
	// matchExpressions are label selector requirements; all must match.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	MatchExpressions []LabelSelectorRequirement `json:"matchExpressions,omitempty"`
}

// LabelSelectorRequirement has the JSON shape of metav1.LabelSelectorRequirement.
// +kubebuilder:validation:XValidation:rule="(self.operator in ['In', 'NotIn']) == (has(self.values) && size(self.values) > 0)",message="values must be set for the operators In and NotIn, and only for them"
type LabelSelectorRequirement struct {
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	Key string `json:"key"`
	// +kubebuilder:validation:Enum=In;NotIn;Exists;DoesNotExist
	Operator metav1.LabelSelectorOperator `json:"operator"`
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=63
	Values []string `json:"values,omitempty"`
}

// AsMetav1 returns the selector as a metav1.LabelSelector; nil stays nil.
func (s *LabelSelector) AsMetav1() *metav1.LabelSelector {
	if s == nil {
		return nil
	}
	out := &metav1.LabelSelector{MatchLabels: s.MatchLabels}
	for _, e := range s.MatchExpressions {
		out.MatchExpressions = append(out.MatchExpressions, metav1.LabelSelectorRequirement{
			Key: e.Key, Operator: e.Operator, Values: e.Values,
		})
	}
	return out
}
