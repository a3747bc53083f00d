// Package tinker speaks the Tinker API (Thinking Machines' training and
// sampling service, and the self-hosted servers of the same protocol such
// as SkyRL's): JSON over HTTP under /api/v1, every training call answered
// with a future that is long-polled through retrieve_future.
//
// wire.go holds the request and response shapes; the offline server in
// policy/serve uses the same types, so client and server cannot drift.
package tinker
