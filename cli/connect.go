package cli

import (
	"fmt"

	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/hactl-dev/hactl/actions"

	"github.com/hactl-dev/hactl/engine"
	"github.com/hactl-dev/hactl/internal/portforward"
)

// conn is what a verb needs of the kubeconfig: the namespace, a client
// and, for verbs that reach members, the port-forward dialer.
type conn struct {
	namespace string
	client    kubernetes.Interface
	dial      engine.DialFunc
}

// userAgent is client-go's default user agent followed by this process's
// lock identity: an API server's audit log then names the hactl process
// (host, pid) behind every request, and which lock holder it was.
func userAgent() string {
	return rest.DefaultKubernetesUserAgent() + " " + actions.ProcessIdentity()
}

// connect reads the kubeconfig the connection flags name; withDial also
// builds the port-forward dialer.
func connect(flags *genericclioptions.ConfigFlags, withDial bool) (conn, error) {
	var c conn
	var err error
	c.namespace, _, err = flags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return c, fmt.Errorf("reading kubeconfig: %w", err)
	}
	cfg, err := flags.ToRESTConfig()
	if err != nil {
		return c, fmt.Errorf("reading kubeconfig: %w", err)
	}
	cfg.UserAgent = userAgent()
	cfg.Wrap(actions.GuardTransport)
	if c.client, err = kubernetes.NewForConfig(cfg); err != nil {
		return c, err
	}
	if withDial {
		c.dial, err = portforward.NewDialer(cfg)
	}
	return c, err
}
