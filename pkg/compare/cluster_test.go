package compare

import "github.com/kumodo/convoy-apiserver/pkg/cluster"

// The Reader of a target cluster is the Cluster the drift check and /diff
// compare on. Asserted here rather than beside Cluster so that the engine
// itself does not build on the cluster package (which cannot assert it
// either: it would import the engine).
var _ Cluster = (*cluster.Reader)(nil)
