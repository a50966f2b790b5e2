package health

import (
	"fmt"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
)

// Kinds of a RuleSet.
const (
	KindGlobalHealthRuleSet = "GlobalHealthRuleSet"
	KindHealthRuleSet       = "HealthRuleSet"
)

// RuleSet is a selected GlobalHealthRuleSet or HealthRuleSet: what the
// compiler needs of it. UID and Generation key the compiled programs.
type RuleSet struct {
	// Kind is KindGlobalHealthRuleSet or KindHealthRuleSet.
	Kind string
	// Namespace is empty for a GlobalHealthRuleSet.
	Namespace string
	Name      string
	UID       types.UID
	// Generation is metadata.generation; it changes with spec.rules.
	Generation int64
	Rules      []convoyv1alpha1.HealthRule
}

// String names the rule set as messages do: "GlobalHealthRuleSet NAME" or
// "HealthRuleSet NAMESPACE/NAME".
func (s RuleSet) String() string {
	if s.Namespace == "" {
		return s.Kind + " " + s.Name
	}
	return s.Kind + " " + s.Namespace + "/" + s.Name
}

// Select returns the rule sets a Release's healthAssessment selects:
// globalRuleSetSelector over globals (GlobalHealthRuleSets), and
// localRuleSetSelector over locals, which the caller gives as the
// HealthRuleSets of the Release's namespace. A nil selector selects none,
// an empty one ({}) selects all. A nil healthAssessment selects nothing.
//
// The selected sets come globals first, then locals, each sorted by name,
// so that the first failing rule, whose message the resource gets, does not
// depend on the order of an informer's list. Sets being deleted are still
// selected: their rules hold until they are gone.
//
// An invalid selector is a *failure.Error with Reason ReasonSelectorInvalid.
func Select(ha *convoyv1alpha1.HealthAssessment, globals []*convoyv1alpha1.GlobalHealthRuleSet, locals []*convoyv1alpha1.HealthRuleSet) ([]RuleSet, error) {
	if ha == nil {
		return nil, nil
	}
	globalSel, err := selector("globalRuleSetSelector", ha.GlobalRuleSetSelector)
	if err != nil {
		return nil, err
	}
	localSel, err := selector("localRuleSetSelector", ha.LocalRuleSetSelector)
	if err != nil {
		return nil, err
	}

	var selectedGlobals, selectedLocals []RuleSet
	for _, g := range globals {
		if g != nil && globalSel.Matches(labels.Set(g.Labels)) {
			selectedGlobals = append(selectedGlobals, ruleSet(KindGlobalHealthRuleSet, g.ObjectMeta, g.Spec))
		}
	}
	for _, l := range locals {
		if l != nil && localSel.Matches(labels.Set(l.Labels)) {
			selectedLocals = append(selectedLocals, ruleSet(KindHealthRuleSet, l.ObjectMeta, l.Spec))
		}
	}
	sortByName(selectedGlobals)
	sortByName(selectedLocals)
	return append(selectedGlobals, selectedLocals...), nil
}

// selector converts sel: metav1.LabelSelectorAsSelector gives labels.Nothing
// for nil and labels.Everything for {}.
func selector(field string, sel *convoyv1alpha1.LabelSelector) (labels.Selector, error) {
	s, err := metav1.LabelSelectorAsSelector(sel.AsMetav1())
	if err != nil {
		return nil, failure.Quiet(ReasonSelectorInvalid, err, "spec.healthAssessment.%s is not valid: %v", field, err)
	}
	return s, nil
}

func ruleSet(kind string, meta metav1.ObjectMeta, spec convoyv1alpha1.HealthRuleSetSpec) RuleSet {
	return RuleSet{
		Kind:       kind,
		Namespace:  meta.Namespace,
		Name:       meta.Name,
		UID:        meta.UID,
		Generation: meta.Generation,
		Rules:      append([]convoyv1alpha1.HealthRule(nil), spec.Rules...),
	}
}

func sortByName(sets []RuleSet) {
	sort.SliceStable(sets, func(i, j int) bool {
		if sets[i].Namespace != sets[j].Namespace {
			return sets[i].Namespace < sets[j].Namespace
		}
		return sets[i].Name < sets[j].Name
	})
}

// ruleName names rule index of set in messages: "rule 2 of GlobalHealthRuleSet
// NAME", where 2 is the index into spec.rules.
func ruleName(set RuleSet, index int) string {
	return fmt.Sprintf("rule %d of %s", index, set)
}
