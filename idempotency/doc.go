// Package idempotency makes retried POST and PATCH requests safe: server
// middleware for the Idempotency-Key request header, the Store interface
// that keeps its records, and an in-memory Store.
//
// In the common case, wrap the routes whose effects must not repeat, say
// who the caller is, and give a shared store when several processes serve
// the same clients:
//
//	m, err := idempotency.New(idempotency.Config{
//		Store:     store, // nil: in memory, one process only
//		Principal: func(r *http.Request) string { return accountID(r) },
//		Required:  true,
//	})
//	mux.Handle("POST /charges", m.Handler(charges))
//
// A client sends a key it chose, the same on every retry of one logical
// request. The first request with a key runs the handler; the middleware
// stores its response (status, headers, body) and sends it. A later
// request with the key gets the stored response again, with the header
// Idempotent-Replayed: true, and the handler does not run. Clients of
// package unherdhttp get keys with Config.AutoIdempotencyKey.
//
// The middleware follows the IETF httpapi draft "The Idempotency-Key HTTP
// Header Field" (draft-ietf-httpapi-idempotency-key-header-07,
// https://datatracker.ietf.org/doc/draft-ietf-httpapi-idempotency-key-header/),
// and Stripe's published behaviour (https://docs.stripe.com/api/idempotent_requests)
// where the draft is silent. Every error is an application/problem+json
// body (RFC 9457) whose "code" member names it (the Code constants):
//
//   - The header is a Structured Field String ("..."); a bare key is also
//     accepted unless Config.StrictSyntax is set, as many clients send
//     keys bare (unherdhttp's Transport sends them quoted). A malformed key,
//     a key over 255 bytes, or a missing key on a route that requires one
//     is 400.
//   - Keys are scoped by Config.Principal: two callers' keys never meet,
//     and the keys of a route without a Principal live apart from every
//     principal's, even in a store other services share (StoreKey).
//   - The fingerprint of a request is a SHA-256 of its method, path as
//     the client escaped it (/a%2Fb is not /a/b), query,
//     Config.FingerprintHeaders (Content-Type by default) and body, each
//     field after its length. A key reused with another fingerprint is
//     422, and nothing runs. The fingerprint is the request's, not the
//     name or address it was sent to: a retry that reaches another
//     instance by its own address, or the service by another name,
//     replays. Keep tenants or virtual hosts apart with Principal.
//   - A stored response keeps the header fields Config.StoreHeader allows
//     (by default StorableHeader: no cookies, credentials or hop-by-hop
//     fields); a replay sets them, replacing any an outer handler set.
//   - A request whose key's first request still runs waits for it, up
//     to Config.Wait (5 s by default), and gets its answer: the stored
//     response once it completes, or a run of its own once it released
//     the key. Past the wait it is 409 "key-in-flight" with Retry-After,
//     which unherdhttp's Transport retries after that delay (and its
//     own jittered backoff, whichever is longer). A duplicate served by
//     the same process as the first is woken as soon as the first ends.
//   - The response is stored before any of it is sent, so a response lost
//     on the way back (a dropped connection, a client timeout) is always
//     replayable. A response body over Config.MaxResponseBody (1 MiB) is
//     streamed to the client instead and not stored: the record then
//     holds only that the request completed, and a later request with
//     the key is 409 "replay-unavailable" rather than a second run. The
//     client should look the result up by other means.
//   - Records are kept for Config.TTL (24 h, Stripe's figure). In a
//     shared store an in-flight record holds a lease (30 s) that is
//     renewed every third of its length while the handler runs, so a
//     process that dies blocks its key for one lease at most; its
//     successor's fencing token keeps a late completion from the dead
//     process out of the record. (A Memory record dies with its process,
//     and is held until its handler returns.)
//
// Unlike Stripe, which stores a 500 and replays it, a 5xx response, a
// panic, or a handler that outlives Config.HandlerTimeout (503) releases
// the key so that the client's retry runs the handler again: a 5xx is a
// failure the retry is meant to get past, and storing it would make the
// failure permanent for 24 hours. The cost is that a handler that
// committed its effect and then answered 5xx runs twice; such a handler
// should answer a success once its effect is durable. A 4xx is stored and
// replayed, like a success.
//
// When the store fails, the middleware fails closed: a request whose key
// cannot be claimed is 503 with Retry-After, and nothing runs. With
// Config.FailOpen it runs the handler unprotected instead. A store that
// is full (ErrStoreFull) is no outage: its refusal is 503 "store-full",
// FailOpen or not. When the store fails after the handler ran, the
// completion is tried again for up to a lease, the lease renewed
// meanwhile, and the client gets
// its response either way; a completion lost for good leaves the record
// in flight until its lease runs out, and then the key runs again.
// Handlers whose effects live in the database close that gap by
// completing the record in their own transaction (unherdpg's InTx).
//
// A Store is four calls (Claim, Renew, Complete, Release) with fencing
// tokens; package storetest is the conformance suite every store runs.
// Memory is sharded, bounded in bytes and, per caller, in its share of
// them. It evicts expired records as it goes; when it needs room, it
// evicts the oldest completed records past MemoryConfig.MinRetention (10
// minutes, longer than clients' retries take), never an in-flight record
// nor a completed one within it, so that a retry within MinRetention
// always replays. Steady traffic is never refused while the records
// completed within MinRetention fit; a flood of new keys that fills the
// store with recent records is refused (503) until they age. It serves
// one process. The nested modules unherdredis and unherdpg hold
// stores that a fleet shares; unherdpg's can also complete the record in
// the handler's own database transaction, so that the effect and its
// record commit together.
//
// The flight of a request from claim to completion (bounded store calls,
// renewals, completion retried, a claim whose outcome was lost released
// by its token) is a Keeper's, which the middleware drives and so does
// unherdgrpc's server interceptor: a server of another protocol drives
// one too, and stores its keys under StoreKey.
package idempotency
