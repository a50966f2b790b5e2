package health

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/apiserver/pkg/cel/library"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
)

// DefaultCostLimit is the cost limit of one evaluation of one expression
// when NewCompiler is given 0: the per-call limit of the Kubernetes API
// server's CEL, about 0.1 s of CPU.
const DefaultCostLimit uint64 = 1_000_000

// ObjectVariable is the CEL variable that holds the live object.
const ObjectVariable = "object"

// maxObjectSize bounds the size of every list, map and string taken from
// the object when a rule's cost is estimated: no object the API server
// accepts is larger than its 3 MiB request limit.
const maxObjectSize = 3 * 1024 * 1024

// interruptCheckFrequency is how many comprehension iterations pass between
// two checks of the context of an evaluation.
const interruptCheckFrequency = 100

// env is the CEL environment of health rules: the base environment of the
// Kubernetes API server (the standard CEL macros and the Kubernetes
// libraries: lists, sets, strings, regex, URLs, IP and CIDR, quantity,
// semver, format, optional types, two-variable comprehensions) plus the
// variable object of dynamic type. Rules are stored configuration, so they
// compile in the StoredExpressions environment, which has every library this
// version knows; the compatibility version only matters to the
// NewExpressions environment, which is not used.
var env = sync.OnceValues(func() (*cel.Env, error) {
	set, err := environment.MustBaseEnvSet(version.MajorMinor(1, 37)).Extend(environment.VersionedOptions{
		IntroducedVersion: version.MajorMinor(1, 0),
		EnvOptions:        []cel.EnvOption{cel.Variable(ObjectVariable, cel.DynType)},
	})
	if err != nil {
		return nil, fmt.Errorf("building the CEL environment of health rules: %w", err)
	}
	return set.StoredExpressionsEnv(), nil
})

// Compiler compiles the rules of rule sets and keeps the programs of each
// rule set by UID for as long as its generation does not change, so a pass
// that selects the same sets compiles nothing. A set that does not compile
// is kept too, with its error, until its generation changes. A set without
// a UID (not from the API server) is compiled on every call.
//
// A Compiler is safe for concurrent use.
type Compiler struct {
	costLimit uint64

	mu    sync.Mutex
	cache map[types.UID]*compiledSet

	// compilations counts the rule sets compiled, for tests.
	compilations atomic.Int64
}

// compiledSet is one generation of a rule set, compiled.
type compiledSet struct {
	generation int64
	rules      []*CompiledRule
	err        error
}

// NewCompiler returns a Compiler whose programs stop an evaluation past
// costLimit (DefaultCostLimit when 0), in units of the CEL runtime cost (about
// one per operation, list and string operations by size).
func NewCompiler(costLimit uint64) *Compiler {
	if costLimit == 0 {
		costLimit = DefaultCostLimit
	}
	return &Compiler{costLimit: costLimit, cache: map[types.UID]*compiledSet{}}
}

// CostLimit returns the cost limit of one evaluation.
func (c *Compiler) CostLimit() uint64 { return c.costLimit }

// Forget drops the programs of the rule set uid, when it is deleted.
func (c *Compiler) Forget(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.cache, uid)
}

// Cached returns how many rule sets the Compiler keeps programs of.
func (c *Compiler) Cached() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.cache)
}

// CompiledRule is one rule, compiled.
type CompiledRule struct {
	// Set is the rule set of the rule, without its Rules.
	Set RuleSet
	// Index is the index of the rule in the set's spec.rules.
	Index int
	// Rule is the rule as written.
	Rule convoyv1alpha1.HealthRule
	// MinCost and MaxCost are the estimated cost of the expression: the least
	// it costs on any object, and the most on an object of the largest size
	// the API server accepts (far above the cost limit for a rule that
	// iterates over a list of the object; the limit stops such a rule at run
	// time). Compile rejects a rule whose MinCost is above the cost limit:
	// it could never be evaluated.
	MinCost, MaxCost uint64

	name           string
	program        cel.Program
	messageProgram cel.Program
	costLimit      uint64
	resources      []string
}

// String names the rule: "rule N of KIND NAME".
func (r *CompiledRule) String() string { return r.name }

// appliesTo reports whether one of the rule's resources is resource or *.
func (r *CompiledRule) appliesTo(resource string) bool {
	for _, res := range r.resources {
		if res == "*" || res == resource {
			return true
		}
	}
	return false
}

// Rules are the compiled rules of the selected rule sets, used together
// with no priority among the sets. A nil *Rules has no rule.
type Rules struct {
	all          []*CompiledRule
	byAPIVersion map[string][]*CompiledRule
}

// Len returns the number of rules.
func (r *Rules) Len() int {
	if r == nil {
		return 0
	}
	return len(r.all)
}

// All returns every rule, in the order of the sets and of their spec.rules.
func (r *Rules) All() []*CompiledRule {
	if r == nil {
		return nil
	}
	return r.all
}

// For returns the rules that apply to a resource: those whose apiVersion
// equals apiVersion ("apps/v1", "v1" for the core group) and one of whose
// resources is resource (the plural name, see Resource) or "*". The name of
// the object does not matter. The rules keep their order; nil when none
// applies.
func (r *Rules) For(apiVersion, resource string) []*CompiledRule {
	if r == nil {
		return nil
	}
	var out []*CompiledRule
	for _, rule := range r.byAPIVersion[apiVersion] {
		if rule.appliesTo(resource) {
			out = append(out, rule)
		}
	}
	return out
}

