package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// Release is the stub parent of the subresources. It has no verbs of its
// own: the Release objects are the CRDs of convoy.kumodo.io.
type Release struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
}

// RenderSource says which render a subresource used.
type RenderSource string

// Render sources, in the order the observer picks them.
const (
	RenderSourcePinned      RenderSource = "Pinned"
	RenderSourceLastHealthy RenderSource = "LastHealthy"
	RenderSourceFresh       RenderSource = "Fresh"
	// RenderSourceStored is a render asked for with ?render=REF.
	RenderSourceStored RenderSource = "Stored"
	// RenderSourceRevision is a render of the Release's source at the
	// revision asked for with ?revision=REV.
	RenderSourceRevision RenderSource = "Revision"
)

// ResolvedSource is the artifact a fresh render was made from, for a source
// in an OCI registry or a Helm repository: what its tag or version was
// resolved to.
type ResolvedSource struct {
	// kind is OCIRepository, HelmRepository or GitRepository.
	Kind string `json:"kind"`
	// url is the repository.
	URL string `json:"url"`
	// chart is the chart's name (HelmRepository).
	// +optional
	Chart string `json:"chart,omitempty"`
	// tag is the tag asked for (OCIRepository, when by tag).
	// +optional
	Tag string `json:"tag,omitempty"`
	// version is the chart version chosen (HelmRepository: the highest that
	// matches the constraint).
	// +optional
	Version string `json:"version,omitempty"`
	// digest is the sha256 digest everything was fetched and verified by:
	// the manifest's (OCIRepository), the chart archive's (HelmRepository);
	// empty for a GitRepository, which has its commit.
	// +optional
	Digest string `json:"digest,omitempty"`
	// ref is the ref a GitRepository's commit came from: refs/heads/NAME,
	// refs/tags/NAME, or empty for a commit asked for by its hash alone.
	// +optional
	Ref string `json:"ref,omitempty"`
	// commit is the commit a GitRepository was read from.
	// +optional
	Commit string `json:"commit,omitempty"`
	// verified is the signature the artifact was verified with, when the
	// source asks for one (spec.source.ociRepository.verify,
	// spec.source.git.verify, spec.source.helmRepository.verify): for a
	// GitRepository the commit's (verify modes HEAD and TagAndHEAD) or the
	// annotated tag's (mode Tag).
	// +optional
	Verified *SourceSignature `json:"verified,omitempty"`
	// verifiedTag is the signature of the annotated tag of a GitRepository
	// whose verify mode is TagAndHEAD (verified holds the commit's).
	// +optional
	VerifiedTag *SourceSignature `json:"verifiedTag,omitempty"`
}

// SourceSignature is a signature a source's artifact was verified with.
type SourceSignature struct {
	// provider is cosign (an OCI artifact), git (a Git commit or tag
	// object) or helm (a Helm repository chart's provenance file).
	Provider string `json:"provider"`
	// format is the signature's format for git and helm: openpgp or ssh
	// (git only).
	// +optional
	Format string `json:"format,omitempty"`
	// key is the key of the verify Secret that holds the public key
	// (ci.pub, release.asc); empty for a keyless signature.
	// +optional
	Key string `json:"key,omitempty"`
	// fingerprint identifies the public key: for cosign sha256: and the hex
	// SHA-256 of its DER SubjectPublicKeyInfo (empty for a keyless
	// signature); for an OpenPGP key its primary key's fingerprint (40 hex
	// digits, as gpg prints it); for an SSH key SHA256: and its base64
	// SHA-256 (as ssh-keygen -l prints it).
	// +optional
	Fingerprint string `json:"fingerprint,omitempty"`
	// keyID is the OpenPGP key id (16 hex digits) of the key or subkey
	// that signed.
	// +optional
	KeyID string `json:"keyID,omitempty"`
	// identity is the signer as the key names it: an OpenPGP key's primary
	// user id ("Name <email>"), an SSH key's principals in
	// allowed_signers.
	// +optional
	Identity string `json:"identity,omitempty"`
	// issuer is the OIDC issuer of a keyless signature's certificate.
	// +optional
	Issuer string `json:"issuer,omitempty"`
	// subject is the subject alternative name of a keyless signature's
	// certificate (the signing workflow, an email).
	// +optional
	Subject string `json:"subject,omitempty"`
	// layout is where the signature was found: for cosign tag (the legacy
	// sha256-HEX.sig tag) or referrer (a Sigstore bundle attached as an OCI
	// referrer); for git commit (the commit object's gpgsig header) or tag
	// (the annotated tag object's signature); for helm prov (the .prov file
	// beside the chart).
	Layout string `json:"layout"`
}

