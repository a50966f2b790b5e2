// Package health is the health engine of the observer: one health pass of a
// Release (Pass) gives the state of every inventory entry, the Healthy
// condition, status.healthSummary and the reasons to wake the controller; the
// health loop (pkg/observer) only schedules passes and writes what they give.
// Its steps: Select, Compiler, Evaluate, Assess, Summarize and
// HealthyCondition; ClusterReader reads as the Release's identity. How a pass
// runs: docs/contributors/internals.md ("The health loop").
//
//	sets, err := health.Select(release.Spec.HealthAssessment, globals, locals)
//	rules, err := compiler.Compile(sets)        // cached per (UID, generation)
//	out := health.Pass(ctx, health.Input{Release: release, Inventory: inv, Rules: rules, RulesErr: err,
//	        Reader: health.NewClusterReader(targets, release, lists), Now: now})
//	// write out.Entries, out.Condition and out.Summary; request a sync for out.SyncReasons
package health
