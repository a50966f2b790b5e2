package health

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
)

func someRules(expression string) convoyv1alpha1.HealthRuleSetSpec {
	return convoyv1alpha1.HealthRuleSetSpec{Rules: []convoyv1alpha1.HealthRule{
		{APIVersion: "apps/v1", Resources: []string{"deployments"}, Expression: expression},
	}}
}

func global(name string, labels map[string]string) *convoyv1alpha1.GlobalHealthRuleSet {
	return &convoyv1alpha1.GlobalHealthRuleSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, UID: types.UID("uid-" + name), Generation: 3},
		Spec:       someRules("true"),
	}
}

func local(namespace, name string, labels map[string]string) *convoyv1alpha1.HealthRuleSet {
	return &convoyv1alpha1.HealthRuleSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: labels, UID: types.UID("uid-" + name), Generation: 7},
		Spec:       someRules("true"),
	}
}

func TestSelect(t *testing.T) {
	// Out of name order on purpose.
	globals := []*convoyv1alpha1.GlobalHealthRuleSet{
		global("team-rules", map[string]string{"team": "payments"}),
		global("convoy-default-apps", map[string]string{"convoy.kumodo.io/default": "true"}),
		nil,
		global("unlabeled", nil),
	}
	locals := []*convoyv1alpha1.HealthRuleSet{
		local("shop", "shop-rules", map[string]string{"team": "shop"}),
		local("shop", "payments-rules", map[string]string{"team": "payments", "tier": "gold"}),
		nil,
	}
	sel := func(labels map[string]string, exprs ...convoyv1alpha1.LabelSelectorRequirement) *convoyv1alpha1.LabelSelector {
		return &convoyv1alpha1.LabelSelector{MatchLabels: labels, MatchExpressions: exprs}
	}
	req := func(key string, op metav1.LabelSelectorOperator, values ...string) convoyv1alpha1.LabelSelectorRequirement {
		return convoyv1alpha1.LabelSelectorRequirement{Key: key, Operator: op, Values: values}
	}

	tests := []struct {
		name string
		ha   *convoyv1alpha1.HealthAssessment
		want []string // "Kind name" in order
	}{
		{name: "no healthAssessment", ha: nil, want: nil},
		{name: "nil selectors select none", ha: &convoyv1alpha1.HealthAssessment{}, want: nil},
		{name: "empty global selector selects all globals", ha: &convoyv1alpha1.HealthAssessment{GlobalRuleSetSelector: sel(nil)},
			want: []string{"GlobalHealthRuleSet convoy-default-apps", "GlobalHealthRuleSet team-rules", "GlobalHealthRuleSet unlabeled"}},
		{name: "empty local selector selects all locals", ha: &convoyv1alpha1.HealthAssessment{LocalRuleSetSelector: sel(nil)},
			want: []string{"HealthRuleSet shop/payments-rules", "HealthRuleSet shop/shop-rules"}},
		{name: "both empty: globals first", ha: &convoyv1alpha1.HealthAssessment{GlobalRuleSetSelector: sel(nil), LocalRuleSetSelector: sel(nil)},
			want: []string{"GlobalHealthRuleSet convoy-default-apps", "GlobalHealthRuleSet team-rules", "GlobalHealthRuleSet unlabeled",
				"HealthRuleSet shop/payments-rules", "HealthRuleSet shop/shop-rules"}},
		{name: "matchLabels", ha: &convoyv1alpha1.HealthAssessment{
			GlobalRuleSetSelector: sel(map[string]string{"convoy.kumodo.io/default": "true"}),
			LocalRuleSetSelector:  sel(map[string]string{"team": "payments"}),
		}, want: []string{"GlobalHealthRuleSet convoy-default-apps", "HealthRuleSet shop/payments-rules"}},
		{name: "matchLabels that match nothing", ha: &convoyv1alpha1.HealthAssessment{
			GlobalRuleSetSelector: sel(map[string]string{"team": "nobody"}),
		}, want: nil},
		{name: "matchExpressions In", ha: &convoyv1alpha1.HealthAssessment{
			GlobalRuleSetSelector: sel(nil, req("team", metav1.LabelSelectorOpIn, "payments", "shop")),
			LocalRuleSetSelector:  sel(nil, req("team", metav1.LabelSelectorOpIn, "payments", "shop")),
		}, want: []string{"GlobalHealthRuleSet team-rules", "HealthRuleSet shop/payments-rules", "HealthRuleSet shop/shop-rules"}},
		{name: "matchExpressions NotIn, Exists, DoesNotExist", ha: &convoyv1alpha1.HealthAssessment{
			GlobalRuleSetSelector: sel(nil, req("team", metav1.LabelSelectorOpDoesNotExist)),
			LocalRuleSetSelector:  sel(nil, req("team", metav1.LabelSelectorOpExists), req("team", metav1.LabelSelectorOpNotIn, "shop")),
		}, want: []string{"GlobalHealthRuleSet convoy-default-apps", "GlobalHealthRuleSet unlabeled", "HealthRuleSet shop/payments-rules"}},
		{name: "matchLabels and matchExpressions together", ha: &convoyv1alpha1.HealthAssessment{
			LocalRuleSetSelector: sel(map[string]string{"team": "payments"}, req("tier", metav1.LabelSelectorOpIn, "silver")),
		}, want: nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sets, err := Select(tc.ha, globals, locals)
			require.NoError(t, err)
			var got []string
			for _, s := range sets {
				got = append(got, s.String())
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestSelectCopiesTheRuleSet(t *testing.T) {
	g := global("convoy-default-apps", nil)
	l := local("shop", "mine", nil)
	sets, err := Select(&convoyv1alpha1.HealthAssessment{
		GlobalRuleSetSelector: &convoyv1alpha1.LabelSelector{},
		LocalRuleSetSelector:  &convoyv1alpha1.LabelSelector{},
	}, []*convoyv1alpha1.GlobalHealthRuleSet{g}, []*convoyv1alpha1.HealthRuleSet{l})
	require.NoError(t, err)
	require.Len(t, sets, 2)
	assert.Equal(t, RuleSet{Kind: KindGlobalHealthRuleSet, Name: "convoy-default-apps", UID: "uid-convoy-default-apps",
		Generation: 3, Rules: g.Spec.Rules}, sets[0])
	assert.Equal(t, RuleSet{Kind: KindHealthRuleSet, Namespace: "shop", Name: "mine", UID: "uid-mine",
		Generation: 7, Rules: l.Spec.Rules}, sets[1])
	// The selection does not share its rule list with the informer's object.
	sets[0].Rules[0] = convoyv1alpha1.HealthRule{}
	assert.Equal(t, "true", g.Spec.Rules[0].Expression)
}

func TestSelectInvalidSelector(t *testing.T) {
	tests := []struct {
		name    string
		ha      *convoyv1alpha1.HealthAssessment
		message string
	}{
		{name: "unknown operator", ha: &convoyv1alpha1.HealthAssessment{GlobalRuleSetSelector: &convoyv1alpha1.LabelSelector{
			MatchExpressions: []convoyv1alpha1.LabelSelectorRequirement{{Key: "team", Operator: "Matches", Values: []string{"x"}}},
		}}, message: "spec.healthAssessment.globalRuleSetSelector is not valid"},
		{name: "In without values", ha: &convoyv1alpha1.HealthAssessment{LocalRuleSetSelector: &convoyv1alpha1.LabelSelector{
			MatchExpressions: []convoyv1alpha1.LabelSelectorRequirement{{Key: "team", Operator: metav1.LabelSelectorOpIn}},
		}}, message: "spec.healthAssessment.localRuleSetSelector is not valid"},
		{name: "bad label key", ha: &convoyv1alpha1.HealthAssessment{LocalRuleSetSelector: &convoyv1alpha1.LabelSelector{
			MatchLabels: map[string]string{"not a key": "x"},
		}}, message: "spec.healthAssessment.localRuleSetSelector is not valid"},
		{name: "bad label value", ha: &convoyv1alpha1.HealthAssessment{GlobalRuleSetSelector: &convoyv1alpha1.LabelSelector{
			MatchLabels: map[string]string{"team": "a b"},
		}}, message: "spec.healthAssessment.globalRuleSetSelector is not valid"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sets, err := Select(tc.ha, []*convoyv1alpha1.GlobalHealthRuleSet{global("g", nil)}, []*convoyv1alpha1.HealthRuleSet{local("shop", "l", nil)})
			require.Error(t, err)
			assert.Nil(t, sets)
			var herr *failure.Error
			require.True(t, errors.As(err, &herr))
			assert.Equal(t, ReasonSelectorInvalid, herr.Reason)
			assert.Contains(t, herr.Message, tc.message)
			assert.NotNil(t, errors.Unwrap(err), "the selector's error is wrapped")
		})
	}
}
