// Package bench measures hactl against the baselines users compare it
// with, side by side in the same run on the same real components: a real
// kube-apiserver, real etcd members. Each benchmark reports the ratio
// hactl/baseline as a custom metric; `make bench` prints them as a table.
// Results, the machine and the date are kept in bench/RESULTS.md.
package bench
