#!/usr/bin/env bash
# The test suite: vet, then every package's tests, with the race detector
# on the packages that run things concurrently.
set -euo pipefail
cd "$(dirname "$0")"
race='score|sandboxclient|sandbox|server|job|cmd|check|progress|resultcache|worker|feed|remote'
go vet ./...
go test -count=1 -race $(go list ./... | grep -E "/($race)\$")
go test -count=1 $(go list ./... | grep -v -E "/($race)\$")
# The judging tests on the real corpus and the real clients' tests, skipped
# under -race above.
go test -count=1 -run 'OnRealCorpus' ./job
go test -count=1 -run 'ReadByClients|SandboxFusionClient|VerlScorerAgainstServe' ./cmd
