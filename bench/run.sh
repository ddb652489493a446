#!/usr/bin/env bash
# Runs the side-by-side benchmarks of unherd and its peer libraries and
# writes BENCHMARKS.md: the machine, the Go version, the date, one benchstat
# table per scenario and a one-line reading of each, computed from the
# medians by internal/benchreport.
#
# The whole suite runs COUNT times (default 10), one round after another, so
# that a burst of load from elsewhere on the machine hits every library of a
# round alike instead of all the runs of one; the readings compare cases
# round by round and give the median and range of those per-round ratios.
# Each benchmark runs for BENCHTIME (default 500ms, half of what it was)
# per round, so that a full run of the ten scenarios takes under 7 minutes
# on 2 cores (6m40s with the machine's load at 6 to 17), short enough for a
# shared machine. benchstat is installed
# into ./.bin at a pinned version.
#
# BENCHMARKS.md describes one commit: run.sh refuses to write it from a
# checkout with uncommitted changes (tracked or untracked). Writing
# another file (OUT=/tmp/x.md) is allowed, and says so in its header.
#
#	./run.sh                      # under 7 minutes on 2 cores
#	COUNT=3 BENCHTIME=100ms OUT=/tmp/quick.md ./run.sh
#	REPORT_ONLY=1 ./run.sh        # the report again, from the last run
set -euo pipefail
cd "$(dirname "$0")"

COUNT=${COUNT:-10}
BENCHTIME=${BENCHTIME:-500ms}
OUT=${OUT:-BENCHMARKS.md}
BENCHSTAT_VERSION=v0.0.0-20260908200009-22c9c6c9d4da

export GOBIN="$PWD/.bin"
if ! go version -m "$GOBIN/benchstat" 2>/dev/null | grep -q "golang.org/x/perf[[:space:]]*$BENCHSTAT_VERSION"; then
	echo "==> installing benchstat $BENCHSTAT_VERSION" >&2
	go install "golang.org/x/perf/cmd/benchstat@$BENCHSTAT_VERSION"
fi

# commit names the checkout measured, and says so when it has changes
# not committed (files git ignores, such as ./.bin, do not count).
commit() {
	local c
	c=$(git rev-parse --short HEAD 2>/dev/null) || { echo unknown; return; }
	if [[ -n $(git status --porcelain 2>/dev/null) ]]; then
		c="$c, with uncommitted changes"
	fi
	echo "$c"
}

# refuse stops a run that would write BENCHMARKS.md for a commit it does
# not describe.
refuse() {
	if [[ $(basename "$OUT") == BENCHMARKS.md && ($1 == *uncommitted* || $1 == *changed*) ]]; then
		echo "run.sh: the checkout ($1) is not a commit; commit first, or write elsewhere with OUT=/tmp/benchmarks.md" >&2
		exit 1
	fi
}
refuse "$(commit)"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "==> building" >&2
go build -o "$work/benchreport" ./internal/benchreport

if [[ ${REPORT_ONLY:-} == 1 ]]; then
	# Write the report again from the last run (after editing NOTES.md, say)
	# without running anything.
	echo "==> reporting on the last run" >&2
	cp "$GOBIN/last-run.txt" "$work/raw.txt"
	# shellcheck source=/dev/null
	source "$GOBIN/last-run.env"
	refuse "$measured"
else
	go test -c -o "$work/bench.test" .
	load_before=$(cut -d' ' -f1-3 /proc/loadavg)
	started=$(date -u '+%Y-%m-%d %H:%M UTC')
	measured=$(commit)
	cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
	cores=$(nproc)
	goversion=$(go version | cut -d' ' -f3-)
	load_rounds=""
	for i in $(seq "$COUNT"); do
		echo "==> round $i of $COUNT" >&2
		"$work/bench.test" -test.run '^$' -test.bench . -test.benchtime "$BENCHTIME" -test.count 1 >>"$work/raw.txt"
		load_rounds="$load_rounds${load_rounds:+, }$(cut -d' ' -f1 /proc/loadavg)"
	done
	load_after=$(cut -d' ' -f1-3 /proc/loadavg)
	finished=$(date -u '+%H:%M UTC')
	# The tree must not have changed while it ran.
	if [[ $(commit) != "$measured" ]]; then
		measured="$measured, then changed during the run"
	fi
	refuse "$measured"
	# The raw runs and what the report says about them, for benchstat by
	# hand and for REPORT_ONLY=1.
	cp "$work/raw.txt" "$GOBIN/last-run.txt"
	for v in COUNT BENCHTIME load_before load_after load_rounds started finished measured cpu cores goversion; do
		printf '%s=%q\n' "$v" "${!v}"
	done >"$GOBIN/last-run.env"
