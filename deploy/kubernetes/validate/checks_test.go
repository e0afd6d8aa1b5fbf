package validate

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

const grpcPort = 7070

// checkSelectors: the Service and the budget select the Deployment's pods.
func checkSelectors(t *testing.T, objs objects) {
	t.Helper()
	podLabels := labels.Set(objs.deployment.Spec.Template.Labels)
	if len(objs.service.Spec.Selector) == 0 || !labels.SelectorFromSet(objs.service.Spec.Selector).Matches(podLabels) {
		t.Errorf("Service selector %v does not select pods labelled %v", objs.service.Spec.Selector, podLabels)
	}
	sel := objs.pdb.Spec.Selector
	if sel == nil || len(sel.MatchLabels) == 0 || !labels.SelectorFromSet(sel.MatchLabels).Matches(podLabels) {
		t.Errorf("PodDisruptionBudget selector %v does not select pods labelled %v", sel, podLabels)
	}
	if !slices.ContainsFunc(objs.service.Spec.Ports, func(p corev1.ServicePort) bool { return p.Port == grpcPort }) {
		t.Errorf("Service has no port %d", grpcPort)
	}
}

func checkPodSecurity(t *testing.T, pod corev1.PodSpec) {
	t.Helper()
	sc := pod.SecurityContext
	if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser == 0 {
		t.Errorf("pod security context %+v does not run as a non-root user", sc)
	}
	for _, c := range append(slices.Clone(pod.InitContainers), pod.Containers...) {
		checkContainerSecurity(t, c)
	}
}

func checkContainerSecurity(t *testing.T, c corev1.Container) {
	t.Helper()
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Errorf("container %s: root filesystem is writable", c.Name)
	}
	if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Errorf("container %s: privilege escalation allowed", c.Name)
	}
	if sc == nil || sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
		t.Errorf("container %s: capabilities not dropped", c.Name)
	}
}

// checkProbes: both probes ask grpc.health.v1 on the port --listen binds.
func checkProbes(t *testing.T, c corev1.Container) {
	t.Helper()
	listen := flagValue(c.Args, "--listen")
	if !strings.HasSuffix(listen, ":7070") {
		t.Errorf("--listen = %q, want port %d", listen, grpcPort)
	}
	for name, p := range map[string]*corev1.Probe{"readiness": c.ReadinessProbe, "liveness": c.LivenessProbe} {
		if p == nil || p.GRPC == nil || p.GRPC.Port != grpcPort {
			t.Errorf("%s probe %+v is not gRPC health on port %d", name, p, grpcPort)
		}
	}
}

// checkAuthSecret: --auth-tokens names a file the dedupd-auth Secret mounts.
func checkAuthSecret(t *testing.T, pod corev1.PodSpec, c corev1.Container) {
	t.Helper()
	file := flagValue(c.Args, "--auth-tokens")
	if file == "" {
		t.Fatal("serve has no --auth-tokens")
	}
	for _, m := range c.VolumeMounts {
		if !strings.HasPrefix(file, m.MountPath+"/") {
			continue
		}
		v := volume(pod, m.Name)
		if v == nil || v.Secret == nil || v.Secret.SecretName != "dedupd-auth" {
			t.Fatalf("%s is mounted from %+v, not the Secret dedupd-auth", m.MountPath, v)
		}
		rel := strings.TrimPrefix(file, m.MountPath+"/")
		if !slices.ContainsFunc(v.Secret.Items, func(k corev1.KeyToPath) bool { return k.Path == rel }) {
			t.Errorf("Secret dedupd-auth does not project %s", rel)
		}
		return
	}
	t.Errorf("no volume mount holds %s", file)
}

func checkRequests(t *testing.T, c corev1.Container) {
	t.Helper()
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if q, ok := c.Resources.Requests[r]; !ok || q.IsZero() {
			t.Errorf("container %s requests no %s", c.Name, r)
		}
	}
}

// checkDataVolume: --data-dir is on the claim, the only writable store.
func checkDataVolume(t *testing.T, pod corev1.PodSpec, c corev1.Container, dir, claim string) {
	t.Helper()
	if got := flagValue(c.Args, "--data-dir"); got != dir {
		t.Errorf("--data-dir = %q, want %q", got, dir)
	}
	for _, m := range c.VolumeMounts {
		if m.MountPath == dir {
			if v := volume(pod, m.Name); v == nil || v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != claim {
				t.Errorf("%s is mounted from %+v, not the claim %s", dir, v, claim)
			}
			return
		}
	}
	t.Errorf("nothing is mounted at %s", dir)
}

func volume(pod corev1.PodSpec, name string) *corev1.Volume {
	for i := range pod.Volumes {
		if pod.Volumes[i].Name == name {
			return &pod.Volumes[i]
		}
	}
	return nil
}

// flagValue reads --name=value from a container's args.
func flagValue(args []string, name string) string {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v
		}
	}
	return ""
}