// DiffResult is the outcome of a compare.
type DiffResult string

// Compare outcomes; they match the status of the InSync condition.
const (
	DiffInSync       DiffResult = "InSync"
	DiffDrifted      DiffResult = "Drifted"
	DiffUndetermined DiffResult = "Undetermined"
)

// ObjectStatus is the compare status of one object.
type ObjectStatus string

// Object statuses.
const (
	ObjectInSync   ObjectStatus = "InSync"
	ObjectModified ObjectStatus = "Modified"
	ObjectMissing  ObjectStatus = "Missing"
)

// ChangeOp is the kind of a field change.
type ChangeOp string

// Field change kinds, from the live object to the desired one.
const (
	ChangeAdd     ChangeOp = "add"
	ChangeRemove  ChangeOp = "remove"
	ChangeReplace ChangeOp = "replace"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ReleaseDiff is the result of comparing the desired render of a Release
// with the live objects (GET releases/NAME/diff).
type ReleaseDiff struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	RenderRef    string       `json:"renderRef,omitempty"`
	RenderSource RenderSource `json:"renderSource,omitempty"`
	// resolvedSource is the artifact the compared render was made from,
	// when it is a fresh render of an OCI or Helm repository source.
	// +optional
	ResolvedSource *ResolvedSource `json:"resolvedSource,omitempty"`
	// resolvedValuesSource is the artifact or commit of spec.valuesSource
	// the compared render read values files from, when it is a fresh
	// render that read some (not for a ConfigMap).
	// +optional
	ResolvedValuesSource *ResolvedSource `json:"resolvedValuesSource,omitempty"`
	Result               DiffResult      `json:"result"`
	// reason is set when the result is Undetermined or Drifted.
	// +optional
	Reason string `json:"reason,omitempty"`
	// +optional
	Message string `json:"message,omitempty"`
	// +optional
	// +listType=atomic
	Objects []ObjectDiff `json:"objects,omitempty"`
	// extraObjects are the objects of the ReleaseInventory that the compared
	// render no longer contains and that still exist: the next sync would
	// prune them. They do not change the result, which counts only the
	// objects of the render (the InSync condition has the same meaning).
	// Hooks are not listed.
	// +optional
	// +listType=atomic
	ExtraObjects []ExtraObject `json:"extraObjects,omitempty"`
}

// ExtraObject is an applied object that the compared render does not contain.
type ExtraObject struct {
	convoyv1alpha1.ObjectKey `json:",inline"`
	Version                  string `json:"version"`
	// renderRef of the render that applied it, from the inventory.
	// +optional
	RenderRef string `json:"renderRef,omitempty"`
	// message says why its existence is not known (it could not be read),
	// when it is not.
	// +optional
	Message string `json:"message,omitempty"`
}

