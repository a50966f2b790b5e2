package health

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/cel-go/common/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
)

// defaultCase is a realistic object and what the default rules say of it.
type defaultCase struct {
	name string
	obj  string
	// want is Pass or Fail (never Error: the rules guard every field).
	want Result
	// message is the message of the first failing rule.
	message string
}

var deploymentCases = []defaultCase{
	// Paused after its rollout finished: nothing is held, Healthy.
	{name: "paused after the rollout", want: ResultPass, obj: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop, generation: 6}
spec: {replicas: 3, paused: true}
status:
  observedGeneration: 6
  replicas: 3
  updatedReplicas: 3
  readyReplicas: 3
  availableReplicas: 3
  conditions:
  - {type: Available, status: "True", reason: MinimumReplicasAvailable}
  - {type: Progressing, status: "Unknown", reason: DeploymentPaused, message: Deployment is paused}
`},
	// metadata.generation absent (a copy that dropped it): the generation
	// rule cannot compare and lets the other rules judge.
	{name: "no metadata.generation, rolled out", want: ResultPass, obj: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec: {replicas: 2}
status: {observedGeneration: 3, replicas: 2, updatedReplicas: 2, readyReplicas: 2, availableReplicas: 2}
`},
	{name: "no metadata.generation, not rolled out", want: ResultFail, message: "0 of 2 replicas available", obj: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec: {replicas: 2}
status: {observedGeneration: 3, replicas: 2, updatedReplicas: 2}
`},
	{name: "healthy", want: ResultPass, obj: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop, generation: 4}
spec: {replicas: 3}
status:
  observedGeneration: 4
  replicas: 3
  updatedReplicas: 3
  readyReplicas: 3
  availableReplicas: 3
  conditions:
  - {type: Available, status: "True", reason: MinimumReplicasAvailable}
  - {type: Progressing, status: "True", reason: NewReplicaSetAvailable}
`},
	{name: "spec.replicas defaults to 1", want: ResultPass, obj: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop, generation: 1}
spec: {}
status: {observedGeneration: 1, replicas: 1, updatedReplicas: 1, readyReplicas: 1, availableReplicas: 1}
`},
	{name: "scaled to zero", want: ResultPass, obj: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop, generation: 2}
spec: {replicas: 0}
status: {observedGeneration: 2}
`},
	{name: "no status yet", want: ResultFail, message: "no status yet: waiting for the Deployment controller", obj: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop, generation: 1}
spec: {replicas: 3}
`},
	{name: "generation not observed", want: ResultFail, message: "waiting for the controller to observe generation 4 (it has observed 3)", obj: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop, generation: 4}
spec: {replicas: 3}
status: {observedGeneration: 3, replicas: 3, updatedReplicas: 3, readyReplicas: 3, availableReplicas: 3}
`},
	{name: "progress deadline exceeded", want: ResultFail, message: `rollout failed: progress deadline exceeded: ReplicaSet "web-7d9c" has timed out progressing.`, obj: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop, generation: 4}
spec: {replicas: 3}
status:
  observedGeneration: 4
  replicas: 4
  updatedReplicas: 1
  readyReplicas: 3
  availableReplicas: 3
  unavailableReplicas: 1
  conditions:
  - {type: Available, status: "True", reason: MinimumReplicasAvailable}
  - {type: Progressing, status: "False", reason: ProgressDeadlineExceeded, message: 'ReplicaSet "web-7d9c" has timed out progressing.'}
`},
	{name: "replica failure", want: ResultFail, message: `cannot create pods: FailedCreate (pods "web-7d9c-x2v" is forbidden: exceeded quota: compute, requested: cpu=500m)`, obj: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop, generation: 4}
spec: {replicas: 3}
status:
  observedGeneration: 4
  replicas: 2
  updatedReplicas: 2
  availableReplicas: 2
  conditions:
  - {type: Progressing, status: "True", reason: ReplicaSetUpdated}
  - {type: ReplicaFailure, status: "True", reason: FailedCreate, message: 'pods "web-7d9c-x2v" is forbidden: exceeded quota: compute, requested: cpu=500m'}
`},
	{name: "rollout in progress", want: ResultFail, message: "1 of 3 replicas updated", obj: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop, generation: 5}
spec: {replicas: 3}
status:
  observedGeneration: 5
  replicas: 4
  updatedReplicas: 1
  readyReplicas: 3
  availableReplicas: 3
  conditions:
  - {type: Progressing, status: "True", reason: ReplicaSetUpdated}
`},
	// kubectl rollout pause during a rollout: the Deployment controller keeps
	// the old ReplicaSet and sets Progressing Unknown/DeploymentPaused.
	{name: "rollout paused", want: ResultSuspended, message: "the rollout is paused (spec.paused): 0 of 3 replicas updated, 3 available", obj: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop, generation: 5}
spec: {replicas: 3, paused: true}
status: {observedGeneration: 5, replicas: 3, readyReplicas: 3, availableReplicas: 3}
`},
	{name: "replicas not available", want: ResultFail, message: "1 of 3 replicas available", obj: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop, generation: 4}
