// Package failure is the one error type of convoy-apiserver's engines: a
// failure that names its reason (the word a condition, a ReleaseDiff or an
// HTTP status carries) and a message a person reads. Every step (the target
// cluster's access, the render, the compare, the health rules) returns it.
//
// Each reason is declared once, where it is given, with its class (Declare,
// reasons.go): drift and health classify a failure for their condition by
// its class, and the REST storage maps a class to an HTTP status, so that
// no package names another's reasons one by one.
//
// It also recovers panics (Panicked): a leaf package, so that the engines
// and the loops need nothing else to turn a panic into an InternalError.
package failure

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"

	"k8s.io/klog/v2"
)

// Error is a failure that names its reason. Err is the underlying error, nil
// when there is none; Unwrap returns it, so errors.Is and errors.As see
// through an Error.
type Error struct {
	// Reason is one word, CamelCase: SourceNotFound, ClusterUnreachable, ...
	Reason string
	// Message says what failed and names its cause (the object, the key,
	// the rule, the limit and its flag); it is the error's text.
	Message string
	// Err is the underlying error.
	Err error
}

// Error returns the message.
func (e *Error) Error() string { return e.Message }

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// New returns an Error whose message is the formatted text, followed by ": "
// and err's text when err is not nil.
func New(reason string, err error, format string, args ...any) *Error {
	msg := fmt.Sprintf(format, args...)
	if err != nil {
		msg += ": " + err.Error()
	}
	return &Error{Reason: reason, Message: msg, Err: err}
}

// Quiet returns an Error with the formatted message alone, for an err whose
// text would only repeat it (a NotFound, say) or must not be shown.
func Quiet(reason string, err error, format string, args ...any) *Error {
	return &Error{Reason: reason, Message: fmt.Sprintf(format, args...), Err: err}
}

// As returns the outermost Error in err's tree.
func As(err error) (*Error, bool) {
	var f *Error
	if errors.As(err, &f) {
		return f, true
	}
	return nil, false
}

// ReasonOf returns the reason of the outermost Error in err's tree, "" when
// there is none.
func ReasonOf(err error) string {
	if f, ok := As(err); ok {
		return f.Reason
	}
	return ""
}

// Cause returns the innermost Error in err's tree, the failure that the
// others wrap to add where it happened: a refused address under a failed
// read of an input under a failed render is AddressNotAllowed.
func Cause(err error) (*Error, bool) {
	f, ok := As(err)
	if !ok {
		return nil, false
	}
	for {
		inner, ok := As(f.Err)
		if !ok {
			return f, true
		}
		f = inner
	}
}

// Find returns the outermost Error in err's tree whose reason is reason:
// an error deep in a chain (a refused address under a failed render) keeps
// its reason.
func Find(err error, reason string) (*Error, bool) {
	var found *Error
	walk(err, func(e error) bool {
		if f, ok := e.(*Error); ok && f.Reason == reason {
			found = f
			return true
		}
		return false
	})
	return found, found != nil
}

// walk visits err's tree in the order errors.As does, until visit returns
// true.
func walk(err error, visit func(error) bool) bool {
	if err == nil {
		return false
	}
	if visit(err) {
		return true
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		return walk(u.Unwrap(), visit)
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			if walk(e, visit) {
				return true
			}
		}
	}
	return false
}

// Panicked logs the stack of the panic r that a step recovered from, and
// returns the message of its InternalError.
func Panicked(ctx context.Context, r any) string {
	klog.FromContext(ctx).Error(nil, "Recovered from a panic", "panic", r, "stack", string(debug.Stack()))
	return fmt.Sprintf("internal error (a bug of convoy-apiserver; the stack is in its log): %v", r)
}

// Recovered is the InternalError of the panic r (see Panicked).
func Recovered(ctx context.Context, r any) *Error {
	return &Error{Reason: ReasonInternalError, Message: Panicked(ctx, r)}
}
