// Package errtext is the one place where convoy-apiserver reads the text of
// an error or a message: for the cases it must tell apart where a library or
// a program gives no type, code or field to tell them by. Everywhere else a
// failure is told by its type (errors.As), its *failure.Error reason or an
// API Status's code and reason.
//
// Each function names what produces the text and the text it matches, and
// its test gets that text from the producer itself (go-containerregistry's
// client against a registry, k8s.io/apiserver's own constructors of the
// Statuses kube-apiserver answers, the Go runtime of a child), so that an
// upgrade that changes a text fails a test rather than a classification.
package errtext

import (
	"regexp"
	"strings"
)

// DigestMismatch reports whether err is go-containerregistry's (v0.22)
// refusal of bytes that do not match the digest or size they were asked for
// by. It returns these as errors without an exported type:
//
//   - remote's check of a manifest fetched by digest: fmt.Errorf("manifest
//     digest: %q does not match requested digest: %q for %q");
//   - internal/verify's check of a blob read through
//     Layer.Compressed (an unexported type's "error verifying sha256
//     checksum after reading N bytes; got ..., want ...", and "error
//     verifying size; got N, want M").
func DigestMismatch(err error) bool {
	if err == nil {
		return false
	}
	msg := err.Error()
	return strings.Contains(msg, "does not match requested digest") || strings.Contains(msg, "error verifying ")
}

// RedirectRefused reports whether err is go-containerregistry's refusal
// (remote.checkRedirectSSRF, v0.22) to follow a redirect to a private or
// link-local address literal of another host: fmt.Errorf("SSRF protection:
// redirect from %q to private/link-local host %q denied"). The refusal comes
// before any connection to that address.
func RedirectRefused(err error) bool {
	return err != nil && strings.Contains(err.Error(), "SSRF protection: redirect ")
}

// impersonationRefusal matches kube-apiserver's refusal to let a user act as
// another (k8s.io/apiserver's responsewriters.ForbiddenStatusError for the
// impersonation filter's attributes), and names the user. v1.37 writes,
// with constrained impersonation, `User "U" cannot
// impersonate-on:serviceaccount:get resource "configmaps" ...` (the verb
// that a narrower grant would need), and without it `User "U" cannot
// impersonate resource "serviceaccounts" ...`. The Status is a plain 403
// whose details name the impersonated object, as for any other refusal:
// only the verb in the message tells it.
var impersonationRefusal = regexp.MustCompile(`User "([^"]+)" cannot impersonate(-on:[a-z-]+:[a-z]+)? resource `)

// ImpersonationRefused reports whether message, of a 403 of kube-apiserver,
// refuses impersonation, and returns the user that was refused.
func ImpersonationRefused(message string) (user string, ok bool) {
	m := impersonationRefusal.FindStringSubmatch(message)
	if m == nil {
		return "", false
	}
	return m[1], true
}

// AdmissionDenied reports whether message, of a 403 of kube-apiserver,
// comes from admission (a ValidatingAdmissionPolicy, or a webhook that
// denied without a code of its own) rather than from authorization: both
// answer a Status of code 403 and reason Forbidden. The texts are
// k8s.io/apiserver's: the policy dispatcher's "ValidatingAdmissionPolicy
// '%s' ... denied request: %s" (and the generic dispatcher's "policy '%s'
// ... denied request"), and webhook errors.ToStatusErr's "admission webhook
// %q denied the request".
func AdmissionDenied(message string) bool {
	for _, s := range []string{"denied request", "denied the request", "ValidatingAdmissionPolicy", "admission webhook"} {
		if strings.Contains(message, s) {
			return true
		}
	}
	return false
}

// OutOfMemory reports whether stderr, the standard error of a Go child that
// failed, is the Go runtime's fatal error for a memory limit it reached
// ("fatal error: runtime: out of memory", "fatal error: runtime: cannot
// allocate memory", "fatal error: out of memory allocating heap arena
// metadata", ...): the runtime exits with code 2 for every fatal error, a
// stack overflow alike.
func OutOfMemory(stderr string) bool {
	return strings.Contains(stderr, "fatal error: ") &&
		(strings.Contains(stderr, "out of memory") || strings.Contains(stderr, "cannot allocate memory"))
}
