#!/usr/bin/env bash
# Checks that setup.sh stops with one clear line and a non-zero exit when it cannot install: as a user
# without root or sudo, without network, and on a system without apt-get. It changes the system it runs
# on (adds a user, hides apt-get for a moment), so it runs only on a throwaway one:
#   ../shared/tools/fresh-debian 'FEEDER_THROWAWAY_SYSTEM=1 tests/setup/check_failures.sh'
# Prints "N passed, N failed" and exits non-zero if any check failed.
set -uo pipefail
cd "$(dirname "$0")/../.."
if [ "${FEEDER_THROWAWAY_SYSTEM:-}" != 1 ] || [ "$(id -u)" -ne 0 ]; then
  echo "check_failures: run as root on a throwaway system with FEEDER_THROWAWAY_SYSTEM=1 (it adds a user and hides apt-get)" >&2
  exit 2
fi
if dpkg-query -W -f='${Status}' libtorch-dev 2>/dev/null | grep -q "install ok installed"; then
  echo "check_failures: needs a system where setup.sh has packages left to install (libtorch-dev is installed)" >&2
  exit 2
fi

passed=0
failed=0
# check NAME PATTERN COMMAND...: the command must exit non-zero and its last line must match PATTERN.
check() {
  local name="$1" pattern="$2"
  shift 2
  local output rc
  output=$("$@" 2>&1)
  rc=$?
  local last
  last=$(printf '%s\n' "$output" | tail -n 1)
  if [ "$rc" -ne 0 ] && [[ "$last" =~ $pattern ]]; then
    echo "PASS $name: exit $rc: $last"
    passed=$((passed + 1))
  else
    echo "FAIL $name: exit $rc, expected a non-zero exit and a last line matching '$pattern'; output:"
    printf '%s\n' "$output" | tail -n 5 | sed 's/^/    /'
    failed=$((failed + 1))
  fi
}

# A user who is not root, on a system without sudo.
command -v sudo >/dev/null && { echo "check_failures: sudo is installed here; this check needs a system without it" >&2; exit 2; }
id feeder-user >/dev/null 2>&1 || useradd --create-home feeder-user
chmod 755 /  # a chroot made in a mktemp folder has a 0700 root, which no other user could enter
copy=/home/feeder-user/project
rm -rf "$copy"; cp -R . "$copy"; chown -R feeder-user "$copy"
check "no root, no sudo" '^setup\.sh: need root to install .* there is no sudo: run it as root' \
  su feeder-user -s /bin/bash -c "cd $copy && ./setup.sh"

# No network: a network namespace with only a loopback that is down.
check "no network" '^setup\.sh: (apt-get update failed|could not install the packages).*check the network' \
  unshare --net ./setup.sh

# Not Debian: no apt-get on the PATH.
mv /usr/bin/apt-get /usr/bin/apt-get.hidden
check "no apt-get" '^setup\.sh: this is not a Debian system \(no apt-get\)' ./setup.sh
mv /usr/bin/apt-get.hidden /usr/bin/apt-get

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