// ObjectDiff is the compare status of one object of the render.
type ObjectDiff struct {
	Group     string       `json:"group"`
	Version   string       `json:"version"`
	Kind      string       `json:"kind"`
	Namespace string       `json:"namespace,omitempty"`
	Name      string       `json:"name"`
	Status    ObjectStatus `json:"status"`
	// +optional
	// +listType=atomic
	Changes []FieldChange `json:"changes,omitempty"`
	// changedBy are the distinct managers (from the live object's
	// managedFields) of the changes, "manager" or "manager (subresource)",
	// in the order of the changes; "unknown" when a change has no owner.
	// +optional
	// +listType=atomic
	ChangedBy []string `json:"changedBy,omitempty"`
	// appliedAt is when convoy's manager last changed the live object (the
	// time of its managedFields entry, to the second): it moves at each
	// effective apply, a self-heal included.
	// +optional
	AppliedAt *metav1.Time `json:"appliedAt,omitempty"`
	// contested are the fields of the object that another manager took
	// back after self-heal, again and again (see ContestedField), as the
	// leader's last drift pass wrote them in the Release's
	// status.selfHeal: every replica answers the same.
	// +optional
	// +listType=atomic
	Contested []ContestedField `json:"contested,omitempty"`
}

// Key is the key of the object, which names it (Describe) and indexes it.
func (o ObjectDiff) Key() convoyv1alpha1.ObjectKey {
	return convoyv1alpha1.ObjectKey{Group: o.Group, Kind: o.Kind, Namespace: o.Namespace, Name: o.Name}
}

// ContestedField is a field that the same manager took back after each
// self-heal, at least --contest-heals times within --contest-window: a
// fight self-heal cannot win. Remove the field from the render, or let that
// manager own it.
type ContestedField struct {
	Path    string `json:"path"`
	Manager string `json:"manager"`
	// +optional
	Subresource string `json:"subresource,omitempty"`
	// heals is how many times the manager took the field back after a
	// self-heal, within the window.
	Heals int32 `json:"heals"`
	// since is when the field was found contested.
	Since metav1.Time `json:"since"`
}

// FieldChange is one changed field.
type FieldChange struct {
	// path a person can read, e.g. spec.template.spec.containers[name=app].image.
	Path string   `json:"path"`
	Op   ChangeOp `json:"op"`
	// +optional
	Desired *runtime.RawExtension `json:"desired,omitempty"`
	// +optional
	Live *runtime.RawExtension `json:"live,omitempty"`
	// owners are the managers of the live object's managedFields that own
	// the changed field (or what it holds, or else its closest owned
	// ancestor), convoy's own manager left out.
	// +optional
	// +listType=atomic
	Owners []FieldOwner `json:"owners,omitempty"`
	// unattributed says why the change has no owner, when it has none.
	// +optional
	Unattributed Unattributed `json:"unattributed,omitempty"`
}

// Unattributed is why a changed field has no owner (FieldChange.owners is
// empty).
// +enum
type Unattributed string

// Reasons a change has no owner.
const (
	// UnattributedNoManager: no manager but convoy's own owns the field.
	// Either the render changed since convoy applied it (the live value is
	// convoy's own), or an admission webhook or a client that records no
	// managedFields changed it; managedFields holds no values, so which
	// one cannot be told.
	UnattributedNoManager Unattributed = "NoManager"
	// UnattributedUnowned: no manager at all owns the field: a client that
	// records no managedFields (or reset them), or an admission webhook,
	// changed it.
	UnattributedUnowned Unattributed = "Unowned"
	// UnattributedRemoved: the field is gone from the live object (the
	// desired object has it); managedFields does not record who removes a
	// field.
	UnattributedRemoved Unattributed = "Removed"
)