spec: {replicas: 3}
status:
  observedGeneration: 4
  replicas: 3
  updatedReplicas: 3
  readyReplicas: 1
  availableReplicas: 1
  unavailableReplicas: 2
`},
	{name: "old replicas pending termination", want: ResultFail, message: "1 old replicas pending termination", obj: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop, generation: 4}
spec: {replicas: 3}
status: {observedGeneration: 4, replicas: 4, updatedReplicas: 3, readyReplicas: 4, availableReplicas: 3}
`},
}

var statefulSetCases = []defaultCase{
	{name: "healthy", want: ResultPass, obj: `
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: shop, generation: 2}
spec: {replicas: 3}
status: {observedGeneration: 2, replicas: 3, readyReplicas: 3, currentReplicas: 3, updatedReplicas: 3, availableReplicas: 3, currentRevision: db-7f, updateRevision: db-7f}
`},
	{name: "partitioned rollout done", want: ResultPass, obj: `
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: shop, generation: 3}
spec: {replicas: 3, updateStrategy: {type: RollingUpdate, rollingUpdate: {partition: 2}}}
status: {observedGeneration: 3, replicas: 3, readyReplicas: 3, currentReplicas: 2, updatedReplicas: 1, currentRevision: db-6c, updateRevision: db-7f}
`},
	{name: "OnDelete", want: ResultPass, obj: `
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: shop, generation: 3}
spec: {replicas: 3, updateStrategy: {type: OnDelete}}
status: {observedGeneration: 3, replicas: 3, readyReplicas: 3, currentReplicas: 3, currentRevision: db-6c, updateRevision: db-7f}
`},
	{name: "no status yet", want: ResultFail, message: "no status yet: waiting for the StatefulSet controller", obj: `
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: shop, generation: 1}
spec: {replicas: 3}
`},
	{name: "generation not observed", want: ResultFail, message: "waiting for the controller to observe generation 3 (it has observed 2)", obj: `
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: shop, generation: 3}
spec: {replicas: 3}
status: {observedGeneration: 2, replicas: 3, readyReplicas: 3, updatedReplicas: 3, currentRevision: db-6c, updateRevision: db-6c}
`},
	{name: "replicas not ready", want: ResultFail, message: "1 of 3 replicas ready", obj: `
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: shop, generation: 1}
spec: {replicas: 3}
status: {observedGeneration: 1, replicas: 2, readyReplicas: 1, currentReplicas: 2, updatedReplicas: 2, currentRevision: db-6c, updateRevision: db-6c}
`},
	{name: "rolling update in progress", want: ResultFail, message: "1 of 3 replicas updated", obj: `
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: shop, generation: 3}
spec: {replicas: 3}
status: {observedGeneration: 3, replicas: 3, readyReplicas: 3, currentReplicas: 2, updatedReplicas: 1, currentRevision: db-6c, updateRevision: db-7f}
`},
	{name: "partitioned rollout in progress", want: ResultFail, message: "1 of 2 replicas updated (partition 1)", obj: `
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: shop, generation: 3}
spec: {replicas: 3, updateStrategy: {type: RollingUpdate, rollingUpdate: {partition: 1}}}
status: {observedGeneration: 3, replicas: 3, readyReplicas: 3, currentReplicas: 2, updatedReplicas: 1, currentRevision: db-6c, updateRevision: db-7f}
`},
	{name: "revision not current yet", want: ResultFail, message: "rolling update to revision db-7f in progress (current revision db-6c)", obj: `
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: shop, generation: 3}
spec: {replicas: 3}
status: {observedGeneration: 3, replicas: 3, readyReplicas: 3, updatedReplicas: 3, currentRevision: db-6c, updateRevision: db-7f}
`},
}

