package cli

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/hactl-dev/hactl/engine"
	"github.com/hactl-dev/hactl/engine/registry"
	"github.com/hactl-dev/hactl/internal/buildinfo"
	"github.com/hactl-dev/hactl/internal/kubeflags"
	"github.com/hactl-dev/hactl/internal/portforward"
	"github.com/hactl-dev/hactl/internal/redact"
	"github.com/hactl-dev/hactl/status"
)

// ReportOptions holds the flags and state of `kubectl hactl report`.
type ReportOptions struct {
	configFlags *kubeflags.ConfigFlags

	Name         string
	Namespace    string
	Output       string
	IncludeLogs  bool
	Since        time.Duration
	NoProbe      bool
	ProbeTimeout time.Duration
	// sinceSet: --since was given.
	sinceSet bool

	// status builds the observer and the documents as `status` does.
	status *StatusOptions
	client kubernetes.Interface
	now    time.Time

	genericiooptions.IOStreams
}

// maxLogBytes bounds each container's log in a report.
const maxLogBytes = 10 << 20

// NewCmdReport builds `kubectl hactl report`.
func NewCmdReport(flags *kubeflags.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &ReportOptions{configFlags: flags, IOStreams: streams, ProbeTimeout: engine.DefaultTimeout, Since: time.Hour}
	cmd := &cobra.Command{
		Use:   "report CLUSTER",
		Short: "Write one redacted archive of what a second engineer needs about a cluster",
		Long: `Write one zip archive with what someone helping with CLUSTER needs, read
now, without changing anything:

  status.json, status.txt  the status document and table (members probed)
  observation.json         every member's facts as read, probe answers included
  history.json             the failover timeline (as kubectl hactl history)
  objects/                 the StatefulSet, pods, claims, disruption budgets,
                           Services, EndpointSlices, the engine's ConfigMaps
                           (and Endpoints: Patroni's DCS in Endpoints mode)
                           and the Events about them, as YAML
  hactl/                   hactl's lock Lease and ledger for the cluster
  members/MEMBER/          each member in its engine's words: etcd's member
                           list and endpoint status, Patroni's /patroni,
                           /cluster, /history and /config
  logs/                    with --include-logs: each member container's log
                           since --since, and the previous container's
  REDACTIONS.txt           what was withheld, where, and why

Redacted, always: Secrets are never read into the archive. The values of
the Secrets the cluster's pods and annotations name are searched for in
every file and replaced, and so is anything that looks like a credential
(private keys, passwords in URLs, values of variables, keys and flags
named like a credential, bearer tokens). There is no flag to turn this off.`,
		Example: `  # an archive of pg-main, for a ticket
  kubectl hactl report pg-main -n db

  # with the last two hours of every member's log, to a chosen file
  kubectl hactl report pg-main -n db --include-logs --since 2h -o pg-main.zip`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError("report takes one CLUSTER name, got %d", len(args))
			}
			return nil
		},
		ValidArgsFunction: completeClusters(flags),
		RunE:              runVerb(o),
	}
	f := cmd.Flags()
	f.StringVarP(&o.Output, "output", "o", "", "The archive to write (a new file; default hactl-report-NAMESPACE-CLUSTER-TIME.zip here), or - for stdout (not a terminal).")
	f.BoolVar(&o.IncludeLogs, "include-logs", false, "Add each member container's log (and the previous container's, after a restart), redacted.")
	f.DurationVar(&o.Since, "since", o.Since, "With --include-logs, how far back the logs go.")
	f.BoolVar(&o.NoProbe, "no-probe", false, "Read the API server only: no member is dialled (no probe answers, no member documents).")
	f.DurationVar(&o.ProbeTimeout, "probe-timeout", o.ProbeTimeout, "Deadline for each member's probe and each of its documents.")
	return cmd
}

// Complete connects.
func (o *ReportOptions) Complete(cmd *cobra.Command, args []string) error {
	if len(args) == 1 {
		o.Name = args[0]
	}
	o.sinceSet = cmd != nil && cmd.Flags().Changed("since")
	o.now = time.Now().UTC()
	so := NewStatusOptions(o.configFlags, o.IOStreams)
	so.Name, so.NoProbe, so.ProbeTimeout = o.Name, o.NoProbe, o.ProbeTimeout
	var err error
	so.restConfig, so.Namespace, err = restConfig(o.configFlags)
	if err != nil {
		return err
	}
	o.Namespace = so.Namespace
	if so.client, err = kubernetes.NewForConfig(so.restConfig); err != nil {
		return err
	}
	o.client = so.client
	if !o.NoProbe {
		if so.memberTLS, err = memberTLS(o.configFlags); err != nil {
			return err
		}
		if so.dial, err = portforward.NewDialer(so.restConfig); err != nil {
			return err
		}
	}
	o.status = so
	if o.Output == "" {
		o.Output = fmt.Sprintf("hactl-report-%s-%s-%s.zip", o.Namespace, o.Name, o.now.Format("20060102T150405Z"))
	}
	return nil
}

