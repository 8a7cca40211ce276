package alert

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/openuniverse/operator/source"
)

// The generic webhook's headers.
const (
	// HeaderSignature is "sha256=" and the hex HMAC-SHA256 of the raw body under the
	// webhook-hmac-key, as GitHub's X-Hub-Signature-256.
	HeaderSignature = "X-Universe-Signature"
	// HeaderTimestamp is the body's timestamp (Unix seconds): the body is signed, so a
	// receiver that checks the signature, then that the body's timestamp equals this one and
	// is recent, refuses a replay.
	HeaderTimestamp = "X-Universe-Timestamp"
	// HeaderEvent is the alert's Kind; HeaderDelivery its id (the body's id).
	HeaderEvent    = "X-Universe-Event"
	HeaderDelivery = "X-Universe-Delivery"
)

// Bounds of what a payload carries.
const (
	maxSummary = 512
	maxDetail  = 512
	maxDetails = 10
)

// Payload is the generic webhook's JSON body.
type Payload struct {
	ID        string   `json:"id"`
	Timestamp int64    `json:"timestamp"`
	Kind      Kind     `json:"kind"`
	Severity  string   `json:"severity"`
	Cluster   string   `json:"cluster,omitempty"`
	Object    string   `json:"object,omitempty"`
	Revision  string   `json:"revision,omitempty"`
	Summary   string   `json:"summary"`
	Details   []string `json:"details,omitempty"`
	// Repeats is how many times the same alert was suppressed since it was last sent.
	Repeats int `json:"repeats,omitempty"`
}

func severity(e Event) string {
	if e.Warning {
		return "warning"
	}
	return "info"
}

// webhookBody is the generic webhook's body of e.
func webhookBody(e Event, repeats int, id string, at time.Time) ([]byte, error) {
	return json.Marshal(Payload{ID: id, Timestamp: at.Unix(), Kind: e.Kind, Severity: severity(e), Cluster: e.Cluster,
		Object: e.Object, Revision: e.Revision, Summary: e.Summary, Details: e.Details, Repeats: repeats})
}

// Sign is the HeaderSignature value of body under key.
func Sign(key, body []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// Verify reports whether sig is body's signature under key (constant time): what a
// receiver runs, and the tests.
func Verify(key, body []byte, sig string) bool {
	return hmac.Equal([]byte(sig), []byte(Sign(key, body)))
}

// slackMessage is an incoming webhook's body: text (the notification's fallback) and blocks,
// as api.slack.com/messaging/webhooks documents them.
type slackMessage struct {
	Text   string       `json:"text"`
	Blocks []slackBlock `json:"blocks,omitempty"`
}

type slackBlock struct {
	Type     string      `json:"type"`
	Text     *slackText  `json:"text,omitempty"`
	Elements []slackText `json:"elements,omitempty"`
}

type slackText struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// titles are the human names of the kinds.
var titles = map[Kind]string{
	SweepFailed: "Git sweep failing", SweepRecovered: "Git sweep recovered", DriftReverted: "Drift reverted",
	UpgradeRolledBack: "Upgrade rolled back", ImageUpdateCommitted: "Image update committed",
}

func title(k Kind) string {
	if t, ok := titles[k]; ok {
		return t
	}
	return string(k)
}

// slackBody is the incoming webhook's body of e.
func slackBody(e Event, repeats int) ([]byte, error) {
	head := title(e.Kind)
	var where []string
	if e.Cluster != "" {
		where = append(where, "cluster "+e.Cluster)
	}
	if e.Object != "" {
		where = append(where, e.Object)
	}
	if e.Revision != "" {
		where = append(where, "revision "+shortRev(e.Revision))
	}
	text := head
	if len(where) > 0 {
		text += " (" + strings.Join(where, ", ") + ")"
	}
	text += ": " + e.Summary
	icon := ":information_source:"
	if e.Warning {
		icon = ":warning:"
	}
	main := icon + " *" + slackEscape(head) + "*"
	if len(where) > 0 {
		main += " — " + slackEscape(strings.Join(where, ", "))
	}
	main += "\n" + slackEscape(e.Summary)
	blocks := []slackBlock{{Type: "section", Text: &slackText{Type: "mrkdwn", Text: main}}}
	if len(e.Details) > 0 {
		lines := make([]string, len(e.Details))
		for i, d := range e.Details {
			lines[i] = "• " + slackEscape(d)
		}
		blocks = append(blocks, slackBlock{Type: "section", Text: &slackText{Type: "mrkdwn", Text: source.TruncateBytes(strings.Join(lines, "\n"), 2900)}})
	}
	ctx := "universe-operator · " + string(e.Kind)
	if repeats > 0 {
		ctx += fmt.Sprintf(" · %d more since the last alert", repeats)
		text += fmt.Sprintf(" (%d more since the last alert)", repeats)
	}
	blocks = append(blocks, slackBlock{Type: "context", Elements: []slackText{{Type: "mrkdwn", Text: slackEscape(ctx)}}})
	return json.Marshal(slackMessage{Text: text, Blocks: blocks})
}

// slackEscape escapes the three characters Slack's mrkdwn reserves (&, <, >), so a name or
// message can neither link nor mention.
func slackEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

func shortRev(rev string) string {
	if len(rev) > 12 {
		return rev[:12]
	}
	return rev
}

// bounded is e with its texts cut to the payload's bounds and every secret in mask replaced.
func bounded(e Event, mask []string) Event {
	clean := func(s string, n int) string {
		for _, m := range mask {
			if m != "" {
				s = strings.ReplaceAll(s, m, redacted)
			}
		}
		return source.TruncateBytes(s, n)
	}
	e.Summary = clean(e.Summary, maxSummary)
	e.Object, e.Cluster, e.Revision = clean(e.Object, maxDetail), clean(e.Cluster, maxDetail), clean(e.Revision, 64)
	var details []string
	for i, d := range e.Details {
		if i == maxDetails {
			details = append(details, fmt.Sprintf("… and %d more", len(e.Details)-maxDetails))
			break
		}
		details = append(details, clean(d, maxDetail))
	}
	e.Details = details
	return e
}

const redacted = "[REDACTED]"
