package controlplane

import (
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"time"

	"github.com/hactl-dev/hactl/sandbox/internal/pki"
)

// validity of every certificate; a sandbox may live for days.
const validity = 365 * 24 * time.Hour

// ca is the cluster's certificate authority: it signs the serving
// certificates, every client certificate and (as cluster signer) CSRs.
type ca struct{ *pki.CA }

var newKey = pki.NewKey

var keyToPEM = pki.KeyPEM

// newCA is a CA named name, with its key as PEM.
func newCA(name string) (*ca, []byte, error) {
	c, err := pki.NewCA(name, validity)
	if err != nil {
		return nil, nil, err
	}
	return &ca{c}, c.KeyPEM, nil
}

// issue signs a new leaf certificate. A serving certificate gets ips and
// dns as subject alternative names; a client certificate carries the user
// in CN and the groups in O, as the API server reads them.
func (c *ca) issue(cn string, orgs []string, ips []net.IP, dns []string, serving bool) (certPEM, keyPEM []byte, err error) {
	usage := x509.ExtKeyUsageClientAuth
	if serving {
		usage = x509.ExtKeyUsageServerAuth
	}
	return c.Issue(pki.Leaf{CN: cn, Orgs: orgs, Usages: []x509.ExtKeyUsage{usage}, IPs: ips, DNS: dns}, validity)
}

// issueFiles issues a certificate and writes it to dir/name.crt and
// dir/name.key.
func (c *ca) issueFiles(dir, name, cn string, orgs []string, ips []net.IP, dns []string, serving bool) (certPath, keyPath string, err error) {
	certPEM, keyPEM, err := c.issue(cn, orgs, ips, dns, serving)
	if err != nil {
		return "", "", fmt.Errorf("issuing %s: %w", name, err)
	}
	return pki.WritePair(dir, name, certPEM, keyPEM)
}

func publicKeyToPEM(key crypto.PublicKey) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), nil
}
