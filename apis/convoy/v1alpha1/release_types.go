package v1alpha1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Condition types and reasons on a Release. Ready belongs to the controller;
// InSync and Healthy belong to the observer (field manager convoy-observe).
const (
	ConditionReady   = "Ready"
	ConditionInSync  = "InSync"
	ConditionHealthy = "Healthy"
)

// RefreshSkew is how far ahead of the drift loop's clock the time of a
// refresh request may be and still be taken as it is (the replica that
// recorded it may run a little ahead): a time further ahead, or a value
// that is not an RFC 3339 time, is a request of the moment the drift loop
// sees it, and status.lastHandledRefreshAt records that moment.
const RefreshSkew = 60 * time.Second

// Annotations and labels shared with convoy's controller.
const (
	// AnnotationSyncRequestedAt holds the RFC 3339 time of the last sync request.
	AnnotationSyncRequestedAt = "convoy.kumodo.io/sync-requested-at"
	// AnnotationRefreshRequestedAt holds the RFC 3339 time of the last
	// refresh request: the drift loop resolves the Release's source again
	// then, whatever --source-resolve-max-age, and records the value it
	// handled in status.lastHandledRefreshAt (see RefreshSkew).
	AnnotationRefreshRequestedAt = "convoy.kumodo.io/refresh-requested-at"
	// LabelRelease names the Release a render Secret belongs to.
	LabelRelease = "convoy.kumodo.io/release"
	// LabelRenderRef holds the renderRef of a render Secret.
	LabelRenderRef = "convoy.kumodo.io/render-ref"
	// AnnotationResolvedSource holds, on a render Secret, the revision of
	// the source it was rendered from: the JSON of a resolvedSource
	// (subresources.convoy.kumodo.io: kind, url, and the digest or commit),
	// without its verified signature. A Release that asks for signatures
	// uses a stored render only when it names a revision of its source
	// that verifies now (docs/users/verification.md).
	AnnotationResolvedSource = "convoy.kumodo.io/resolved-source"
	// AnnotationResolvedValuesSource holds, on a render Secret, the
	// revision of spec.valuesSource its values files were read from, as
	// AnnotationResolvedSource holds spec.source's: the JSON of a
	// resolvedSource without its verified signature, on the renders of a
	// Release that reads a Git or OCI values source. A Release whose
	// values source asks for signatures uses a stored render only when it
	// names a revision of its values source that verifies now too
	// (docs/users/verification.md).
	AnnotationResolvedValuesSource = "convoy.kumodo.io/resolved-values-source"
	// LabelDefaultRuleSet marks the default GlobalHealthRuleSets.
	LabelDefaultRuleSet = "convoy.kumodo.io/default"
)

// Field managers. Each writer uses server-side apply with its own manager so
// that the controller and the observer never overwrite each other.
const (
	FieldManagerController = "convoy"
	FieldManagerObserver   = "convoy-observe"
)

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=convoy
// +kubebuilder:printcolumn:name="InSync",type=string,JSONPath=`.status.conditions[?(@.type=="InSync")].status`
// +kubebuilder:printcolumn:name="Healthy",type=string,JSONPath=`.status.conditions[?(@.type=="Healthy")].status`
// +kubebuilder:printcolumn:name="Render",type=string,JSONPath=`.status.lastApplied.renderRef`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Sync-Reason",type=string,JSONPath=`.status.conditions[?(@.type=="InSync")].reason`,priority=1
// +kubebuilder:printcolumn:name="Health-Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Healthy")].reason`,priority=1
// +kubebuilder:printcolumn:name="Rollout",type=string,JSONPath=`.status.rollout.phase`,priority=1

// Release names a source, its content and mutations. convoy's controller
// renders and applies it; the observer reports drift and health on it.
type Release struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ReleaseSpec   `json:"spec"`
	Status ReleaseStatus `json:"status,omitempty"`
}

