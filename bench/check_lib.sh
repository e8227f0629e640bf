# check_lib.sh — what the prepared device checks (bench/device_check.sh,
# bench/pjrt_gpu_check.sh) share, sourced by both: a time budget every
# step is capped by, a log and a key/value results file under $outdir, and
# the raw output of each step kept in a tarball.
#
# The caller sets, then calls check_init:
#   budget      seconds for the whole script
#   outdir      where log.txt, results.tsv and raw.tar.gz go
#   synth_dir   a folder removed at exit (synthetic models)
#   STEP_RESERVE  seconds every step leaves for the end (default 15)
# and afterwards uses: left, say, put, get, step, verdict, $raw, $work,
# $log, $res.

check_init() {
  t_start=$(date +%s)
  mkdir -p "$outdir" || exit 3
  work=$(mktemp -d)
  raw="$work/raw"
  mkdir -p "$raw"
  log="$outdir/log.txt"
  : >"$log"
  res="$work/results.tsv"   # key \t value, the summary's source
  : >"$res"
  trap check_finish EXIT
}

check_finish() {
  tar -C "$work" -czf "$outdir/raw.tar.gz" raw 2>/dev/null
  cp "$res" "$outdir/results.tsv" 2>/dev/null
  rm -rf "$work" "$synth_dir"
}

left() { echo $((t_start + budget - $(date +%s))); }
say() { echo "$*" | tee -a "$log"; }
put() { printf '%s\t%s\n' "$1" "$2" >>"$res"; }
get() { awk -F'\t' -v k="$1" '$1 == k {v = $2} END {print v}' "$res"; }

# step NAME CAP CMD...: runs CMD with a timeout of CAP seconds, at most
# what is left less STEP_RESERVE; its output goes to raw/NAME.log and its
# tail to the log; NAME.s and NAME.rc into the results. Returns CMD's
# status, 125 when too little time was left to start it.
step() {
  local name=$1 cap=$2 l t0 rc
  shift 2
  l=$(( $(left) - ${STEP_RESERVE:-15} ))
  [ "$cap" -gt "$l" ] && cap=$l
  if [ "$cap" -lt 5 ]; then
    say "[$name] skipped: out of time"
    put "$name.rc" 125
    return 125
  fi
  t0=$(date +%s.%N)
  timeout --kill-after=5 "$cap" "$@" >"$raw/$name.log" 2>&1
  rc=$?
  put "$name.s" "$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}')"
  put "$name.rc" "$rc"
  { echo "[$name] rc=$rc ($(get "$name.s") s): $*"; tail -n 40 "$raw/$name.log"; } >>"$log"
  [ $rc = 124 ] && say "[$name] timed out after $cap s"
  return $rc
}

# verdict STATUS: a step's status in words.
verdict() {
  case $1 in 0) echo PASS ;; 77) echo "skipped (no device)" ;;
    124|137) echo "TIMEOUT (killed at the step's limit)" ;;
    125) echo "skipped: out of time" ;; *) echo "FAIL (exit $1)" ;; esac
}