var daemonSetCases = []defaultCase{
	{name: "no metadata.generation", want: ResultPass, obj: `
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: monitoring}
spec: {}
status: {observedGeneration: 2, desiredNumberScheduled: 2, currentNumberScheduled: 2, updatedNumberScheduled: 2, numberReady: 2, numberAvailable: 2, numberMisscheduled: 0}
`},
	{name: "no metadata.generation, no status", want: ResultFail, message: "no status yet: waiting for the DaemonSet controller", obj: `
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: monitoring}
spec: {}
`},
	{name: "healthy", want: ResultPass, obj: `
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: monitoring, generation: 2}
spec: {}
status: {observedGeneration: 2, desiredNumberScheduled: 3, currentNumberScheduled: 3, updatedNumberScheduled: 3, numberReady: 3, numberAvailable: 3, numberMisscheduled: 0}
`},
	{name: "no node to run on", want: ResultPass, obj: `
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: monitoring, generation: 1}
spec: {}
status: {observedGeneration: 1, desiredNumberScheduled: 0, currentNumberScheduled: 0, numberReady: 0, numberMisscheduled: 0}
`},
	{name: "OnDelete not updated", want: ResultPass, obj: `
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: monitoring, generation: 2}
spec: {updateStrategy: {type: OnDelete}}
status: {observedGeneration: 2, desiredNumberScheduled: 3, currentNumberScheduled: 3, updatedNumberScheduled: 1, numberReady: 3, numberAvailable: 3, numberMisscheduled: 0}
`},
	{name: "no status yet", want: ResultFail, message: "no status yet: waiting for the DaemonSet controller", obj: `
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: monitoring, generation: 1}
spec: {}
`},
	{name: "generation not observed", want: ResultFail, message: "waiting for the controller to observe generation 2 (it has observed 1)", obj: `
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: monitoring, generation: 2}
spec: {}
status: {observedGeneration: 1, desiredNumberScheduled: 3, currentNumberScheduled: 3, updatedNumberScheduled: 3, numberReady: 3, numberAvailable: 3, numberMisscheduled: 0}
`},
	{name: "not scheduled everywhere", want: ResultFail, message: "daemon pods scheduled on 2 of 3 nodes", obj: `
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: monitoring, generation: 1}
spec: {}
status: {observedGeneration: 1, desiredNumberScheduled: 3, currentNumberScheduled: 2, updatedNumberScheduled: 2, numberReady: 2, numberAvailable: 2, numberMisscheduled: 0}
`},
	{name: "rolling update in progress", want: ResultFail, message: "1 of 3 daemon pods updated", obj: `
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: monitoring, generation: 2}
spec: {}
status: {observedGeneration: 2, desiredNumberScheduled: 3, currentNumberScheduled: 3, updatedNumberScheduled: 1, numberReady: 3, numberAvailable: 3, numberMisscheduled: 0}
`},
	{name: "pods not available", want: ResultFail, message: "2 of 3 daemon pods available", obj: `
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: monitoring, generation: 2}
spec: {}
status: {observedGeneration: 2, desiredNumberScheduled: 3, currentNumberScheduled: 3, updatedNumberScheduled: 3, numberReady: 2, numberAvailable: 2, numberUnavailable: 1, numberMisscheduled: 0}
`},
}

var replicaSetCases = []defaultCase{
	{name: "healthy", want: ResultPass, obj: `
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: web-7d9c, namespace: shop, generation: 1}
spec: {replicas: 3}
status: {observedGeneration: 1, replicas: 3, fullyLabeledReplicas: 3, readyReplicas: 3, availableReplicas: 3}
`},
	{name: "no status yet", want: ResultFail, message: "no status yet: waiting for the ReplicaSet controller", obj: `
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: web-7d9c, namespace: shop, generation: 1}
spec: {replicas: 3}
`},
	{name: "generation not observed", want: ResultFail, message: "waiting for the controller to observe generation 2 (it has observed 1)", obj: `
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: web-7d9c, namespace: shop, generation: 2}
spec: {replicas: 3}
status: {observedGeneration: 1, replicas: 3, availableReplicas: 3}
`},
	{name: "replica failure", want: ResultFail, message: `cannot create pods: FailedCreate (pods "web-7d9c-abc" is forbidden: exceeded quota: compute)`, obj: `
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: web-7d9c, namespace: shop, generation: 1}
spec: {replicas: 3}
status:
  observedGeneration: 1
  replicas: 1
  availableReplicas: 1
  conditions:
  - {type: ReplicaFailure, status: "True", reason: FailedCreate, message: 'pods "web-7d9c-abc" is forbidden: exceeded quota: compute'}
`},
	{name: "replicas not available", want: ResultFail, message: "1 of 3 replicas available", obj: `
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: web-7d9c, namespace: shop, generation: 1}
spec: {replicas: 3}
status: {observedGeneration: 1, replicas: 3, readyReplicas: 1, availableReplicas: 1}
`},
	{name: "scaled down, pods terminating", want: ResultFail, message: "2 extra replicas pending termination", obj: `
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: web-7d9c, namespace: shop, generation: 2}
spec: {replicas: 1}
status: {observedGeneration: 2, replicas: 3, readyReplicas: 3, availableReplicas: 3}
`},
}

