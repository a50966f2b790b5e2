package health

import "github.com/kumodo/convoy-apiserver/pkg/failure"

// Reasons of a failure to select or compile the rules of a Release (a
// *failure.Error: Select and Compiler.Compile return no other error). Both
// make the Healthy condition of the Release Unknown with reason CannotAssess.
var (
	ReasonSelectorInvalid = failure.Declare(failure.Reason{
		Name: "SelectorInvalid", Class: failure.ClassInvalid, Shows: []failure.Where{failure.Healthy},
		Means:  "globalRuleSetSelector or localRuleSetSelector of spec.healthAssessment does not convert to a label selector",
		Action: "correct the selector",
	})
	ReasonRuleInvalid = failure.Declare(failure.Reason{
		Name: "RuleInvalid", Class: failure.ClassInvalid, Shows: []failure.Where{failure.Healthy},
		Means:  "a rule of a selected rule set does not compile, does not type-check to a bool (expression) or a string (messageExpression), or costs more than the cost limit on any object",
		Action: "correct the rule the message names; `kubectl convoy rules test` checks rules before they are applied",
	})
)
