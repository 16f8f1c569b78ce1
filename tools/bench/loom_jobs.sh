# The shell tools' part of loom_jobs.py (sourced, not run): the two kinds of job a tool that
# compares loom with Open MPI runs, and the check of what the job's program said about loom.
# Both kinds keep Open MPI's default coll selection, as a user's job does (no --mca coll list;
# on Open MPI 5 han takes part, on a site hcoll or ucc):
#   "${loom_job[@]}"   loom's plugin directory on the component path after Open MPI's own
#                      (set by loom_job_for PLUGIN_DIR);
#   "${no_loom_job[@]}" Open MPI's own component directory only, and loom excluded by name (a
#                      loom installed there, as the Debian package does, is left out too).
# The programs print what they found (tools/common/loom_state.h), and expect_loom checks it:
# a job that compares against loom must show that loom was enabled, not merely that it ran.
#   . "$(dirname "$0")/../bench/loom_jobs.sh"     (from tools/dev/; tools/sim/ alike)

ompi_components=$(ompi_info --parsable --path pkglibdir | cut -d: -f3)
no_loom_job=(--mca mca_base_component_path "$ompi_components" --mca coll ^loom)
loom_job=()

# loom_job_for PLUGIN_DIR: sets loom_job for the plugin (mca_coll_loom.so) in PLUGIN_DIR.
loom_job_for() {
  loom_job=(--mca mca_base_component_path "$ompi_components:$(realpath "$1")")
}

# expect_loom PROG enabled|absent OUTPUT_FILE COMMAND...: exits with status 1, naming what the
# program said and the job's COMMAND, unless OUTPUT_FILE (its output) has the line
# "# loom enabled on MPI_COMM_WORLD" (enabled) or "# loom not loaded" (absent). A loom job whose
# program or loom predates coll_loom_communicators_enabled (another build's, say) says only
# "# loom loaded": that passes, with a note.
expect_loom() {
  local prog=$1 file=$3 expected="# loom enabled on MPI_COMM_WORLD" kind="loom job" said
  [[ $2 == absent ]] && expected="# loom not loaded" kind="job without loom"
  shift 3
  grep -q "^$expected" "$file" && return 0
  if [[ $kind == "loom job" ]] && grep -qE "^# loom loaded(:| \()" "$file"; then
    echo "$prog: note: loom was loaded; whether it was enabled is not checked (this loom or its program predates coll_loom_communicators_enabled): $*" >&2
    return 0
  fi
  said=$(grep -m 1 -E "^# loom (enabled|loaded|not loaded)" "$file" || echo "nothing about loom")
  echo "$prog: the $kind's program said \"$said\", not \"$expected\": $*" >&2
  exit 1
}

# run_expecting PROG enabled|absent OUTPUT_FILE COMMAND...: runs the job COMMAND, its standard
# output to OUTPUT_FILE and its standard error to OUTPUT_FILE.err (shown if it fails: then this
# exits with its status), and expect_loom.
run_expecting() {
  local prog=$1 want=$2 file=$3 status=0
  shift 3
  "$@" >"$file" 2>"$file.err" || status=$?
  if [[ $status != 0 ]]; then
    cat "$file" "$file.err" >&2
    echo "$prog: the job failed (exit status $status): $*" >&2
    exit "$status"
  fi
  expect_loom "$prog" "$want" "$file" "$@"
}