// Validate checks the flags before anything is read.
func (o *ReportOptions) Validate() error {
	if o.sinceSet && !o.IncludeLogs {
		return usageError("--since applies to the logs: add --include-logs")
	}
	if o.Since <= 0 {
		return usageError("--since must be positive (e.g. 1h)")
	}
	if o.ProbeTimeout <= 0 {
		return usageError("--probe-timeout must be positive")
	}
	if o.Output == "-" {
		if isTerminal(o.Out) {
			return usageError("-o - writes a zip archive to stdout, which is a terminal: redirect it (> report.zip) or give -o FILE")
		}
		return nil
	}
	if _, err := os.Lstat(o.Output); err == nil {
		return usageError("%s exists: give another -o FILE, or remove it first (a report never overwrites a file)", o.Output)
	}
	if dir := filepath.Dir(o.Output); dir != "." {
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			return usageError("-o %s: the directory %s does not exist", o.Output, dir)
		}
	}
	return nil
}

// reportFile is one file of the archive, before redaction.
type reportFile struct {
	name string
	data []byte
}

// Run gathers, redacts and writes the archive.
func (o *ReportOptions) Run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	objs, err := status.APISource{Client: o.client, Cluster: o.Name, Engines: registry.Engines()}.Read(ctx, o.Namespace)
	if err != nil {
		return err
	}
	obs := o.status.observer(fixedSource{objs})
	r, err := observeOne(ctx, obs, o.Namespace, o.Name, o.ErrOut)
	if err != nil {
		return err
	}
	mine := status.ClusterObjects(objs, r.Observation)

	red := redact.New()
	o.readSecrets(ctx, mine, red)
	files := o.gather(ctx, obs, r, objs, mine, red)
	zipped, err := o.archive(files, red)
	if err != nil {
		return err
	}
	if o.Output == "-" {
		_, err := o.Out.Write(zipped)
		return err
	}
	if err := writeNew(o.Output, zipped); err != nil {
		return err
	}
	fmt.Fprintf(o.ErrOut, "wrote %s (%d files, %d bytes; what was withheld: REDACTIONS.txt inside)\n", o.Output, len(files)+1, len(zipped))
	return nil
}

// gather is what the report holds, unredacted, README.txt last: the
// status document and table, the observation and history, the cluster's
// objects, each member in its engine's words and, if asked, the logs.
func (o *ReportOptions) gather(ctx context.Context, obs *status.Observer, r status.Result, objs, mine *status.Objects, red *redact.Redactor) []reportFile {
	var files []reportFile
	add := func(name string, data []byte) { files = append(files, reportFile{name, data}) }
	addJSON := func(name string, v any) {
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			b = []byte("not encoded: " + err.Error())
		}
		add(name, append(b, '\n'))
	}
	doc := status.Document(r)
	addJSON("status.json", doc)
	var table bytes.Buffer
	_ = status.PrintTable(&table, []*status.ClusterStatus{doc}, status.TableOptions{Wide: true, Now: o.now})
	add("status.txt", table.Bytes())
	addJSON("observation.json", r.Observation)
	addJSON("history.json", status.History(r, status.EventsOf(objs.Events, r)))
	files = append(files, o.objectFiles(mine, red)...)
	if !o.NoProbe {
		reports, err := obs.Report(ctx, r.Observation)
		if err != nil {
			add("members/ERROR.txt", []byte(err.Error()+"\n"))
		}
		for _, mr := range reports {
			for _, f := range mr.Files {
				name := "members/" + safeName(mr.Member) + "/" + f.Name
				if f.Err != nil {
					add(name+".error.txt", []byte(f.Err.Error()+"\n"))
					continue
				}
				add(name, f.Data)
			}
		}
	}
	if o.IncludeLogs {
		files = append(files, o.logFiles(ctx, mine.Pods)...)
	}
	add("README.txt", o.readme(files))
	return files
}

