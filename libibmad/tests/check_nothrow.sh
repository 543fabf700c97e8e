#!/bin/sh
# check_nothrow.sh LIB [ALLOWED_CXX_SYMBOL...]: LIB reaches no C++ code that
# can throw. Its dynamic imports may hold no operator new/new[], no
# __cxa_throw/__cxa_rethrow/__cxa_allocate_exception and no other C++
# (mangled) function than the ALLOWED ones (which must be noexcept). What is
# left is C: libc and other libraries' C entry points, which never throw.
# So every exported function of LIB is non-throwing without a C-entry
# barrier (see libibmad/rpc_internal.h).
set -u
lib=$1
shift
imports=$(nm -D --undefined-only "$lib" | awk '{print $NF}' | sed 's/@.*//') || exit 1
bad=$(printf '%s\n' "$imports" | grep -E '^(_Z|__cxa_throw$|__cxa_rethrow$|__cxa_allocate_exception$)' |
    while read -r sym; do
        ok=0
        for allowed in "$@"; do
            [ "$sym" = "$allowed" ] && ok=1
        done
        [ $ok = 1 ] || echo "$sym"
    done)
if [ -n "$bad" ]; then
    echo "check_nothrow: $lib imports C++ code that can allocate or throw:" >&2
    printf '%s\n' "$bad" | c++filt | sed 's/^/  /' >&2
    echo "(the entry points that reach it then need util/c_entry.h's barrier)" >&2
    exit 1
fi
echo "check_nothrow: $(printf '%s\n' "$imports" | wc -l) imports of $(basename "$lib"), none can throw"
