#!/usr/bin/env bash
# Runs the whole test suite: formatting, vet, staticcheck, and the tests of
# every module (race detector on, order shuffled, examples and fuzz seed
# corpora included), then every benchmark once so they keep compiling and
# their self-checks keep passing. Works on a fresh clone: staticcheck is
# installed into ./.bin at a pinned version.
set -euo pipefail
cd "$(dirname "$0")/.."

STATICCHECK_VERSION=v0.8.2
export GOBIN="$PWD/.bin"
if ! "$GOBIN/staticcheck" -version 2>/dev/null | grep -q "${STATICCHECK_VERSION#v}"; then
	echo "==> installing staticcheck $STATICCHECK_VERSION"
	go install "honnef.co/go/tools/cmd/staticcheck@$STATICCHECK_VERSION"
fi

# Every fuzz target runs for FUZZTIME (3 s by default), minimising a new
# input for at most FUZZMINIMIZETIME, so that the run explores instead of
# minimising (the default would be 60 s). A crasher fails the run and is
# written by go test to the package's testdata/fuzz/<Target>/: commit it,
# and from then on every plain `go test` replays it as a regression case.
FUZZTIME=${FUZZTIME:-3s}
FUZZMINIMIZETIME=${FUZZMINIMIZETIME:-200ms}
fuzz_module() {
	local pkg target out targets=()
	out=$(mktemp)
	# go test -list prints a package's targets, then "ok <package> ...".
	go test -run '^$' -list '^Fuzz' ./... | while read -r first second _; do
		case "$first" in
		Fuzz*) targets+=("$first") ;;
		ok)
			pkg=$second
			for target in "${targets[@]}"; do
				echo "    $pkg $target"
				if ! go test -run '^$' -fuzz "^${target}\$" -fuzztime="$FUZZTIME" \
					-fuzzminimizetime="$FUZZMINIMIZETIME" "$pkg" >"$out" 2>&1; then
					cat "$out" >&2
					# go test -fuzz now and then exits non-zero when
					# -fuzztime runs out while a worker is mid-input
					# ("context deadline exceeded", or a bare FAIL),
					# with no failing input. Only a failing input fails
					# the run; the plain go test run above already ran
					# the seed corpus and every committed regression.
					if grep -q 'Failing input written to' "$out"; then
						rm -f "$out"
						exit 1
					fi
					echo "    (no failing input: the fuzzer stopped uncleanly at its deadline; not a failure)" >&2
				fi
			done
			targets=()
			;;
		esac
	done
	# The loop runs in a subshell of the pipeline: its exit 1, or a
	# go test -list that fails, is the pipeline's status (pipefail).
	local rc=$?
	rm -f "$out"
	return "$rc"
}

# Every module in the tree: the root and the nested ones.
mapfile -t modules < <(find . -name go.mod -not -path './.bin/*' -printf '%h\n' | sort)

# Every step runs even when an earlier one failed, so one broken module
# does not hide the state of the others; the failures are listed at the end
# and make the run fail.
failures=()
step() {
	local name=$1
	shift
	echo "==> $name"
	if ! "$@"; then
		echo "FAILED: $name" >&2
		failures+=("$name")
	fi
}
in_module() { (cd "$1" && shift && "$@"); }
fuzz_in() { (cd "$1" && fuzz_module); }
gofmt_clean() {
	local unformatted
	unformatted=$(gofmt -l "${modules[@]}" | grep -v '^\.bin/' || true)
	if [[ -n "$unformatted" ]]; then
		echo "gofmt would change these files; run gofmt -w on them:" >&2
		echo "$unformatted" >&2
		return 1
	fi
}

step gofmt gofmt_clean

for m in "${modules[@]}"; do
	step "$m: go vet" in_module "$m" go vet ./...
	step "$m: staticcheck" in_module "$m" "$GOBIN/staticcheck" ./...
	step "$m: go test -race -shuffle=on" in_module "$m" go test -race -shuffle=on -count=1 ./...
	step "$m: benchmarks, once each" in_module "$m" sh -c 'go test -run "^$" -bench . -benchtime=1x ./... >/dev/null'
	step "$m: fuzz, ${FUZZTIME} per target" fuzz_in "$m"
done
# The loopback reliability suite (package reliability) measures load and
# recovery in real time, so it runs alone, after everything else, and
# without the race detector, whose slowdown would change the load it
# measures; the code it drives is race-tested above.
step "reliability suite: go vet" go vet -tags reliability ./reliability/
step "reliability suite: staticcheck" "$GOBIN/staticcheck" -tags reliability ./reliability/
step "reliability suite (-tags reliability)" go test -tags reliability -count=1 ./reliability/
# The same overload run over gRPC (internal/overload's harness, a grpc-go
# server on loopback TCP) lives in the unherdgrpc module, behind the same
# tag, and runs the same way: alone, without the race detector.
step "unherdgrpc overload run: go vet" in_module unherdgrpc go vet -tags reliability ./...
step "unherdgrpc overload run: staticcheck" in_module unherdgrpc "$GOBIN/staticcheck" -tags reliability ./...
step "unherdgrpc overload run (-tags reliability)" in_module unherdgrpc go test -tags reliability -count=1 -run TestOverload ./...
# The stores' recovery goals (no request over 5 s, answers normal within
# 5 s of the store's return) are judged without the race detector, which
# slows a loaded process too much for them; under it above they are only
# logged, while duplicates and wrong answers fail there too.
step "e2e recovery goals, without the race detector" in_module e2e go test -count=1 -run 'TestStores|TestPayments|TestFleet' ./...

if ((${#failures[@]})); then
	echo "==> ${#failures[@]} step(s) failed:" >&2
	printf '    %s\n' "${failures[@]}" >&2
	exit 1
fi
echo "==> all checks passed"
