#!/bin/bash
# debian_pyverbs_import.sh BUILD: Debian's python3-pyverbs (rdma-core 44's
# Cython modules, linked against libibverbs.so.1 and the providers' dv
# libraries) imports every one of its modules on our libraries
# (LD_LIBRARY_PATH=BUILD/lib). A module that binds a symbol or version node
# our libraries lack fails to load ("undefined symbol: ibv_unimport_dm,
# version IBVERBS_1.13" before IBVERBS_1.10/1.13 were complete). Also
# checks that the libibverbs the interpreter mapped is ours. Exit 77 when
# Debian's python3 or python3-pyverbs is missing.
set -u
build=${1:?usage: debian_pyverbs_import.sh BUILD}
py=/usr/bin/python3
[ -x "$py" ] && "$py" -c 'import pyverbs' 2>/dev/null || { echo "SKIP: Debian's python3-pyverbs not installed"; exit 77; }
LD_LIBRARY_PATH=$build/lib "$py" - "$build/lib" <<'PY'
import importlib, os, sys
import pyverbs
ours = os.path.realpath(sys.argv[1])
base = os.path.dirname(pyverbs.__file__)
mods = set()
for root, _, files in os.walk(base):
    for f in files:
        if f.endswith('.so') or (f.endswith('.py') and f != '__init__.py'):
            rel = os.path.relpath(os.path.join(root, f), base)
            mods.add('pyverbs.' + rel.split('.')[0].replace('/', '.'))
failed = 0
for m in sorted(mods):
    try:
        importlib.import_module(m)
    except Exception as e:
        failed += 1
        print('FAIL', m, '-', e)
imported = len(mods) - failed
maps = open('/proc/self/maps').read().split('\n')
verbs = {l.split()[-1] for l in maps if 'libibverbs.so' in l}
if not verbs or any(not os.path.realpath(p).startswith(ours + '/') for p in verbs):
    print('FAIL: libibverbs mapped from', sorted(verbs), 'not from', ours)
    failed += 1
print(f'{imported} of {len(mods)} modules imported on {sorted(verbs)}')
sys.exit(1 if failed else 0)
PY
