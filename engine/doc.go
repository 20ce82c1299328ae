// Package engine defines how hactl asks a database engine about its
// members: an Engine dials every member on its own, in parallel, each
// bounded by a deadline, and returns one model.EngineFacts per member.
//
// There is deliberately no pooled or load-balanced client here. A member
// that re-bootstrapped into a cluster of its own (seed 000) looks healthy
// behind a Service; only asking each member individually and comparing
// what they say (cluster ID, member ID, leader, member list, version)
// reveals it.
//
// The transport is a DialFunc: in production a port-forward through the
// API server (package internal/portforward), in tests a direct TCP dial to
// a real member process. Engines never dial the addresses members
// advertise, since those bypass the tunnel.
//
// This package imports only the standard library and package model;
// engines live in sub-packages (engine/etcd).
package engine
