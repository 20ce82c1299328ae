// Package tuitest holds the fixtures the TUI's tests share: a fixed
// clock, observed etcd and Patroni clusters, the engines' views and
// verdict rules as the faces hand them in, key presses, a classifier on
// fixed observations, seed generations, a stub backend (read directly
// or not) and a runner of the commands that answer at once. Only tests
// import it.
package tuitest
