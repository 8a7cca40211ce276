// Package github reads the universe repository through the GitHub REST API, or
// any host that speaks it (GitHub Enterprise, Forgejo-style mirrors of the
// API), as a source.Source.
//
// Head costs no rate limit when nothing changed: it sends the ETag of the
// previous answer in If-None-Match and GitHub answers 304 Not Modified.
// Snapshot lists the configured path with one recursive tree request and
// fetches only the blobs whose SHA it has not seen, from an in-memory cache
// keyed by blob SHA. Requests go through go-retryablehttp, which retries
// transient failures and waits as long as a Retry-After header asks.
//
// Resolve (source.RefResolver, for previews) reads another branch or tag (GET
// commits/<name>, the bare SHA), a full ref such as refs/pull/7/head (GET git/ref/…,
// tags peeled) or checks a commit SHA exists; Snapshot reads any commit.
//
// The token is read from a source.Credentials on every request and sent only
// in the Authorization header; on a 401 it is re-read once, in case it was
// rotated, and the request retried.
package github
