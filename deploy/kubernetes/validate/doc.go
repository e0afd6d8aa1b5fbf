// Package validate builds each kustomize overlay of deploy/kubernetes and
// decodes every object strictly into the k8s.io/api types.
package validate
