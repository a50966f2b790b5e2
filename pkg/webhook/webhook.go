// Package webhook is the pure part of webhook receivers (issue 62): the
// signature of a delivery checked on its raw body (Verify), what the
// delivery says changed (Parse: the repository's URLs, the refs or tags,
// the event, the delivery id), and whether that concerns a Release's
// source (Normalize, Matches). It does no I/O and keeps no state: the
// listener that calls it (pkg/receiver) caps the body, holds the secrets
// (pkg/receiverindex) and refreshes the Releases.
//
// Receive is the order a listener must keep: the signature on the raw
// bytes first, and only then the JSON.
package webhook

import "net/http"

// Type is the sender of a delivery: how it is signed and what its body
// looks like.
type Type string

// Types of senders.
const (
	// GitHub: X-Hub-Signature-256: sha256=HEX, HMAC-SHA256 of the body.
	GitHub Type = "github"
	// GitLab: X-Gitlab-Token, the secret token itself. A token, unlike an
	// HMAC, does not sign the body: whoever reads one delivery (no TLS, a
	// log of headers) can send any body with it.
	GitLab Type = "gitlab"
	// Gitea: X-Gitea-Signature: HEX, HMAC-SHA256 of the body.
	Gitea Type = "gitea"
	// Forgejo: X-Forgejo-Signature: HEX, HMAC-SHA256 of the body.
	Forgejo Type = "forgejo"
	// BitbucketServer (and Data Center): X-Hub-Signature: sha256=HEX,
	// HMAC-SHA256 of the body.
	BitbucketServer Type = "bitbucket"
	// Generic: X-Signature-256: sha256=HEX, HMAC-SHA256 of the body, and a
	// body of GenericPayload's shape, for a CI job or a script.
	Generic Type = "generic-hmac"
	// Harbor: Authorization, the secret itself (Harbor's "Auth Header"),
	// a token as GitLab's is: it does not sign the body.
	Harbor Type = "harbor"
)

// Types lists every Type, in a fixed order.
var Types = []Type{GitHub, GitLab, Gitea, Forgejo, BitbucketServer, Generic, Harbor}

// Bounds of what a Delivery keeps of a body: a longer string is dropped,
// not cut (a cut URL or ref could match another), and past a count the
// rest is left out.
const (
	MaxRepositories = 16
	MaxRefs         = 64
	MaxURLLength    = 2048
	MaxRefLength    = 512
	MaxIDLength     = 128
	MaxEventLength  = 64
)

// Delivery is what one webhook delivery says changed.
type Delivery struct {
	// Type is the sender.
	Type Type
	// Event is the sender's event (push, Push Hook, repo:refs_changed,
	// PUSH_ARTIFACT, ...), empty when it sent none.
	Event string
	// ID is the delivery's id for deduplication, empty when the sender
	// sent none (or one too long or of odd characters).
	ID string
	// Ping is a delivery that only tests the hook (GitHub's ping,
	// Bitbucket Server's diagnostics:ping): answered, nothing refreshed.
	Ping bool
	// Repositories are the URLs of the repository as the sender spells it
	// (a forge's https and ssh clone URLs, a registry's host/project/repo),
	// as sent: Matches normalises them.
	Repositories []string
	// Refs are the Git refs that changed, full names (refs/heads/main,
	// refs/tags/v1.2.0).
	Refs []string
	// Tags are the OCI tags pushed (Harbor, Generic).
	Tags []string
}

// Refresh tells whether the delivery names anything to refresh: not a
// ping, not an event of no interest, a repository and a ref or tag.
func (d Delivery) Refresh() bool {
	return !d.Ping && len(d.Repositories) > 0 && (len(d.Refs) > 0 || len(d.Tags) > 0)
}

// Receive verifies the delivery's signature on the raw body and then, and
// only then, parses it.
func Receive(t Type, h http.Header, body, secret []byte) (Delivery, error) {
	if err := Verify(t, h, body, secret); err != nil {
		return Delivery{}, err
	}
	return Parse(t, h, body)
}
