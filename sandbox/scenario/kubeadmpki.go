package scenario

import (
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/hactl-dev/hactl/sandbox/internal/pki"
)

// The files of kubeadm's etcd PKI, relative to a node's root (kubeadm's
// certificatesDir is /etc/kubernetes/pki; cmd/kubeadm/app/constants).
const (
	KubeadmPKIDir     = "etc/kubernetes/pki"
	KubeadmEtcdPKIDir = "etc/kubernetes/pki/etcd"
)

// kubeadmCertValidity is how long the minted certificates last (kubeadm's
// leaves last a year too).
const kubeadmCertValidity = 365 * 24 * time.Hour

// etcdCA is kubeadm's etcd CA (CN etcd-ca): one per cluster, copied to
// every control-plane node.
type etcdCA struct{ *pki.CA }

func newEtcdCA() (*etcdCA, error) {
	c, err := pki.NewCA("etcd-ca", 10*kubeadmCertValidity)
	if err != nil {
		return nil, err
	}
	return &etcdCA{c}, nil
}

// issue signs a leaf: cn, usages, and the SANs a serving certificate
// names.
func (ca *etcdCA) issue(cn string, usages []x509.ExtKeyUsage, dns []string, ips []net.IP) (certPEM, keyPEM []byte, err error) {
	return ca.Issue(pki.Leaf{CN: cn, Usages: usages, DNS: dns, IPs: ips}, kubeadmCertValidity)
}

// writeKubeadmEtcdPKI writes, under root (a node's filesystem root), what
// kubeadm writes on a control-plane node for stacked etcd: in
// etc/kubernetes/pki/etcd the CA (ca.crt, ca.key), server.{crt,key} (CN
// the node's name; for client and server auth; SANs the node's name,
// localhost, its IP, 127.0.0.1 and ::1), peer.{crt,key} (the same),
// healthcheck-client.{crt,key} (CN kube-etcd-healthcheck-client, client
// auth), and etc/kubernetes/pki/apiserver-etcd-client.{crt,key} (CN
// kube-apiserver-etcd-client, client auth). Keys are mode 0600.
func writeKubeadmEtcdPKI(root string, ca *etcdCA, node string, ip net.IP) error {
	etcdDir := filepath.Join(root, filepath.FromSlash(KubeadmEtcdPKIDir))
	pkiDir := filepath.Join(root, filepath.FromSlash(KubeadmPKIDir))
	if err := os.MkdirAll(etcdDir, 0o755); err != nil {
		return err
	}
	write := func(dir, base string, cert, key []byte) error {
		_, _, err := pki.WritePair(dir, base, cert, key)
		return err
	}
	if err := write(etcdDir, "ca", ca.CertPEM, ca.KeyPEM); err != nil {
		return err
	}
	both := []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	client := []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	sans := []net.IP{ip, net.IPv4(127, 0, 0, 1), net.IPv6loopback}
	for _, l := range []struct {
		dir, base, cn string
		usages        []x509.ExtKeyUsage
		dns           []string
		ips           []net.IP
	}{
		{etcdDir, "server", node, both, []string{node, "localhost"}, sans},
		{etcdDir, "peer", node, both, []string{node, "localhost"}, sans},
		{etcdDir, "healthcheck-client", "kube-etcd-healthcheck-client", client, nil, nil},
		{pkiDir, "apiserver-etcd-client", "kube-apiserver-etcd-client", client, nil, nil},
	} {
		cert, key, err := ca.issue(l.cn, l.usages, l.dns, l.ips)
		if err != nil {
			return fmt.Errorf("issuing %s: %w", l.base, err)
		}
		if err := write(l.dir, l.base, cert, key); err != nil {
			return err
		}
	}
	return nil
}
