package render

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime/debug"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/kumodo/convoy-apiserver/pkg/failure"
)

// ChildArg is the one argument a program is run with as a Sandbox's child:
// its main must call RunChild when it sees it (convoy-apiserver's does).
const ChildArg = "__convoy-render-chart"

// maxStderr is how much of a child's standard error is kept for the message
// of a crash.
const maxStderr = 4 << 10

// Sandbox templates charts in child processes: Helm's template engine does
// not stop at a deadline, so a chart whose templates loop for ever would keep
// a core busy past every timeout. A child is killed when the render's
// context ends (the render timeout, --render-timeout), which really stops
// the work. At most concurrency children run at once, for the loops and the
// subresources together; a render waits for a slot within its timeout. A
// child's output is bounded by the Engine's MaxBytes (twice: it is JSON with
// its own escaping), its memory by a soft limit of its Go runtime.
type Sandbox struct {
	path      string
	slots     chan struct{}
	maxOutput int64
	memLimit  int64
}

// NewSandbox returns a Sandbox that runs the program at path (the running
// convoy-apiserver, os.Executable) with ChildArg, at most concurrency at a
// time, and reads at most 2×maxBytes of output from each.
func NewSandbox(path string, concurrency, maxBytes int) *Sandbox {
	if concurrency <= 0 {
		concurrency = 1
	}
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	return &Sandbox{
		path:      path,
		slots:     make(chan struct{}, concurrency),
		maxOutput: 2 * int64(maxBytes),
		// The chart, its values, Helm and the rendered objects, many times
		// over; the child is not trusted to stay within it, only helped.
		memLimit: 16 * int64(maxBytes),
	}
}

// chartResponse is what a child writes back.
type chartResponse struct {
	Objects []json.RawMessage `json:"objects,omitempty"`
	Reason  string            `json:"reason,omitempty"`
	Message string            `json:"message,omitempty"`
}

// Template implements ChartRunner: it templates req in a child process.
func (s *Sandbox) Template(ctx context.Context, req ChartRequest) ([]*unstructured.Unstructured, *failure.Error) {
	what := fmt.Sprintf("%s: templating the chart", req.Where)
	select {
	case s.slots <- struct{}{}:
		defer func() { <-s.slots }()
	case <-ctx.Done():
		return nil, s.stopped(ctx, what+" (waiting for one of the renders running now)")
	}
	in, err := json.Marshal(req)
	if err != nil {
		return nil, failure.New(ReasonChartInvalid, err, "%s: encoding the request", req.Where)
	}
	cmd := exec.CommandContext(ctx, s.path, ChildArg)
	cmd.Stdin = bytes.NewReader(in)
	// Nothing of the server's environment: a chart has no business with it.
	cmd.Env = []string{"GOMEMLIMIT=" + fmt.Sprint(s.memLimit), "GOTRACEBACK=single"}
	cmd.Dir = os.TempDir()
	var stderr limitedBuffer
	stderr.limit = maxStderr
	cmd.Stderr = &stderr
	cmd.WaitDelay = 2 * time.Second
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, failure.New(ReasonTemplateFailed, err, "%s", what)
	}
	if err := cmd.Start(); err != nil {
		return nil, failure.New(ReasonTemplateFailed, err, "%s: starting the render process", what)
	}
	out, readErr := io.ReadAll(io.LimitReader(stdout, s.maxOutput+1))
	if int64(len(out)) > s.maxOutput {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, failure.New(ReasonRenderTooLarge, nil, "%s: the chart renders more than %d bytes (twice --max-render-bytes)", what, s.maxOutput)
	}
	waitErr := cmd.Wait()
	if ctx.Err() != nil {
		return nil, s.stopped(ctx, what)
	}
	if readErr != nil || waitErr != nil {
		msg := what + ": the render process failed"
		if tail := strings.TrimSpace(stderr.String()); tail != "" {
			msg += ": " + tail
		}
		return nil, failure.New(ReasonTemplateFailed, errors.Join(readErr, waitErr), "%s", msg)
	}
	return decodeResponse(req.Where, out)
}

// stopped is the error of a render whose context ended.
func (s *Sandbox) stopped(ctx context.Context, what string) *failure.Error {
	if errors.Is(context.Cause(ctx), errRenderTimeout) {
		return failure.New(ReasonRenderTimeout, nil, "%s took longer than the render timeout (--render-timeout) and was stopped", what)
	}
	return failure.New(ReasonInputUnavailable, context.Cause(ctx), "%s was stopped", what)
}

// decodeResponse turns what a child wrote into objects or its error.
func decodeResponse(where string, out []byte) ([]*unstructured.Unstructured, *failure.Error) {
	var resp chartResponse
	if err := json.Unmarshal(out, &resp); err != nil {
		return nil, failure.New(ReasonTemplateFailed, err, "%s: the render process wrote no answer", where)
	}
	if resp.Reason != "" {
		return nil, &failure.Error{Reason: resp.Reason, Message: resp.Message}
	}
	objs := make([]*unstructured.Unstructured, 0, len(resp.Objects))
	for i, raw := range resp.Objects {
		var obj map[string]any
		// utiljson keeps integers int64, as the decoders of unstructured do.
		if err := utiljson.Unmarshal(raw, &obj); err != nil {
			return nil, failure.New(ReasonTemplateFailed, err, "%s: object %d of the render process", where, i)
		}
		objs = append(objs, &unstructured.Unstructured{Object: obj})
	}
	return objs, nil
}

// RunChild is the child of a Sandbox: it reads a ChartRequest from in,
// templates it in this process and writes the objects or the error to out.
// It returns the process's exit code.
func RunChild(in io.Reader, out io.Writer) int {
	debug.SetTraceback("single")
	var req ChartRequest
	resp := chartResponse{}
	if err := json.NewDecoder(in).Decode(&req); err != nil {
		resp.Reason, resp.Message = ReasonTemplateFailed, "reading the render request: "+err.Error()
	} else if objs, rerr := templateChart(context.Background(), req); rerr != nil {
		resp.Reason, resp.Message = rerr.Reason, rerr.Message
	} else {
		for _, o := range objs {
			raw, err := json.Marshal(o.Object)
			if err != nil {
				resp = chartResponse{Reason: ReasonManifestInvalid, Message: fmt.Sprintf("%s: object does not encode to JSON: %v", req.Where, err)}
				break
			}
			resp.Objects = append(resp.Objects, raw)
		}
	}
	if err := json.NewEncoder(out).Encode(resp); err != nil {
		fmt.Fprintln(os.Stderr, "writing the render response:", err)
		return 1
	}
	return 0
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
