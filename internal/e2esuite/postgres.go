package e2esuite

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hactl-dev/hactl/internal/poll"
)

// Psql runs sql as the superuser of PostgreSQL cluster cluster (the
// credentials in its Secret of the same name, as the sandbox's template
// keeps them, else in the Secret its operator makes: Zalando's
// postgres.<cluster>.credentials.postgresql.acid.zalan.do, the sandbox's
// PGO clusters' <cluster>-patroni-auth, CloudNativePG's
// <cluster>-superuser) on member's own PostgreSQL, over TCP to the
// member's loopback address: what that member reads locally, no proxy,
// no replica routing.
func (s *Suite) Psql(t testing.TB, ns, cluster, member, sql string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// The superuser's Secret as each layout names it: hactl's Patroni
	// template's, Zalando's operator's, the sandbox's PGO clusters'
	// (user postgres) and CloudNativePG's.
	var username, password string
	for _, c := range []struct{ secret, userKey, passKey, user string }{
		{cluster, "superuser-username", "superuser-password", ""},
		{"postgres." + cluster + ".credentials.postgresql.acid.zalan.do", "username", "password", ""},
		{cluster + "-patroni-auth", "", "superuser-password", "postgres"},
		{cluster + "-superuser", "username", "password", ""},
	} {
		sec, err := s.KC.CoreV1().Secrets(ns).Get(ctx, c.secret, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		username, password = c.user, string(sec.Data[c.passKey])
		if c.userKey != "" {
			username = string(sec.Data[c.userKey])
		}
		break
	}
	if username == "" {
		t.Fatalf("no superuser Secret of cluster %s/%s", ns, cluster)
	}
	m, err := s.SB.Member(ctx, ns+"/"+member)
	if err != nil {
		return "", err
	}
	bin := "psql"
	if found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/psql"); len(found) > 0 {
		bin = found[len(found)-1]
	}
	cmd := exec.CommandContext(ctx, bin, "-h", m.Address, "-p", "5432", "-U", username,
		"-d", "postgres", "-v", "ON_ERROR_STOP=1", "-qAtc", sql)
	cmd.Env = append(os.Environ(), "PGPASSWORD="+password, "PGCONNECT_TIMEOUT=5")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("psql on %s: %v: %s", member, err, out)
	}
	return strings.TrimSpace(string(out)), nil
}

// WriteRow inserts a fresh row (table hactl_e2e) through the primary prim
// and returns its value.
func (s *Suite) WriteRow(t testing.TB, ns, cluster, prim, what string) string {
	t.Helper()
	v := fmt.Sprintf("%s-%d", what, time.Now().UnixNano())
	if _, err := s.Psql(t, ns, cluster, prim, "CREATE TABLE IF NOT EXISTS hactl_e2e (v text); INSERT INTO hactl_e2e VALUES ('"+v+"')"); err != nil {
		t.Fatal(err)
	}
	return v
}

// AssertRowOn polls each member on its own until it has row v.
func (s *Suite) AssertRowOn(t testing.TB, ns, cluster, v string, members []string) {
	t.Helper()
	for _, m := range members {
		poll.Until(t, time.Minute, "row "+v+" on "+m, func() error {
			out, err := s.Psql(t, ns, cluster, m, "SELECT count(*) FROM hactl_e2e WHERE v = '"+v+"'")
			if err != nil {
				return err
			}
			if out != "1" {
				return fmt.Errorf("count %q", out)
			}
			return nil
		}, poll.Every(time.Second))
	}
}
