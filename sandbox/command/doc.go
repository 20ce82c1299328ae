// Package command is the hactl-sandbox command line: up, break, down,
// status, scenarios, and the hidden serve (the detached supervisor that
// up starts). cmd/hactl-sandbox only wires it to the process's stdio.
package command
