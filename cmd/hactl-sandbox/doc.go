// Command hactl-sandbox runs hactl's local sandbox: a real control plane
// with real etcd clusters on loopback, for the demo and end-to-end tests.
//
//	go run ./cmd/hactl-sandbox up [--dir DIR] [--scenario S]... [--agent PATH]
//	go run ./cmd/hactl-sandbox break --dir DIR MEMBER KIND
//	go run ./cmd/hactl-sandbox down --dir DIR
package main
