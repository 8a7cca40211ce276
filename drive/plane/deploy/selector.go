package deploy

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

type labelsSelector = labels.Selector

type labelSet = labels.Set

// selectorError is a malformed ?selector.
type selectorError struct{ err error }

func (e *selectorError) Error() string { return "selector: " + e.err.Error() }

// parseSelector reads a label selector (kubectl syntax); nil when empty.
func parseSelector(s string) (labels.Selector, error) {
	if s == "" {
		return nil, nil
	}
	sel, err := labels.Parse(s)
	if err != nil {
		return nil, &selectorError{err}
	}
	return sel, nil
}

func timePtr(t time.Time) *metav1.Time {
	mt := metav1.NewTime(t)
	return &mt
}
