package drive_test

import (
	"bytes"
	"context"
	"os"
	"testing"
	"time"

	ssautil "github.com/fluxcd/pkg/ssa/utils"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/e2e/testbed"
	"github.com/openuniverse/operator/kinds"
)

const group = "hanzo.ai"

func TestMain(m *testing.M) { os.Exit(testbed.Run(m)) }

func scheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := kinds.AddToScheme(s, group); err != nil {
		t.Fatal(err)
	}
	return s
}

// installCRDs applies the hanzo.ai bundle and waits until the apiserver serves it.
func installCRDs(t *testing.T, cfg *rest.Config) client.Client {
	t.Helper()
	c, err := client.New(cfg, client.Options{Scheme: scheme(t)})
	if err != nil {
		t.Fatal(err)
	}
	bundle, err := kinds.Bundle(group)
	if err != nil {
		t.Fatal(err)
	}
	crds, err := ssautil.ReadObjects(bytes.NewReader(bundle))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, crd := range crds {
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(crd), client.FieldOwner("test"), client.ForceOwnership); err != nil {
			t.Fatalf("install %s: %v", crd.GetName(), err)
		}
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		mc, err := client.New(cfg, client.Options{Scheme: scheme(t)})
		if err != nil {
			return false, err
		}
		for _, k := range []string{"Service", "AgentDeployment"} {
			if _, err := mc.RESTMapper().RESTMapping(schema.GroupKind{Group: group, Kind: k}, "v1"); err != nil {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("CRDs never served: %v", err)
	}
	c, err = client.New(cfg, client.Options{Scheme: scheme(t)})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
