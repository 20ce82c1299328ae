// Package portforward is hactl's production engine.DialFunc: it reaches a
// port inside a pod through the API server's pods/portforward subresource,
// exactly as `kubectl port-forward` does, but without a local listener.
//
// Each dial opens its own upgraded connection to the API server: first a
// WebSocket carrying SPDY (the tunneling protocol kubectl prefers), and,
// when the server or a proxy in between refuses the WebSocket upgrade, a
// plain SPDY upgrade (client-go's fallback dialer decides, on the same
// errors kubectl falls back on). On that connection it creates one stream
// pair for the port, an error stream and a data stream (headers
// "streamType", "port" and "requestID"), and returns a net.Conn over the
// data stream. A message on the error stream (for example "connection
// refused" inside the pod) is returned by the next Read. Closing the
// net.Conn half-closes the data stream, then tears the connection to the
// API server down; no goroutine outlives it by more than about a second.
//
// The dial honours its context: the upgrade requests carry it, and if the
// API server does not answer in time the dial returns ctx's error and
// closes whatever arrives later. Deadlines set on the returned conn work
// (it is one end of an in-memory pipe).
//
// Use:
//
//	cfg, _ := configFlags.ToRESTConfig()
//	dial, err := portforward.NewDialer(cfg)
//	facts := etcd.New().Probe(ctx, targets, engine.ProbeOptions{Dial: dial})
//
// The caller needs RBAC "create" on pods/portforward in the cluster's
// namespace (and "get" on pods, as for kubectl). Nothing here logs; klog
// lines from client-go only appear at verbosity 4 and above.
package portforward
