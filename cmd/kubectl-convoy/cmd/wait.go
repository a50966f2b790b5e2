package cmd

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/health"
)

// reasonDegraded is the reason of a Healthy condition that is False because
// an object is Degraded.
var reasonDegraded = health.ReasonDegraded

// Exit codes of release wait and health --exit-code, for CI pipelines.
const (
	exitReached    = 0
	exitNotReached = 1 // timed out, or Degraded
	exitWaitError  = 2
)

// Values of --for.
const (
	forInSync  = "insync"
	forHealthy = "healthy"
	forSynced  = "synced"
)

// waitPoll is how often release wait reads the Release.
var waitPoll = time.Second

func newWaitCommand(o *Options) *cobra.Command {
	var (
		what    string
		timeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "wait NAME --for=insync|healthy|synced [--timeout=5m]",
		Short: "Wait until a Release is in sync, healthy, or both",
		Long: `Wait until the Release reaches a state, as the observer reports it for its current
generation (a condition written for an older spec does not count):

  insync   the InSync condition is True: the live objects match the desired render
  healthy  the Healthy condition is True (Healthy, or NotConfigured without rules)
  synced   both, and the controller's rollout (when it reports one) is Complete

Exit status: 0 when reached; 1 on timeout, or as soon as the Release is Degraded
(--for=healthy or synced); 2 on any other error (the Release does not exist, the
cluster cannot be reached, ...).

Needs get on releases in convoy.kumodo.io.`,
		Example: `  kubectl convoy release wait web -n shop --for=synced --timeout=5m
  kubectl convoy release wait web -n shop --for=healthy && ./smoke-test.sh`,
		ValidArgsFunction: o.completeReleaseNames,
		RunE: func(cmd *cobra.Command, args []string) error {
			code, err := o.runWait(cmd, args, what, timeout)
			if err != nil || code != exitReached {
				return &ExitError{Code: code, Err: err}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&what, "for", "", "What to wait for: insync, healthy or synced")
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Minute, "How long to wait; 0 checks once")
	_ = cmd.RegisterFlagCompletionFunc("for", cobra.FixedCompletions([]string{forInSync, forHealthy, forSynced}, cobra.ShellCompDirectiveNoFileComp))
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &ExitError{Code: exitWaitError, Err: err} })
	return cmd
}

func (o *Options) runWait(cmd *cobra.Command, args []string, what string, timeout time.Duration) (int, error) {
	name, err := releaseName(cmd, args)
	if err != nil {
		return exitWaitError, err
	}
	switch what {
	case forInSync, forHealthy, forSynced:
	case "":
		return exitWaitError, errors.New("--for is required: insync, healthy or synced")
	default:
		return exitWaitError, fmt.Errorf("--for must be insync, healthy or synced, not %q", what)
	}
	releases, namespace, err := o.releaseResource(false)
	if err != nil {
		return exitWaitError, err
	}
	var last waitState
	readErr, err := pollRelease(cmd.Context(), releases, name, timeout, func(r *convoyv1alpha1.Release) bool {
		last = releaseWaitState(r, what)
		return last.reached || last.degraded
	})
	switch {
	case err == nil && last.reached:
		fmt.Fprintf(o.Streams.Out, "release.convoy.kumodo.io/%s %s\n", name, what)
		return exitReached, nil
	case err == nil && last.degraded:
		return exitNotReached, fmt.Errorf("release %s/%s is Degraded: %s", namespace, name, last.why)
	case errors.Is(err, errTimedOut):
		why := last.why
		if readErr != nil {
			why = readErr.Error()
		}
		return exitNotReached, fmt.Errorf("timed out after %s waiting for release %s/%s to be %s: %s", timeout, namespace, name, what, why)
	default:
		return exitWaitError, fmt.Errorf("release %s/%s: %w", namespace, name, err)
	}
}

// waitState is where a Release stands for release wait.
type waitState struct {
	reached, degraded bool
	why               string // what is missing, for the timeout message
}

