#!/usr/bin/env bash
# The test command (README, .ci/run): installs what the tests need when it is
# missing, then runs go test. Arguments go to go test; with no package named,
# it tests every package (./...):
#
#	./test.sh                        every package
#	./test.sh -race                  under the race detector, as .ci/run does
#	./test.sh -run Conformance ./store/...
#
# What the tests need besides Go:
#   - PostgreSQL's server binaries (initdb, pg_ctl) and psql: the tests start
#     their own throwaway cluster (internal/pgtest), no running server, and
#     store/postgres runs herald_append from psql. Not the server binaries
#     when HERALD_TEST_DATABASE_URL names a server to use instead.
#   - Chromium: the operator page's browser tests (daemon/page).
#   - Node.js and npm: projection/activitypub's Fedify verifier
#     (testdata/fedify, whose locked packages `npm ci` installs here when
#     they are missing or older than the lockfile). Fedify runs on Node 20
#     and later.
# The first three come from Debian's packages (postgresql, chromium,
# nodejs npm), installed with apt-get as root, or through sudo.
set -euo pipefail
cd "$(dirname "$0")"

have() { command -v "$1" >/dev/null 2>&1; }

have_postgres() {
  have psql || return 1
  [ -n "${HERALD_TEST_DATABASE_URL:-}" ] && return 0
  have pg_ctl && have initdb && return 0
  compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null
}

# The names daemon/page's browser tests look for on PATH.
have_chromium() {
  local name
  for name in chromium chromium-browser google-chrome google-chrome-stable headless-shell; do
    have "$name" && return 0
  done
  return 1
}

have_node() { have node && have npm; }

missing=()
have_postgres || missing+=(postgresql)
have_chromium || missing+=(chromium)
have_node || missing+=(nodejs npm)

if [ "${#missing[@]}" -gt 0 ]; then
  hint="install them and run ./test.sh again: apt-get update && apt-get install -y ${missing[*]}"
  if ! have apt-get; then
    echo "test.sh: the tests need ${missing[*]} and this machine has no apt-get; $hint (or your system's packages of the same)" >&2
    exit 1
  fi
  sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    if ! have sudo; then
      echo "test.sh: the tests need ${missing[*]}; installing needs root, and sudo is missing: as root, $hint" >&2
      exit 1
    fi
    sudo=(sudo)
  fi
  echo "== test.sh: installing ${missing[*]} (apt-get${sudo:+ through sudo})"
  export DEBIAN_FRONTEND=noninteractive
  if ! "${sudo[@]}" apt-get update -qq || ! "${sudo[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null; then
    echo "test.sh: could not install ${missing[*]}; $hint" >&2
    exit 1
  fi
  # Checked again: a package that installed is not yet a binary found.
  if ! have_postgres; then
    echo "test.sh: PostgreSQL's initdb, pg_ctl and psql are still missing after the install (looked on PATH and under /usr/lib/postgresql/*/bin)" >&2
    exit 1
  fi
  if ! have_chromium; then
    echo "test.sh: Chromium is still missing after the install (looked for chromium, chromium-browser, google-chrome, headless-shell on PATH)" >&2
    exit 1
  fi
  if ! have_node; then
    echo "test.sh: node or npm is still missing after the install" >&2
    exit 1
  fi
fi

# Fedify, for projection/activitypub's verifier test: installed from the
# lockfile when missing or older than it (npm keeps its own copy of the
# lockfile in node_modules).
fedify=projection/activitypub/testdata/fedify
if [ ! -d "$fedify/node_modules/@fedify/fedify" ] || [ "$fedify/package-lock.json" -nt "$fedify/node_modules/.package-lock.json" ]; then
  echo "== test.sh: npm ci in $fedify"
  if ! (cd "$fedify" && npm ci --no-audit --no-fund --loglevel=error >/dev/null); then
    echo "test.sh: npm ci in $fedify failed: the npm registry must be reachable once to install Fedify" >&2
    exit 1
  fi
fi

# Every package unless the arguments name some (./x, x/..., a module path).
packages=(./...)
for arg in "$@"; do
  case "$arg" in
    ./* | ../* | . | */... | github.com/*) packages=() ;;
  esac
done

# -count=1 runs the tests even when go test has a cached result; a -count
# among the arguments comes later and wins.
exec go test -count=1 "$@" "${packages[@]}"