var jobCases = []defaultCase{
	// Suspended after it completed: Healthy.
	{name: "suspended after completion", want: ResultPass, obj: `
apiVersion: batch/v1
kind: Job
metadata: {name: migrate, namespace: shop, generation: 2}
spec: {completions: 1, parallelism: 1, suspend: true}
status:
  succeeded: 1
  completionTime: "2026-08-01T10:01:00Z"
  conditions:
  - {type: SuccessCriteriaMet, status: "True", reason: CompletionsReached}
  - {type: Complete, status: "True", reason: CompletionsReached}
`},
	{name: "complete", want: ResultPass, obj: `
apiVersion: batch/v1
kind: Job
metadata: {name: migrate, namespace: shop, generation: 1}
spec: {completions: 1, parallelism: 1, backoffLimit: 6}
status:
  startTime: "2026-08-01T10:00:00Z"
  completionTime: "2026-08-01T10:00:42Z"
  succeeded: 1
  conditions:
  - {type: SuccessCriteriaMet, status: "True", reason: CompletionsReached}
  - {type: Complete, status: "True", reason: CompletionsReached}
`},
	{name: "not started", want: ResultFail, message: "Job has not started yet", obj: `
apiVersion: batch/v1
kind: Job
metadata: {name: migrate, namespace: shop, generation: 1}
spec: {completions: 1, parallelism: 1}
`},
	// A suspended Job as the Job controller writes it (kube-controller-manager
	// v1.37: condition Suspended, reason JobSuspended).
	{name: "suspended", want: ResultSuspended, message: "Job is suspended (spec.suspend): 0 of 1 succeeded", obj: `
apiVersion: batch/v1
kind: Job
metadata: {name: migrate, namespace: shop, generation: 1}
spec: {completions: 1, parallelism: 1, suspend: true}
status:
  conditions:
  - {type: Suspended, status: "True", reason: JobSuspended}
`},
	{name: "running", want: ResultFail, message: "Job is running: 1 active, 0 of 1 succeeded", obj: `
apiVersion: batch/v1
kind: Job
metadata: {name: migrate, namespace: shop, generation: 1}
spec: {completions: 1, parallelism: 1}
status: {startTime: "2026-08-01T10:00:00Z", active: 1, ready: 0}
`},
	{name: "running with failed pods", want: ResultFail, message: "Job is running: 1 active, 2 of 5 succeeded, 1 failed", obj: `
apiVersion: batch/v1
kind: Job
metadata: {name: batch, namespace: shop, generation: 1}
spec: {completions: 5, parallelism: 1, backoffLimit: 6}
status: {startTime: "2026-08-01T10:00:00Z", active: 1, succeeded: 2, failed: 1}
`},
	{name: "work queue running", want: ResultFail, message: "Job is running: 3 active, 0 succeeded", obj: `
apiVersion: batch/v1
kind: Job
metadata: {name: queue, namespace: shop, generation: 1}
spec: {parallelism: 3}
status: {startTime: "2026-08-01T10:00:00Z", active: 3}
`},
	{name: "failed", want: ResultFail, message: "Job failed: BackoffLimitExceeded (Job has reached the specified backoff limit)", obj: `
apiVersion: batch/v1
kind: Job
metadata: {name: migrate, namespace: shop, generation: 1}
spec: {completions: 1, parallelism: 1, backoffLimit: 2}
status:
  startTime: "2026-08-01T10:00:00Z"
  failed: 3
  conditions:
  - {type: FailureTarget, status: "True", reason: BackoffLimitExceeded, message: Job has reached the specified backoff limit}
  - {type: Failed, status: "True", reason: BackoffLimitExceeded, message: Job has reached the specified backoff limit}
`},
	{name: "failing, pods terminating", want: ResultFail, message: "Job failed: DeadlineExceeded (Job was active longer than specified deadline)", obj: `
apiVersion: batch/v1
kind: Job
metadata: {name: migrate, namespace: shop, generation: 1}
spec: {completions: 1, parallelism: 1, activeDeadlineSeconds: 60}
status:
  startTime: "2026-08-01T10:00:00Z"
  active: 1
  conditions:
  - {type: FailureTarget, status: "True", reason: DeadlineExceeded, message: Job was active longer than specified deadline}
`},
}