// ReleaseSpec is the desired state of a Release.
// +kubebuilder:validation:XValidation:rule="has(self.valuesSource) || !has(self.content) || !has(self.content.valuesFiles) || self.content.valuesFiles.all(f, !has(f.source) || f.source != 'values')",message="a valuesFiles entry with source values requires spec.valuesSource"
type ReleaseSpec struct {
	// cluster names a Cluster in the Release's namespace. Empty means the
	// cluster that convoy runs in.
	// +optional
	Cluster *ClusterReference `json:"cluster,omitempty"`

	// serviceAccountName names a ServiceAccount in the Release's namespace:
	// the identity everything done for the Release uses on the cluster convoy
	// runs in (reading its source, values and renders, the Secret of its
	// Cluster, and, without spec.cluster, applying, comparing and assessing
	// its objects). Empty: the ServiceAccount named by convoy-apiserver's
	// --default-service-account (default "default").
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	ServiceAccountName string `json:"serviceAccountName,omitempty"`

	// targetNamespace is the namespace of namespaced objects that name none.
	// Default: the Release's namespace.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	TargetNamespace string `json:"targetNamespace,omitempty"`

	// source is where the manifests or the chart come from. Exactly one kind
	// of source is set.
	Source ReleaseSource `json:"source"`

	// valuesSource is a second source whose files valuesFiles entries with
	// source values read (Argo CD's multi-source $values): a chart of a
	// platform team's repository, its values from the team's own Git
	// repository. It is fetched as spec.source is (the Release's identity,
	// credentials, address policy, limits, verification) and only when an
	// entry of valuesFiles reads it.
	// +optional
	ValuesSource *ValuesSource `json:"valuesSource,omitempty"`

	// content holds the values of a Helm chart.
	// +optional
	Content *ReleaseContent `json:"content,omitempty"`

	// mutations are applied in order to the rendered objects.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=256
	Mutations []Mutation `json:"mutations,omitempty"`

	// pin pins the Release to a stored render.
	// +optional
	Pin *Pin `json:"pin,omitempty"`

	// syncPolicy says whether convoy corrects drift by itself, and how often
	// it checks.
	// +optional
	// +kubebuilder:default={interval: "5m"}
	SyncPolicy SyncPolicy `json:"syncPolicy,omitempty"`

	// healthAssessment selects the health rule sets. Without it the Release
	// is not assessed (Healthy is True with reason NotConfigured).
	// +optional
	HealthAssessment *HealthAssessment `json:"healthAssessment,omitempty"`
}

// ValuesSource is a source of values files: a directory of a Git commit, a
// bundle of files in an OCI registry, or a ConfigMap's keys. Each kind has
// the fields and rules it has in spec.source.
// +kubebuilder:validation:XValidation:rule="(has(self.configMap) ? 1 : 0) + (has(self.ociRepository) ? 1 : 0) + (has(self.git) ? 1 : 0) == 1",message="exactly one of configMap, ociRepository or git must be set"
type ValuesSource struct {
	// configMap is a ConfigMap in the Release's namespace whose keys are
	// the files (a values file's path is its key).
	// +optional
	ConfigMap *ConfigMapSource `json:"configMap,omitempty"`

	// ociRepository is a bundle of files (one tar+gzip layer) in an OCI
	// registry; not a Helm chart. Its path, if any, is the directory the
	// values files' paths are relative to.
	// +optional
	OCIRepository *OCIRepositorySource `json:"ociRepository,omitempty"`

	// git is a commit of a Git repository. Its path, if any, is the
	// directory the values files' paths are relative to.
	// +optional
	Git *GitRepositorySource `json:"git,omitempty"`
}

