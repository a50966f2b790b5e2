// Package health is the health engine of the observer: it selects the health
// rule sets of a Release, compiles their CEL rules once per rule-set
// generation, evaluates them on live objects, gives each inventory entry its
// next health state (Healthy, Progressing, Degraded or Unknown, with the
// firstUnhealthy deadline of the Health assessment page), and sums the
// states up into status.healthSummary and the Healthy condition.
//
// It is a plain library: it reads nothing from a cluster. The health loop
// reads the objects, calls Evaluate and Assess, and writes what they return;
// GET /health only reads what the loop wrote.
//
// A pass over one Release goes:
//
//	sets, err := health.Select(release.Spec.HealthAssessment, globals, locals)
//	rules, err := compiler.Compile(sets)              // cached per (UID, generation)
//	for each entry of the ReleaseInventory:
//	    resource, err := health.Resource(mapper, gvk)
//	    applying := rules.For(apiVersion, resource)
//	    verdict := health.Evaluate(ctx, applying, nil) // no rule: Healthy, nothing read
//	    if health.NeedsRead(applying) { obj, readErr := GET ...; verdict = health.Evaluate(ctx, applying, obj.Object) }
//	    next := health.Assess(prev, entry, verdict, readErr, deadline, now)
//	summary := health.Summarize(states); cond := health.HealthyCondition(states)
package health
