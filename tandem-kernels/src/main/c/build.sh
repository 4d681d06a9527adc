#!/bin/sh
# Compiles the native int8 kernels (tandem_int8.c) into the module's classes, where NativeInt8
# finds them: run by the Maven build (tandem-kernels/pom.xml, phase process-classes) with the
# classes directory as its argument. Without gcc, or off x86-64, it says so and succeeds: the Java
# kernels run, and NativeInt8 logs one INFO line saying why.
set -u
classes="$1"
dir="$classes/dev/tandem/kernels/native"
library="$dir/libtandem_int8.so"
source="$(dirname "$0")/tandem_int8.c"
rm -f "$library" # a library of an earlier build must not outlive a build without a compiler
if ! command -v gcc >/dev/null 2>&1; then
  echo "tandem-kernels: no gcc on the path, no native int8 kernels: the Java kernels run"
  exit 0
fi
case "$(uname -m)" in
  x86_64 | amd64) ;;
  *)
    echo "tandem-kernels: $(uname -m) is not x86-64, no native int8 kernels: the Java kernels run"
    exit 0
    ;;
esac
mkdir -p "$dir"
# -ffp-contract=off: the kernels' float steps are their Java twins', operation for operation.
# No -march=native: the library loads on any x86-64, and NativeInt8 calls it only where the CPU
# lists avx2, fma and f16c.
if ! gcc -O3 -mavx2 -mfma -mf16c -ffp-contract=off -fPIC -shared -Wall -o "$library" "$source"; then
  echo "tandem-kernels: gcc failed, no native int8 kernels: the Java kernels run"
  rm -f "$library"
fi
exit 0
