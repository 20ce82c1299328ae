package testenv_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hactl-dev/hactl/internal/poll"
	"github.com/hactl-dev/hactl/internal/testenv"
	"github.com/hactl-dev/hactl/sandbox/controlplane"
)

func TestLeftoverProcessesFindsAProcessByItsDirectory(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command("sleep", "600")
	cmd.Args[0] = filepath.Join(dir, "marker") // argv[0] names the directory
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	// Start returns once the child has exec'd; poll all the same, so a
	// slow /proc under load is not a failure, and say what /proc held.
	err := poll.Wait(10*time.Second, func() error {
		if got := testenv.LeftoverProcesses(dir); !slices.Equal(got, []int{pid}) {
			return fmt.Errorf("LeftoverProcesses(%s) = %v, want [%d]", dir, got, pid)
		}
		return nil
	})
	if err != nil {
		cmdline, cerr := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		stat, serr := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		_ = cmd.Process.Kill()
		t.Fatalf("%v; /proc/%d/cmdline %q (%v), stat %q (%v)", err, pid, cmdline, cerr, stat, serr)
	}
	// A sibling directory whose name extends dir's is not dir.
	if got := testenv.LeftoverProcesses(dir[:len(dir)-1]); len(got) != 0 {
		_ = cmd.Process.Kill()
		t.Fatalf("LeftoverProcesses matched a prefix of the directory: %v", got)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if testenv.Alive(pid) {
		t.Fatalf("pid %d alive after kill and wait", pid)
	}
	if got := testenv.LeftoverProcesses(dir); len(got) != 0 {
		t.Fatalf("LeftoverProcesses after kill = %v", got)
	}
}

func TestPollReturnsOnceTheConditionHolds(t *testing.T) {
	deadline := time.Now().Add(50 * time.Millisecond)
	calls := 0
	testenv.Poll(t, 10*time.Second, func() (bool, error) {
		calls++
		return time.Now().After(deadline), nil
	})
	if calls < 2 {
		t.Fatalf("condition called %d times", calls)
	}
}

func TestClusterWideRestrictedUser(t *testing.T) {
	cp := testenv.ControlPlane(t, controlplane.Options{})
	_, cfg := testenv.RestrictedUser(t, cp, "", []rbacv1.PolicyRule{{
		APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "list"},
	}})
	cs := testenv.Clientset(t, cfg)
	if _, err := cs.CoreV1().Namespaces().List(t.Context(), metav1.ListOptions{}); err != nil {
		t.Fatalf("list namespaces: %v", err)
	}
	err := cs.CoreV1().Namespaces().Delete(t.Context(), "default", metav1.DeleteOptions{})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("delete namespace: got %v, want Forbidden", err)
	}
	if _, err := cs.CoreV1().Pods("default").List(t.Context(), metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("list pods: got %v, want Forbidden", err)
	}
}