// archive zips files under one top directory, each redacted (a JSON file
// value by value first, before the encoder escapes anything), and
// REDACTIONS.txt, the summary of what was withheld, last.
func (o *ReportOptions) archive(files []reportFile, red *redact.Redactor) ([]byte, error) {
	var zbuf bytes.Buffer
	zw := zip.NewWriter(&zbuf)
	top := strings.TrimSuffix(filepath.Base(o.Output), ".zip")
	if o.Output == "-" {
		top = fmt.Sprintf("hactl-report-%s-%s-%s", o.Namespace, o.Name, o.now.Format("20060102T150405Z"))
	}
	write := func(name string, data []byte) error {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: top + "/" + name, Method: zip.Deflate, Modified: o.now})
		if err != nil {
			return err
		}
		_, err = w.Write(data)
		return err
	}
	for _, f := range files {
		data := f.data
		if strings.HasSuffix(f.name, ".json") {
			data = red.JSON(f.name, data)
		}
		if err := write(f.name, red.Text(f.name, data)); err != nil {
			return nil, err
		}
	}
	if err := write("REDACTIONS.txt", red.Summary()); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return zbuf.Bytes(), nil
}

// writeNew writes data to a file that must not exist yet, whole or not
// at all: a temporary file beside it, linked into place.
func writeNew(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".hactl-report-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	err = os.Link(tmp.Name(), path)
	if err != nil && !errors.Is(err, os.ErrExist) {
		// A filesystem without hard links: create it exclusively.
		var f *os.File
		if f, err = os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600); err == nil {
			_, err = f.Write(data)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				os.Remove(path)
			}
			return err
		}
	}
	if errors.Is(err, os.ErrExist) {
		return fmt.Errorf("%s appeared while the report was gathered: it was left as it is; give another -o", path)
	}
	return err
}

// fixedSource hands the observer the objects read once, so the status
// document and the objects in the archive are the same read.
type fixedSource struct{ o *status.Objects }

func (f fixedSource) Read(context.Context, string) (*status.Objects, error) { return f.o, nil }

// safeName keeps a name to one path element.
func safeName(s string) string {
	s = strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r < ' ' {
			return '_'
		}
		return r
	}, s)
	if s == "" || s == "." || s == ".." {
		return "_"
	}
	return s
}

// readSecrets reads the Secrets the cluster's pods, template and
// annotations name, only to hand their values to red.
func (o *ReportOptions) readSecrets(ctx context.Context, objs *status.Objects, red *redact.Redactor) {
	names := secretNames(objs)
	sorted := make([]string, 0, len(names))
	for n := range names {
		if n != "" {
			sorted = append(sorted, n)
		}
	}
	slices.Sort(sorted)
	for _, n := range sorted {
		origin := "Secret " + o.Namespace + "/" + n
		s, err := o.client.CoreV1().Secrets(o.Namespace).Get(ctx, n, metav1.GetOptions{})
		if err != nil {
			why := err.Error()
			switch {
			case apierrors.IsForbidden(err):
				why = "reading it is forbidden"
			case apierrors.IsNotFound(err):
				why = "it does not exist"
			}
			red.SecretUnread(origin, why)
			fmt.Fprintf(o.ErrOut, "warning: %s was not read (%s): its values were not searched for in the archive; read the archive before you send it\n", origin, why)
			continue
		}
		red.SecretRead(origin)
		keys := make([]string, 0, len(s.Data))
		for k := range s.Data {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			red.AddSecret(origin+" key "+k, k, s.Data[k])
		}
	}
}

// secretNames are the Secrets the cluster's StatefulSets and pods name:
// in their containers' environment (init and ephemeral ones too), their
// volumes (projected ones too), and hactl's own *-secret annotations.
func secretNames(objs *status.Objects) map[string]bool {
	names := map[string]bool{}
	addSpec := func(spec corev1.PodSpec) {
		eph := make([]corev1.Container, 0, len(spec.EphemeralContainers))
		for _, e := range spec.EphemeralContainers {
			eph = append(eph, corev1.Container(e.EphemeralContainerCommon))
		}
		for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers, eph} {
			for _, c := range cs {
				for _, e := range c.Env {
					if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
						names[e.ValueFrom.SecretKeyRef.Name] = true
					}
				}
				for _, e := range c.EnvFrom {
					if e.SecretRef != nil {
						names[e.SecretRef.Name] = true
					}
				}
			}
		}
		for _, v := range spec.Volumes {
			if v.Secret != nil {
				names[v.Secret.SecretName] = true
			}
			if v.Projected != nil {
				for _, s := range v.Projected.Sources {
					if s.Secret != nil {
						names[s.Secret.Name] = true
					}
				}
			}
		}
	}
	for _, s := range objs.StatefulSets {
		addSpec(s.Spec.Template.Spec)
		for k, v := range s.Annotations {
			if strings.HasPrefix(k, "hactl.dev/") && strings.HasSuffix(k, "-secret") && v != "" {
				names[v] = true
			}
		}
	}
	for _, p := range objs.Pods {
		addSpec(p.Spec)
	}
	return names
}

