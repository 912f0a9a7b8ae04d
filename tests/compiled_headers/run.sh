#!/usr/bin/env bash
# Compiled mode's headers (core/config.hpp): a public header X.hpp whose definitions live
# in X_impl.hpp must, with LANCET_COMPILED,
#   - compile on its own (its declarations name only what it includes),
#   - leave X_impl.hpp out, and
# X_impl.hpp must compile on its own too (a compiled-mode program includes it for the
# templates it holds). The umbrella lancet/lancet.hpp must then parse none of the
# definitions compiled mode moves into the library: no *_impl.hpp and none of the
# internal headers listed below.
# Usage: run.sh COMPILER LANCET_SOURCE_ROOT [extra compiler flags...]
set -uo pipefail
cxx=${1:?usage: run.sh COMPILER LANCET_SOURCE_ROOT}
root=${2:?usage: run.sh COMPILER LANCET_SOURCE_ROOT}
shift 2
inc="$root/include"
flags=(-std=c++20 -fsyntax-only -DLANCET_COMPILED -I "$inc" "$@")
tmp=$(mktemp -d "${TMPDIR:-/tmp}/lancet-compiled-headers.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
failed=0

# Compiles `#include <$1>` (-H lists what it includes into $tmp/included).
compiles() {
  printf '#include <%s>\n' "$1" > "$tmp/tu.cpp"
  if ! "$cxx" "${flags[@]}" -H "$tmp/tu.cpp" 2> "$tmp/out"; then
    echo "FAIL: $1 does not compile on its own in compiled mode:"; grep -v '^\.' "$tmp/out" | head -30; failed=1; return 1
  fi
  grep '^\.' "$tmp/out" | sed 's/^\.* //' | sed "s|^$inc/||" > "$tmp/included"
}

n=0
while IFS= read -r impl; do
  rel=${impl#"$inc/"}
  pub=${rel%_impl.hpp}.hpp
  [[ -f "$inc/$pub" ]] || continue
  n=$((n + 1))
  if compiles "$pub"; then
    if grep -qxF "$rel" "$tmp/included"; then echo "FAIL: $pub includes $rel in compiled mode"; failed=1
    else echo "PASS: $pub compiles alone without $rel"; fi
  fi
  compiles "$rel" && echo "PASS: $rel compiles alone"
done < <(find "$inc" -name '*_impl.hpp' | sort)
[[ $n -ge 5 ]] || { echo "FAIL: only $n public headers with an _impl.hpp found under $inc"; failed=1; }

# What the umbrella must not parse in compiled mode: the implementations above, and the
# internals they include (readers and decoders, writers' commit paths, index builders).
heavy=(lancet/dataset/fragment_reader.hpp lancet/encoding/structural/page_decoder.hpp
       lancet/encoding/structural/decompress.hpp lancet/index/build/stages.hpp lancet/index/build/shuffler.hpp
       lancet/index/ivf/storage_writer.hpp lancet/index/ivf/storage_reader.hpp lancet/index/registry.hpp
       lancet/index/kmeans/kmeans.hpp lancet/index/quantizer/pq/pq.hpp lancet/simd/distance.hpp lancet/core/parallel.hpp)
# ... nor the SIMD library and the thread pool, which only the kernels and the code that
# runs on a pool need (declaring a search or a build option names a pool, no more).
heavy_deps='/xsimd/xsimd\.hpp$|/boost/asio/thread_pool\.hpp$'

if compiles lancet/lancet.hpp; then
  bad=$(grep -E '_impl\.hpp$' "$tmp/included")
  for h in "${heavy[@]}"; do grep -qxF "$h" "$tmp/included" && bad+=$'\n'"$h"; done
  bad+=$'\n'$(grep -E "$heavy_deps" "$tmp/included")
  bad=$(sed '/^$/d' <<<"$bad" | sort -u)
  if [[ -n "$bad" ]]; then echo "FAIL: lancet/lancet.hpp in compiled mode includes:"; echo "$bad"; failed=1
  else echo "PASS: lancet/lancet.hpp in compiled mode includes no implementation header"; fi
fi
exit $failed
