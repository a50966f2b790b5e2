// Package egress is the policy of every outbound connection to an address a
// tenant chooses: a Cluster's server, a registry, a token service, a
// redirect, a chart URL. An AddressPolicy refuses, after DNS resolution and
// before a packet is sent, the addresses no tenant may reach (loopback,
// link-local, metadata services, the operator's ranges, and for some
// callers the private ranges), and its refusals name the development flags
// of the caller that would allow them; NetworkFailure names what went wrong
// on the way to an address it allowed. Clusters (pkg/cluster) and sources
// (pkg/source) each build a policy of their own from it.
package egress

// UserAgent is the user agent of every request convoy-apiserver sends to an
// address a tenant chooses.
const UserAgent = "convoy-apiserver"
