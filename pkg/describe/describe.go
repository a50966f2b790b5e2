// Package describe names a Release's source and revisions in words, the same
// way wherever they are shown: the plugin's tables and overview, and the web
// view.
package describe

import (
	"fmt"
	"strings"
	"time"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
)

// Source names the source of r.
func Source(r *convoyv1alpha1.Release) string {
	s := r.Spec.Source
	switch {
	case s.ConfigMap != nil:
		return "ConfigMap " + s.ConfigMap.Name
	case s.HelmRepository != nil:
		v := s.HelmRepository.Version
		if v == "" {
			v = "latest"
		}
		return fmt.Sprintf("Helm chart %s %s from %s", s.HelmRepository.Chart, v, s.HelmRepository.URL)
	case s.OCIRepository != nil && s.OCIRepository.Digest != "":
		return fmt.Sprintf("OCI %s@%s", s.OCIRepository.URL, s.OCIRepository.Digest)
	case s.OCIRepository != nil:
		return fmt.Sprintf("OCI %s:%s", s.OCIRepository.URL, s.OCIRepository.Tag)
	case s.Git != nil:
		return fmt.Sprintf("Git %s %s", s.Git.URL, GitRef(s.Git.Ref))
	}
	return "-"
}

// GitRef names the ref of a Git source.
func GitRef(r convoyv1alpha1.GitReference) string {
	switch {
	case r.Commit != "" && r.Branch != "":
		return fmt.Sprintf("commit %s (branch %s)", r.Commit, r.Branch)
	case r.Commit != "":
		return "commit " + r.Commit
	case r.Tag != "":
		return "tag " + r.Tag
	case r.SemVer != "":
		return "semver " + r.SemVer
	}
	return "branch " + r.Branch
}

// Resolved names what the source of the desired render resolved to: the
// chart version of a Helm repository, the tag of an OCI artifact, and the
// digest it was fetched and verified by; the ref and commit of a Git
// repository; and the signature it was verified with, if any (for a Git
// source verified in mode TagAndHEAD, the commit's and then the tag's).
func Resolved(r *subresourcesv1alpha1.ResolvedSource) string {
	out := resolvedArtifact(r)
	if v := r.Verified; v != nil {
		out += ", signed: " + Signature(v)
	}
	if v := r.VerifiedTag; v != nil {
		out += ", tag signed: " + Signature(v)
	}
	return out
}

// Signature names the signature an artifact was verified with: its
// provider, the key of the verify Secret and the public key's fingerprint,
// and where the signature was found (its layout). A cosign signature names a
// keyless signer by its certificate's subject and issuer; a Git or Helm
// signature names its format (openpgp, ssh), the signer as the key names it
// (an OpenPGP user id, the principals of an SSH key) and the OpenPGP key id
// of the key or subkey that signed.
func Signature(v *subresourcesv1alpha1.SourceSignature) string {
	switch {
	case v.Provider == "cosign" && v.Key != "":
		return fmt.Sprintf("%s key %s (%s, %s)", v.Provider, v.Key, v.Fingerprint, v.Layout)
	case v.Provider == "cosign":
		return fmt.Sprintf("%s keyless by %s of issuer %s (%s)", v.Provider, v.Subject, v.Issuer, v.Layout)
	}
	out := v.Provider
	if v.Format != "" {
		out += " " + v.Format
	}
	if v.Key != "" {
		out += " key " + v.Key
	}
	if v.Identity != "" {
		out += " by " + v.Identity
	}
	var details []string
	if v.Fingerprint != "" {
		details = append(details, v.Fingerprint)
	}
	if v.KeyID != "" {
		details = append(details, "key id "+v.KeyID)
	}
	if v.Layout != "" {
		details = append(details, v.Layout)
	}
	if len(details) > 0 {
		out += " (" + strings.Join(details, ", ") + ")"
	}
	return out
}

// resolvedArtifact names the artifact or commit of r.
func resolvedArtifact(r *subresourcesv1alpha1.ResolvedSource) string {
	switch {
	case r.Commit != "" && r.Ref != "":
		return fmt.Sprintf("%s %s (commit %s)", r.URL, r.Ref, r.Commit)
	case r.Commit != "":
		return fmt.Sprintf("%s (commit %s)", r.URL, r.Commit)
	case r.Version != "":
		return fmt.Sprintf("%s %s (%s)", r.Chart, r.Version, r.Digest)
	case r.Tag != "":
		return fmt.Sprintf("%s:%s (%s)", r.URL, r.Tag, r.Digest)
	}
	return fmt.Sprintf("%s@%s", r.URL, r.Digest)
}

// LastResolved names a source and its revision (status.lastResolved) on one
// line, with the time it was first resolved to.
func LastResolved(r *convoyv1alpha1.LastResolved) string {
	out := r.URL
	switch {
	case r.Chart != "":
		out += " " + r.Chart + " " + r.Version
	case r.Tag != "":
		out += ":" + r.Tag
	case r.Ref != "":
		out += " " + r.Ref
	}
	switch {
	case r.Commit != "":
		out += " (commit " + r.Commit + ")"
	case r.Digest != "":
		out += " (" + r.Digest + ")"
	}
	return out + ", since " + r.Time.UTC().Format(time.RFC3339)
}

// ShortRevision is the commit or digest of r, shortened as git does; empty
// when r is nil or names neither.
func ShortRevision(r *convoyv1alpha1.LastResolved) string {
	switch {
	case r == nil:
		return ""
	case r.Commit != "":
		return r.Commit[:min(12, len(r.Commit))]
	case r.Digest != "":
		return r.Digest[:min(len("sha256:")+12, len(r.Digest))]
	}
	return ""
}

// Unattributed says in a sentence why a change has no owner; nothing when
// the server did not say.
func Unattributed(u subresourcesv1alpha1.Unattributed) string {
	switch u {
	case subresourcesv1alpha1.UnattributedNoManager:
		return "no manager but convoy's owns it: the render changed since it was applied, or an admission webhook or a client that records no managedFields changed it"
	case subresourcesv1alpha1.UnattributedUnowned:
		return "no manager owns it: a client that records no managedFields (or reset them), or an admission webhook, changed it"
	case subresourcesv1alpha1.UnattributedRemoved:
		return "removed from the live object: managedFields does not record who removes a field"
	case "":
		return ""
	}
	return "no manager recorded it (" + string(u) + ")" // a reason of a newer server
}

// Manager names a field manager as people read it: "manager", or "manager
// (subresource)" for one that wrote through a subresource (kubectl scale).
func Manager(manager, subresource string) string {
	if subresource != "" {
		return manager + " (" + subresource + ")"
	}
	return manager
}
