#!/usr/bin/env bash
# Regenerates cmd/unherd/default.pgo, the CPU profile that go build, go run
# and go install use to optimise the unherd command (profile-guided
# optimisation), from one run of the report at its default sizes. Run it
# after a change that moves the simulator's hot paths; commit the result.
# The page of `unherd serve` builds its WebAssembly simulator with the same
# profile, so the script regenerates the page's assets too.
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
go run ./cmd/unherd report --quiet --out "$out/report" --cpuprofile "$out/cpu.pprof" >/dev/null
mv "$out/cpu.pprof" cmd/unherd/default.pgo
echo "wrote cmd/unherd/default.pgo ($(wc -c < cmd/unherd/default.pgo) bytes)"
(cd cmd/unherd && go generate ./internal/web)
echo "regenerated cmd/unherd/internal/web/static"