// ForAPIVersion returns the rules whose apiVersion is apiVersion, whatever
// their resources: nil tells that no rule can apply to an object of that
// apiVersion, without looking up its resource.
func (r *Rules) ForAPIVersion(apiVersion string) []*CompiledRule {
	if r == nil {
		return nil
	}
	return r.byAPIVersion[apiVersion]
}

// Compile returns the compiled rules of sets, compiling each set whose
// generation it has not compiled yet. A rule that does not compile makes
// the whole call fail with a *failure.Error of Reason ReasonRuleInvalid that names
// the set, the index of every bad rule in its spec.rules and the CEL error.
func (c *Compiler) Compile(sets []RuleSet) (*Rules, error) {
	out := &Rules{byAPIVersion: map[string][]*CompiledRule{}}
	for _, set := range sets {
		compiled := c.compiledSet(set)
		if compiled.err != nil {
			return nil, compiled.err
		}
		for _, rule := range compiled.rules {
			out.all = append(out.all, rule)
			out.byAPIVersion[rule.Rule.APIVersion] = append(out.byAPIVersion[rule.Rule.APIVersion], rule)
		}
	}
	return out, nil
}

// compiledSet returns set compiled, from the cache when its generation is
// there.
func (c *Compiler) compiledSet(set RuleSet) *compiledSet {
	if set.UID == "" {
		return c.compileSet(set)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if cached, ok := c.cache[set.UID]; ok && cached.generation == set.Generation {
		return cached
	}
	compiled := c.compileSet(set)
	c.cache[set.UID] = compiled
	return compiled
}

// compileSet compiles every rule of set.
func (c *Compiler) compileSet(set RuleSet) *compiledSet {
	c.compilations.Add(1)
	out := &compiledSet{generation: set.Generation}
	e, err := env()
	if err != nil {
		out.err = failure.Quiet(ReasonRuleInvalid, err, "%s: %v", set, err)
		return out
	}
	ref := set
	ref.Rules = nil
	var (
		errs     []error
		messages []string
	)
	for i, rule := range set.Rules {
		compiled, err := c.compileRule(e, ref, i, rule)
		if err != nil {
			errs = append(errs, err)
			messages = append(messages, err.Error())
			continue
		}
		out.rules = append(out.rules, compiled)
	}
	if len(errs) > 0 {
		out.rules = nil
		out.err = failure.Quiet(ReasonRuleInvalid, errors.Join(errs...), "%s", strings.Join(messages, "; "))
	}
	return out
}

// compileRule compiles rule index of set.
func (c *Compiler) compileRule(e *cel.Env, set RuleSet, index int, rule convoyv1alpha1.HealthRule) (*CompiledRule, error) {
	name := ruleName(set, index)
	out := &CompiledRule{
		Set:       set,
		Index:     index,
		Rule:      rule,
		name:      name,
		costLimit: c.costLimit,
		resources: rule.Resources,
	}
	if rule.APIVersion == "" || len(rule.Resources) == 0 {
		return nil, fmt.Errorf("%s: apiVersion and resources must be set", name)
	}
	// The expression may have any type: "a rule that does not return a bool
	// is also an evaluation error" (docs/users/health-rules.md), so a rule typed int
	// makes its resources Unknown (Evaluate), not the Release Cannot assess.
	program, cost, err := c.program(e, rule.Expression, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: expression %w", name, err)
	}
	out.program, out.MinCost, out.MaxCost = program, cost.Min, cost.Max
	if rule.MessageExpression != "" {
		if out.messageProgram, _, err = c.program(e, rule.MessageExpression, cel.StringType); err != nil {
			return nil, fmt.Errorf("%s: messageExpression %w", name, err)
		}
	}
	return out, nil
}

// program compiles expression, which must type-check to want or dyn (any
// type when want is nil), checks its estimated cost and plans its program
// with the cost limit.
func (c *Compiler) program(e *cel.Env, expression string, want *cel.Type) (cel.Program, checker.CostEstimate, error) {
	var cost checker.CostEstimate
	ast, issues := e.Compile(expression)
	if issues.Err() != nil {
		return nil, cost, fmt.Errorf("does not compile: %w", issues.Err())
	}
	if out := ast.OutputType(); want != nil && !out.IsExactType(want) && !out.IsExactType(cel.DynType) {
		return nil, cost, fmt.Errorf("must return a %s, not %s", want, out)
	}
	cost, err := e.EstimateCost(ast, &library.CostEstimator{SizeEstimator: objectSizes{}})
	if err != nil {
		return nil, cost, fmt.Errorf("has no cost estimate: %w", err)
	}
	if cost.Min > c.costLimit {
		return nil, cost, fmt.Errorf("costs at least %d on any object, more than the cost limit of %d", cost.Min, c.costLimit)
	}
	program, err := e.Program(ast, cel.CostLimit(c.costLimit), cel.InterruptCheckFrequency(interruptCheckFrequency))
	if err != nil {
		return nil, cost, fmt.Errorf("cannot be planned: %w", err)
	}
	return program, cost, nil
}

// objectSizes bounds the sizes of the values of the object for the cost
// estimate, which without a bound takes every list as endless.
type objectSizes struct{}

func (objectSizes) EstimateSize(checker.AstNode) *checker.SizeEstimate {
	return &checker.SizeEstimate{Min: 0, Max: maxObjectSize}
}

func (objectSizes) EstimateCallCost(string, string, *checker.AstNode, []checker.AstNode) *checker.CallEstimate {
	return nil
}
