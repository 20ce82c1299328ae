package runner

import "testing"

func TestExpand(t *testing.T) {
	vars := map[string]string{"POD_NAME": "etcd-0", "NS": "demo", "EMPTY": ""}
	lookup := func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
	for in, want := range map[string]string{
		"plain":                      "plain",
		"$(POD_NAME)":                "etcd-0",
		"http://$(POD_NAME).h.$(NS)": "http://etcd-0.h.demo",
		"$(MISSING)":                 "$(MISSING)",
		"$$(POD_NAME)":               "$(POD_NAME)",
		"$$":                         "$",
		"a$b":                        "a$b",
		"tail$":                      "tail$",
		"$(unclosed":                 "$(unclosed",
		"x$(EMPTY)y":                 "xy",
		"$()":                        "$()",
		"$(POD_NAME)$(POD_NAME)":     "etcd-0etcd-0",
		"sh -c 'echo $HOME $(NS)'":   "sh -c 'echo $HOME demo'",
		"${SHELL_VAR} $(POD_NAME)":   "${SHELL_VAR} etcd-0",
	} {
		if got := expand(in, lookup); got != want {
			t.Errorf("expand(%q) = %q, want %q", in, got, want)
		}
	}
}
