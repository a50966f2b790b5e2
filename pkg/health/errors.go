package health

// Reasons of a failure to select or compile the rules of a Release (a
// *failure.Error: Select and Compiler.Compile return no other error). Both
// make the Healthy condition of the Release Unknown with reason CannotAssess.
const (
	// ReasonSelectorInvalid: globalRuleSetSelector or localRuleSetSelector
	// does not convert to a label selector.
	ReasonSelectorInvalid = "SelectorInvalid"
	// ReasonRuleInvalid: a rule of a selected rule set does not compile,
	// does not type-check to a bool (expression) or a string
	// (messageExpression), or costs more than the cost limit on any object.
	ReasonRuleInvalid = "RuleInvalid"
)
