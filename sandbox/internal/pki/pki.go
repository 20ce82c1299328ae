// Package pki mints the sandbox's certificate authorities and the
// certificates they sign: ECDSA P-256 keys, PEM encoded, keys written
// mode 0600. The control plane's CAs and the kubeadm scenario's etcd CA
// are made here.
package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// CA is a certificate authority: its certificate and key, and both as
// PEM.
type CA struct {
	Cert    *x509.Certificate
	Key     crypto.Signer
	CertPEM []byte
	KeyPEM  []byte
}

// Leaf is what a signed certificate says: its CN, organisations (the
// groups the API server reads from a client certificate), extended key
// usages and, for a serving certificate, its subject alternative names.
type Leaf struct {
	CN     string
	Orgs   []string
	Usages []x509.ExtKeyUsage
	IPs    []net.IP
	DNS    []string
}

// NewKey is a fresh ECDSA P-256 key.
func NewKey() (*ecdsa.PrivateKey, error) { return ecdsa.GenerateKey(elliptic.P256(), rand.Reader) }

// KeyPEM encodes key as an EC PRIVATE KEY block.
func KeyPEM(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
}

func certPEM(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func serial() (*big.Int, error) { return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127)) }

// NewCA is a self-signed CA named cn, valid for validity (from an hour
// ago, so that clocks a little behind accept it).
func NewCA(cn string, validity time.Duration) (*CA, error) {
	key, err := NewKey()
	if err != nil {
		return nil, err
	}
	sn, err := serial()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          sn,
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(validity),
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
	keyPEM, err := KeyPEM(key)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: cert, Key: key, CertPEM: certPEM(der), KeyPEM: keyPEM}, nil
}

// Issue signs a new key's certificate for l, valid for validity.
func (c *CA) Issue(l Leaf, validity time.Duration) (cert, key []byte, err error) {
	k, err := NewKey()
	if err != nil {
		return nil, nil, err
	}
	sn, err := serial()
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: sn,
		Subject:      pkix.Name{CommonName: l.CN, Organization: l.Orgs},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(validity),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  l.Usages,
		IPAddresses:  l.IPs,
		DNSNames:     l.DNS,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.Cert, k.Public(), c.Key)
	if err != nil {
		return nil, nil, err
	}
	key, err = KeyPEM(k)
	if err != nil {
		return nil, nil, err
	}
	return certPEM(der), key, nil
}

// WritePair writes cert and key to dir/base.crt (0644) and dir/base.key
// (0600).
func WritePair(dir, base string, cert, key []byte) (certPath, keyPath string, err error) {
	certPath, keyPath = filepath.Join(dir, base+".crt"), filepath.Join(dir, base+".key")
	if err := os.WriteFile(certPath, cert, 0o644); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(keyPath, key, 0o600); err != nil {
		return "", "", err
	}
	return certPath, keyPath, nil
}
