package health

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/interpreter"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
)

// Result is the outcome of the rules on one object.
type Result string

// Results of an evaluation.
const (
	// ResultPass: every rule returned true, or no rule applies.
	ResultPass Result = "Pass"
	// ResultFail: a rule returned false.
	ResultFail Result = "Fail"
	// ResultSuspended: the first rule that returned false has whenFalse
	// Suspended: the resource's controller stopped on purpose.
	ResultSuspended Result = "Suspended"
	// ResultError: a rule could not be evaluated and none returned false.
	ResultError Result = "Error"
)

// Verdict is what the rules say about one object.
type Verdict struct {
	Result Result
	// Message is, for Fail and Suspended, the message of the first rule
	// that returned false; for Error, why the first rule that could not be
	// evaluated could not; for Pass, empty, or "no health rule applies".
	Message string
	// Rule is the rule the message comes from; nil for Pass.
	Rule *CompiledRule
}

// MessageNoRule is the message of the verdict on an object no rule applies to.
const MessageNoRule = "no health rule applies"

// activation binds the variable object.
type activation struct{ object map[string]any }

func (a *activation) ResolveName(name string) (any, bool) {
	if name == ObjectVariable {
		return a.object, true
	}
	return nil, false
}

func (a *activation) Parent() interpreter.Activation { return nil }

// Evaluate runs rules, in order, on obj, the live object as decoded from
// JSON: Pass when every rule returns true (or there is none: obj may then be
// nil), Fail with the message of the first false rule (Suspended when its
// whenFalse says so), Error when a rule cannot be evaluated and none returns
// false: a false wins, as in CEL's a && b. A field whose value is null is
// absent to the rules (withoutNulls). The rules of it:
// docs/contributors/internals.md ("The health loop").
func Evaluate(ctx context.Context, rules []*CompiledRule, obj map[string]any) Verdict {
	if len(rules) == 0 {
		return Verdict{Result: ResultPass, Message: MessageNoRule}
	}
	act := &activation{object: withoutNulls(obj)}
	var firstError *Verdict
	for _, rule := range rules {
		out, _, err := rule.program.ContextEval(ctx, act)
		if err != nil {
			if firstError == nil {
				firstError = &Verdict{Result: ResultError, Message: rule.evalError(ctx, err), Rule: rule}
			}
			continue
		}
		pass, ok := out.(types.Bool)
		if !ok {
			if firstError == nil {
				firstError = &Verdict{Result: ResultError, Rule: rule,
					Message: fmt.Sprintf("%s returned %s %v, not a bool", rule, out.Type().TypeName(), out.Value())}
			}
			continue
		}
		if !pass {
			result := ResultFail
			if rule.Rule.WhenFalse == convoyv1alpha1.FailSuspended {
				result = ResultSuspended
			}
			return Verdict{Result: result, Message: rule.message(ctx, act), Rule: rule}
		}
	}
	if firstError != nil {
		return *firstError
	}
	return Verdict{Result: ResultPass}
}

// evalError says why the rule could not be evaluated.
func (r *CompiledRule) evalError(ctx context.Context, err error) string {
	var cancelled interpreter.EvalCancelledError
	switch {
	case errors.As(err, &cancelled) && cancelled.Cause == interpreter.CostLimitExceeded:
		return fmt.Sprintf("%s cannot be evaluated: it exceeded the cost limit of %d", r, r.costLimit)
	case ctx.Err() != nil:
		return fmt.Sprintf("%s cannot be evaluated: %v", r, context.Cause(ctx))
	}
	return fmt.Sprintf("%s cannot be evaluated: %v", r, err)
}

// message is the message of the rule, which returned false.
func (r *CompiledRule) message(ctx context.Context, act *activation) string {
	if r.messageProgram != nil {
		out, _, err := r.messageProgram.ContextEval(ctx, act)
		if err == nil {
			if s, ok := out.(types.String); ok {
				if msg := oneLine(string(s)); msg != "" {
					return msg
				}
			}
		}
	}
	if msg := oneLine(r.Rule.Message); msg != "" {
		return msg
	}
	return fmt.Sprintf("%s failed: %s", r, oneLine(r.Rule.Expression))
}

// CheckMessage evaluates the rule's messageExpression on obj, as Evaluate
// would when the rule returns false, and says what is wrong with it: an
// error, a result that is not a string, or an empty string (Evaluate then
// falls back to the rule's message, silently). Nil when the rule has no
// messageExpression or it gives a non-empty string. Rule authors' case
// runs (pkg/rulecases) call it on every case their rule fails.
func (r *CompiledRule) CheckMessage(ctx context.Context, obj map[string]any) error {
	if r.messageProgram == nil {
		return nil
	}
	out, _, err := r.messageProgram.ContextEval(ctx, &activation{object: withoutNulls(obj)})
	if err != nil {
		return fmt.Errorf("%s: messageExpression cannot be evaluated: %w", r, err)
	}
	s, ok := out.(types.String)
	if !ok {
		return fmt.Errorf("%s: messageExpression returned %s, not a string", r, out.Type().TypeName())
	}
	if oneLine(string(s)) == "" {
		return fmt.Errorf("%s: messageExpression returned an empty string", r)
	}
	return nil
}

// oneLine folds the white space of s, line breaks included, into single
// spaces.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// State is the state the verdict gives a resource assessed once, with no
// deadline and nothing before it (kubectl convoy rules test): Healthy,
// Progressing, Suspended or Unknown. The health loop uses Assess, which
// also keeps the deadline.
func (v Verdict) State() convoyv1alpha1.HealthState {
	switch v.Result {
	case ResultPass:
		return convoyv1alpha1.HealthHealthy
	case ResultFail:
		return convoyv1alpha1.HealthProgressing
	case ResultSuspended:
		return convoyv1alpha1.HealthSuspended
	}
	return convoyv1alpha1.HealthUnknown
}

// withoutNulls returns obj without the map entries whose value is null, at
// any depth (list elements are kept as they are). It copies only the maps and
// lists on the path to a null: an object without one is returned as it is,
// and obj is never changed.
func withoutNulls(obj map[string]any) map[string]any {
	if out, changed := dropNulls(obj); changed {
		return out.(map[string]any)
	}
	return obj
}

// dropNulls is withoutNulls for any value; changed tells whether it copied.
func dropNulls(v any) (any, bool) {
	switch x := v.(type) {
	case map[string]any:
		var copied map[string]any
		for k, e := range x {
			next, changed := dropNulls(e)
			if e != nil && !changed {
				continue
			}
			if copied == nil {
				copied = maps.Clone(x)
			}
			if e == nil {
				delete(copied, k)
			} else {
				copied[k] = next
			}
		}
		if copied != nil {
			return copied, true
		}
	case []any:
		var copied []any
		for i, e := range x {
			if next, changed := dropNulls(e); changed {
				if copied == nil {
					copied = slices.Clone(x)
				}
				copied[i] = next
			}
		}
		if copied != nil {
			return copied, true
		}
	}
	return v, false
}