var podCases = []defaultCase{
	// kubectl delete pod with a grace period: the kubelet has not stopped
	// the containers yet, the Pod is still Running and Ready.
	{name: "being deleted", want: ResultFail, message: "Pod is being deleted (since 2026-08-01T10:05:00Z)", obj: `
apiVersion: v1
kind: Pod
metadata: {name: web-7d9c-x2v, namespace: shop, deletionTimestamp: "2026-08-01T10:05:00Z", deletionGracePeriodSeconds: 30}
spec: {containers: [{name: app, image: shop:2}]}
status:
  phase: Running
  conditions:
  - {type: Ready, status: "True"}
  containerStatuses:
  - {name: app, ready: true, restartCount: 0, started: true, state: {running: {startedAt: "2026-08-01T10:00:00Z"}}}
`},
	// restartPolicy Never or OnFailure: the Pod runs to completion, and is
	// Progressing while it runs, even ready.
	{name: "run to completion, running", want: ResultFail, message: "Pod runs to completion (restartPolicy Never) and is Running", obj: `
apiVersion: v1
kind: Pod
metadata: {name: migrate, namespace: shop}
spec: {restartPolicy: Never, containers: [{name: migrate, image: shop:2}]}
status:
  phase: Running
  conditions:
  - {type: Ready, status: "True"}
  containerStatuses:
  - {name: migrate, ready: true, restartCount: 0, started: true, state: {running: {startedAt: "2026-08-01T10:00:00Z"}}}
`},
	{name: "run to completion, succeeded", want: ResultPass, obj: `
apiVersion: v1
kind: Pod
metadata: {name: seed, namespace: shop}
spec: {restartPolicy: OnFailure, containers: [{name: seed, image: shop:2}]}
status:
  phase: Succeeded
  conditions:
  - {type: Ready, status: "False", reason: PodCompleted}
  containerStatuses:
  - {name: seed, ready: false, restartCount: 1, state: {terminated: {exitCode: 0, reason: Completed}}}
`},
	{name: "running and ready", want: ResultPass, obj: `
apiVersion: v1
kind: Pod
metadata: {name: web-7d9c-x2v, namespace: shop}
spec: {containers: [{name: app, image: shop:2}]}
status:
  phase: Running
  conditions:
  - {type: PodScheduled, status: "True"}
  - {type: Initialized, status: "True"}
  - {type: ContainersReady, status: "True"}
  - {type: Ready, status: "True"}
  containerStatuses:
  - {name: app, ready: true, restartCount: 0, started: true, state: {running: {startedAt: "2026-08-01T10:00:00Z"}}}
`},
	{name: "succeeded", want: ResultPass, obj: `
apiVersion: v1
kind: Pod
metadata: {name: migrate, namespace: shop}
spec: {restartPolicy: Never, containers: [{name: migrate, image: shop:2}]}
status:
  phase: Succeeded
  conditions:
  - {type: Ready, status: "False", reason: PodCompleted}
  containerStatuses:
  - {name: migrate, ready: false, restartCount: 0, state: {terminated: {exitCode: 0, reason: Completed}}}
`},
	{name: "no status yet", want: ResultFail, message: "Pod has no status yet", obj: `
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: shop}
spec: {containers: [{name: app, image: shop:2}]}
`},
	{name: "unschedulable", want: ResultFail, message: "Pod is Pending: not scheduled: Unschedulable (0/3 nodes are available: 3 Insufficient cpu.)", obj: `
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: shop}
spec: {containers: [{name: app, image: shop:2}]}
status:
  phase: Pending
  conditions:
  - {type: PodScheduled, status: "False", reason: Unschedulable, message: "0/3 nodes are available: 3 Insufficient cpu."}
`},
	{name: "image does not pull", want: ResultFail, message: "Pod is Pending: container app is waiting: ImagePullBackOff", obj: `
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: shop}
spec: {containers: [{name: app, image: shop:nope}]}
status:
  phase: Pending
  conditions:
  - {type: PodScheduled, status: "True"}
  - {type: Ready, status: "False", reason: ContainersNotReady}
  containerStatuses:
  - {name: app, ready: false, restartCount: 0, image: "shop:nope", state: {waiting: {reason: ImagePullBackOff, message: 'Back-off pulling image "shop:nope"'}}}
`},
	{name: "pending without a reason", want: ResultFail, message: "Pod is Pending", obj: `
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: shop}
spec: {containers: [{name: app, image: shop:2}]}
status: {phase: Pending}
`},
	{name: "crash loop", want: ResultFail, message: "containers not ready: app: CrashLoopBackOff (5 restarts), sidecar", obj: `
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: shop}
spec: {containers: [{name: app, image: shop:2}, {name: sidecar, image: proxy:1}]}
status:
  phase: Running
  conditions:
  - {type: PodScheduled, status: "True"}
  - {type: ContainersReady, status: "False", reason: ContainersNotReady}
  - {type: Ready, status: "False", reason: ContainersNotReady, message: "containers with unready status: [app sidecar]"}
  containerStatuses:
  - {name: app, ready: false, restartCount: 5, state: {waiting: {reason: CrashLoopBackOff, message: back-off 2m40s restarting failed container}}}
  - {name: sidecar, ready: false, restartCount: 0, state: {running: {startedAt: "2026-08-01T10:00:00Z"}}}
`},
	{name: "readiness gate not ready", want: ResultFail, message: `Pod is not ready: corresponding condition of pod readiness gate "shop.example/lb" does not exist.`, obj: `
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: shop}
spec: {containers: [{name: app, image: shop:2}], readinessGates: [{conditionType: shop.example/lb}]}
status:
  phase: Running
  conditions:
  - {type: ContainersReady, status: "True"}
  - {type: Ready, status: "False", reason: ReadinessGatesNotReady, message: 'corresponding condition of pod readiness gate "shop.example/lb" does not exist.'}
  containerStatuses:
  - {name: app, ready: true, restartCount: 0, state: {running: {startedAt: "2026-08-01T10:00:00Z"}}}
`},
	{name: "evicted", want: ResultFail, message: "Pod failed: Evicted (The node was low on resource: memory.)", obj: `
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: shop}
spec: {containers: [{name: app, image: shop:2}]}
status: {phase: Failed, reason: Evicted, message: "The node was low on resource: memory."}
`},
	{name: "container exited", want: ResultFail, message: "Pod failed: container migrate exited with code 1 (Error)", obj: `
apiVersion: v1
kind: Pod
metadata: {name: migrate, namespace: shop}
spec: {restartPolicy: Never, containers: [{name: migrate, image: shop:2}]}
status:
  phase: Failed
  containerStatuses:
  - {name: migrate, ready: false, restartCount: 0, state: {terminated: {exitCode: 1, reason: Error}}}
`},
	{name: "node lost", want: ResultFail, message: "Pod phase is Unknown: its node may be unreachable", obj: `
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: shop}
spec: {containers: [{name: app, image: shop:2}]}
status: {phase: Unknown}
`},
}

var pvcCases = []defaultCase{
	{name: "bound", want: ResultPass, obj: `
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data, namespace: shop}
spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
status: {phase: Bound, accessModes: [ReadWriteOnce], capacity: {storage: 1Gi}}
`},
	{name: "pending", want: ResultFail, message: "PVC is Pending", obj: `
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data, namespace: shop}
spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}, storageClassName: standard}
status: {phase: Pending}
`},
	{name: "lost", want: ResultFail, message: "PVC is Lost: its PersistentVolume is gone", obj: `
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data, namespace: shop}
spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
status: {phase: Lost}
`},
	{name: "no status yet", want: ResultFail, message: "PVC has no status yet", obj: `
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data, namespace: shop}
spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
`},
}

