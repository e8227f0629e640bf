# check.sh — the check harness of the shell tests; source it:
#   . "$(dirname "$0")/check.sh"
#   check "fresh run exits 0 (rc $rc)" [ "$rc" -eq 0 ]   # counts; fails when the command fails
#   check "says so" contains "$out" "already present"     # substring, saying what is missing
#   check_summary my_test                                 # prints the counts; status: all passed
# A failed check prints "FAIL: ..." and the script goes on, so one run
# reports every failure.
failures=0
checks=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
check() { # check DESCRIPTION COMMAND... : passes when COMMAND succeeds
    local what=$1
    shift
    checks=$((checks + 1))
    "$@" || fail "$what"
}
contains() { case $1 in *"$2"*) return 0 ;; *) echo "  missing '$2' in: $1" >&2; return 1 ;; esac; }
check_summary() { # check_summary NAME
    echo "$1: $checks checks, $failures failed"
    [ "$failures" -eq 0 ]
}
