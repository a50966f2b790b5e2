//go:build unix

package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/kumodo/convoy-apiserver/internal/controlplane"
)

// The request log of a round: kube-apiserver's apiserver_request_total by
// verb, resource and subresource, all clients (the benchmark's spec patches,
// convoy-apiserver's reads as the Releases' identity and its own status
// writes), so that a round's requests are attributed to what sends them.

var (
	requestLine = regexp.MustCompile(`(?m)^apiserver_request_total\{([^}]*)\} (\S+)$`)
	labelPair   = regexp.MustCompile(`(\w+)="([^"]*)"`)
)

// kasRequests reads kube-apiserver's request counters, by "VERB
// resource[/subresource][ (dry run)]".
func (f *fleet) kasRequests(ctx context.Context) (map[string]float64, error) {
	body, err := f.kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading kube-apiserver's metrics: %w", err)
	}
	out := map[string]float64{}
	for _, g := range requestLine.FindAllStringSubmatch(string(body), -1) {
		labels := map[string]string{}
		for _, l := range labelPair.FindAllStringSubmatch(g[1], -1) {
			labels[l[1]] = l[2]
		}
		key := labels["verb"] + " " + labels["resource"]
		if labels["subresource"] != "" {
			key += "/" + labels["subresource"]
		}
		if labels["dry_run"] != "" {
			key += " (dry run)"
		}
		v, _ := strconv.ParseFloat(g[2], 64)
		out[key] += v
	}
	return out, nil
}

// printRequestLog prints the requests kube-apiserver served in each round,
// per object of the fleet, the largest first.
func printRequestLog(n int, rows []row) {
	objs := float64(n * objectsPerRel)
	fmt.Printf("\nkube-apiserver's requests in each round (apiserver_request_total, all clients), per object of the fleet:\n\n")
	for _, r := range rows {
		type entry struct {
			key string
			v   float64
		}
		var entries []entry
		var total float64
		for k, v := range r.kas {
			if v > 0 {
				entries = append(entries, entry{k, v})
				total += v
			}
		}
		slices.SortFunc(entries, func(a, b entry) int { return cmp.Compare(b.v, a.v) })
		var parts []string
		for _, e := range entries[:min(len(entries), 10)] {
			parts = append(parts, fmt.Sprintf("%s %.0f (%.3f)", e.key, e.v, e.v/objs))
		}
		fmt.Printf("- %s: %.0f requests (%.3f per object): %s\n", r.name, total, total/objs, strings.Join(parts, ", "))
	}
}

// cpuProfiles takes CPU profiles of convoy-apiserver and kube-apiserver for
// seconds, in the background, into PREFIX-convoy.cpu.pprof and
// PREFIX-kube-apiserver.cpu.pprof; wait waits for both and returns the
// first error.
type cpuProfiles struct {
	wg   sync.WaitGroup
	mu   sync.Mutex
	errs []error
}

func (f *fleet) startCPUProfiles(ctx context.Context, p *controlplane.ConvoyProcess, prefix string, seconds int) *cpuProfiles {
	c := &cpuProfiles{}
	save := func(path string, get func() (io.ReadCloser, error)) {
		c.wg.Go(func() {
			err := func() error {
				body, err := get()
				if err != nil {
					return err
				}
				defer body.Close()
				out, err := os.Create(path)
				if err != nil {
					return err
				}
				defer out.Close()
				_, err = io.Copy(out, body)
				return err
			}()
			if err != nil {
				c.mu.Lock()
				c.errs = append(c.errs, fmt.Errorf("CPU profile %s: %w", path, err))
				c.mu.Unlock()
			}
		})
	}
	secs := strconv.Itoa(seconds)
	save(prefix+"-convoy.cpu.pprof", func() (io.ReadCloser, error) {
		resp, err := f.profiler.Get(p.URL() + "/debug/pprof/profile?seconds=" + secs)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode != 200 {
			resp.Body.Close()
			return nil, fmt.Errorf("convoy-apiserver answered %s", resp.Status)
		}
		return resp.Body, nil
	})
	save(prefix+"-kube-apiserver.cpu.pprof", func() (io.ReadCloser, error) {
		return f.kube.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").Param("seconds", secs).Stream(ctx)
	})
	return c
}

func (c *cpuProfiles) wait() error {
	c.wg.Wait()
	if len(c.errs) > 0 {
		return c.errs[0]
	}
	return nil
}
