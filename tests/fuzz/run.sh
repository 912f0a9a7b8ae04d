#!/usr/bin/env bash
# Builds the libFuzzer targets (clang++ -fsanitize=fuzzer,address,undefined; one binary
# for all, tests/fuzz/all_targets.cpp) and runs each for a bounded time over a corpus seeded from real files LanceDB wrote (the
# fixtures in tests/fixtures: Lance files 2.0-2.2, manifests, transaction files,
# deletion files, index files) and from tests/fuzz/corpus/<target>. A crash,
# sanitizer report, uncaught non-lancet exception, allocation over -malloc_limit_mb,
# or an input slower than -timeout fails the run; the input is left in BUILD_DIR
# (TARGET-crash-*, TARGET-oom-*, ...). Targets:
#   fuzz_file      file bytes: footer, metadata, schema, every decoder
#   fuzz_page      2.1/2.2 pages of random fields, encoded by lancet, then edited
#                  (unedited pages must round-trip)
#   fuzz_manifest  manifests (footer, sections, index metadata) and transaction files
#   fuzz_index     index.idx and auxiliary.idx through the index readers
#   fuzz_deletion  deletion files: Arrow IPC and roaring bitmap forms, roaring treemaps
#   fuzz_json      the JSON schema reader and the JSON Lines rows reader
#   fuzz_filter    SQL filters: parsed, typed against every type family, evaluated
#   fuzz_scalar_index  BTREE, BITMAP and LABEL_LIST files and row-id sets
# Seed files for the binary targets get a first byte choosing the form (see each
# target's header). Time: SECONDS_PER_TARGET for fuzz_file and fuzz_page, half of it
# for each of the six others (30: 2.5 minutes of fuzzing in all, plus the builds).
#   tests/fuzz/run.sh [BUILD_DIR] [SECONDS_PER_TARGET] [TARGET...]   (defaults: build-fuzz 30, all)
# A single target alone: clang++ ... tests/fuzz/fuzz_page.cpp (each file is a complete target).
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-build-fuzz}
secs=${2:-30}
cxx=${LANCET_FUZZ_CXX:-$(command -v clang++ || command -v clang++-14 || true)}
if [[ -z $cxx ]]; then echo "fuzz: clang++ not found (scripts/install-deps installs clang-14)" >&2; exit 1; fi
shift $(( $# > 2 ? 2 : $# ))
targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || targets=(fuzz_file fuzz_page fuzz_manifest fuzz_index fuzz_deletion fuzz_json fuzz_filter fuzz_scalar_index)
rm -rf "$out/seed" "$out"/seed-*
mkdir -p "$out/seed" "$out/seed-fuzz_manifest" "$out/seed-fuzz_index" "$out/seed-fuzz_deletion" "$out/seed-fuzz_json"
while IFS= read -r f; do
  cp "$f" "$out/seed/$(printf '%s' "$f" | md5sum | cut -c1-16)"
done < <(find tests/fixtures -name '*.lance' -size -64k | sort)
# seed TARGET FORM_BYTE FIND_ARGS...: each file found, behind the byte choosing its form.
seed() {
  local target=$1 form=$2
  shift 2
  while IFS= read -r f; do
    { printf "\\x$form"; cat "$f"; } > "$out/seed-$target/$form-$(printf '%s' "$f" | md5sum | cut -c1-16)"
  done < <(find tests/fixtures "$@" -size -64k | sort)
}
seed fuzz_manifest 00 -name '*.manifest'
seed fuzz_manifest 01 -name '*.txn'
seed fuzz_index 00 -name index.idx
seed fuzz_index 01 -name auxiliary.idx
seed fuzz_deletion 00 -path '*_deletions/*' -name '*.arrow'
seed fuzz_deletion 01 -name '*.bin'
# Checked-in inputs (tests/fuzz/corpus/TARGET: hand-written seeds and inputs that once
# failed) join each target's seeds, so a fixed crash stays fixed.
for d in tests/fuzz/corpus/*/; do
  t=$(basename "$d"); mkdir -p "$out/seed-$t"; cp "$d"* "$out/seed-$t/"
done
# Fuzzers run LANCET_JOBS at a time (default 2): each is single-threaded.
jobs=${LANCET_JOBS:-2}
# Every target is compiled into one binary (tests/fuzz/all_targets.cpp: the library once,
# not once per target); each target's name is a link to it, and it runs the target it is
# called by.
build_all() {
  echo "fuzz: building ${targets[*]} (tests/fuzz/all_targets.cpp)"
  "$cxx" -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
    -Iinclude tests/fuzz/all_targets.cpp -o "$out/fuzz_all" -lzstd -llz4 2> "$out/fuzz_all.build.log" ||
    { cat "$out/fuzz_all.build.log" >&2; echo "fuzz: building FAILED" >&2; return 1; }
  local target
  for target in "${targets[@]}"; do ln -f "$out/fuzz_all" "$out/$target"; done
}
fuzz() {  # target
  local target=$1 max_len t seeds=()
  case $target in
    fuzz_page) max_len=256 t=$secs ;;
    fuzz_file) max_len=65536 t=$secs ;;
    fuzz_json) max_len=8192 t=$(( (secs + 1) / 2 )) ;;
    fuzz_filter) max_len=1024 t=$(( (secs + 1) / 2 )) ;;
    *) max_len=65536 t=$(( (secs + 1) / 2 )) ;;
  esac
  [[ $target == fuzz_file ]] && seeds=("$out/seed")
  [[ -d $out/seed-$target ]] && seeds+=("$out/seed-$target")
  mkdir -p "$out/corpus-$target"
  echo "fuzz: running $target for ${t}s"
  if ! "$out/$target" -max_total_time="$t" -rss_limit_mb=2048 -malloc_limit_mb=1024 -timeout=10 \
      -max_len=$max_len -seed=1 -print_final_stats=1 -artifact_prefix="$out/$target-" "$out/corpus-$target" "${seeds[@]}" \
      > "$out/$target.log" 2>&1; then
    tail -n 60 "$out/$target.log" >&2
    echo "fuzz: $target FAILED (log: $out/$target.log)" >&2
    return 1
  fi
  echo "fuzz: $target $(grep -E "^stat::number_of_executed_units" "$out/$target.log" | awk '{print $2}') executions"
}
each() {  # function: runs it for every target, $jobs at a time; fails if any failed
  local fn=$1 failed=0 running=0 target
  for target in "${targets[@]}"; do
    if (( running >= jobs )); then wait -n || failed=1; running=$((running - 1)); fi
    "$fn" "$target" & running=$((running + 1))
  done
  while (( running > 0 )); do wait -n || failed=1; running=$((running - 1)); done
  return $failed
}
build_all || exit 1
each fuzz || exit 1
echo "fuzz: no crash"
