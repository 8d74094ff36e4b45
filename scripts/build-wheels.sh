#!/usr/bin/env bash
# Builds the release into dist/: a platform wheel for Linux x86_64 and one
# for aarch64, each carrying the Go binary cross-compiled for it, and a
# .tar.gz archive per platform (binary, README, licence), with SHA256SUMS.
# The version is python/verl_score/_version.py's; the binary reports the
# same (verl-score --version). Needs Go and Python 3, no network once Go's
# module cache is filled.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
version=$(sed -n 's/^__version__ = "\(.*\)"$/\1/p' python/verl_score/_version.py)
[ -n "$version" ] || { echo "build-wheels.sh: no __version__ in python/verl_score/_version.py" >&2; exit 1; }
commit=$(git rev-parse HEAD 2>/dev/null || echo unknown)
pkg=github.com/verl-score/verl-score/version

rm -rf dist
mkdir -p dist/build
for arch in amd64 arm64; do
  case $arch in
    amd64) machine=x86_64 ;;
    arm64) machine=aarch64 ;;
  esac
  bin=dist/build/linux-$arch/verl-score
  # A static binary (no cgo): it needs nothing from the system's libc, so
  # it meets manylinux2014's rules.
  CGO_ENABLED=0 GOOS=linux GOARCH=$arch go build -trimpath \
    -ldflags "-s -w -X $pkg.Version=$version -X $pkg.Commit=$commit" -o "$bin" .
  "$python" scripts/build_wheel.py --binary "$bin" --version "$version" \
    --platform "manylinux_2_17_$machine.manylinux2014_$machine" \
    --package python/verl_score --license LICENSE --readme python/README.md --out dist
  name=verl-score-$version-linux-$arch
  mkdir -p "dist/build/$name"
  cp "$bin" README.md LICENSE "dist/build/$name/"
  tar -C dist/build -czf "dist/$name.tar.gz" "$name"
done
rm -rf dist/build
(cd dist && sha256sum -- *.whl *.tar.gz > SHA256SUMS)
ls -l dist
