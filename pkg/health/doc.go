// Package health is the health engine of the observer. It owns one health
// pass of a Release (Pass): given the Release, its ReleaseInventory, the
// compiled rules it selects, a Reader of live objects and the time, it
// returns the state of every inventory entry (Healthy, Progressing,
// Degraded or Unknown, with the firstUnhealthy deadline of the Health
// assessment page), the Healthy condition, status.healthSummary and the
// reasons to wake the controller. The health loop (pkg/observer) only
// schedules passes and writes their Outcome; GET /health only reads what it
// wrote.
//
// The rest of the package are the steps of a pass: Select picks the rule
// sets, Compiler compiles their CEL rules once per rule-set generation,
// Evaluate runs them on a live object, Assess gives one entry its next
// status, Summarize and HealthyCondition sum the states up. ClusterReader
// reads live objects as the Release's identity.
//
//	sets, err := health.Select(release.Spec.HealthAssessment, globals, locals)
//	rules, err := compiler.Compile(sets)        // cached per (UID, generation)
//	out := health.Pass(ctx, health.Input{Release: release, Inventory: inv, Rules: rules, RulesErr: err,
//	        Reader: health.NewClusterReader(targets, release, lists), Now: now})
//	// write out.Entries, out.Condition and out.Summary; request a sync for out.SyncReasons
package health
