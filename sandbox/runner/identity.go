package runner

import (
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"

	corev1 "k8s.io/api/core/v1"
)

// capDACReadSearch is CAP_DAC_READ_SEARCH (linux/capability.h).
const capDACReadSearch = 2

// identity is the user a container runs as, from its securityContext
// (the container's runAsUser/runAsGroup over the pod's; the pod's fsGroup
// and supplementalGroups as supplementary groups).
type identity struct {
	uid, gid uint32
	groups   []uint32
}

// containerIdentity returns the identity container c of pod asks for, and
// false when it sets no runAsUser (it then runs as the runner does). A
// runAsUser without runAsGroup takes the user's primary group on this host
// (as the image's /etc/passwd would give it), else group 0, as a
// container runtime does.
func containerIdentity(pod *corev1.Pod, c *corev1.Container) (identity, bool) {
	var uid, gid *int64
	var groups []uint32
	if psc := pod.Spec.SecurityContext; psc != nil {
		uid, gid = psc.RunAsUser, psc.RunAsGroup
		if psc.FSGroup != nil {
			groups = append(groups, uint32(*psc.FSGroup))
		}
		for _, g := range psc.SupplementalGroups {
			groups = append(groups, uint32(g))
		}
	}
	if csc := c.SecurityContext; csc != nil {
		if csc.RunAsUser != nil {
			uid = csc.RunAsUser
		}
		if csc.RunAsGroup != nil {
			gid = csc.RunAsGroup
		}
	}
	if uid == nil {
		return identity{}, false
	}
	id := identity{uid: uint32(*uid), groups: groups}
	switch {
	case gid != nil:
		id.gid = uint32(*gid)
	default:
		if u, err := user.LookupId(strconv.FormatInt(*uid, 10)); err == nil {
			if g, err := strconv.ParseUint(u.Gid, 10, 32); err == nil {
				id.gid = uint32(g)
			}
		}
	}
	return id, true
}

// credential is id as the process attribute that switches to it.
func (id identity) credential() *syscall.Credential {
	return &syscall.Credential{Uid: id.uid, Gid: id.gid, Groups: id.groups}
}

// own makes the directories a container writes (its volumes' host
// directories, its home and temporary directory) the identity's, as a
// kubelet makes a volume writable by the pod's user: each directory and,
// when its top was not the identity's yet, everything in it.
func (id identity) own(dirs ...string) error {
	for _, d := range dirs {
		fi, err := os.Stat(d)
		if err != nil {
			return err
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if ok && st.Uid == id.uid && st.Gid == id.gid {
			continue
		}
		err = filepath.WalkDir(d, func(p string, _ fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(p, int(id.uid), int(id.gid))
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// canReach reports whether the identity may search every directory above
// each of paths (and the paths themselves): the sandbox's directory often
// lies under a home the user cannot enter (/root is mode 0700).
func (id identity) canReach(paths ...string) bool {
	for _, p := range paths {
		for d := filepath.Clean(p); ; d = filepath.Dir(d) {
			fi, err := os.Stat(d)
			if err != nil {
				return false
			}
			if !id.mayEnter(fi) {
				return false
			}
			if d == "/" || d == "." {
				break
			}
		}
	}
	return true
}

func (id identity) mayEnter(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return true
	}
	m := fi.Mode().Perm()
	if id.uid == 0 || m&0o001 != 0 {
		return true
	}
	if st.Uid == id.uid {
		return m&0o100 != 0
	}
	if m&0o010 == 0 {
		return false
	}
	if st.Gid == id.gid {
		return true
	}
	for _, g := range id.groups {
		if st.Gid == g {
			return true
		}
	}
	return false
}

// launchAs makes l run as id when the runner can switch users (it runs as
// root); reach are the host paths the container must get to. When the
// user cannot search their way there (the sandbox under /root), the
// process keeps CAP_DAC_READ_SEARCH as an ambient capability — the
// sandbox's stand-in for the container's own mount namespace; the user
// still owns nothing of the host's — and the returned string says so. A
// runner that is not root runs the container as itself.
func launchAs(l *Launch, id identity, reach ...string) string {
	if os.Geteuid() != 0 || id.uid == 0 {
		return ""
	}
	l.Credential = id.credential()
	if !id.canReach(reach...) {
		l.AmbientCaps = []uintptr{capDACReadSearch}
		return "keeps CAP_DAC_READ_SEARCH: uid " + strconv.Itoa(int(id.uid)) + " cannot search its way to the sandbox's directory"
	}
	return ""
}
