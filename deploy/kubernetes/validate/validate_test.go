package validate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// objects is one overlay's output, each object decoded into its API type.
type objects struct {
	deployment *appsv1.Deployment
	service    *corev1.Service
	pdb        *policyv1.PodDisruptionBudget
	pvcs       []*corev1.PersistentVolumeClaim
}

// build runs `kustomize build` of one overlay and decodes every object
// strictly: a field the API type does not have fails the test, so a typo
// in a manifest (readinesProbe, secretKeyRefs) cannot pass unnoticed.
func build(t *testing.T, overlay string) objects {
	t.Helper()
	dir := filepath.Join("..", "overlays", overlay)
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	resources, err := k.Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	var out objects
	for _, r := range resources.Resources() {
		raw, err := r.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		var target any
		switch r.GetKind() {
		case "Deployment":
			out.deployment = &appsv1.Deployment{}
			target = out.deployment
		case "Service":
			out.service = &corev1.Service{}
			target = out.service
		case "PodDisruptionBudget":
			out.pdb = &policyv1.PodDisruptionBudget{}
			target = out.pdb
		case "PersistentVolumeClaim":
			pvc := &corev1.PersistentVolumeClaim{}
			out.pvcs = append(out.pvcs, pvc)
			target = pvc
		default:
			t.Fatalf("%s: unexpected kind %s", overlay, r.GetKind())
		}
		if err := decodeStrict(raw, target); err != nil {
			t.Fatalf("%s: %s %s: %v", overlay, r.GetKind(), r.GetName(), err)
		}
	}
	if out.deployment == nil || out.service == nil || out.pdb == nil {
		t.Fatalf("%s: want a Deployment, a Service and a PodDisruptionBudget", overlay)
	}
	return out
}

func decodeStrict(raw []byte, into any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	return dec.Decode(into)
}

func TestDecodeStrictRejectsUnknownField(t *testing.T) {
	raw := []byte(`{"kind":"Service","spec":{"ports":[{"port":1,"portt":2}]}}`)
	if err := decodeStrict(raw, &corev1.Service{}); err == nil {
		t.Fatal("a misspelled field decoded without error")
	}
}

func TestOverlays(t *testing.T) {
	tests := []struct {
		overlay   string
		replicas  int32
		strategy  appsv1.DeploymentStrategyType
		pvcs      int
		database  bool // URL from the Secret, and a migrate init container
		dataMount string
	}{
		{overlay: "postgres", replicas: 3, database: true},
		{overlay: "embedded", replicas: 1, strategy: appsv1.RecreateDeploymentStrategyType, pvcs: 1, dataMount: "/var/lib/dedupd"},
	}
	for _, tc := range tests {
		t.Run(tc.overlay, func(t *testing.T) {
			objs := build(t, tc.overlay)
			d := objs.deployment
			if d.Spec.Replicas == nil || *d.Spec.Replicas != tc.replicas {
				t.Errorf("replicas = %v, want %d", d.Spec.Replicas, tc.replicas)
			}
			if d.Spec.Strategy.Type != tc.strategy {
				t.Errorf("strategy = %q, want %q", d.Spec.Strategy.Type, tc.strategy)
			}
			if len(objs.pvcs) != tc.pvcs {
				t.Errorf("%d PersistentVolumeClaims, want %d", len(objs.pvcs), tc.pvcs)
			}
			checkSelectors(t, objs)
			pod := d.Spec.Template.Spec
			checkPodSecurity(t, pod)
			server := container(t, pod.Containers, "dedupd")
			checkProbes(t, server)
			checkAuthSecret(t, pod, server)
			checkRequests(t, server)
			if got := secretEnv(server, "DEDUPD_DATABASE_URL"); tc.database != (got == "dedupd-database/url") {
				t.Errorf("DEDUPD_DATABASE_URL from %q; want from the Secret: %v", got, tc.database)
			}
			if tc.database {
				migrate := container(t, pod.InitContainers, "migrate")
				if len(migrate.Args) != 1 || migrate.Args[0] != "migrate" {
					t.Errorf("init container args = %q, want [migrate]", migrate.Args)
				}
				if got := secretEnv(migrate, "DEDUPD_DATABASE_URL"); got != "dedupd-database/url" {
					t.Errorf("migrate reads DEDUPD_DATABASE_URL from %q", got)
				}
				checkContainerSecurity(t, migrate)
			} else if len(pod.InitContainers) != 0 {
				t.Errorf("init containers %v on the embedded store", pod.InitContainers)
			}
			if tc.dataMount != "" {
				checkDataVolume(t, pod, server, tc.dataMount, objs.pvcs[0].Name)
			}
		})
	}
}

func container(t *testing.T, cs []corev1.Container, name string) corev1.Container {
	t.Helper()
	for _, c := range cs {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no container %q", name)
	return corev1.Container{}
}

// secretEnv names the Secret and key an environment variable comes from.
func secretEnv(c corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			ref := e.ValueFrom.SecretKeyRef
			return fmt.Sprintf("%s/%s", ref.Name, ref.Key)
		}
	}
	return ""
}
