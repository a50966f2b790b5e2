package git

import (
	"fmt"

	"github.com/go-git/go-git/v5/plumbing/transport"
)

// Kind is what an Error of this package is, for the caller to classify
// (pkg/source maps each to the reason of a condition).
type Kind int

const (
	// KindTooManyRefs: a server advertised more refs than Limits.Refs.
	KindTooManyRefs Kind = iota + 1
	// KindTooLarge: an answer, the objects of a fetch, or the files of a
	// commit passed Limits.Bytes, or a commit holds more than MaxFiles
	// files.
	KindTooLarge
	// KindKnownHostsInvalid: the known_hosts of an SSHAuth does not parse,
	// is empty, or lists no key for the host: the credentials are to
	// correct, not the server.
	KindKnownHostsInvalid
	// KindRedirected: an HTTP server redirected to another host.
	KindRedirected
	// KindNotFound: the commit asked for is not in what the server sent,
	// or the server did not send it.
	KindNotFound
	// KindUnsupported: a tree or a file of the commit could not be read.
	KindUnsupported
)

// Error is a failure this package finds itself; the failures of the
// server and of the network come as go-git's errors (ErrRepositoryNotFound,
// ...) or a *HostKeyError, and an error of the dialer as the dialer gave
// it.
type Error struct {
	Kind    Kind
	Message string
	Err     error
}

func (e *Error) Error() string { return e.Message }

func (e *Error) Unwrap() error { return e.Err }

func errorf(kind Kind, err error, format string, args ...any) *Error {
	msg := fmt.Sprintf(format, args...)
	if err != nil {
		msg += ": " + err.Error()
	}
	return &Error{Kind: kind, Message: msg, Err: err}
}

// go-git's errors of a server's answer, for the caller's errors.Is.
var (
	ErrRepositoryNotFound     = transport.ErrRepositoryNotFound
	ErrEmptyRemoteRepository  = transport.ErrEmptyRemoteRepository
	ErrAuthenticationRequired = transport.ErrAuthenticationRequired
	ErrAuthorizationFailed    = transport.ErrAuthorizationFailed
	ErrInvalidAuthMethod      = transport.ErrInvalidAuthMethod
)