var serviceCases = []defaultCase{
	// An entry with ports but neither ip nor hostname.
	{name: "LoadBalancer entry without an address", want: ResultFail, message: "the load balancer entry of the Service has neither an ip nor a hostname", obj: `
apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec: {type: LoadBalancer, ports: [{port: 80}]}
status: {loadBalancer: {ingress: [{ports: [{port: 80, protocol: TCP}]}]}}
`},
	{name: "ClusterIP", want: ResultPass, obj: `
apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec: {type: ClusterIP, clusterIP: 10.96.0.10, ports: [{port: 80, targetPort: 8080}]}
status: {loadBalancer: {}}
`},
	{name: "type not set", want: ResultPass, obj: `
apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec: {ports: [{port: 80}]}
`},
	{name: "NodePort", want: ResultPass, obj: `
apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec: {type: NodePort, ports: [{port: 80, nodePort: 30080}]}
status: {loadBalancer: {}}
`},
	{name: "ExternalName", want: ResultPass, obj: `
apiVersion: v1
kind: Service
metadata: {name: db, namespace: shop}
spec: {type: ExternalName, externalName: db.example.com}
`},
	{name: "LoadBalancer with an IP", want: ResultPass, obj: `
apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec: {type: LoadBalancer, ports: [{port: 443}]}
status: {loadBalancer: {ingress: [{ip: 203.0.113.7, ipMode: VIP}]}}
`},
	{name: "LoadBalancer with a hostname", want: ResultPass, obj: `
apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec: {type: LoadBalancer, ports: [{port: 443}]}
status: {loadBalancer: {ingress: [{hostname: a1b2.elb.example.com}]}}
`},
	{name: "LoadBalancer without ingress", want: ResultFail, message: "waiting for the load balancer to get an external address", obj: `
apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec: {type: LoadBalancer, ports: [{port: 443}]}
status: {loadBalancer: {}}
`},
	{name: "LoadBalancer without status", want: ResultFail, message: "waiting for the load balancer to get an external address", obj: `
apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec: {type: LoadBalancer, ports: [{port: 443}]}
`},
}

// CronJob objects as the CronJob controller writes them
// (kube-controller-manager v1.37: lastScheduleTime when it creates a Job,
// lastSuccessfulTime when one completes, active while one runs).
var cronJobCases = []defaultCase{
	{name: "never scheduled", want: ResultPass, obj: `
apiVersion: batch/v1
kind: CronJob
metadata: {name: report, namespace: shop, generation: 1}
spec: {schedule: "0 3 * * *", jobTemplate: {spec: {template: {spec: {restartPolicy: Never, containers: [{name: r, image: shop:2}]}}}}}
status: {}
`},
	{name: "last run succeeded", want: ResultPass, obj: `
apiVersion: batch/v1
kind: CronJob
metadata: {name: report, namespace: shop, generation: 1}
spec: {schedule: "0 3 * * *", jobTemplate: {spec: {template: {spec: {restartPolicy: Never, containers: [{name: r, image: shop:2}]}}}}}
status: {lastScheduleTime: "2026-08-02T03:00:00Z", lastSuccessfulTime: "2026-08-02T03:00:41Z"}
`},
	{name: "running after a failure", want: ResultPass, obj: `
apiVersion: batch/v1
kind: CronJob
metadata: {name: report, namespace: shop, generation: 1}
spec: {schedule: "0 3 * * *", jobTemplate: {spec: {template: {spec: {restartPolicy: Never, containers: [{name: r, image: shop:2}]}}}}}
status:
  lastScheduleTime: "2026-08-03T03:00:00Z"
  lastSuccessfulTime: "2026-08-01T03:00:41Z"
  active: [{apiVersion: batch/v1, kind: Job, name: report-29230380, namespace: shop, uid: 5b0c2a7e-0c1e-4c57-9d55-4f3f1e0b7a11}]
`},
	// Suspended on purpose: Healthy (see batch.yaml).
	{name: "suspended after a failure", want: ResultPass, obj: `
apiVersion: batch/v1
kind: CronJob
metadata: {name: report, namespace: shop, generation: 2}
spec: {suspend: true, schedule: "0 3 * * *", jobTemplate: {spec: {template: {spec: {restartPolicy: Never, containers: [{name: r, image: shop:2}]}}}}}
status: {lastScheduleTime: "2026-08-03T03:00:00Z", lastSuccessfulTime: "2026-08-01T03:00:41Z"}
`},
	{name: "last run failed", want: ResultFail, message: "the last run of the CronJob, scheduled at 2026-08-03T03:00:00Z, did not succeed (last success at 2026-08-01T03:00:41Z)", obj: `
apiVersion: batch/v1
kind: CronJob
metadata: {name: report, namespace: shop, generation: 1}
spec: {schedule: "0 3 * * *", jobTemplate: {spec: {template: {spec: {restartPolicy: Never, containers: [{name: r, image: shop:2}]}}}}}
status: {lastScheduleTime: "2026-08-03T03:00:00Z", lastSuccessfulTime: "2026-08-01T03:00:41Z"}
`},
	{name: "first run failed", want: ResultFail, message: "the last run of the CronJob, scheduled at 2026-08-03T03:00:00Z, did not succeed (no run has succeeded yet)", obj: `
apiVersion: batch/v1
kind: CronJob
metadata: {name: report, namespace: shop, generation: 1}
spec: {schedule: "0 3 * * *", jobTemplate: {spec: {template: {spec: {restartPolicy: Never, containers: [{name: r, image: shop:2}]}}}}}
status: {lastScheduleTime: "2026-08-03T03:00:00Z"}
`},
}

