package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime/debug"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kumodo/convoy-apiserver/pkg/failure"
	"github.com/kumodo/convoy-apiserver/pkg/kustomize"
	"github.com/kumodo/convoy-apiserver/pkg/render"
)

// setupChild prepares a child before it reads anything: its memory limit
// (RLIMIT_DATA), the kernel's network filter (denyNetwork; required when
// the Sandbox says so), and net/http's backstop. Nothing a child does
// needs the network: kustomize.Check refuses what kustomize would fetch,
// and a chart's templates have no business with it. It returns why the
// filter is not installed, when it is not required, and an error that
// must stop the child.
func setupChild() (filterErr, err error) {
	if err := limitMemory(os.Getenv(memoryLimitEnv)); err != nil {
		return nil, fmt.Errorf("limiting the memory of the render process: %w", err)
	}
	if filterErr = denyNetwork(); filterErr != nil && os.Getenv(networkFilterEnv) == "required" {
		return nil, fmt.Errorf("the render process cannot refuse itself the network: %w", filterErr)
	}
	kustomize.DenyNetwork()
	return filterErr, nil
}

// RunChild is the child of a Sandbox: it sets itself up (setupChild:
// its memory limit, no network), reads a chart to template or a
// kustomization to build from in, runs it in this process and writes the
// JSON array of the objects, or the error, to out. It returns the
// process's exit code.
func RunChild(in io.Reader, out io.Writer) int {
	debug.SetTraceback("single")
	filterErr, err := setupChild()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var req childRequest
	var answer any
	var objs []*unstructured.Unstructured
	var rerr *failure.Error
	where := ""
	switch err := json.NewDecoder(in).Decode(&req); {
	case err != nil:
		rerr = failure.New(render.ReasonTemplateFailed, nil, "reading the render request: %v", err)
	case req.Chart != nil:
		where = req.Chart.Where
		objs, rerr = render.InProcess{}.Template(context.Background(), *req.Chart)
	case req.Kustomize != nil:
		where = req.Kustomize.Where
		objs, rerr = render.InProcess{}.Build(context.Background(), *req.Kustomize)
	case req.Probe:
		answer = probeNetwork(filterErr)
	default:
		rerr = failure.New(render.ReasonTemplateFailed, nil, "the render request holds neither a chart nor a kustomization")
	}
	switch {
	case answer != nil: // a probe's
	case rerr != nil:
		answer = chartError{Reason: rerr.Reason, Message: rerr.Message}
	default:
		items := make([]map[string]any, len(objs))
		for i, o := range objs {
			items[i] = o.Object
		}
		answer = items
	}
	data, err := json.Marshal(answer)
	if err != nil {
		data, _ = json.Marshal(chartError{Reason: render.ReasonManifestInvalid, Message: fmt.Sprintf("%s: the objects do not encode to JSON: %v", where, err)})
	}
	if _, err := out.Write(data); err != nil {
		fmt.Fprintln(os.Stderr, "writing the render response:", err)
		return 1
	}
	return 0
}
