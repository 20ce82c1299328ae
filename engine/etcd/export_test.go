package etcd

import "time"

// SetCertRefresh sets how often a kept connection's certificate is read
// again, until the returned function puts it back.
func SetCertRefresh(d time.Duration) (restore func()) {
	old := certRefresh
	certRefresh = d
	return func() { certRefresh = old }
}