var crdCases = []defaultCase{
	{name: "established", want: ResultPass, obj: `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.shop.example, generation: 1}
spec: {group: shop.example, names: {kind: Widget, plural: widgets}, scope: Namespaced}
status:
  acceptedNames: {kind: Widget, plural: widgets}
  conditions:
  - {type: NamesAccepted, status: "True", reason: NoConflicts, message: no conflicts found}
  - {type: Established, status: "True", reason: InitialNamesAccepted, message: the initial names have been accepted}
`},
	{name: "no status yet", want: ResultFail, message: "CRD is not established yet", obj: `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.shop.example, generation: 1}
spec: {group: shop.example, names: {kind: Widget, plural: widgets}, scope: Namespaced}
`},
	{name: "installing", want: ResultFail, message: "CRD is not established yet: not all names are accepted", obj: `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.shop.example, generation: 1}
spec: {group: shop.example, names: {kind: Widget, plural: widgets}, scope: Namespaced}
status:
  conditions:
  - {type: NamesAccepted, status: "True", reason: NoConflicts}
  - {type: Established, status: "False", reason: Installing, message: not all names are accepted}
`},
	{name: "names conflict", want: ResultFail, message: `names not accepted: ListKindConflict ("WidgetList" is already in use)`, obj: `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.shop.example, generation: 1}
spec: {group: shop.example, names: {kind: Widget, plural: widgets}, scope: Namespaced}
status:
  conditions:
  - {type: NamesAccepted, status: "False", reason: ListKindConflict, message: '"WidgetList" is already in use'}
  - {type: Established, status: "False", reason: NotAccepted, message: not all names are accepted}
`},
}

var apiServiceCases = []defaultCase{
	{name: "available", want: ResultPass, obj: `
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1alpha1.subresources.convoy.kumodo.io}
spec: {group: subresources.convoy.kumodo.io, version: v1alpha1, groupPriorityMinimum: 100, versionPriority: 100, service: {name: convoy-apiserver, namespace: convoy-system}}
status:
  conditions:
  - {type: Available, status: "True", reason: Passed, message: all checks passed}
`},
	{name: "no endpoints", want: ResultFail, message: `APIService is not available: MissingEndpoints (endpoints for service/convoy-apiserver in "convoy-system" have no addresses with port name "https")`, obj: `
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1alpha1.subresources.convoy.kumodo.io}
spec: {group: subresources.convoy.kumodo.io, version: v1alpha1, groupPriorityMinimum: 100, versionPriority: 100, service: {name: convoy-apiserver, namespace: convoy-system}}
status:
  conditions:
  - {type: Available, status: "False", reason: MissingEndpoints, message: 'endpoints for service/convoy-apiserver in "convoy-system" have no addresses with port name "https"'}
`},
	{name: "no status yet", want: ResultFail, message: "APIService has no Available condition yet", obj: `
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1alpha1.subresources.convoy.kumodo.io}
spec: {group: subresources.convoy.kumodo.io, version: v1alpha1, groupPriorityMinimum: 100, versionPriority: 100}
`},
}

// TestDefaultRuleSetFiles checks the files of artifacts/rules: one
// GlobalHealthRuleSet each, labeled default, every rule with a message and
// within the bounds of the CRD.
func TestDefaultRuleSetFiles(t *testing.T) {
	files, sets := loadDefaults(t)
	names := map[string]bool{}
	for i, set := range sets {
		assert.Equal(t, "convoy.kumodo.io/v1alpha1", set.APIVersion, files[i])
		assert.Equal(t, "GlobalHealthRuleSet", set.Kind, files[i])
		assert.Equal(t, "true", set.Labels["convoy.kumodo.io/default"], files[i])
		assert.False(t, names[set.Name], "%s: name %s used twice", files[i], set.Name)
		names[set.Name] = true
		require.NotEmpty(t, set.Spec.Rules, files[i])
		assert.LessOrEqual(t, len(set.Spec.Rules), 256, files[i])
		for j, rule := range set.Spec.Rules {
			where := fmt.Sprintf("%s rule %d", files[i], j)
			assert.NotEmpty(t, rule.APIVersion, where)
			assert.NotEmpty(t, rule.Resources, where)
			assert.True(t, rule.Message != "" || rule.MessageExpression != "", "%s has no message", where)
			assert.LessOrEqual(t, len(rule.Expression), 4096, where)
			assert.LessOrEqual(t, len(rule.MessageExpression), 4096, where)
			assert.LessOrEqual(t, len(rule.Message), 1024, where)
		}
	}
}

