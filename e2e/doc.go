// Package e2e holds unherd's end-to-end tests, which need several of its
// modules and real services at once: an unherdhttp client with retries
// paying through a server guarded by the idempotency middleware, with its
// store in Redis or PostgreSQL behind an in-process Toxiproxy that adds
// latency and resets connections, and responses lost after the charge
// committed. It has no API. The outage tests' figures, per second and
// for both stores side by side, are kept in bench/RECOVERY.md.
package e2e