// objectFiles are the cluster's API objects as YAML, with what names a
// credential in the pods' and template's environment and arguments
// withheld, the last-applied configuration (a copy of the spec) and
// managed fields left out.
func (o *ReportOptions) objectFiles(objs *status.Objects, red *redact.Redactor) []reportFile {
	files := []struct {
		name, apiVersion, kind string
		items                  []kubeObject
	}{
		{"objects/statefulset.yaml", "apps/v1", "StatefulSet", objectsOf(objs.StatefulSets)},
		{"objects/pods.yaml", "v1", "Pod", objectsOf(objs.Pods)},
		{"objects/persistentvolumeclaims.yaml", "v1", "PersistentVolumeClaim", objectsOf(objs.PVCs)},
		{"objects/poddisruptionbudgets.yaml", "policy/v1", "PodDisruptionBudget", objectsOf(objs.PDBs)},
		{"objects/services.yaml", "v1", "Service", objectsOf(objs.Services)},
		{"objects/endpointslices.yaml", "discovery.k8s.io/v1", "EndpointSlice", objectsOf(objs.EndpointSlices)},
		{"objects/configmaps.yaml", "v1", "ConfigMap", objectsOf(objs.ConfigMaps)},
		{"objects/endpoints.yaml", "v1", "Endpoints", objectsOf(objs.Endpoints)},
		{"objects/events.yaml", "v1", "Event", objectsOf(objs.Events)},
		{"hactl/lock.yaml", "coordination.k8s.io/v1", "Lease", objectsOf(objs.Leases)},
		{"hactl/ledger.yaml", "v1", "ConfigMap", objectsOf(objs.Ledgers)},
	}
	var out []reportFile
	for _, f := range files {
		var b bytes.Buffer
		for _, it := range f.items {
			c := it.DeepCopyObject().(kubeObject)
			c.GetObjectKind().SetGroupVersionKind(schema.FromAPIVersionAndKind(f.apiVersion, f.kind))
			c.SetManagedFields(nil)
			if a := c.GetAnnotations(); a[corev1.LastAppliedConfigAnnotation] != "" {
				delete(a, corev1.LastAppliedConfigAnnotation)
				c.SetAnnotations(a)
				red.Count(f.name, "kubectl's last-applied configuration annotation (a copy of the spec, left out)", "", 1)
			}
			switch x := c.(type) {
			case *appsv1.StatefulSet:
				withholdSpec(&x.Spec.Template.Spec, f.name, red)
			case *corev1.Pod:
				withholdSpec(&x.Spec, f.name, red)
			}
			y, err := redactedYAML(f.name, c, red)
			if err != nil {
				y = []byte("# not encoded: " + err.Error() + "\n")
			}
			b.WriteString("---\n")
			b.Write(y)
		}
		if len(f.items) == 0 {
			b.WriteString("# none\n")
		}
		out = append(out, reportFile{f.name, b.Bytes()})
	}
	return out
}

// kubeObject is an API object with its metadata.
type kubeObject interface {
	runtime.Object
	metav1.Object
}

// objectsOf are pointers to xs's elements as kubeObjects.
func objectsOf[T any, P interface {
	*T
	kubeObject
}](xs []T) []kubeObject {
	out := make([]kubeObject, 0, len(xs))
	for i := range xs {
		out = append(out, P(&xs[i]))
	}
	return out
}

// redactedYAML is obj as YAML, redacted value by value before the
// encoder quotes, escapes or folds any string.
func redactedYAML(file string, obj runtime.Object, red *redact.Redactor) ([]byte, error) {
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var v any
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return yaml.Marshal(red.Value(file, v))
}

