package runner

import (
	"errors"
	"path/filepath"
	"strings"
)

// flagValue returns the value of etcd flag name (without dashes) in l:
// from the arguments (--name=v or --name v) when etcd runs directly, else
// from the ETCD_<NAME> environment variable a wrapper passes on.
func flagValue(l Launch, name string) (string, bool) {
	for i, a := range l.Argv {
		if i == 0 {
			continue
		}
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v, true
		}
		if a == "--"+name && i+1 < len(l.Argv) {
			return l.Argv[i+1], true
		}
	}
	key := envName(name) + "="
	for _, kv := range l.Env {
		if v, ok := strings.CutPrefix(kv, key); ok {
			return v, true
		}
	}
	return "", false
}

func envName(flag string) string {
	return "ETCD_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// SeedFlags are the flags that make the member of l bootstrap a brand-new
// one-member cluster of itself on an empty data dir: what the seed member
// of seed 000 was started with for its whole life.
func SeedFlags(l Launch) ([]string, error) {
	name, ok := flagValue(l, "name")
	if !ok || name == "" {
		return nil, errors.New("cannot tell the member's --name")
	}
	peer, ok := flagValue(l, "initial-advertise-peer-urls")
	if !ok || peer == "" {
		return nil, errors.New("cannot tell the member's --initial-advertise-peer-urls")
	}
	return []string{"--initial-cluster=" + name + "=" + peer, "--initial-cluster-state=new"}, nil
}

// WithFlags returns l with each --flag=value of flags replacing that flag
// (in either argument form) or added: as arguments when l runs etcd
// directly, as ETCD_* environment variables when a wrapper does.
func WithFlags(l Launch, flags []string) Launch {
	out := l
	direct := filepath.Base(l.Path) == "etcd"
	out.Argv = append([]string(nil), l.Argv...)
	out.Env = append([]string(nil), l.Env...)
	for _, f := range flags {
		name, value, hasValue := strings.Cut(strings.TrimLeft(f, "-"), "=")
		if name == "" {
			continue
		}
		if direct {
			var argv []string
			for i := 0; i < len(out.Argv); i++ {
				a := out.Argv[i]
				if i > 0 && strings.HasPrefix(a, "--"+name+"=") {
					continue
				}
				if i > 0 && a == "--"+name {
					if i+1 < len(out.Argv) && !strings.HasPrefix(out.Argv[i+1], "-") {
						i++
					}
					continue
				}
				argv = append(argv, a)
			}
			if hasValue {
				argv = append(argv, "--"+name+"="+value)
			} else {
				argv = append(argv, "--"+name)
			}
			out.Argv = argv
			continue
		}
		key := envName(name)
		if !hasValue {
			value = "true"
		}
		var env []string
		for _, kv := range out.Env {
			if !strings.HasPrefix(kv, key+"=") {
				env = append(env, kv)
			}
		}
		out.Env = append(env, key+"="+value)
	}
	return out
}
