#!/usr/bin/env bash
# Compiled mode and the instruction set (core/config.hpp): a compiled-mode program built
# for another instruction set than the library must fail to link, naming
# `lancet_compiled_for_<set>`, and one built for the library's set must link. (The SIMD
# kernels' inline templates have the same names whatever the vector width: linked
# together, the two builds would mix widths, which ASan once caught as an overread.)
# The probe program includes only core/config.hpp: that alone makes it refer to the
# library's symbol, so the check costs two small compiles and links.
# Usage: run.sh COMPILER LIBRARY.a [extra compiler flags...]
set -uo pipefail
cxx=${1:?usage: run.sh COMPILER LIBRARY.a [flags...]}
lib=${2:?usage: run.sh COMPILER LIBRARY.a [flags...]}
shift 2
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/lancet-compiled-arch.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# The set the library was built for: the one `lancet_compiled_for_*` symbol it defines.
tags=$(nm -g --defined-only "$lib" 2>/dev/null | sed -n 's/.* lancet_compiled_for_\([a-z0-9_]*\)$/\1/p' | sort -u)
if [[ $(wc -w <<<"$tags") -ne 1 ]]; then
  echo "FAIL: $lib should define exactly one lancet_compiled_for_<set> symbol; it defines: ${tags:-none}"; exit 1
fi
echo "library built for: $tags"

cat > "$tmp/probe.cpp" <<'EOF'
#include <lancet/core/config.hpp>
int main() { return 0; }
EOF
# The flags the library's own build used for the instruction set (meson's -march=native
# when native_arch is on), and flags that select another set: baseline x86-64 (SSE2)
# against a library built for more, AVX2 + FMA against an SSE2 library.
same=()
for f in "$@"; do [[ $f == -march=* || $f == -m* ]] && same+=("$f"); done
if [[ $tags == sse2 ]]; then other=(-mavx2 -mfma); else other=(-march=x86-64 -mtune=generic); fi
build() {  # output, flags...
  local out=$1; shift
  "$cxx" -std=c++20 -DLANCET_COMPILED -I "$root/include" "$@" "$tmp/probe.cpp" "$lib" \
    -lzstd -llz4 -pthread -o "$tmp/$out" > "$tmp/$out.log" 2>&1
}
failed=0
if build other "${other[@]}"; then
  echo "FAIL: a program built with ${other[*]} linked against the library built for $tags"; failed=1
elif other_tag=$(sed -n 's/.*undefined reference to .lancet_compiled_for_\([a-z0-9_]*\).*/\1/p' "$tmp/other.log" | head -1) &&
     [[ -n $other_tag && $other_tag != "$tags" ]]; then
  echo "PASS: a program built with ${other[*]} fails to link: undefined lancet_compiled_for_$other_tag"
else
  echo "FAIL: a program built with ${other[*]} failed to link, but not naming another lancet_compiled_for_<set>:"
  head -20 "$tmp/other.log"; failed=1
fi
if build same "${same[@]}" && "$tmp/same"; then
  echo "PASS: a program built with the library's flags (${same[*]:-none}) links and runs"
else
  echo "FAIL: a program built with the library's flags (${same[*]:-none}) does not link or run:"
  head -20 "$tmp/same.log"; failed=1
fi
exit $failed
