#!/usr/bin/env bash
# Builds the libFuzzer targets (clang++ -fsanitize=fuzzer,address,undefined) and runs
# each for a bounded time over a corpus seeded from the small Lance files in
# tests/fixtures (2.0, 2.1 and 2.2, ours and LanceDB's). A crash, sanitizer report,
# uncaught non-lancet exception, allocation over -malloc_limit_mb, or an input slower
# than -timeout fails the run; the input is left in BUILD_DIR (crash-*, oom-*, ...).
# Targets: fuzz_file (file bytes: footer, metadata, schema, every decoder) and
# fuzz_page (2.1/2.2 pages of random fields, encoded by lancet, then edited; unedited
# pages must round-trip).
#   tests/fuzz/run.sh [BUILD_DIR] [SECONDS_PER_TARGET]      (defaults: build-fuzz 30)
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-build-fuzz}
secs=${2:-30}
cxx=${LANCET_FUZZ_CXX:-$(command -v clang++ || command -v clang++-14 || true)}
if [[ -z $cxx ]]; then echo "fuzz: clang++ not found (scripts/install-deps installs clang-14)" >&2; exit 1; fi
mkdir -p "$out/seed"
while IFS= read -r f; do
  cp "$f" "$out/seed/$(printf '%s' "$f" | md5sum | cut -c1-16)"
done < <(find tests/fixtures -name '*.lance' -size -64k | sort)
for target in fuzz_file fuzz_page; do
  if [[ $target == fuzz_page ]]; then max_len=256; else max_len=65536; fi
  echo "fuzz: building $target"
  "$cxx" -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
    -Iinclude "tests/fuzz/$target.cpp" -o "$out/$target" -lzstd -llz4
  mkdir -p "$out/corpus-$target"
  echo "fuzz: running $target for ${secs}s"
  if ! "$out/$target" -max_total_time="$secs" -rss_limit_mb=2048 -malloc_limit_mb=1024 -timeout=10 \
      -max_len=$max_len -seed=1 -print_final_stats=1 -artifact_prefix="$out/" "$out/corpus-$target" $([[ $target == fuzz_file ]] && echo "$out/seed") \
      > "$out/$target.log" 2>&1; then
    tail -n 60 "$out/$target.log" >&2
    echo "fuzz: $target FAILED (log: $out/$target.log)" >&2
    exit 1
  fi
  grep -E "^stat::number_of_executed_units|^Done" "$out/$target.log" || true
done
echo "fuzz: no crash"
