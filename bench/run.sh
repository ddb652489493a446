#!/usr/bin/env bash
# Runs the side-by-side benchmarks of unherd and its peer libraries and
# writes BENCHMARKS.md: the machine, the Go version, the date, one benchstat
# table per scenario and a one-line reading of each, computed from the
# medians by internal/benchreport.
#
# The whole suite runs COUNT times (default 10), one round after another, so
# that a burst of load from elsewhere on the machine hits every library of a
# round alike instead of all the runs of one. Each benchmark runs for
# BENCHTIME (default 1s) per round. benchstat is installed into ./.bin at
# a pinned version.
#
#	./run.sh                      # about 7 minutes on 2 cores
#	COUNT=3 BENCHTIME=100ms ./run.sh
#	REPORT_ONLY=1 ./run.sh        # the report again, from the last run
set -euo pipefail
cd "$(dirname "$0")"

COUNT=${COUNT:-10}
BENCHTIME=${BENCHTIME:-1s}
OUT=${OUT:-BENCHMARKS.md}
BENCHSTAT_VERSION=v0.0.0-20260908200009-22c9c6c9d4da

export GOBIN="$PWD/.bin"
if ! go version -m "$GOBIN/benchstat" 2>/dev/null | grep -q "golang.org/x/perf[[:space:]]*$BENCHSTAT_VERSION"; then
	echo "==> installing benchstat $BENCHSTAT_VERSION" >&2
	go install "golang.org/x/perf/cmd/benchstat@$BENCHSTAT_VERSION"
fi

# commit names the checkout measured, and says so when tracked files
# differ from it.
commit() {
	local c
	c=$(git rev-parse --short HEAD 2>/dev/null) || { echo unknown; return; }
	if [[ -n $(git status --porcelain --untracked-files=no 2>/dev/null) ]]; then
		c="$c, with uncommitted changes"
	fi
	echo "$c"
}

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
else
	go test -c -o "$work/bench.test" .
	load_before=$(cut -d' ' -f1-3 /proc/loadavg)
	started=$(date -u '+%Y-%m-%d %H:%M UTC')
	measured=$(commit)
	cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
	cores=$(nproc)
	goversion=$(go version | cut -d' ' -f3-)
	for i in $(seq "$COUNT"); do
		echo "==> round $i of $COUNT" >&2
		"$work/bench.test" -test.run '^$' -test.bench . -test.benchtime "$BENCHTIME" -test.count 1 >>"$work/raw.txt"
	done
	load_after=$(cut -d' ' -f1-3 /proc/loadavg)
	# The raw runs and what the report says about them, for benchstat by
	# hand and for REPORT_ONLY=1.
	cp "$work/raw.txt" "$GOBIN/last-run.txt"
	for v in COUNT BENCHTIME load_before load_after started measured cpu cores goversion; do
		printf '%s=%q\n' "$v" "${!v}"
	done >"$GOBIN/last-run.env"
fi

# Scenarios in a fixed order, then any others in the order they ran.
mapfile -t scenarios < <(
	{
		printf '%s\n' FirstSuccess Retry2 JitterDelay HTTPGet HTTPGetParallel Hedge HedgePrimaryWins
		sed -n 's/^Benchmark\([^/]*\)\/.*/\1/p' "$work/raw.txt"
	} | awk '!seen[$0]++' | while read -r s; do
		grep -q "^Benchmark$s/" "$work/raw.txt" && echo "$s"
	done
)

describe() {
	case "$1" in
	FirstSuccess) echo "A call whose first attempt succeeds: what a retry library adds to every healthy call. Three attempts, jittered exponential backoff from 50 ms (never used)." ;;
	Retry2) echo "A call that fails twice and then succeeds, with a zero delay between attempts: the retry machinery itself." ;;
	JitterDelay) echo "One jittered delay for retries 0 to 7 in turn (base 50 ms, cap 20 s), or the closest each library offers. failsafe-go has no case: it computes delays only inside an execution and exports nothing that returns one." ;;
	HTTPGet) echo "One GET to a loopback httptest server, serially: a bare http.Transport against each library's HTTP integration on the same transport." ;;
	HTTPGetParallel) echo "The same GET from GOMAXPROCS goroutines at once (b.RunParallel)." ;;
	Hedge) echo "One call in 25 has a slow primary (5 ms, in-process, cut short when cancelled); every other attempt answers at once. Both libraries hedge once after a fixed 1 ms, with no hedge budget. ns/op is the mean latency per call, slow-call-µs the mean latency of the slow calls, extra-req/op the hedges per call; floor-nohedge makes the same calls unhedged." ;;
	HedgePrimaryWins) echo "Every primary answers at once, hedge delay 1 ms: what hedging costs the calls that do not need it." ;;
	*) echo "" ;;
	esac
}

{
	echo "# Benchmarks: unherd and its peers, side by side"
	echo
	echo "Produced by \`bench/run.sh\`; rerun it to get numbers for your machine."
	echo "Every case checks its own attempt count and result, so a broken case"
	echo "fails instead of looking fast. Cases named \`floor-*\` (a direct call,"
	echo "a plain loop that arms no timer, one random draw) and \`bare\` (a plain"
	echo "http.Transport) are floors, not peers. Each reading compares unherd with"
	echo "the fastest peer, using the medians of this run."
	echo
	echo "| | |"
	echo "| --- | --- |"
	echo "| CPU | $cpu |"
	echo "| cores | $cores |"
	echo "| Go | $goversion |"
	echo "| date | $started |"
	echo "| commit | $measured |"
	echo "| runs | $COUNT rounds of every benchmark, -benchtime=$BENCHTIME |"
	echo "| load average (1, 5, 15 min) | before: $load_before; after: $load_after |"
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
