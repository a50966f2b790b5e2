package agecache

import (
	"k8s.io/component-base/metrics"

	"github.com/kumodo/convoy-apiserver/pkg/metricset"
)

// The caches counted by convoy_cache_lookups_total: the value of its cache
// label.
const (
	// CacheSource is the content cache of sources: artifacts and Git
	// commits by where they came from and their digest or commit.
	CacheSource = "source"
	// CacheResolve holds what a source resolved to: OCI tags, Helm
	// repository indexes, Git listings of refs (--source-resolve-max-age).
	CacheResolve = "resolve"
	// CacheRender holds the desired renders of Releases.
	CacheRender = "render"
	// CacheBuild holds kustomize and chart-directory builds.
	CacheBuild = "build"
	// CacheCompare holds the compares of objects (a dry run saved).
	CacheCompare = "compare"
	// CacheVerdict holds the health rules' verdicts of objects.
	CacheVerdict = "verdict"
	// CacheSignature holds the verdicts of sources' signatures.
	CacheSignature = "signature"
)

// Caches lists the caches counted, in the order the reference lists them.
var Caches = []string{CacheSource, CacheResolve, CacheRender, CacheBuild, CacheCompare, CacheVerdict, CacheSignature}

var metricSet = metricset.New()

var lookups = metricSet.CounterVec(&metrics.CounterOpts{
	Name: "convoy_cache_lookups_total",
	Help: "Lookups of convoy-apiserver's caches by cache (source, resolve, render, build, compare, verdict, signature) and result (hit: the answer was reused; miss: " +
		"it was fetched, rendered, built, dry-run or evaluated again). hit / (hit + miss) is the cache's hit rate.",
	StabilityLevel: metrics.ALPHA,
}, []string{"cache", "result"})

// CountLookup counts a lookup of the cache named cache (one of Caches).
func CountLookup(cache string, hit bool) {
	result := "miss"
	if hit {
		result = "hit"
	}
	lookups.WithLabelValues(cache, result).Inc()
}

// RegisterMetrics registers convoy_cache_lookups_total, each cache's hits
// and misses at 0, so that a rate is defined from the start.
func RegisterMetrics() {
	metricSet.Register()
	for _, c := range Caches {
		lookups.WithLabelValues(c, "hit")
		lookups.WithLabelValues(c, "miss")
	}
}

// Lookups returns the series of convoy_cache_lookups_total of cache and
// result ("hit" or "miss"), for tests to read.
func Lookups(cache, result string) metrics.CounterMetric {
	return lookups.WithLabelValues(cache, result)
}