fi

# Scenarios in a fixed order, then any others in the order they ran.
mapfile -t scenarios < <(
	{
		printf '%s\n' FirstSuccess RetryWait Retry2 BudgetParallel Pipeline PipelineWatched JitterDelay HTTPGet HTTPGetParallel Hedge HedgePrimaryWins HedgePrimaryWinsWatched Limit LimitParallel
		sed -n 's/^Benchmark\([^/]*\)\/.*/\1/p' "$work/raw.txt"
	} | awk '!seen[$0]++' | while read -r s; do
		grep -q "^Benchmark$s/" "$work/raw.txt" && echo "$s"
	done
)

# describe says what a scenario measures and, per case, what work is and
# is not the same in every library.
describe() {
	case "$1" in
	FirstSuccess) echo "A call whose first attempt succeeds: what a retry library adds to every healthy call. Equal: three attempts, jittered exponential backoff from 50 ms to 20 s (never used), a cancellable caller context, no retry budget (unherd's is switched off with budget.Unlimited, as no peer has one here). Not equal: go-retry builds its backoff per call (it counts retries inside it), which is its only correct use." ;;
	RetryWait) echo "A call that fails twice and then succeeds, with a constant 1 ns delay between attempts: every library arms a timer for each wait, and the wait itself costs next to nothing. Equal: three attempts, two timed waits, a cancellable caller context honoured during each wait, no retry budget. floor-timer is a hand-written loop that arms one time.Timer per call and resets it for the second wait. Not equal: how each library gets its timer (time.NewTimer per wait, one per call reset, time.After, or unherd's timers reused across calls), which is what this case measures." ;;
	Retry2) echo "The same two failures with a zero delay. A floor, not a comparison of equal work: unherd's immediate schedule arms no timer, while every peer arms one even for a zero delay. It shows what unherd's retry decision costs without any wait; RetryWait is the comparison." ;;
	BudgetParallel) echo "A retry budget on every call, from GOMAXPROCS goroutines at once (b.RunParallel): nine calls in ten succeed, the tenth asks for a retry, which succeeds. Equal: the calls, the retries asked for (nearly all granted by both), the default configuration of each, each budget held in an interface value as its retry loop holds it (budget.Budget; failsafe-go's internal budget interface). Not equal: the policies. unherd's Ratio bounds retries to 10% of the requests of the last 10 s plus 10 a second (Finagle, SRE book); failsafe-go's budget bounds the retries in flight to 20% of the executions in flight. Each is its library's budget for this job." ;;
	Pipeline) echo "A first-attempt success through retry (three attempts, jittered backoff), retry budget, circuit breaker, client-side adaptive throttling and a 1 s per-attempt timeout, each in its library's default configuration. floor-direct is the bare call; floor-timeout is the bare call under one context.WithTimeout, the least an attempt timeout costs (it needs a context of its own). The operation never looks at its context, as one answered from memory does not. Equal: the five policies, the order (retry outermost, timeout around the attempt), the cancellable caller context. Not equal: the budgets' policies (see BudgetParallel) and the throttles' formulas (both after the SRE book's client-side throttling); and the attempt context's work: unherd's sets up its timer and its link to the caller's context only when something reads its Done channel, so here it arms no timer, while context.WithTimeout (floor-timeout, and failsafe-go's) always arms one. PipelineWatched is the comparison of equal work." ;;
	PipelineWatched) echo "Pipeline with an operation that reads its context's Done channel once before answering, as one that does I/O does: every attempt context, unherd's included, arms its timer and follows the caller's context. Equal: as in Pipeline, and the attempt context's work. Held to Pipeline's target." ;;
	JitterDelay) echo "One jittered delay for retries 0 to 7 in turn (base 50 ms, cap 20 s), or the closest each library offers: one random draw each (unherd's backoff.Draw and cenkalti/backoff's rand.Float64 are each one Uint64 from math/rand/v2's global source). Not equal: cenkalti/backoff spreads over [0, 2*interval] (RandomizationFactor 1, its widest), go-retry's backoff is a long-lived object at the cap after 63 draws, and go-retryablehttp's LinearJitterBackoff grows linearly and seeds a new source per call. failsafe-go has no case: it computes delays only inside an execution and exports nothing that returns one." ;;
	HTTPGet) echo "One GET to a loopback httptest server, serially: a bare http.Transport against each library's HTTP integration on the same transport. Equal: the request and its cancellable context, three attempts and backoff settings where the library has them, no retry budget, a response read to the end and closed." ;;
	HTTPGetParallel) echo "The same GET from GOMAXPROCS goroutines at once (b.RunParallel)." ;;
	Hedge) echo "One call in 25 has a slow primary (5 ms, in-process, cut short when cancelled); every other attempt answers at once. Both libraries hedge once after a fixed 1 ms, with no hedge budget, under a cancellable caller context. ns/op is the mean latency per call, slow-call-µs the mean latency of the slow calls, extra-req/op the hedges per call; floor-nohedge makes the same calls unhedged." ;;
	HedgePrimaryWins) echo "Every primary answers at once, hedge delay 1 ms, one hedge at most, no hedge budget, a cancellable caller context: what hedging costs the calls that do not need it. The attempts never look at their context: unherd's attempt context sets up its cancellation only when something reads its Done channel, so here it sets none up, while failsafe-go's is a context.WithCancel. HedgePrimaryWinsWatched is the comparison of equal work." ;;
	HedgePrimaryWinsWatched) echo "HedgePrimaryWins with attempts that read their context's Done channel once before answering, as attempts that do I/O do: every library sets up the attempt's cancellation. Held to HedgePrimaryWins's target." ;;
	Limit) echo "A concurrency limiter on every call, one call at a time: acquire a permit without waiting, then release it as served with a latency sample. unherd is its default (Gradient), unherd-aimd and unherd-fixed (Fixed(20)) are its other algorithms, each in its defaults; failsafe-go is its adaptive limiter in its defaults (NewWithDefaults, TryAcquirePermit, then Record); failsafe-go-bulkhead is its bulkhead of 20 (TryAcquirePermit, ReleasePermit). floor-clock is failsafe-go's two clock reads alone (time.Now), floor-clock-mono unherd's (limit.Now, the monotonic clock only). Equal: every case but the bulkhead reads the real clock twice per call, at the acquire and at the release (failsafe-go's limiter reads time.Now itself, unherd's is given limit.Now() at both, as unherdhttp.Shed and unherdgrpc's server give it); admitted/op is the share of calls admitted, and a case that admits none fails. Not equal: the algorithms, each its library's adaptive limit; the bulkhead reads no clock, so it is the peer of unherd-fixed only as a limit, not as equal work. The target is against failsafe-go's adaptive limiter." ;;
	LimitParallel) echo "Limit from GOMAXPROCS goroutines at once (b.RunParallel) on one limiter per case: up to GOMAXPROCS requests in flight, every acquire and release on shared state. Held to Limit's target." ;;
	*) echo "" ;;
	esac
}

