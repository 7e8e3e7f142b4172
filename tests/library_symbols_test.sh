#!/usr/bin/env bash
# The library leaves the process alone: no object in feeder's library archives calls a function that
# changes the environment, replaces the program or changes glibc's malloc settings. Those belong to
# the program that owns the process (feeder's own executables do it in src/app/process_setup.cpp).
# Usage: tests/library_symbols_test.sh ARCHIVE...    Prints "N passed, N failed".
set -uo pipefail
forbidden='^(setenv|unsetenv|putenv|clearenv|execv|execve|execvp|execvpe|execl|execlp|execle|fexecve|mallopt)$'
passed=0
failed=0
for archive in "$@"; do
  if [ ! -f "$archive" ]; then
    echo "FAIL $archive: no such archive"; failed=$((failed + 1)); continue
  fi
  # Undefined symbols of every member: what the library calls from elsewhere.
  calls=$(nm --undefined-only --format=posix "$archive" 2>/dev/null | awk 'NF >= 2 && $2 == "U" {print $1}' |
          sed 's/@.*//' | grep -E "$forbidden" | sort -u | tr '\n' ' ')
  if [ -n "$calls" ]; then
    echo "FAIL $(basename "$archive") calls $calls"; failed=$((failed + 1))
  else
    echo "PASS $(basename "$archive") calls none of the process-changing functions"; passed=$((passed + 1))
  fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
