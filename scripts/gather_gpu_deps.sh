#!/usr/bin/env bash
# Gathers what scripts/gpu_check.sh needs to build the tests and benchmarks on a GPU machine
# that has no network and no package manager: Catch2 (headers and CMake package, Debian
# `catch2`) and Google Benchmark (headers, shared library and CMake package, Debian
# `libbenchmark-dev`), copied from this machine's Debian packages into an ignored folder of the
# repository (default deps/), laid out as an install prefix for CMAKE_PREFIX_PATH. Symbolic
# links are copied as files, so the folder survives any way of moving the tree. Ends by
# measuring the tree that has to travel to the GPU machine (tracked and untracked files that
# git does not ignore, plus the folder), which must stay under 64 MiB.
#
# Usage: scripts/gather_gpu_deps.sh [DIR]   (default: deps; installs the packages if missing)
set -euo pipefail
cd "$(dirname "$0")/.."
dest=${1:-deps}
limit_mib=64

scripts/install_deps.sh catch2 libbenchmark-dev

# The shared library's own package (libbenchmark1debian on Debian 12): whatever owns the file
# that the development symlink points to.
multiarch=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
so_target=$(readlink -f "/usr/lib/$multiarch/libbenchmark.so")
runtime_pkg=$(dpkg -S "$so_target" | head -1 | cut -d: -f1)
packages=(catch2 libbenchmark-dev "$runtime_pkg")

tmp="$dest.tmp"
rm -rf "$tmp"
mkdir -p "$tmp"
# Every file or link of the packages under /usr/include and /usr/lib, at the same place below
# the prefix (the packages' CMake files find their prefix relative to themselves).
for pkg in "${packages[@]}"; do
  while IFS= read -r path; do
    case "$path" in
      /usr/include/*|/usr/lib/*) ;;
      *) continue ;;
    esac
    [ -f "$path" ] || continue  # directories (and links to them) are made as needed
    rel=${path#/usr/}
    mkdir -p "$tmp/$(dirname "$rel")"
    cp -L "$path" "$tmp/$rel"
  done < <(dpkg -L "$pkg")
done

{
  echo "Gathered by scripts/gather_gpu_deps.sh on $(date -u +%Y-%m-%dT%H:%M:%SZ) from:"
  for pkg in "${packages[@]}"; do
    echo "  $pkg $(dpkg-query -W -f='${Version}' "$pkg")"
  done
  if command -v objdump >/dev/null 2>&1; then
    echo "Symbol versions that libbenchmark needs from the GPU machine's C and C++ runtimes:"
    objdump -T "$so_target" | grep -oE '(GLIBC|GLIBCXX|CXXABI)_[0-9.]+' | sort -u -V | tr '\n' ' '
    echo
  fi
  echo "Use: cmake -DCMAKE_PREFIX_PATH=\$PWD/$dest ... (scripts/gpu_check.sh does)"
} > "$tmp/MANIFEST.txt"

rm -rf "$dest"
mv "$tmp" "$dest"
git check-ignore -q "$dest" || echo "warning: $dest is not ignored by git (.gitignore)" >&2
echo "gathered into $dest/:"
sed 's/^/  /' "$dest/MANIFEST.txt"

# What travels: the files git knows or would add, and the gathered folder.
tree_bytes=$(git ls-files -z --cached --others --exclude-standard |
  xargs -0 -r stat -c %s -- 2>/dev/null | awk '{ s += $1 } END { print s + 0 }')
deps_bytes=$(find "$dest" -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')
total=$((tree_bytes + deps_bytes))
awk -v t="$tree_bytes" -v d="$deps_bytes" -v a="$total" -v l="$limit_mib" -v dir="$dest" 'BEGIN {
  m = 1048576
  printf "travelling tree: %.2f MiB (sources %.2f MiB + %s/ %.2f MiB), limit %d MiB\n", a / m, t / m, dir, d / m, l
}'
if [ "$total" -gt $((limit_mib * 1048576)) ]; then
  echo "error: the tree that travels to the GPU machine exceeds $limit_mib MiB" >&2
  exit 1
fi
