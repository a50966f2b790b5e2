// Package sandbox runs the work of a render that runs what a source holds
// (Helm's templates, kustomize) in child processes of this very program: a
// render.Runner whose children have no network (the kernel's seccomp
// filter, net/http's backstop), a memory limit (RLIMIT_DATA), bounded
// output, and are killed when the render's context ends. It implements
// render.Runner and runs render.InProcess in the child (RunChild), so that
// pkg/render knows nothing of processes; docs/contributors/internals.md,
// "The render", says why and how.
package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kumodo/convoy-apiserver/pkg/errtext"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
	"github.com/kumodo/convoy-apiserver/pkg/jsonobjects"
	"github.com/kumodo/convoy-apiserver/pkg/render"
	"github.com/kumodo/convoy-apiserver/pkg/sourcefailure"
	"github.com/kumodo/convoy-apiserver/pkg/truncate"
)

// ChildArg is the one argument a program is run with as a Sandbox's child:
// its main must call RunChild when it sees it (convoy-apiserver's does).
const ChildArg = "__convoy-render-chart"

// maxStderr is how much of a child's standard error is kept for the message
// of a crash.
const maxStderr = 4 << 10

// memoryLimitEnv carries a child's memory limit, in bytes, from the Sandbox
// to RunChild.
const memoryLimitEnv = "CONVOY_RENDER_MEMORY_LIMIT"

// networkFilterEnv is "required" once the Sandbox found that its children
// can install the kernel's network filter (CheckNetworkFilter): a child
// that then cannot fails instead of running without it.
const networkFilterEnv = "CONVOY_RENDER_NETWORK_FILTER"

// gcHeadroom is how far under its memory limit a child's Go runtime starts
// collecting hard (GOMEMLIMIT): the runtime never unmaps its heap, so
// without headroom a child would die of garbage it could have collected.
const gcHeadroom = 96 << 20

// Sandbox templates charts and builds kustomizations in child processes
// (a kustomization only once kustomize.Check passed it), at most
// concurrency at once, for the loops and the subresources together: a
// render waits for a slot within its timeout. A child has no network (the
// kernel's filter where CheckNetworkFilter found it holds, else net/http's
// backstop), is killed when the render's context ends (Helm's template
// engine does not stop at a deadline), writes at most twice the Limits'
// MaxBytes (JSON, with its own escaping), decoded one object at a time up
// to MaxObjects, and takes at most Limits.Memory (RLIMIT_DATA). The rest
// is in docs/contributors/internals.md, "Limits".
type Sandbox struct {
	path      string
	slots     chan struct{}
	limits    render.Limits
	maxOutput int64
	// filtered is set once CheckNetworkFilter found that the children can
	// install the network filter.
	filtered atomic.Bool
}

var _ render.Runner = (*Sandbox)(nil)

// New returns a Sandbox that runs the program at path (the running
// convoy-apiserver, os.Executable) with ChildArg, at most concurrency at a
// time, within limits (zero fields take their defaults).
func New(path string, concurrency int, limits render.Limits) *Sandbox {
	if concurrency <= 0 {
		concurrency = 1
	}
	limits = limits.WithDefaults()
	return &Sandbox{
		path:      path,
		slots:     make(chan struct{}, concurrency),
		limits:    limits,
		maxOutput: 2 * int64(limits.MaxBytes),
	}
}

// chartError is what a child writes back when the chart fails; else it
// writes the JSON array of the objects.
type chartError struct {
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// childRequest is what a child reads: a chart to template, a kustomization
// to build, or whether it has a network (CheckNetworkFilter).
type childRequest struct {
	Chart     *render.ChartRequest     `json:"chart,omitempty"`
	Kustomize *render.KustomizeRequest `json:"kustomize,omitempty"`
	Probe     bool                     `json:"probe,omitempty"`
}

// probeAnswer is a child's answer to a probe: whether the kernel refused
// it the Internet sockets it asked for, and why not.
type probeAnswer struct {
	Refused bool   `json:"refused"`
	Why     string `json:"why,omitempty"`
}

// CheckNetworkFilter runs a child that installs the network filter and
// asks for an IPv4 and an IPv6 socket. When the kernel refused both, every
// later child must install the filter (one that cannot fails); when not,
// the children run with net/http's backstop alone. It returns why the
// filter does not hold, nil when it does, and sets
// convoy_render_network_filter; the caller logs it once.
func (s *Sandbox) CheckNetworkFilter(ctx context.Context) error {
	in, err := json.Marshal(childRequest{Probe: true})
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, s.path, ChildArg)
	cmd.Stdin, cmd.Env, cmd.Dir = bytes.NewReader(in), s.childEnv(), os.TempDir()
	var stderr limitedBuffer
	stderr.limit = maxStderr
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var answer probeAnswer
	switch {
	case err != nil:
		answer.Why = fmt.Sprintf("the probe process failed: %v: %s", err, strings.TrimSpace(stderr.String()))
	case json.Unmarshal(out, &answer) != nil:
		answer = probeAnswer{Why: fmt.Sprintf("the probe process answered %q", truncate.String(string(out), 200))}
	}
	s.filtered.Store(answer.Refused)
	if answer.Refused {
		networkFiltered.Set(1)
		return nil
	}
	networkFiltered.Set(0)
	return errors.New(answer.Why)
}

