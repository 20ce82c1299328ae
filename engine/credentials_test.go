package engine_test

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/hactl-dev/hactl/engine"
)

func TestCredentialsNeverPrinted(t *testing.T) {
	const secret = "-----BEGIN EC PRIVATE KEY-----\nc2VjcmV0LWtleS1tYXRlcmlhbA==\n-----END EC PRIVATE KEY-----"
	cr := engine.Credentials{CertPEM: []byte(secret), KeyPEM: []byte(secret), CAPEM: []byte(secret), ServerName: "etcd-0"}
	opts := engine.ProbeOptions{Credentials: &cr}
	type holder struct {
		Creds engine.Credentials
		Ptr   *engine.Credentials
	}
	h := holder{Creds: cr, Ptr: &cr}

	var outputs []string
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d"} {
		outputs = append(outputs,
			fmt.Sprintf(verb, cr), fmt.Sprintf(verb, &cr),
			fmt.Sprintf(verb, opts), fmt.Sprintf(verb, h), fmt.Sprintf(verb, []engine.Credentials{cr}))
	}
	outputs = append(outputs, cr.String(), cr.GoString(), fmt.Sprint(cr), fmt.Sprintln(&cr))
	for _, v := range []any{cr, &cr, h} {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		outputs = append(outputs, string(b))
	}
	var logs strings.Builder
	slog.New(slog.NewTextHandler(&logs, nil)).Info("probing", "creds", cr, "ptr", &cr)
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("probing", "creds", cr)
	outputs = append(outputs, logs.String())

	for _, out := range outputs {
		for _, leak := range []string{"PRIVATE", "c2VjcmV0", "secret", "2d2d2d2d2d424547"} {
			if strings.Contains(out, leak) {
				t.Errorf("output leaks credentials (%q): %s", leak, out)
			}
		}
	}
	if s := fmt.Sprintf("%+v", cr); s != "[redacted]" {
		t.Errorf("%%+v = %q, want [redacted]", s)
	}
}

func TestProbeOptionsDefaults(t *testing.T) {
	if got := (engine.ProbeOptions{}).WithDefaults().Timeout; got != engine.DefaultTimeout {
		t.Errorf("default timeout %s, want %s", got, engine.DefaultTimeout)
	}
}
