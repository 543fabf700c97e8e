# pyverbs/tests/surface_check.py: checks our pyverbs's modules and names against the reference's.
"""Check that pyverbs has the modules and names of the reference surface.

usage: surface_check.py [SURFACE_LIST] [--missing FILE] [--module M]...

SURFACE_LIST is tab separated `module kind name` (kind `module` for the
module itself); default ../shared/surface/pyverbs.txt from the repo root.
Run with the package on the path (PYTHONPATH=build/python).

Passes when every module that imports has all its listed names, except
those the allow-list (surface-missing.txt beside this script) names, and
no allow-listed name is present after all. A module that is not built yet
is reported and allowed. Exit 77 (skip) when the surface list is absent.
"""

import argparse
import importlib
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
DEFAULT_SURFACE = os.path.join(REPO, '..', 'shared', 'surface', 'pyverbs.txt')
DEFAULT_MISSING = os.path.join(HERE, 'surface-missing.txt')
SKIP = 77


def read_surface(path):
    """{module: [(kind, name)]}, modules in the order of the list."""
    modules = {}
    with open(path, encoding='utf-8') as f:
        for lineno, line in enumerate(f, 1):
            line = line.rstrip('\n')
            if not line.strip() or line.startswith('#'):
                continue
            fields = line.split('\t')
            if len(fields) != 3:
                raise SystemExit('%s:%d: expected module<TAB>kind<TAB>name' % (path, lineno))
            module, kind, name = fields
            modules.setdefault(module, []).append((kind, name))
    return modules


def read_missing(path):
    """{(module, name): reason} from the allow-list."""
    allowed = {}
    if not os.path.exists(path):
        return allowed
    with open(path, encoding='utf-8') as f:
        for lineno, line in enumerate(f, 1):
            entry, _, reason = line.partition('#')
            words = entry.split()
            if not words:
                continue
            if len(words) != 2:
                raise SystemExit('%s:%d: expected `module name  # reason`' % (path, lineno))
            allowed[tuple(words)] = reason.strip() or 'no reason given'
    return allowed


def try_import(module):
    """(module object or None, why not).

    Only a pyverbs module that does not exist counts as not built: one that
    exists but fails to import is broken, and that is reported as an error.
    """
    try:
        return importlib.import_module(module), None
    except ModuleNotFoundError as e:
        if e.name and (e.name == 'pyverbs' or e.name.startswith('pyverbs.')):
            if e.name == module:
                return None, 'not built yet'
            return None, 'not built yet (needs %s)' % e.name
        return None, 'import failed: %r' % e
    except Exception as e:  # noqa: BLE001 - any import-time error is a finding
        return None, 'import failed: %r' % e


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('surface', nargs='?', default=DEFAULT_SURFACE,
                    help='the surface list (pyverbs.txt)')
    ap.add_argument('--missing', default=DEFAULT_MISSING, help='the allow-list of missing names')
    ap.add_argument('--module', action='append', metavar='M',
                    help='check only module M (repeatable), e.g. while others are being written')
    args = ap.parse_args(argv)

    if not os.path.exists(args.surface):
        print('pyverbs surface: %s not found, skipped' % args.surface)
        return SKIP
    surface = read_surface(args.surface)
    allowed = read_missing(args.missing)
    if args.module:
        unknown = [m for m in args.module if m not in surface]
        if unknown:
            raise SystemExit('not in the surface list: %s' % ' '.join(unknown))
        surface = {m: e for m, e in surface.items() if m in args.module}
        allowed = {k: r for k, r in allowed.items() if k[0] in args.module}

    errors = []
    listed = {(m, n) for m, entries in surface.items() for _, n in entries}
    for key in sorted(set(allowed) - listed):
        errors.append('%s %s: in %s but not in the surface list'
                      % (key[0], key[1], os.path.basename(args.missing)))

    present_total = total = 0
    not_built = []
    for module, entries in surface.items():
        total += len(entries)
        mod, why = try_import(module)
        if mod is None:
            print('%s: 0/%d present, %s' % (module, len(entries), why))
            if why.startswith('not built'):
                not_built.append(module)
            else:
                errors.append('%s: %s' % (module, why))
            continue
        missing = []
        for kind, name in entries:
            present = kind == 'module' or hasattr(mod, name)
            key = (module, name)
            if present and key in allowed:
                errors.append('%s %s: present, but listed as missing (%s)'
                              % (module, name, allowed[key]))
            elif not present:
                missing.append((kind, name))
                if key not in allowed:
                    errors.append('%s %s: missing (%s), not in the allow-list'
                                  % (module, name, kind))
        present_total += len(entries) - len(missing)
        print('%s: %d/%d present' % (module, len(entries) - len(missing), len(entries)))
        for kind, name in missing:
            reason = allowed.get((module, name))
            print('    missing %s %s: %s' % (kind, name, reason if reason else 'UNEXPECTED'))

    if not_built:
        print('not built yet (allowed): %s' % ' '.join(not_built))
    for e in errors:
        print('ERROR: %s' % e)
    print('pyverbs surface: %d/%d names present' % (present_total, total))
    return 1 if errors else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
