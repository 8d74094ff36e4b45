#!/usr/bin/env bash
# The test suite: vet, then every package's tests, with the race detector
# on the packages that run things concurrently.
set -euo pipefail
cd "$(dirname "$0")"
race='score|sandboxclient|sandbox|job|cmd|check|progress|resultcache'
go vet ./...
go test -count=1 -race $(go list ./... | grep -E "/($race)\$")
go test -count=1 $(go list ./... | grep -v -E "/($race)\$")
# The judging tests on the real corpus, skipped under -race above.
go test -count=1 -run 'OnRealCorpus' ./job
# The sandbox's containment, adversarial and language tests once more with
# every Python run started plainly, so that they hold on both paths
# (forkserver.go).
VERL_SCORE_TEST_PLAIN_PYTHON=1 go test -count=1 ./sandbox -run \
  'ForkBomb|HugeAllocation|InfiniteLoop|HugeOutput|OutputBeyond|Orphans|NoNetwork|WritesOutside|EnvironmentSecret|SignalReturnCode|ContextCancel|FilesAndFetch|Hostile|RequestFiles|FnNameDriver|LanguageCases|Fixtures|ConcurrentStdin|ReopenTheirStdio|NewRunnersAreContained|RunCodeFixtures|CompilersCannotRead|CachedBinaries|ServeLoopback|ServeAbsoluteFiles'

