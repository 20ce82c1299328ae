// Package model holds hactl's domain values: what was observed about an HA
// cluster and its members, the derived phases, the verdict and its reason
// codes, and the fences that authorise a delete.
//
// It imports only the standard library. Everything here is a plain value
// decoded at the edge (see package status), so the pure functions that
// decide (package verdict, package classify) can be table-tested without a
// cluster.
package model
