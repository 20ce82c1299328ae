package sandbox

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/hactl-dev/hactl/sandbox/fault"
	"github.com/hactl-dev/hactl/sandbox/scenario"
)

// breakMember injects a fault into the member of pod ns/name.
func (s *supervisor) breakMember(ctx context.Context, ns, name string, kind fault.Kind, args []string) error {
	if len(args) > 0 && !kind.TakesArgs() {
		return fmt.Errorf("fault %s takes no arguments", kind)
	}
	s.logf("fault: %s %s/%s %s", kind, ns, name, strings.Join(args, " "))
	switch kind {
	case fault.FillQuota:
		m, ok := s.run.Member(ns, name)
		if !ok {
			return fmt.Errorf("%s/%s is not a sandbox member", ns, name)
		}
		return fillQuota(ctx, m.ClientURL)
	case fault.Colocate:
		return s.colocate(ctx, ns, name)
	}
	return s.run.Break(ctx, ns, name, kind, args)
}

// fillQuota writes 1 MiB values through the member at url until etcd
// refuses with "database space exceeded" and the NOSPACE alarm is raised.
func fillQuota(ctx context.Context, url string) error {
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{url}, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return err
	}
	defer c.Close()
	value := strings.Repeat("q", 1<<20-1024)
	for i := 0; i < 100000; i++ {
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_, err := c.Put(pctx, fmt.Sprintf("/hactl-sandbox/fill-quota/%08d", i), value)
		cancel()
		if err != nil {
			if !strings.Contains(err.Error(), "database space exceeded") {
				return fmt.Errorf("filling the quota: %w", err)
			}
			break
		}
	}
	for {
		actx, cancel := context.WithTimeout(ctx, 5*time.Second)
		resp, err := c.AlarmList(actx)
		cancel()
		if err == nil {
			for _, a := range resp.Alarms {
				if a.Alarm.String() == "NOSPACE" {
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the NOSPACE alarm was not raised: %w", errors.Join(err, ctx.Err()))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// colocate pins every member of pod ns/name's StatefulSet to the pod's
// node (a template change, so a rolling update) and waits for it.
func (s *supervisor) colocate(ctx context.Context, ns, name string) error {
	pod, err := s.kc.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	owner := metav1.GetControllerOf(pod)
	if owner == nil || owner.Kind != "StatefulSet" || pod.Spec.NodeName == "" {
		return fmt.Errorf("%s/%s is not a scheduled StatefulSet pod", ns, name)
	}
	sets := s.kc.AppsV1().StatefulSets(ns)
	var selector string
	var required bool
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		sts, err := sets.Get(ctx, owner.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		spec := &sts.Spec.Template.Spec
		required = spec.Affinity != nil && spec.Affinity.PodAntiAffinity != nil &&
			len(spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0
		spec.NodeSelector = map[string]string{"kubernetes.io/hostname": pod.Spec.NodeName}
		spec.Affinity = nil
		selector = metav1.FormatLabelSelector(sts.Spec.Selector)
		_, err = sets.Update(ctx, sts, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return err
	}
	if required {
		// A rolling update cannot get here: the members still running
		// keep their required anti-affinity, which bars an updated member
		// from their nodes. Recreate them all at once instead.
		err := s.kc.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return err
		}
	}
	wctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	return scenario.WaitRollout(wctx, s.kc, ns, owner.Name)
}
