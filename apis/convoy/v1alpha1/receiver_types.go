package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ReceiverType is the sender of a Receiver's deliveries: how they are
// signed and what their bodies look like.
type ReceiverType string

// Senders of webhook deliveries.
const (
	// ReceiverGitHub: X-Hub-Signature-256 (HMAC-SHA256 of the body), push
	// events; ping answered.
	ReceiverGitHub ReceiverType = "github"
	// ReceiverGitLab: X-Gitlab-Token (the secret itself), Push Hook and
	// Tag Push Hook.
	ReceiverGitLab ReceiverType = "gitlab"
	// ReceiverGitea: X-Gitea-Signature (HMAC-SHA256 of the body), push
	// events. Forgejo sends this header too.
	ReceiverGitea ReceiverType = "gitea"
	// ReceiverForgejo: X-Forgejo-Signature (HMAC-SHA256 of the body).
	ReceiverForgejo ReceiverType = "forgejo"
	// ReceiverBitbucket: Bitbucket Server and Data Center, X-Hub-Signature
	// (sha256=, HMAC-SHA256 of the body), repo:refs_changed.
	ReceiverBitbucket ReceiverType = "bitbucket"
	// ReceiverGenericHMAC: X-Signature-256 (sha256=, HMAC-SHA256 of the
	// body) and a body that names the repository and the refs or tags, for
	// a CI job or a script.
	ReceiverGenericHMAC ReceiverType = "generic-hmac"
	// ReceiverHarbor: Harbor's Authorization header (the secret itself),
	// PUSH_ARTIFACT.
	ReceiverHarbor ReceiverType = "harbor"
)

// ReceiverSecretKey is the key of a Receiver's Secret that holds the
// shared secret, as Flux's Receiver has it.
const ReceiverSecretKey = "token"

// FieldManagerReceiver is the field manager of the status of Receivers.
const FieldManagerReceiver = "convoy-receiver"

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=convoy
// +kubebuilder:printcolumn:name="Type",type=string,JSONPath=`.spec.type`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Path",type=string,JSONPath=`.status.webhookPath`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// Receiver takes the webhook deliveries of a forge or a registry and
// refreshes the Releases of its namespace whose source they concern
// (docs/users/refresh.md).
type Receiver struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec ReceiverSpec `json:"spec"`
	// +optional
	Status ReceiverStatus `json:"status,omitempty"`
}

// ReceiverSpec says who sends the deliveries, how they are signed and
// which Releases they may refresh.
// +kubebuilder:validation:XValidation:rule="has(self.secretRef) && size(self.secretRef.name) > 0",message="secretRef is required: a Receiver accepts no delivery without a shared secret"
type ReceiverSpec struct {
	// type is the sender: github, gitlab, gitea, forgejo, bitbucket
	// (Server and Data Center), generic-hmac or harbor.
	// +kubebuilder:validation:Enum=github;gitlab;gitea;forgejo;bitbucket;generic-hmac;harbor
	Type ReceiverType `json:"type"`
	// secretRef names a Secret of the Receiver's namespace whose key
	// "token" holds the shared secret: the HMAC key, or the token the
	// sender sends (gitlab, harbor). It is read as serviceAccountName.
	// Required, by the rule above (which says why) rather than by the
	// schema's bare "Required value".
	// +optional
	SecretRef LocalObjectReference `json:"secretRef"`
	// serviceAccountName names a ServiceAccount of the Receiver's
	// namespace that convoy-apiserver reads the Secret as (it needs list
	// and watch of it). Empty: the one named by --default-service-account.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	ServiceAccountName string `json:"serviceAccountName,omitempty"`
	// releases selects the Releases of the Receiver's namespace a delivery
	// may refresh ({} selects them all); of those, a delivery refreshes
	// only the ones whose source (or values source) it names: the
	// repository, and the branch or tag they follow.
	Releases LabelSelector `json:"releases"`
	// events, when set, are the only events of the sender that refresh
	// (X-GitHub-Event push, X-Gitlab-Event "Push Hook", Harbor's
	// PUSH_ARTIFACT...); the others are answered and ignored.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=64
	Events []string `json:"events,omitempty"`
}

// ReceiverStatus is what convoy-apiserver observed of a Receiver.
type ReceiverStatus struct {
	// observedGeneration is the generation the status is of.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// webhookPath is the path deliveries are POSTed to, on the listener
	// of --receiver-bind-address: /hook/ and 64 hex digits derived from
	// the Receiver's uid and its secret, the same on every replica and
	// across restarts, and a new one when the secret changes. Empty while
	// the Receiver is not Ready.
	// +optional
	WebhookPath string `json:"webhookPath,omitempty"`
	// conditions: Ready.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// ReceiverList is a list of Receivers.
type ReceiverList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Receiver `json:"items"`
}
