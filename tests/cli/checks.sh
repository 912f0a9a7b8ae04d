# What the command-line test scripts share (sourced): a scratch directory $tmp removed
# on exit, check() counting passes and failures, and finish NAME printing the tally and
# giving the script's exit status.
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
pass=0; fail=0
check() {  # description, command...
  local what=$1; shift
  if "$@"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAILED: $what"; fi
}
finish() {  # name
  echo "$1: $pass passed, $fail failed"
  [[ $fail -eq 0 ]]
}
