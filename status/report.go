package status

import (
	"context"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/hactl-dev/hactl/engine"
	"github.com/hactl-dev/hactl/model"
)

// MemberReport is what a member's engine says of it for a report, in
// its own words (engine.Reporter).
type MemberReport struct {
	Member string
	Files  []engine.ReportFile
}

// Report asks every running member of ob's cluster, all at once, for
// its engine's own documents, with the credentials and dialer probes
// use. It returns nothing when the engine offers none or nothing can be
// dialled; err is set when the cluster's credentials cannot be built.
func (o *Observer) Report(ctx context.Context, ob model.Observation) ([]MemberReport, error) {
	rep, ok := o.Engines[ob.Cluster.Engine].(engine.Reporter)
	if !ok || o.Dial == nil {
		return nil, nil
	}
	creds, err := o.credentials(ctx, ob.Cluster)
	if err != nil {
		return nil, err
	}
	auth, err := ReadMemberAuth(ctx, o.Secrets, ob.Cluster, "probe the members")
	if err != nil {
		return nil, err
	}
	targets := probeTargets(&ob)
	out := make([]MemberReport, len(targets))
	var wg sync.WaitGroup
	for i, mi := range targets {
		m := &ob.Members[mi]
		t := memberTarget(&ob, m)
		wg.Go(func() {
			po := engine.ProbeOptions{Timeout: o.ProbeTimeout, Dial: o.Dial, Credentials: creds, Auth: auth, ProxyGet: o.proxyGet()}
			out[i] = MemberReport{Member: m.Name, Files: rep.Report(ctx, t, po)}
		})
	}
	wg.Wait()
	return out, nil
}

// selecting adds to out the objects of objs that select cluster c's pods
// (labelled podLabels): its disruption budgets, its Services (and the one
// named c.ServiceName) with their EndpointSlices, and the ConfigMaps
// whose labels its pods all carry or that are labelled LabelCluster for
// it; each but the EndpointSlices is marked involved.
func selecting(out, objs *Objects, c model.ClusterFacts, podLabels labels.Set, involved map[string]bool) {
	selects := func(sel *metav1.LabelSelector) bool {
		s, err := metav1.LabelSelectorAsSelector(sel)
		return err == nil && !s.Empty() && podLabels != nil && s.Matches(podLabels)
	}
	for _, p := range objs.PDBs {
		if selects(p.Spec.Selector) {
			out.PDBs = append(out.PDBs, p)
			involved["PodDisruptionBudget/"+p.Name] = true
		}
	}
	services := map[string]bool{}
	for _, s := range objs.Services {
		if s.Name == c.ServiceName || (len(s.Spec.Selector) > 0 && podLabels != nil && labels.SelectorFromSet(s.Spec.Selector).Matches(podLabels)) {
			out.Services = append(out.Services, s)
			services[s.Name] = true
			involved["Service/"+s.Name] = true
		}
	}
	for _, e := range objs.EndpointSlices {
		if services[e.Labels[discoveryv1.LabelServiceName]] {
			out.EndpointSlices = append(out.EndpointSlices, e)
		}
	}
	for _, cm := range objs.ConfigMaps {
		if (len(cm.Labels) > 0 && podLabels != nil && labels.SelectorFromSet(cm.Labels).Matches(podLabels)) || cm.Labels[LabelCluster] == c.Name {
			out.ConfigMaps = append(out.ConfigMaps, cm)
			involved["ConfigMap/"+cm.Name] = true
		}
	}
	// Patroni's DCS in Endpoints mode labels its objects as its pods.
	for _, e := range objs.Endpoints {
		if len(e.Labels) > 0 && podLabels != nil && labels.SelectorFromSet(e.Labels).Matches(podLabels) {
			out.Endpoints = append(out.Endpoints, e)
			involved["Endpoints/"+e.Name] = true
		}
	}
}

// ClusterObjects are the objects of objs that belong to the cluster ob
// observed: its StatefulSet (or those its owner controls: Crunchy PGO's
// instances); the pods it owns, its members' pods and
// hactl's own pods for it (labelled LabelCluster); its members' claims;
// the disruption budgets and Services that select its pods, and those
// Services' EndpointSlices; ConfigMaps whose labels its pods all carry
// (an engine's own records, such as Patroni's leader lock); its lock
// Lease; and the Events about any of these, oldest first.
func ClusterObjects(objs *Objects, ob model.Observation) *Objects {
	c := ob.Cluster
	out := &Objects{EventsErr: objs.EventsErr, ConfigMapsErr: objs.ConfigMapsErr, EndpointsErr: objs.EndpointsErr, ActionsErr: objs.ActionsErr}
	var podLabels labels.Set
	involved := map[string]bool{"StatefulSet/" + c.Name: true, c.OwnerKind + "/" + c.Name: true}
	for _, s := range objs.StatefulSets {
		// Its own, or those its owner controls (an operator's StatefulSet
		// per instance, such as Crunchy PGO's).
		ref := metav1.GetControllerOf(&s)
		if (s.Name == c.Name && (c.UID == "" || string(s.UID) == c.UID)) || (ref != nil && c.UID != "" && string(ref.UID) == c.UID) {
			out.StatefulSets = append(out.StatefulSets, s)
			involved["StatefulSet/"+s.Name] = true
			if podLabels == nil {
				podLabels = s.Spec.Template.Labels
			}
		}
	}
	pods, claims := map[string]bool{}, map[string]bool{}
	for _, m := range ob.Members {
		if m.Pod != nil {
			pods[m.Pod.Name] = true
		}
		if m.PVC != nil {
			claims[m.PVC.Name] = true
		}
	}
	ours := func(meta metav1.Object) bool {
		ref := metav1.GetControllerOf(meta)
		return (ref != nil && c.UID != "" && string(ref.UID) == c.UID) || meta.GetLabels()[LabelCluster] == c.Name
	}
	for _, p := range objs.Pods {
		if pods[p.Name] || ours(&p) {
			out.Pods = append(out.Pods, p)
			involved["Pod/"+p.Name] = true
		}
	}
	for _, p := range objs.PVCs {
		if claims[p.Name] || p.Labels[LabelCluster] == c.Name {
			out.PVCs = append(out.PVCs, p)
			involved["PersistentVolumeClaim/"+p.Name] = true
		}
	}
	selecting(out, objs, c, podLabels, involved)
	for _, cm := range objs.Ledgers {
		if cm.Name == LockName(c.Name) {
			out.Ledgers = append(out.Ledgers, cm)
		}
	}
	for _, l := range objs.Leases {
		if l.Name == LockName(c.Name) {
			out.Leases = append(out.Leases, l)
		}
	}
	for _, e := range objs.Events {
		if involved[e.InvolvedObject.Kind+"/"+e.InvolvedObject.Name] {
			out.Events = append(out.Events, e)
		}
	}
	slices.SortStableFunc(out.Events, func(a, b corev1.Event) int { return eventTime(&a).Compare(eventTime(&b)) })
	return out
}