// errTimedOut is pollRelease's error when the timeout passed first.
var errTimedOut = errors.New("timed out")

// pollRelease reads the Release name every waitPoll until done says it is
// what is waited for, or timeout passes (a timeout of 0 or less reads
// once): it returns nil, errTimedOut, or the error of a read that trying
// again cannot mend (the Release does not exist, the user may not read it,
// it does not decode). Other failed reads are tried again until the
// timeout; readErr is the last of them when no read succeeded since.
func pollRelease(ctx context.Context, releases dynamic.ResourceInterface, name string, timeout time.Duration, done func(*convoyv1alpha1.Release) bool) (readErr, err error) {
	if ctx == nil {
		ctx = context.Background()
	}
	check := func(ctx context.Context) (bool, error) {
		u, err := releases.Get(ctx, name, metav1.GetOptions{})
		switch {
		case err == nil:
		case ctx.Err() != nil || pastDeadline(ctx):
			// The timeout, not a failure of the cluster. Past the deadline
			// but before ctx is done (a loaded machine), client-go's rate
			// limiter refuses at once ("would exceed context deadline").
			return false, nil
		case apierrors.IsNotFound(err) || apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err):
			return false, err
		default:
			readErr = err // a passing failure: try again until the timeout
			return false, nil
		}
		readErr = nil
		var r convoyv1alpha1.Release
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &r); err != nil {
			return false, err
		}
		return done(&r), nil
	}
	if timeout <= 0 {
		// Check once, with the request's own time.
		if ok, err := check(ctx); err != nil || !ok {
			return readErr, cmp.Or(err, errTimedOut)
		}
		return nil, nil
	}
	err = wait.PollUntilContextTimeout(ctx, waitPoll, timeout, true, check)
	if wait.Interrupted(err) || errors.Is(err, context.DeadlineExceeded) {
		return readErr, errTimedOut
	}
	return readErr, err
}

// releaseWaitState tells whether r is what (insync, healthy, synced), or
// Degraded, and else why not.
func releaseWaitState(r *convoyv1alpha1.Release, what string) waitState {
	condTrue := func(typ string) (bool, string) {
		c := meta.FindStatusCondition(r.Status.Conditions, typ)
		switch {
		case c == nil:
			return false, typ + " is not reported yet"
		case c.ObservedGeneration != r.Generation:
			return false, fmt.Sprintf("%s is for generation %d, the Release is at %d", typ, c.ObservedGeneration, r.Generation)
		case c.Status != metav1.ConditionTrue:
			return false, fmt.Sprintf("%s is %s (%s): %s", typ, c.Status, c.Reason, c.Message)
		}
		return true, ""
	}
	var s waitState
	if what != forInSync {
		c := meta.FindStatusCondition(r.Status.Conditions, convoyv1alpha1.ConditionHealthy)
		if c != nil && c.ObservedGeneration == r.Generation && c.Status == metav1.ConditionFalse && c.Reason == reasonDegraded {
			return waitState{degraded: true, why: c.Message}
		}
	}
	inSync, whyNotInSync := condTrue(convoyv1alpha1.ConditionInSync)
	healthy, whyNotHealthy := condTrue(convoyv1alpha1.ConditionHealthy)
	switch what {
	case forInSync:
		s.reached, s.why = inSync, whyNotInSync
	case forHealthy:
		s.reached, s.why = healthy, whyNotHealthy
	case forSynced:
		switch {
		case !inSync:
			s.why = whyNotInSync
		case !healthy:
			s.why = whyNotHealthy
		case r.Status.Rollout != nil && r.Status.Rollout.Phase != convoyv1alpha1.RolloutComplete:
			s.why = fmt.Sprintf("the rollout is %s", r.Status.Rollout.Phase)
		default:
			s.reached = true
		}
	}
	return s
}

// pastDeadline says whether ctx's deadline has passed, even if ctx is not
// done yet.
func pastDeadline(ctx context.Context) bool {
	deadline, ok := ctx.Deadline()
	return ok && !time.Now().Before(deadline)
}