{
	echo "# Benchmarks: unherd and its peers, side by side"
	echo
	echo "Produced by \`bench/run.sh\` from commit $measured; rerun it to get"
	echo "numbers for your machine. Every case checks its own attempt count and"
	echo "result, so a broken case fails instead of looking fast. Cases named"
	echo "\`floor-*\` (a direct call, a plain loop, a hand-written timer loop, a"
	echo "bare context.WithTimeout, one random draw) and \`bare\` (a plain"
	echo "http.Transport) are floors, not peers. Each scenario says what work is"
	echo "and is not the same in every case. Each reading compares unherd with the"
	echo "fastest peer (by median) and with the scenario's floor round by round:"
	echo "the k-th run of one case with the k-th run of the other, which ran in"
	echo "the same round, giving the median of the per-round ratios and their range."
	echo
	echo "| | |"
	echo "| --- | --- |"
	echo "| CPU | $cpu |"
	echo "| cores | $cores |"
	echo "| Go | $goversion |"
	echo "| date | $started to ${finished:-?} |"
	echo "| commit | $measured |"
	echo "| runs | $COUNT rounds of every benchmark, -benchtime=$BENCHTIME |"
	echo "| load average (1, 5, 15 min) | before: $load_before; after: $load_after |"
	echo "| load average (1 min) after each round | ${load_rounds:-?} |"
	echo
	echo "These numbers were produced on a shared 2-core machine while other work"
	echo "was running on it: absolute times are noisy, and the ratios within a"
	echo "round matter more than any single figure."
	for s in "${scenarios[@]}"; do
		grep -E "^Benchmark$s/" "$work/raw.txt" >"$work/$s.txt"
		echo
		echo "## $s"
		echo
		describe "$s"
		echo
		echo '```'
		"$GOBIN/benchstat" "$s=$work/$s.txt"
		echo '```'
		echo
		"$work/benchreport" -scenario "$s" "$work/raw.txt"
	done
	if [[ -f NOTES.md ]]; then
		echo
		cat NOTES.md
	fi
} >"$OUT"
echo "==> wrote $OUT" >&2