// ClusterReference names a Cluster in the Release's namespace.
type ClusterReference struct {
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// ReleaseSource is where the manifests or the chart come from.
// +kubebuilder:validation:XValidation:rule="(has(self.configMap) ? 1 : 0) + (has(self.helmRepository) ? 1 : 0) + (has(self.ociRepository) ? 1 : 0) + (has(self.git) ? 1 : 0) == 1",message="exactly one of configMap, helmRepository, ociRepository or git must be set"
type ReleaseSource struct {
	// configMap is a ConfigMap in the Release's namespace that holds either
	// plain manifests (keys ending .yaml, .yml or .json, in key order) or a
	// packaged Helm chart (binaryData key chart.tgz).
	// +optional
	ConfigMap *ConfigMapSource `json:"configMap,omitempty"`

	// helmRepository is a chart in an HTTP chart repository (its
	// index.yaml).
	// +optional
	HelmRepository *HelmRepositorySource `json:"helmRepository,omitempty"`

	// ociRepository is a Helm chart as helm push writes it, or a bundle of
	// plain manifests (one tar+gzip layer), in an OCI registry.
	// +optional
	OCIRepository *OCIRepositorySource `json:"ociRepository,omitempty"`

	// git is a directory of a commit of a Git repository.
	// +optional
	Git *GitRepositorySource `json:"git,omitempty"`
}

// GitRepositorySource is a directory of a commit of a Git repository,
// resolved from a ref by one ref listing and read from tree objects.
// +kubebuilder:validation:XValidation:rule="!has(self.verify) || !has(self.verify.mode) || self.verify.mode == 'HEAD' || has(self.ref.tag) || has(self.ref.semver)",message="verify.mode Tag and TagAndHEAD verify an annotated tag: the ref must name a tag (ref.tag or ref.semver)"
type GitRepositorySource struct {
	// url is https://HOST/PATH or ssh://[USER@]HOST[:PORT]/PATH (http://
	// only to loopback addresses, with the sources' development flag). An
	// https URL may not hold credentials, an ssh URL no password: it is
	// printed in messages and status; use secretRef.
	// +kubebuilder:validation:Pattern=`^(https|ssh|http)://[^/]+/.+`
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:XValidation:rule="self.startsWith('ssh://') ? !self.matches('^ssh://[^/@]*:[^/@]*@') : !self.matches('^[^/]*//[^/?#]*@')",message="must not hold credentials (user:password@): use secretRef"
	URL string `json:"url"`
	// ref is the branch, tag, semver range or commit to render.
	Ref GitReference `json:"ref"`
	// path is the directory of the commit that the Release renders
	// (default: the repository's root), as ociRepository.path.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('/') && !self.matches('(^|/)[.][.](/|$)')",message="must be relative to the repository's root: no leading / and no .. element"
	Path string `json:"path,omitempty"`
	// secretRef names a Secret of the Release's namespace, read as the
	// Release's ServiceAccount: username and password, or bearerToken, for
	// https; identity (a private key) and known_hosts (required) for ssh.
	// +optional
	SecretRef *LocalObjectReference `json:"secretRef,omitempty"`
	// certSecretRef names a Secret of the Release's namespace with the key
	// ca.crt (a PEM bundle the server's certificate must chain to), and
	// optionally tls.crt and tls.key (a client certificate); https only.
	// +optional
	CertSecretRef *LocalObjectReference `json:"certSecretRef,omitempty"`
	// verify makes a signature of the commit (or of the annotated tag the
	// ref names) a condition of its render, as Flux's GitRepository
	// spec.verify: a commit that does not verify is never rendered,
	// compared or shown.
	// +optional
	Verify *GitVerification `json:"verify,omitempty"`
}

// GitVerification says what of a Git source must be signed, and by whom.
type GitVerification struct {
	// mode is what is verified, with Flux's names: HEAD the commit that is
	// rendered; Tag the annotated tag the ref names (ref.tag or
	// ref.semver), which must name that commit; TagAndHEAD both.
	// +optional
	// +kubebuilder:default=HEAD
	// +kubebuilder:validation:Enum=HEAD;Tag;TagAndHEAD
	Mode string `json:"mode,omitempty"`
	// secretRef names a Secret of the Release's namespace, read as the
	// Release's ServiceAccount, that holds the public keys a signature may
	// be made by: OpenPGP armored public keys or key rings in keys ending
	// .asc; SSH public keys, as authorized_keys lines, in keys ending .pub
	// or in the key allowed_signers (Git's gpg.ssh.allowedSignersFile). A
	// signature by any of them verifies.
	SecretRef LocalObjectReference `json:"secretRef"`
}

// GitReference is one kind of ref: a branch, a tag, a semver range over
// the tags, or a commit (which may name a branch to fetch it from).
// +kubebuilder:validation:XValidation:rule="(has(self.tag) ? 1 : 0) + (has(self.semver) ? 1 : 0) + (has(self.commit) ? 1 : 0) + (has(self.branch) && !has(self.commit) ? 1 : 0) == 1",message="exactly one of branch, tag, semver or commit must be set (a commit may name the branch to fetch it from)"
type GitReference struct {
	// branch is a branch name (main, release/1.x).
	// +optional
	// +kubebuilder:validation:MaxLength=255
	Branch string `json:"branch,omitempty"`
	// tag is a tag name.
	// +optional
	// +kubebuilder:validation:MaxLength=255
	Tag string `json:"tag,omitempty"`
	// semver is a version range over the tags (">=1.2.0 <2.0.0", "~1.4"),
	// as for Helm repository versions: the highest tag that meets it,
	// prereleases excluded unless the range names one.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	SemVer string `json:"semver,omitempty"`
	// commit is a full commit hash: 40 hex digits.
	// +optional
	// +kubebuilder:validation:Pattern=`^[0-9a-f]{40}$`
	Commit string `json:"commit,omitempty"`
}

// ConfigMapSource names a ConfigMap in the Release's namespace.
type ConfigMapSource struct {
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// HelmRepositorySource is a chart in an HTTP chart repository.
type HelmRepositorySource struct {
	// url is the repository: its index is url/index.yaml. It may not hold
	// credentials (user:password@): it is printed in messages and status.
	// +kubebuilder:validation:Pattern=`^https?://[^/]+`
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:XValidation:rule="!self.matches('^[^/]*//[^/?#]*@')",message="must not hold credentials (user:password@): use secretRef"
	URL string `json:"url"`
	// chart is the name of the chart in the index.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Chart string `json:"chart"`
	// version is an exact version or a semver constraint (">=1.2.0 <2.0.0",
	// "~1.4"); empty: the highest version that is not a prerelease.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	Version string `json:"version,omitempty"`
	// secretRef names a Secret of the Release's namespace with the keys
	// username and password, read as the Release's ServiceAccount.
	// +optional
	SecretRef *LocalObjectReference `json:"secretRef,omitempty"`
	// certSecretRef names a Secret of the Release's namespace with the key
	// ca.crt (a PEM bundle the repository's certificate must chain to), and
	// optionally tls.crt and tls.key (a client certificate).
	// +optional
	CertSecretRef *LocalObjectReference `json:"certSecretRef,omitempty"`
	// verify makes the chart's provenance a condition of its render, as
	// helm verify checks it: the .prov file beside the chart (its URL and
	// .prov) must be signed by a key of the Secret and name the digest of
	// the chart archive fetched, or nothing of it is rendered, compared or
	// shown.
	// +optional
	Verify *HelmVerification `json:"verify,omitempty"`
}

// HelmVerification says whose provenance signature a Helm repository chart
// must carry.
type HelmVerification struct {
	// provider of the signatures: helm (helm package --sign's .prov file).
	// +kubebuilder:validation:Enum=helm
	Provider string `json:"provider"`
	// secretRef names a Secret of the Release's namespace, read as the
	// Release's ServiceAccount, whose keys ending in .asc hold OpenPGP
	// armored public keys or key rings: a signature by any of them
	// verifies.
	SecretRef LocalObjectReference `json:"secretRef"`
}

// OCIRepositorySource is an artifact in an OCI registry, by tag or by
// digest.
// +kubebuilder:validation:XValidation:rule="has(self.tag) != has(self.digest)",message="exactly one of tag and digest must be set"
type OCIRepositorySource struct {
	// url is oci://HOST[:PORT]/PATH, the repository. It may not hold
	// credentials (user:password@): it is printed in messages and status.
	// +kubebuilder:validation:Pattern=`^oci://[^/]+/.+`
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:XValidation:rule="!self.matches('^[^/]*//[^/?#]*@')",message="must not hold credentials (user:password@): use secretRef"
	URL string `json:"url"`
	// tag of the artifact; it is resolved to a digest once per render.
	// +optional
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$`
	Tag string `json:"tag,omitempty"`
	// digest of the artifact's manifest: sha256: and 64 hex digits.
	// +optional
	// +kubebuilder:validation:Pattern=`^sha256:[a-f0-9]{64}$`
	Digest string `json:"digest,omitempty"`
	// path is the directory of a bundle of files that the Release renders
	// (default: the bundle's root): a kustomization there is built with
	// kustomize, a Chart.yaml makes it a chart, otherwise its YAML and
	// JSON files, recursively, are read in path order. It is relative to
	// the bundle's root: no leading /, no .. element. It is not used for a
	// Helm chart artifact.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('/') && !self.matches('(^|/)[.][.](/|$)')",message="must be relative to the bundle's root: no leading / and no .. element"
	Path string `json:"path,omitempty"`
	// secretRef names a Secret of type kubernetes.io/dockerconfigjson of the
	// Release's namespace, read as the Release's ServiceAccount: its entry
	// for the registry's host.
	// +optional
	SecretRef *LocalObjectReference `json:"secretRef,omitempty"`
	// certSecretRef names a Secret of the Release's namespace with the key
	// ca.crt (a PEM bundle the registry's certificate must chain to), and
	// optionally tls.crt and tls.key (a client certificate).
	// +optional
	CertSecretRef *LocalObjectReference `json:"certSecretRef,omitempty"`
	// verify makes a signature of the artifact a condition of its render:
	// the digest the tag resolved to must carry a signature that verifies,
	// or nothing of it is rendered, compared or shown.
	// +optional
	Verify *OCIVerification `json:"verify,omitempty"`
}

// OCIVerification says whose signatures an OCI artifact must carry: a
// key's of a Secret (secretRef), or keyless, a certificate of a Sigstore
// trust root issued to one of the identities (matchOIDCIdentity).
// +kubebuilder:validation:XValidation:rule="has(self.secretRef) != has(self.matchOIDCIdentity)",message="exactly one of secretRef (public keys) and matchOIDCIdentity (keyless) is required"
// +kubebuilder:validation:XValidation:rule="!has(self.trustedRootSecretRef) || has(self.matchOIDCIdentity)",message="trustedRootSecretRef is for keyless verification (matchOIDCIdentity)"
type OCIVerification struct {
	// provider of the signatures: cosign (the legacy sha256-HEX.sig tag
	// and Sigstore bundles attached as OCI referrers).
	// +kubebuilder:validation:Enum=cosign
	Provider string `json:"provider"`
	// secretRef names a Secret of the Release's namespace, read as the
	// Release's ServiceAccount, whose keys ending in .pub each hold a PEM
	// public key: a signature by any of them verifies.
	// +optional
	SecretRef *LocalObjectReference `json:"secretRef,omitempty"`
	// matchOIDCIdentity: a keyless signature verifies when its certificate
	// was issued to one of these identities (and chains to the trusted
	// root, with the log entry or timestamp the root requires).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	MatchOIDCIdentity []OIDCIdentityMatch `json:"matchOIDCIdentity,omitempty"`
	// trustedRootSecretRef names a Secret of the Release's namespace, read
	// as the Release's ServiceAccount, whose key trusted_root.json holds
	// the Sigstore trust root (certificate authorities, transparency logs,
	// timestamping authorities) of keyless signatures: a private Sigstore
	// instance, or the public one's copied for an air-gapped cluster.
	// Without it, the public Sigstore trust root, where the server allows
	// it (--sigstore-public-trust-root).
	// +optional
	TrustedRootSecretRef *LocalObjectReference `json:"trustedRootSecretRef,omitempty"`
}

// OIDCIdentityMatch is an identity of keyless certificates: RE2 regular
// expressions, each matching the whole value (as if between ^ and $).
type OIDCIdentityMatch struct {
	// issuer matches the certificate's OIDC issuer (e.g.
	// https://token\.actions\.githubusercontent\.com).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Issuer string `json:"issuer"`
	// subject matches the certificate's subject alternative name: the
	// signing workflow's URI, an email (e.g.
	// https://github\.com/ORG/REPO/\.github/workflows/release\.yaml@refs/tags/.*).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Subject string `json:"subject"`
}

// LocalObjectReference names an object of the Release's namespace.
type LocalObjectReference struct {
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// ReleaseContent holds the values of a Helm chart.
type ReleaseContent struct {
	// values are Helm values, merged last.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	// +kubebuilder:validation:Schemaless
	Values *runtime.RawExtension `json:"values,omitempty"`

	// valuesFiles are YAML files of the Release's own source, read from the
	// chart's directory (a chart's directory in Git, a ConfigMap or a
	// bundle, or a packaged chart's own files) and merged in order after the
	// chart's values.yaml and before valuesFrom and values, as helm's -f.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	ValuesFiles []ValuesFile `json:"valuesFiles,omitempty"`

	// valuesFrom are read and merged in order, after valuesFiles and before
	// values.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	ValuesFrom []ValuesReference `json:"valuesFrom,omitempty"`
}

// Sources a ValuesFile reads.
const (
	// ValuesFileSourceChart is the chart's own source, spec.source.
	ValuesFileSourceChart = "chart"
	// ValuesFileSourceValues is spec.valuesSource.
	ValuesFileSourceValues = "values"
)

// ValuesFile is a values file of the Release's source, or of its values
// source.
type ValuesFile struct {
	// source is the source the file is read from: chart (the default), the
	// chart's own files of spec.source; values, the files of
	// spec.valuesSource, which must be set.
	// +optional
	// +kubebuilder:validation:Enum=chart;values
	Source string `json:"source,omitempty"`
	// path of the file, relative to the chart's directory and within it
	// (values-prod.yaml, env/prod.yaml); for source values, relative to the
	// values source's root (or its path) and within it (envs/prod/values.yaml).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('/') && !self.matches('(^|/)[.][.](/|$)')",message="must be relative to the chart's directory and within it: no leading / and no .. element"
	Path string `json:"path"`
	// optional: a missing file is skipped instead of failing the render.
	// +optional
	Optional bool `json:"optional,omitempty"`
}

// ValuesReference points at Helm values in a ConfigMap or Secret of the
// Release's namespace.
type ValuesReference struct {
	// +kubebuilder:validation:Enum=ConfigMap;Secret
	Kind string `json:"kind"`
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// key in the data of the object. Default: values.yaml.
	// +optional
	// +kubebuilder:default="values.yaml"
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	Key string `json:"key,omitempty"`
	// optional: a missing object or key is skipped instead of failing the render.
	// +optional
	Optional bool `json:"optional,omitempty"`
}

// Mutation changes the rendered objects that its target selects. Exactly one
// of patch, jsonPatch, labels and annotations is set.
// +kubebuilder:validation:XValidation:rule="(has(self.patch) ? 1 : 0) + (has(self.jsonPatch) ? 1 : 0) + (has(self.labels) ? 1 : 0) + (has(self.annotations) ? 1 : 0) == 1",message="exactly one of patch, jsonPatch, labels or annotations must be set"
type Mutation struct {
	// target selects the objects; empty fields match all.
	// +optional
	Target MutationTarget `json:"target,omitempty"`

	// patch is a strategic merge patch for built-in kinds and a JSON merge
	// patch for other kinds.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	// +kubebuilder:validation:Schemaless
	Patch *runtime.RawExtension `json:"patch,omitempty"`

	// jsonPatch is an RFC 6902 JSON patch.
	// +optional
	// +listType=atomic
	JSONPatch []JSONPatchOperation `json:"jsonPatch,omitempty"`

	// labels are added to metadata.labels.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`

	// annotations are added to metadata.annotations.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// MutationTarget selects rendered objects. Empty fields match all.
type MutationTarget struct {
	// +optional
	Group string `json:"group,omitempty"`
	// +optional
	Version string `json:"version,omitempty"`
	// +optional
	Kind string `json:"kind,omitempty"`
	// +optional
	Name string `json:"name,omitempty"`
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// +optional
	LabelSelector *LabelSelector `json:"labelSelector,omitempty"`
}

// JSONPatchOperation is one operation of an RFC 6902 JSON patch.
type JSONPatchOperation struct {
	// +kubebuilder:validation:Enum=add;remove;replace;move;copy;test
	Op string `json:"op"`
	// +kubebuilder:validation:Pattern=`^(/.*)?$`
	Path string `json:"path"`
	// +optional
	// +kubebuilder:validation:Pattern=`^(/.*)?$`
	From string `json:"from,omitempty"`
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	Value *runtime.RawExtension `json:"value,omitempty"`
}

// Pin pins a Release to a stored render.
type Pin struct {
	// renderRef of a render in the render store.
	// +kubebuilder:validation:Pattern=`^[0-9a-f]{16}$`
	RenderRef string `json:"renderRef"`
}

// SyncPolicy says whether convoy corrects drift by itself and how often the
// observer checks.
type SyncPolicy struct {
	// automatic, when present, selects automatic mode: the observer requests
	// a sync when it finds drift.
	// +optional
	Automatic *AutomaticSync `json:"automatic,omitempty"`

	// interval between two drift passes, and the longest wait between two
	// health passes. Default: 5m.
	// +optional
	// +kubebuilder:default="5m"
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s')",message="interval must be positive"
	Interval *metav1.Duration `json:"interval,omitempty"`
}

// AutomaticSync selects automatic mode. It has no fields yet.
type AutomaticSync struct{}

// HealthAssessment selects the health rule sets of a Release.
type HealthAssessment struct {
	// globalRuleSetSelector selects GlobalHealthRuleSets. Not set selects
	// none; {} selects all.
	// +optional
	GlobalRuleSetSelector *LabelSelector `json:"globalRuleSetSelector,omitempty"`

	// localRuleSetSelector selects HealthRuleSets in the Release's
	// namespace. Not set selects none; {} selects all.
	// +optional
	LocalRuleSetSelector *LabelSelector `json:"localRuleSetSelector,omitempty"`

	// deadline after the first failure of a resource, past which it is
	// Degraded instead of Progressing. Without it a failing resource stays
	// Progressing.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s')",message="deadline must be positive"
	Deadline *metav1.Duration `json:"deadline,omitempty"`
}

// ReleaseStatus is the observed state of a Release.
type ReleaseStatus struct {
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: Ready (controller), InSync and Healthy (observer).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// lastAttempted is the render the controller last tried to apply.
	// +optional
	LastAttempted *RenderRecord `json:"lastAttempted,omitempty"`
	// lastApplied is the render the controller last applied in full.
	// +optional
	LastApplied *RenderRecord `json:"lastApplied,omitempty"`
	// lastHealthy is the last render that was fully healthy.
	// +optional
	LastHealthy *RenderRecord `json:"lastHealthy,omitempty"`

	// rollout is the progress of the current rollout.
	// +optional
	Rollout *RolloutStatus `json:"rollout,omitempty"`

	// healthSummary counts the inventory entries in each health state.
	// +optional
	HealthSummary *HealthSummary `json:"healthSummary,omitempty"`

	// selfHeal is what the observer's drift loop knows of the fights of
	// self-heal: the contested fields and the backoff of its self-heal
	// requests. Written by the leader's drift pass (field manager
	// convoy-observe) when it changes; every replica's /diff reads it, and
	// a new leader goes on from it. Absent when no field is contested.
	// +optional
	SelfHeal *SelfHealStatus `json:"selfHeal,omitempty"`

	// lastResolved is the revision the observer's drift loop last resolved
	// the Release's source to (not for a ConfigMap source): written by the
	// leader's drift pass (field manager convoy-observe) when it changes.
	// +optional
	LastResolved *LastResolved `json:"lastResolved,omitempty"`
	// lastResolvedValuesSource is, as lastResolved, the revision the drift
	// loop last resolved spec.valuesSource to, when a fresh render read
	// values files from it (not for a ConfigMap).
	// +optional
	LastResolvedValuesSource *LastResolved `json:"lastResolvedValuesSource,omitempty"`
	// lastHandledRefreshAt is the value of the annotation
	// convoy.kumodo.io/refresh-requested-at that the drift loop last
	// handled: a pass that resolved the source again after that time.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	LastHandledRefreshAt string `json:"lastHandledRefreshAt,omitempty"`
}

// LastResolved is a source and the revision it resolved to.
type LastResolved struct {
	// kind is OCIRepository, HelmRepository or GitRepository.
	// +kubebuilder:validation:MaxLength=64
	Kind string `json:"kind"`
	// url is the repository.
	// +kubebuilder:validation:MaxLength=2048
	URL string `json:"url"`
	// chart is the chart's name (HelmRepository).
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Chart string `json:"chart,omitempty"`
	// tag is the tag asked for (OCIRepository, when by tag).
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Tag string `json:"tag,omitempty"`
	// version is the chart version chosen (HelmRepository).
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Version string `json:"version,omitempty"`
	// ref is the Git ref the commit came from (refs/heads/NAME,
	// refs/tags/NAME).
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Ref string `json:"ref,omitempty"`
	// digest is the sha256 digest the artifact was fetched by (OCI, Helm).
	// +optional
	// +kubebuilder:validation:MaxLength=128
	Digest string `json:"digest,omitempty"`
	// commit is the Git commit.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	Commit string `json:"commit,omitempty"`
	// time is when the drift loop first resolved this revision.
	Time metav1.Time `json:"time"`
}

// Bounds of SelfHealStatus, enforced by the observer when it writes and by
// the CRD's schema.
const (
	// MaxContestedFields is the most contested fields status.selfHeal
	// lists; the ones contested longest come first.
	MaxContestedFields = 32
	// MaxContestedPath is the longest path of a contested field; a longer
	// one is cut.
	MaxContestedPath = 512
	// MaxFieldManager is the longest field manager the API server records.
	MaxFieldManager = 128
)

// SelfHealStatus is the observer's memory of self-heal: what a new leader
// needs to keep backing off, and what /diff shows on every replica. It
// holds no value of any field, only names and times.
type SelfHealStatus struct {
	// contested are the fields another manager took back after each
	// self-heal (see ContestedField), at most 32: the ones contested
	// longest first.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	Contested []ContestedField `json:"contested,omitempty"`
	// backoff is the time between two self-heal requests while every
	// drifted field is contested: it doubles from twice the interval up to
	// --contest-max-backoff.
	// +optional
	Backoff *metav1.Duration `json:"backoff,omitempty"`
	// nextRequestAt is the earliest time of the next self-heal request
	// while every drifted field is contested.
	// +optional
	NextRequestAt *metav1.Time `json:"nextRequestAt,omitempty"`
}

// ContestedField is a field of an object of the Release that the same
// manager (name and subresource) took back after each self-heal, at least
// --contest-heals times within --contest-window: a fight self-heal cannot
// win. Remove the field from the render, or let that manager own it.
type ContestedField struct {
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Group string `json:"group,omitempty"`
	// +kubebuilder:validation:MaxLength=253
	Kind string `json:"kind"`
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace,omitempty"`
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// path of the field, as /diff names it
	// (spec.template.spec.containers[name=app].image); cut past 512
	// characters.
	// +kubebuilder:validation:MaxLength=512
	Path string `json:"path"`
	// manager that takes the field back.
	// +kubebuilder:validation:MaxLength=128
	Manager string `json:"manager"`
	// subresource the manager writes through (scale, status), empty for
	// the object itself.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Subresource string `json:"subresource,omitempty"`
	// heals is how many times the manager took the field back after a
	// self-heal, within the window.
	// +kubebuilder:validation:Minimum=0
	Heals int32 `json:"heals"`
	// since is when the field was found contested.
	Since metav1.Time `json:"since"`
}

// Object is the key of the object the field belongs to.
func (f ContestedField) Object() ObjectKey {
	return ObjectKey{Group: f.Group, Kind: f.Kind, Namespace: f.Namespace, Name: f.Name}
}

// RenderRecord names a render and when it happened.
type RenderRecord struct {
	// +kubebuilder:validation:Pattern=`^[0-9a-f]{16}$`
	RenderRef string `json:"renderRef"`
	// +optional
	Time metav1.Time `json:"time,omitempty"`
}

// RolloutPhase is the phase of a rollout.
// +kubebuilder:validation:Enum=Progressing;Holding;Complete;Failed;RolledBack
type RolloutPhase string

// Rollout phases.
const (
	RolloutProgressing RolloutPhase = "Progressing"
	RolloutHolding     RolloutPhase = "Holding"
	RolloutComplete    RolloutPhase = "Complete"
	RolloutFailed      RolloutPhase = "Failed"
	RolloutRolledBack  RolloutPhase = "RolledBack"
)

// RolloutStatus is the progress of a rollout.
type RolloutStatus struct {
	Phase RolloutPhase `json:"phase"`
	// wave is the sync wave the rollout is at.
	// +optional
	Wave int32 `json:"wave,omitempty"`
}

// HealthSummary counts the resources of a Release in each health state.
type HealthSummary struct {
	Total       int32 `json:"total"`
	Healthy     int32 `json:"healthy"`
	Progressing int32 `json:"progressing"`
	Degraded    int32 `json:"degraded"`
	Unknown     int32 `json:"unknown"`
	// suspended counts the resources whose controller stopped on purpose
	// (a paused rollout, a suspended Job).
	// +optional
	Suspended int32 `json:"suspended,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// ReleaseList is a list of Releases.
type ReleaseList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Release `json:"items"`
}
