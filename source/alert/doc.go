// Package alert is the operator's notification sink: a Slack-compatible incoming webhook and a
// generic JSON webhook signed with HMAC-SHA256, for the transitions people are paged on (a
// sweep that starts failing, drift the sweep reverted, an upgrade rolled back, an ImageUpdate
// committed).
//
// The loops call a Hook where they already record the Kubernetes Event; Sink is the Hook
// cmd/operator wires. Alert never blocks: it decides (Gate: the same key within the window is
// sent once, then with the count of repeats; a token bucket per target) and hands the message
// to a bounded queue per target, which one goroutine per target drains with retryablehttp.
// A full queue drops the message and counts it. A failing target is logged once, by a fixed
// reason and status code, never its URL or the error text (which names the URL).
//
// The URLs and the HMAC key are secrets (source.Token): never logged, never in an error, and
// scrubbed from every payload along with Config.Mask. The loops hand over public text only
// (the same as GET /gitops and the Events), never a Secret's data. No Kubernetes client here:
// cmd/operator reads the Secret and calls FromSecret.
package alert
