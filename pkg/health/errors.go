package health

import "fmt"

// Reasons of an Error. Both make the Healthy condition of the Release
// Unknown with reason CannotAssess.
const (
	// ReasonSelectorInvalid: globalRuleSetSelector or localRuleSetSelector
	// does not convert to a label selector.
	ReasonSelectorInvalid = "SelectorInvalid"
	// ReasonRuleInvalid: a rule of a selected rule set does not compile,
	// does not type-check to a bool (expression) or a string
	// (messageExpression), or costs more than the cost limit on any object.
	ReasonRuleInvalid = "RuleInvalid"
	// ReasonInternalError: the pass panicked; the stack is in the log.
	ReasonInternalError = "InternalError"
)

// Error is a failure to select or compile the rules of a Release. Select and
// Compiler.Compile return only *Error; Err is the underlying error, if any,
// and is what Unwrap returns.
type Error struct {
	// Reason is one of the Reason constants.
	Reason string
	// Message says what is wrong and names the selector, or the rule set
	// (kind and name) and the index of the rule in its spec.rules.
	Message string
	// Err is the underlying error.
	Err error
}

// Error returns the message.
func (e *Error) Error() string { return e.Message }

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

func newError(reason string, err error, format string, args ...any) *Error {
	return &Error{Reason: reason, Message: fmt.Sprintf(format, args...), Err: err}
}