// childEnv is the whole environment of a child: nothing of the server's (a
// chart has no business with it, and without PATH kustomize finds no git
// to clone with), its memory limit, and whether it must install the
// network filter.
func (s *Sandbox) childEnv() []string {
	memory := int64(s.limits.Memory)
	env := []string{
		memoryLimitEnv + "=" + strconv.FormatInt(memory, 10),
		"GOMEMLIMIT=" + strconv.FormatInt(max(memory-gcHeadroom, memory/2), 10),
		"GOTRACEBACK=single",
	}
	if s.filtered.Load() {
		env = append(env, networkFilterEnv+"=required")
	}
	return env
}

// Template implements render.Runner: it templates req in a child process.
func (s *Sandbox) Template(ctx context.Context, req render.ChartRequest) ([]*unstructured.Unstructured, *failure.Error) {
	return s.run(ctx, fmt.Sprintf("%s: templating the chart", req.Where), req.Where+": the chart", childRequest{Chart: &req}, req.MaxObjects)
}

// Build implements render.Runner: it builds req in a child process, which
// has no network.
func (s *Sandbox) Build(ctx context.Context, req render.KustomizeRequest) ([]*unstructured.Unstructured, *failure.Error) {
	return s.run(ctx, fmt.Sprintf("%s: building the kustomization", req.Where), req.Where+": the kustomization", childRequest{Kustomize: &req}, req.MaxObjects)
}

// run runs req in a child process and decodes its answer; what names the
// work in messages, output the objects it writes.
func (s *Sandbox) run(ctx context.Context, what, output string, req childRequest, maxObjects int) ([]*unstructured.Unstructured, *failure.Error) {
	select {
	case s.slots <- struct{}{}:
		defer func() { <-s.slots }()
	case <-ctx.Done():
		return nil, s.stopped(ctx, what+" (waiting for one of the renders running now)")
	}
	in, err := json.Marshal(req)
	if err != nil {
		return nil, failure.New(render.ReasonTemplateFailed, err, "%s: encoding the request", what)
	}
	cmd := exec.CommandContext(ctx, s.path, ChildArg)
	cmd.Stdin = bytes.NewReader(in)
	cmd.Env = s.childEnv()
	cmd.Dir = os.TempDir()
	var stderr limitedBuffer
	stderr.limit = maxStderr
	cmd.Stderr = &stderr
	cmd.WaitDelay = 2 * time.Second
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, failure.New(render.ReasonTemplateFailed, err, "%s", what)
	}
	if err := cmd.Start(); err != nil {
		return nil, failure.New(render.ReasonTemplateFailed, err, "%s: starting the render process", what)
	}
	out, readErr := io.ReadAll(io.LimitReader(stdout, s.maxOutput+1))
	if int64(len(out)) > s.maxOutput {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, failure.New(render.ReasonRenderTooLarge, nil, "%s: the render is more than %d bytes (twice --max-render-bytes)", what, s.maxOutput)
	}
	waitErr := cmd.Wait()
	if ctx.Err() != nil {
		return nil, s.stopped(ctx, what)
	}
	if readErr != nil || waitErr != nil {
		tail := strings.TrimSpace(stderr.String())
		if errtext.OutOfMemory(tail) {
			return nil, failure.New(render.ReasonRenderMemoryExceeded, nil,
				"%s used more than the render memory limit of %d bytes (--render-memory-limit) and was stopped", what, s.limits.Memory)
		}
		msg := what + ": the render process failed"
		if tail != "" {
			msg += ": " + tail
		}
		return nil, failure.New(render.ReasonTemplateFailed, errors.Join(readErr, waitErr), "%s", msg)
	}
	return decodeResponse(output, out, maxObjects)
}

// stopped is the error of a render whose context ended.
func (s *Sandbox) stopped(ctx context.Context, what string) *failure.Error {
	if errors.Is(context.Cause(ctx), render.ErrTimeout) {
		return failure.New(render.ReasonRenderTimeout, nil, "%s took longer than the render timeout (--render-timeout) and was stopped", what)
	}
	return failure.New(sourcefailure.ReasonInputUnavailable, context.Cause(ctx), "%s was stopped", what)
}

// decodeResponse turns what a child wrote into objects or its error,
// decoding the objects one at a time up to maxObjects.
func decodeResponse(where string, out []byte, maxObjects int) ([]*unstructured.Unstructured, *failure.Error) {
	trimmed := bytes.TrimSpace(out)
	if len(trimmed) > 0 && trimmed[0] == '{' {
		var resp chartError
		if err := json.Unmarshal(trimmed, &resp); err != nil || resp.Reason == "" {
			return nil, failure.New(render.ReasonTemplateFailed, err, "%s: the render process wrote no answer", where)
		}
		return nil, &failure.Error{Reason: resp.Reason, Message: resp.Message}
	}
	objs, err := jsonobjects.Decode(bytes.NewReader(trimmed), maxObjects, 0, func() error {
		return failure.New(render.ReasonTooManyObjects, nil, "%s holds more objects than the limit of %d (--max-render-objects)", where, maxObjects)
	})
	if f, ok := failure.As(err); ok {
		return nil, f
	}
	if err != nil {
		return nil, failure.New(render.ReasonTemplateFailed, err, "%s: the render process wrote no answer", where)
	}
	return objs, nil
}

// limitedBuffer keeps the first limit bytes written to it.
type limitedBuffer struct {
	bytes.Buffer
	limit int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.limit - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}
