package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=convoy,shortName=rinv
// +kubebuilder:printcolumn:name="Degraded",type=string,JSONPath=`.status.entries[?(@.state=="Degraded")].name`
// +kubebuilder:printcolumn:name="Progressing",type=string,JSONPath=`.status.entries[?(@.state=="Progressing")].name`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// ReleaseInventory lists what the controller applied for a Release (spec) and
// the health the observer assessed for it (status). It has the name of its
// Release and is owned by it.
type ReleaseInventory struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec ReleaseInventorySpec `json:"spec,omitempty"`
	// +optional
	Status ReleaseInventoryStatus `json:"status,omitempty"`
}

// ReleaseInventorySpec is written by the controller (field manager convoy).
type ReleaseInventorySpec struct {
	// +optional
	// +listType=map
	// +listMapKey=group
	// +listMapKey=kind
	// +listMapKey=namespace
	// +listMapKey=name
	Entries []InventoryEntry `json:"entries,omitempty"`
}

// ObjectKey identifies an object of a render.
type ObjectKey struct {
	// +optional
	// +kubebuilder:default=""
	Group string `json:"group"`
	// +kubebuilder:validation:MinLength=1
	Kind string `json:"kind"`
	// +optional
	// +kubebuilder:default=""
	Namespace string `json:"namespace"`
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}

// Describe names the object for a person, the one way every message of
// convoy names an object: kubectl's KIND.GROUP (the group left out for the
// core group), then NAMESPACE/NAME, or NAME for a cluster-scoped object:
// "Deployment.apps shop/web", "ConfigMap shop/settings",
// "ClusterRole.rbac.authorization.k8s.io view".
func (k ObjectKey) Describe() string {
	kind := k.Kind
	if k.Group != "" {
		kind += "." + k.Group
	}
	if k.Namespace == "" {
		return kind + " " + k.Name
	}
	return kind + " " + k.Namespace + "/" + k.Name
}

// ObjectKeyOf is the key of obj, which names it in messages (Describe).
func ObjectKeyOf(obj *unstructured.Unstructured) ObjectKey {
	return ObjectKey{Group: obj.GroupVersionKind().Group, Kind: obj.GetKind(), Namespace: obj.GetNamespace(), Name: obj.GetName()}
}

// InventoryEntry is one object the controller applied.
type InventoryEntry struct {
	ObjectKey `json:",inline"`
	// +kubebuilder:validation:MinLength=1
	Version string `json:"version"`
	// wave is the sync wave the object was applied in.
	// +optional
	Wave int32 `json:"wave,omitempty"`
	// renderRef is the render the controller applied the object with.
	// +kubebuilder:validation:Pattern=`^[0-9a-f]{16}$`
	RenderRef string `json:"renderRef"`
	// hook marks a lifecycle hook workload.
	// +optional
	Hook *Hook `json:"hook,omitempty"`
}

// HookPhase is when a lifecycle hook runs.
// +kubebuilder:validation:Enum=PreSync;PostSync
type HookPhase string

// Hook phases.
const (
	HookPreSync  HookPhase = "PreSync"
	HookPostSync HookPhase = "PostSync"
)

// HookRunAfter is what a hook waits for.
// +kubebuilder:validation:Enum=Applied;Healthy
type HookRunAfter string

// Hook run-after values.
const (
	HookRunAfterApplied HookRunAfter = "Applied"
	HookRunAfterHealthy HookRunAfter = "Healthy"
)

// Hook describes a lifecycle hook workload (a Job or a Pod).
type Hook struct {
	Phase HookPhase `json:"phase"`
	// +optional
	// +kubebuilder:default=Applied
	RunAfter HookRunAfter `json:"runAfter,omitempty"`
}

// ReleaseInventoryStatus is written by the observer (field manager convoy-observe).
type ReleaseInventoryStatus struct {
	// +optional
	// +listType=map
	// +listMapKey=group
	// +listMapKey=kind
	// +listMapKey=namespace
	// +listMapKey=name
	Entries []InventoryEntryStatus `json:"entries,omitempty"`
}

// HealthState is the health of one resource.
// +kubebuilder:validation:Enum=Healthy;Progressing;Degraded;Unknown;Suspended
type HealthState string

// Health states.
const (
	HealthHealthy     HealthState = "Healthy"
	HealthProgressing HealthState = "Progressing"
	HealthDegraded    HealthState = "Degraded"
	HealthUnknown     HealthState = "Unknown"
	// HealthSuspended: the resource's controller stopped on purpose before
	// the resource got what its spec asks (a paused rollout, a suspended
	// Job): not Healthy, but no deadline runs.
	HealthSuspended HealthState = "Suspended"
)

// HookStatus is the progress of a hook workload.
// +kubebuilder:validation:Enum=Running;Succeeded;Failed
type HookStatus string

// Hook workload phases.
const (
	HookRunning   HookStatus = "Running"
	HookSucceeded HookStatus = "Succeeded"
	HookFailed    HookStatus = "Failed"
)

// InventoryEntryStatus is the assessed health of one inventory entry.
type InventoryEntryStatus struct {
	ObjectKey `json:",inline"`
	State     HealthState `json:"state"`
	// message comes from the first failing rule, or says why the state is Unknown.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`
	// firstUnhealthy is when the resource first failed a rule; cleared when it passes.
	// +optional
	FirstUnhealthy *metav1.Time `json:"firstUnhealthy,omitempty"`
	// assessedRenderRef is the renderRef of the entry when it was assessed.
	// +optional
	AssessedRenderRef string `json:"assessedRenderRef,omitempty"`
	// +optional
	LastTransitionTime *metav1.Time `json:"lastTransitionTime,omitempty"`
	// hookPhase is the progress of a hook workload.
	// +optional
	HookPhase HookStatus `json:"hookPhase,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// ReleaseInventoryList is a list of ReleaseInventories.
type ReleaseInventoryList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ReleaseInventory `json:"items"`
}