// withholdSpec replaces, in a pod spec, the values of environment
// variables named like a credential and the argument after a flag named
// like one ("--password", "SECRET"), counting them for file.
func withholdSpec(spec *corev1.PodSpec, file string, red *redact.Redactor) {
	containers := make([]*corev1.Container, 0, len(spec.InitContainers)+len(spec.Containers)+len(spec.EphemeralContainers))
	for i := range spec.InitContainers {
		containers = append(containers, &spec.InitContainers[i])
	}
	for i := range spec.Containers {
		containers = append(containers, &spec.Containers[i])
	}
	for i := range spec.EphemeralContainers {
		containers = append(containers, (*corev1.Container)(&spec.EphemeralContainers[i].EphemeralContainerCommon))
	}
	for _, c := range containers {
		for i := range c.Env {
			if e := &c.Env[i]; e.Value != "" && redact.CredentialName(e.Name) {
				e.Value = redact.Mark
				red.Count(file, "value of an environment variable named like a credential", e.Name, 1)
			}
		}
		for _, args := range []*[]string{&c.Command, &c.Args} {
			a := *args
			for i := 0; i+1 < len(a); i++ {
				if strings.HasPrefix(a[i], "-") && !strings.Contains(a[i], "=") && redact.CredentialName(a[i]) && !strings.HasPrefix(a[i+1], "-") {
					a[i+1] = redact.Mark
					red.Count(file, "argument of a flag named like a credential", strings.TrimLeft(a[i], "-"), 1)
				}
			}
		}
	}
}

// logFiles are the logs of every container of pods since o.Since, and
// of the previous container where one restarted; a log that cannot be
// read is a file that says why.
func (o *ReportOptions) logFiles(ctx context.Context, pods []corev1.Pod) []reportFile {
	var out []reportFile
	since := max(1, int64(math.Ceil(o.Since.Seconds())))
	for _, p := range pods {
		restarted := map[string]bool{}
		for _, st := range append(slices.Clone(p.Status.InitContainerStatuses), p.Status.ContainerStatuses...) {
			restarted[st.Name] = st.RestartCount > 0
		}
		var names []string
		for _, c := range append(slices.Clone(p.Spec.InitContainers), p.Spec.Containers...) {
			names = append(names, c.Name)
		}
		for _, c := range names {
			for _, previous := range []bool{false, true} {
				if previous && !restarted[c] {
					continue
				}
				name := "logs/" + safeName(p.Name) + "/" + safeName(c)
				if previous {
					name += ".previous"
				}
				req := o.client.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{Container: c, Previous: previous, SinceSeconds: &since, Timestamps: true})
				rc, err := req.Stream(ctx)
				if err != nil {
					out = append(out, reportFile{name + ".error.txt", []byte(err.Error() + "\n")})
					continue
				}
				b, cut, err := newest(rc, maxLogBytes)
				rc.Close()
				if cut > 0 {
					b = append([]byte(fmt.Sprintf("[the %d bytes before these were left out: a report keeps the newest %d MiB of each log]\n", cut, maxLogBytes>>20)), b...)
				}
				if err != nil {
					b = append(b, []byte("\n[the log ended early: "+err.Error()+"]\n")...)
				}
				out = append(out, reportFile{name + ".log", b})
			}
		}
	}
	return out
}

// newest reads r to its end and keeps its last limit bytes, from the
// start of a line; cut is how many bytes before them were dropped.
func newest(r io.Reader, limit int) (b []byte, cut int64, err error) {
	buf := make([]byte, 0, min(limit, 1<<20))
	chunk := make([]byte, 64<<10)
	for {
		n, rerr := r.Read(chunk)
		buf = append(buf, chunk[:n]...)
		if over := len(buf) - limit; over > 0 {
			cut += int64(over)
			buf = append(buf[:0], buf[over:]...)
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			err = rerr
			break
		}
	}
	if cut > 0 {
		if i := bytes.IndexByte(buf, '\n'); i >= 0 {
			cut += int64(i + 1)
			buf = buf[i+1:]
		}
	}
	return buf, cut, err
}

// readme says what the archive is and holds.
func (o *ReportOptions) readme(files []reportFile) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "hactl report of %s/%s\n\n", o.Namespace, o.Name)
	fmt.Fprintf(&b, "Written %s by kubectl-hactl %s.\n", o.now.Format(time.RFC3339), buildinfo.Version)
	if o.NoProbe {
		b.WriteString("Members were not dialled (--no-probe): no probe answers, no member documents.\n")
	}
	if o.IncludeLogs {
		fmt.Fprintf(&b, "Logs: each container's last %s (its newest %d MiB at most; a cut says so at the top).\n", o.Since, maxLogBytes>>20)
	} else {
		b.WriteString("Logs: not included (--include-logs adds them).\n")
	}
	b.WriteString("Events: the API server keeps them for an hour by default; older ones are gone.\n")
	b.WriteString("No Secret is included; REDACTIONS.txt says what else was withheld, where and why.\n\nFiles:\n")
	for _, f := range files {
		fmt.Fprintf(&b, "  %s\n", f.name)
	}
	b.WriteString("  REDACTIONS.txt\n")
	return []byte(b.String())
}
