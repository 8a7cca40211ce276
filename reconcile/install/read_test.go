package install_test

import (
	"strings"
	"testing"

	ssautil "github.com/fluxcd/pkg/ssa/utils"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// read decodes a YAML stream of objects.
func read(t *testing.T, s string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := ssautil.ReadObjects(strings.NewReader(s))
	if err != nil {
		t.Fatal(err)
	}
	return objs
}
