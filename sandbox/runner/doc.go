// Package runner is the sandbox's kubelet for HA cluster members: for each
// pod labelled hactl.dev/engine (scheduled to one of kwok's fake nodes) it
// runs the pod's containers as real host processes — the container's own
// command, args and environment, with the downward API and $(VAR)
// references resolved, and only addresses substituted so the member
// listens on its own loopback address (127.x.1.n) with the standard ports —
// with its data in the directory of the pod's PVC.
//
// The runner owns those pods' status (kwok's stages skip them): phase,
// Ready/ContainersReady from the container's real readiness probe,
// containerStatuses with restart counts, CrashLoopBackOff and the last
// termination, and a non-loopback podIP (10.244.x.n) so EndpointSlices
// publish the pod; that IP is never dialled. It registers a kwok
// PortForward per pod (same name and namespace) so `kubectl port-forward`
// reaches the real process through the API server, and a kwok Logs object
// so `kubectl logs` reads the container's output.
//
// Deleting a pod stops its processes (SIGTERM, SIGKILL after the grace
// period) and the runner then finishes the delete, as a kubelet does.
//
// The pod's restartPolicy is honoured: Always (members) restarts every
// exit with back-off; OnFailure only a non-zero one; Never runs the
// container once (hactl's one-shot restore pods). A container that is not
// restarted stays terminated (exit code, reason Completed or Error, and,
// with terminationMessagePolicy FallbackToLogsOnError and a failure, the
// last 80 lines / 2048 bytes of its log as message), and once every
// container is, the pod is Succeeded (all exited 0) or Failed. Faults do
// not bring such a container back.
//
// Containers of hactl's agent image run hactl's own binary: the runner
// links Options.AgentPath as kubectl-hactl in a directory on their PATH,
// right after the pinned binaries. Object store URLs (s3://, gs://,
// azblob://) and the store variables (AWS_*, AZURE_STORAGE_*,
// GOOGLE_APPLICATION_CREDENTIALS_JSON) are passed as written — never
// address-translated — so a store at the sandbox's versitygw
// (s3://...?endpoint=http://127.0.0.1:PORT), or an emulator on this host's
// loopback, is reached as written, with credentials from a Secret through
// env or envFrom.
//
// Each member listens for peers on a second, hidden address (127.x.2.n);
// the runner's peer proxy forwards the member's advertised peer address to
// it and can cut a member off from its peers (fault.Isolate) while clients
// still reach it.
package runner
