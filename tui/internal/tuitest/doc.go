// Package tuitest holds the fixtures the TUI's tests share: a fixed
// clock, observed etcd and Patroni clusters, the engines' views and
// verdict rules as the faces hand them in, key presses, a classifier on
// fixed observations and seed generations. Only tests import it.
package tuitest
