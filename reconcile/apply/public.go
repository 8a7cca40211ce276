package apply

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/openuniverse/operator/source"
)

// The one masking of the apiserver's words wherever a refusal is shown beyond the log: GET
// /gitops and the deploy plane, the Kind controllers' status conditions and every Event. A
// validation or an admission webhook may echo what it refused, a Secret's value included.

// PublicMessageMax bounds the apiserver's message in a status, an Event or a public report.
const PublicMessageMax = 512

// PublicMessage renders an apiserver error as its code, reason, the field paths of its
// causes and its message with every quoted value masked (a field name after "field" is
// kept), truncated to PublicMessageMax bytes; an admission webhook's or policy's free text
// is left out (nothing says which part of it echoes the object). Any other error (the
// caller's own wording) is msg.
func PublicMessage(err error, msg string) string {
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		return msg
	}
	s := st.Status()
	out := fmt.Sprintf("the apiserver refused the apply: %d %s", s.Code, s.Reason)
	if s.Details != nil {
		var fields []string
		for _, c := range s.Details.Causes {
			if c.Field != "" {
				fields = append(fields, c.Field+" ("+string(c.Type)+")")
			}
		}
		if len(fields) > 0 {
			out += ": " + strings.Join(fields, ", ")
		}
	}
	if admissionRE.MatchString(s.Message) {
		return out + " (" + admissionWords + ")"
	}
	if m := publicText(s.Message); m != "" {
		out += ": " + m
	}
	return out
}

// PublicError is err with the apiserver's message in its text masked and truncated as
// PublicMessage does, the caller's context around it kept ("list Deployment in ns: …");
// errors.Is and errors.As still see err, so its class is unchanged. An error that carries
// no apiserver status is returned as it is.
func PublicError(err error) error {
	var st apierrors.APIStatus
	if err == nil || !errors.As(err, &st) {
		return err
	}
	s := st.Status()
	full, m := err.Error(), publicText(s.Message)
	if i := strings.LastIndex(full, s.Message); s.Message != "" && i >= 0 {
		return publicError{err: err, msg: full[:i] + m + full[i+len(s.Message):]}
	}
	return publicError{err: err, msg: fmt.Sprintf("the apiserver answered %d %s: %s", s.Code, s.Reason, m)}
}

type publicError struct {
	err error
	msg string
}

func (e publicError) Error() string { return e.msg }
func (e publicError) Unwrap() error { return e.err }

// publicText is the apiserver's message as shown: quoted values masked, bounded; an
// admission refusal's words replaced by a pointer to the log.
func publicText(msg string) string {
	if admissionRE.MatchString(msg) {
		return admissionWords
	}
	return source.TruncateBytes(maskQuoted(msg), PublicMessageMax)
}

const admissionWords = "denied by admission; the operator log has its message"

// admissionRE matches the apiserver's wording for a refusal by an admission
// webhook or a ValidatingAdmissionPolicy.
var admissionRE = regexp.MustCompile(`admission webhook|denied (the )?request`)

var quotedRE = regexp.MustCompile(`(field |fields )?"(?:[^"\\]|\\.)*"`)

// maskQuoted replaces every double-quoted value in msg by "***", keeping a
// quoted field name ("unknown field \"spec.foo\"").
func maskQuoted(msg string) string {
	return quotedRE.ReplaceAllStringFunc(msg, func(q string) string {
		if strings.HasPrefix(q, "field ") || strings.HasPrefix(q, "fields ") {
			return q
		}
		return `"***"`
	})
}