// FieldOwner is a manager of the live object's managedFields that owns a
// changed field.
type FieldOwner struct {
	// manager is the field manager as recorded: --field-manager, or else
	// the client's user agent (kubectl, kube-controller-manager, ...).
	Manager string `json:"manager"`
	// operation is Apply or Update.
	Operation string `json:"operation"`
	// subresource is the subresource the manager wrote through (scale,
	// status), empty for the object itself.
	// +optional
	Subresource string `json:"subresource,omitempty"`
	// time is when this manager last changed some of its fields (to the
	// second); absent when its entry has none (writes through /scale):
	// the time is unknown.
	// +optional
	Time *metav1.Time `json:"time,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ReleasePreview is the desired render of a Release (GET releases/NAME/preview).
type ReleasePreview struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	RenderRef    string       `json:"renderRef"`
	RenderSource RenderSource `json:"renderSource"`
	// resolvedSource is the artifact the render was made from, when it is
	// a fresh render of an OCI or Helm repository source.
	// +optional
	ResolvedSource *ResolvedSource `json:"resolvedSource,omitempty"`
	// resolvedValuesSource is the artifact or commit of spec.valuesSource
	// the render read values files from, when it is a fresh render that
	// read some (not for a ConfigMap).
	// +optional
	ResolvedValuesSource *ResolvedSource `json:"resolvedValuesSource,omitempty"`
	// objects of the render; Secret values are redacted.
	// +optional
	// +listType=atomic
	Objects []runtime.RawExtension `json:"objects,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ReleaseHealth is the health of a Release and of each inventory entry, as
// the observer last assessed it (GET releases/NAME/health).
type ReleaseHealth struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Healthy *metav1.Condition `json:"healthy,omitempty"`
	// +optional
	HealthSummary *convoyv1alpha1.HealthSummary `json:"healthSummary,omitempty"`
	// +optional
	// +listType=atomic
	Entries []EntryHealth `json:"entries,omitempty"`
}

// EntryHealth is the health of one inventory entry.
type EntryHealth struct {
	convoyv1alpha1.ObjectKey `json:",inline"`
	Version                  string `json:"version,omitempty"`
	RenderRef                string `json:"renderRef,omitempty"`
	// +optional
	AssessedRenderRef string                     `json:"assessedRenderRef,omitempty"`
	State             convoyv1alpha1.HealthState `json:"state,omitempty"`
	// +optional
	Message string `json:"message,omitempty"`
	// +optional
	FirstUnhealthy *metav1.Time `json:"firstUnhealthy,omitempty"`
	// +optional
	HookPhase convoyv1alpha1.HookStatus `json:"hookPhase,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ReleaseSync is a request for convoy's controller to sync a Release
// (POST releases/NAME/sync). The body may be empty ({}); the answer carries
// the time that was recorded.
type ReleaseSync struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// requestedAt is the time recorded in the annotation
	// convoy.kumodo.io/sync-requested-at of the Release.
	// +optional
	RequestedAt *metav1.MicroTime `json:"requestedAt,omitempty"`
	// requestedBy is the user who asked for the sync.
	// +optional
	RequestedBy string `json:"requestedBy,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ReleaseRefresh is a request to resolve a Release's source again now
// (POST releases/NAME/refresh), whatever --source-resolve-max-age. The
// body may be empty ({}); the answer carries the time that was recorded,
// which status.lastHandledRefreshAt shows once the drift loop handled it.
type ReleaseRefresh struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// requestedAt is the time recorded in the annotation
	// convoy.kumodo.io/refresh-requested-at of the Release.
	// +optional
	RequestedAt *metav1.MicroTime `json:"requestedAt,omitempty"`
	// requestedBy is the user who asked for the refresh.
	// +optional
	RequestedBy string `json:"requestedBy,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ReleaseRenderOptions are the query parameters of diff and preview.
type ReleaseRenderOptions struct {
	metav1.TypeMeta `json:",inline"`

	// render is the renderRef of a stored render to use instead of the
	// desired render.
	// +optional
	Render string `json:"render,omitempty"`
	// revision renders the Release's own source at another revision
	// instead of the one it resolves to (a pull request's preview): for
	// Git a commit hash, a full ref name (refs/pull/123/head) or a branch
	// or tag name; for OCI a tag or a digest; for a Helm repository a
	// chart version. Not with render. Never written into status, never
	// used by the loops.
	// +optional
	Revision string `json:"revision,omitempty"`
}
