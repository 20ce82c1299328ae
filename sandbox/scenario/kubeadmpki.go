package scenario

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
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
type etcdCA struct {
	cert    *x509.Certificate
	key     crypto.Signer
	certPEM []byte
	keyPEM  []byte
}

func newECKey() (*ecdsa.PrivateKey, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
}

func serialNumber() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
}

func newEtcdCA() (*etcdCA, error) {
	key, keyPEM, err := newECKey()
	if err != nil {
		return nil, err
	}
	sn, err := serialNumber()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          sn,
		Subject:               pkix.Name{CommonName: "etcd-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(10 * kubeadmCertValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &etcdCA{cert: cert, key: key, certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), keyPEM: keyPEM}, nil
}

// issue signs a leaf: cn, usages, and the SANs a serving certificate
// names.
func (ca *etcdCA) issue(cn string, usages []x509.ExtKeyUsage, dns []string, ips []net.IP) (certPEM, keyPEM []byte, err error) {
	key, keyPEM, err := newECKey()
	if err != nil {
		return nil, nil, err
	}
	sn, err := serialNumber()
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: sn,
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(kubeadmCertValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  usages,
		DNSNames:     dns,
		IPAddresses:  ips,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), keyPEM, nil
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
		if err := os.WriteFile(filepath.Join(dir, base+".crt"), cert, 0o644); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, base+".key"), key, 0o600)
	}
	if err := write(etcdDir, "ca", ca.certPEM, ca.keyPEM); err != nil {
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