// TestDefaultRules evaluates the default rules on realistic objects of every
// kind they cover, and checks that each rule passes on at least one object
// and fails on another.
func TestDefaultRules(t *testing.T) {
	rules, err := NewCompiler(0).Compile(defaultSelection(t))
	require.NoError(t, err)

	type outcome struct{ passed, failed bool }
	seen := map[*CompiledRule]*outcome{}
	for _, r := range rules.All() {
		seen[r] = &outcome{}
	}
	ctx := context.Background()

	// check evaluates the default rules on obj, of kind, and each rule on
	// its own.
	check := func(t *testing.T, kind string, obj map[string]any, want Result, message string) {
		require.Equal(t, kind, gvkOf(obj).Kind)
		applying := rulesFor(t, rules, obj)
		require.NotEmpty(t, applying, "no default rule applies to %s", gvkOf(obj))

		v := Evaluate(ctx, applying, obj)
		assert.Equal(t, want, v.Result, v.Message)
		if want != ResultPass {
			assert.Equal(t, message, v.Message)
		} else {
			assert.Empty(t, v.Message)
		}

		// Each rule on its own: it returns a bool, and a failing
		// rule's messageExpression returns a non-empty string.
		for _, r := range applying {
			one := Evaluate(ctx, []*CompiledRule{r}, obj)
			require.NotEqual(t, ResultError, one.Result, one.Message)
			if one.Result == ResultPass {
				seen[r].passed = true
				continue
			}
			seen[r].failed = true
			if r.messageProgram != nil {
				out, _, err := r.messageProgram.ContextEval(ctx, &activation{object: obj})
				require.NoError(t, err, "%s: messageExpression", r)
				require.IsType(t, types.String(""), out, "%s: messageExpression", r)
				assert.NotEmpty(t, string(out.(types.String)), "%s: messageExpression", r)
			}
		}
	}

	for kind, cases := range map[string][]defaultCase{
		"Deployment":               deploymentCases,
		"StatefulSet":              statefulSetCases,
		"DaemonSet":                daemonSetCases,
		"ReplicaSet":               replicaSetCases,
		"Job":                      jobCases,
		"CronJob":                  cronJobCases,
		"Pod":                      podCases,
		"PersistentVolumeClaim":    pvcCases,
		"Service":                  serviceCases,
		"CustomResourceDefinition": crdCases,
		"APIService":               apiServiceCases,
	} {
		for _, tc := range cases {
			t.Run(kind+"/"+tc.name, func(t *testing.T) {
				check(t, kind, object(t, tc.obj), tc.want, tc.message)
			})
		}
	}
	for file, cases := range loadCases(t) {
		for _, tc := range cases {
			t.Run(file+"/"+tc.Name, func(t *testing.T) {
				check(t, gvkOf(tc.Object).Kind, tc.Object, resultOf(tc.State), tc.Message)
			})
		}
	}

	for r, o := range seen {
		assert.True(t, o.passed, "%s (%s %v) never passes: add a case", r, r.Rule.APIVersion, r.Rule.Resources)
		assert.True(t, o.failed, "%s (%s %v) never fails: add a case", r, r.Rule.APIVersion, r.Rule.Resources)
	}
}

// TestDefaultRulesDoNotApplyElsewhere: a ConfigMap has no default rule, so
// it is Healthy without being read.
func TestDefaultRulesDoNotApplyElsewhere(t *testing.T) {
	rules, err := NewCompiler(0).Compile(defaultSelection(t))
	require.NoError(t, err)
	assert.Empty(t, rules.For("v1", "configmaps"))
	assert.Empty(t, rules.For("apps/v1beta1", "deployments"))
	assert.Empty(t, rules.ForAPIVersion("v1beta1"), "no object of that apiVersion is looked up")
	assert.NotEmpty(t, rules.For("apps/v1", "deployments"))
}

// TestDefaultRuleCasesCoverEveryVersion: in a rule set with a cases file,
// every apiVersion and resource a rule is for has a Healthy case and a case
// that is not.
func TestDefaultRuleCasesCoverEveryVersion(t *testing.T) {
	_, sets := loadDefaults(t)
	files, _ := loadDefaults(t)
	cases := loadCases(t)
	for i, set := range sets {
		fileCases, ok := cases[files[i]]
		if !ok {
			continue
		}
		type target struct{ apiVersion, resource string }
		healthy, unhealthy := map[target]bool{}, map[target]bool{}
		for _, c := range fileCases {
			gvk := gvkOf(c.Object)
			plural, _ := meta.UnsafeGuessKindToResource(gvk)
			key := target{gvk.GroupVersion().String(), plural.Resource}
			if c.State == convoyv1alpha1.HealthHealthy {
				healthy[key] = true
			} else {
				unhealthy[key] = true
			}
		}
		for _, rule := range set.Spec.Rules {
			for _, res := range rule.Resources {
				key := target{rule.APIVersion, res}
				assert.True(t, healthy[key], "%s: no Healthy case of %s %s", files[i], res, rule.APIVersion)
				assert.True(t, unhealthy[key], "%s: no case of %s %s that is not Healthy", files[i], res, rule.APIVersion)
			}
		}
	}
}
