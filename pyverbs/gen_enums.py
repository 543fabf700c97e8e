# pyverbs/gen_enums.py: writes the C++ source of a pyverbs enum module from enums.list and headers.
"""Generate the C++ source of a pyverbs enum module.

The headers are read only for names: which enumerators each listed enum
block holds, and that each listed constant exists. Every value is left to
the compiler, which sees the very headers the libraries are built with, so
the tables cannot disagree with them.

usage: gen_enums.py --list enums.list --module NAME --output OUT.cpp HEADER...

NAME is the module's name under pyverbs, and its section in the list:
libibverbs_enums, or providers.mlx5.mlx5_enums for a provider's module.
"""

import argparse
import os
import re
import sys

# Comments become a space; string and character literals are matched first
# so that a comment opener inside one is left alone.
TOKEN_RE = re.compile(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'|/\*.*?\*/|//[^\n]*', re.S)
ENUM_RE = re.compile(r'\benum\s+(?:(\w+)\s*)?(?::\s*[\w\s]+?\s*)?\{')
IDENT_RE = re.compile(r'\s*([A-Za-z_]\w*)')


class Error(Exception):
    pass


def strip_comments(text):
    def keep_literals(m):
        s = m.group(0)
        if s.startswith('/'):
            # Keep the line count, for messages that point into the header.
            return ' ' + '\n' * s.count('\n')
        return s
    return TOKEN_RE.sub(keep_literals, text)


def split_top_level(body):
    """Split an enum body at the commas outside parentheses."""
    items, depth, start = [], 0, 0
    for i, c in enumerate(body):
        if c in '([':
            depth += 1
        elif c in ')]':
            depth -= 1
        elif c == ',' and depth == 0:
            items.append(body[start:i])
            start = i + 1
    items.append(body[start:])
    return [s.strip() for s in items if s.strip()]


class Header:
    def __init__(self, path):
        self.path = path
        self.include = include_name(path)
        with open(path, encoding='utf-8') as f:
            self.text = strip_comments(f.read())
        # name -> enumerators, in order; anonymous blocks under None.
        self.enums = {}
        self.anonymous = []
        for m in ENUM_RE.finditer(self.text):
            end = self.text.find('}', m.end())
            if end < 0:
                raise Error('%s: unterminated enum' % path)
            body = self.text[m.end():end]
            name = m.group(1)
            if re.search(r'^\s*#', body, re.M):
                # Both branches of a conditional would be taken: refuse
                # rather than emit members the compiler may not see.
                line = self.text.count('\n', 0, m.start()) + 1
                raise Error('%s:%d: preprocessor line inside enum %s is not supported'
                            % (path, line, name or '(anonymous)'))
            members = []
            for item in split_top_level(body):
                ident = IDENT_RE.match(item)
                if not ident:
                    raise Error('%s: cannot read enumerator %r of enum %s' % (path, item, name))
                members.append(ident.group(1))
            if name:
                self.enums[name] = members
            else:
                self.anonymous.extend(members)

    def defines(self, name):
        return re.search(r'^\s*#\s*define\s+%s\b' % re.escape(name), self.text, re.M) is not None


def include_name(path):
    """The name a user includes: infiniband/verbs.h for .../include/infiniband/verbs.h."""
    parts = os.path.normpath(os.path.abspath(path)).split(os.sep)
    if 'include' not in parts[:-1]:
        raise Error('%s: not under an include directory' % path)
    last = len(parts) - 1 - parts[::-1].index('include', 1)
    return '/'.join(parts[last + 1:])


def read_list(path, module):
    """The (enums, constants) entries of [module] in the list file.

    enums: [(name, [excluded enumerators], [listed members] or None)];
    constants: [(python, c)].
    """
    enums, consts, current, seen = [], [], None, False
    with open(path, encoding='utf-8') as f:
        for lineno, raw in enumerate(f, 1):
            line = raw.split('#', 1)[0].strip()
            if not line:
                continue
            where = '%s:%d' % (path, lineno)
            if line.startswith('['):
                current = line.strip('[]').strip()
                seen = seen or current == module
                continue
            if current != module:
                continue
            words = line.split()
            if words[0] == 'enum' and len(words) == 2:
                enums.append((words[1], [], None))
            elif words[0] == 'enum' and len(words) > 3 and words[2] == 'except':
                enums.append((words[1], words[3:], None))
            elif words[0] == 'enum' and len(words) > 3 and words[2] == '=':
                enums.append((words[1], [], words[3:]))
            elif words[0] == 'const' and len(words) == 2:
                consts.append((words[1], words[1]))
            elif words[0] == 'const' and len(words) == 4 and words[2] == '=':
                consts.append((words[1], words[3]))
            else:
                raise Error('%s: cannot read %r' % (where, line))
    if not seen:
        raise Error('%s: no [%s] section' % (path, module))
    return enums, consts


def known(headers, cname):
    """Whether cname is an enumerator or a macro of one of the headers."""
    return any(cname in h.anonymous or h.defines(cname)
               or any(cname in m for m in h.enums.values()) for h in headers)


def resolve(headers, enums, consts):
    """Each listed enum's kept enumerators, checked against the headers."""
    tables = []
    for name, excluded, listed in enums:
        if listed is not None:
            # A C enum our headers spell under another name (mlx5_api.h
            # #defines the mlx5dv names of the kernel's enums): its members
            # are listed, each an enumerator or macro of the headers.
            unknown = [x for x in listed if not known(headers, x)]
            if unknown:
                raise Error('enum %s: %s neither an enumerator nor a macro of the headers given'
                            % (name, ', '.join(unknown)))
            tables.append((name, listed))
            continue
        found = [h for h in headers if name in h.enums]
        if not found:
            raise Error('enum %s is in no header given (%s)'
                        % (name, ', '.join(h.include for h in headers)))
        if len(found) > 1:
            raise Error('enum %s is defined in several headers: %s'
                        % (name, ', '.join(h.include for h in found)))
        members = found[0].enums[name]
        stray = [x for x in excluded if x not in members]
        if stray:
            raise Error('enum %s has no %s to leave out' % (name, ', '.join(stray)))
        kept = [x for x in members if x not in excluded]
        if not kept:
            raise Error('enum %s would have no member' % name)
        tables.append((name, kept))
    for _, cname in consts:
        if not known(headers, cname):
            raise Error('constant %s is neither an enumerator nor a macro of the headers given'
                        % cname)
    return tables


def render(module, list_path, headers, tables, consts):
    out = []
    w = out.append
    w('// pyverbs.%s, generated by pyverbs/gen_enums.py from %s and %s: do not edit.'
      % (module, os.path.basename(list_path), ', '.join(h.include for h in headers)))
    w('#include "enum_tables.h"')
    w('')
    for h in headers:
        w('#include <%s>' % h.include)
    w('')
    w('namespace {')
    w('')
    w('using pyverbs::enums::Enum;')
    w('using pyverbs::enums::Value;')
    for name, members in tables:
        w('')
        # The prefix keeps the table from hiding the C enum type's name.
        w('const Value members_%s[] = {' % name)
        for m in members:
            w('    {"%s", %s},' % (m, m))
        w('};')
    if tables:
        w('')
        w('const Enum enum_list[] = {')
        for name, _ in tables:
            w('    {"%s", members_%s},' % (name, name))
        w('};')
    if consts:
        w('')
        w('const Value constants[] = {')
        for py_name, cname in consts:
            w('    {"%s", %s},' % (py_name, cname))
        w('};')
    w('')
    w('}  // namespace')
    w('')
    # (the extension's own name is the last part of a dotted module name)
    w('PYBIND11_MODULE(%s, m) {' % module.rsplit('.', 1)[-1])
    includes = ', '.join('<%s>' % h.include for h in headers)
    if tables:
        w('    m.doc() = "The enumerations of %s as IntEnum classes, '
          'each member also a module attribute";' % includes)
    else:
        # (a module of anonymous enumerators only: efa_enums)
        w('    m.doc() = "The constants of %s as module attributes";' % includes)
    w('    pyverbs::enums::define(m, %s, %s);' % ('enum_list' if tables else '{}',
                                                  'constants' if consts else '{}'))
    w('}')
    return '\n'.join(out) + '\n'


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--list', required=True, help='the enums.list file')
    ap.add_argument('--module', required=True,
                    help='the section of the list, e.g. libibverbs_enums or providers.mlx5.mlx5_enums')
    ap.add_argument('--output', required=True, help='the C++ file to write')
    ap.add_argument('headers', nargs='+', help='the public headers, included in this order')
    args = ap.parse_args(argv)
    try:
        headers = [Header(p) for p in args.headers]
        enums, consts = read_list(args.list, args.module)
        tables = resolve(headers, enums, consts)
        text = render(args.module, args.list, headers, tables, consts)
    except (Error, OSError) as e:
        print('gen_enums.py: %s' % e, file=sys.stderr)
        return 1
    # An unchanged source keeps its time stamp, so that the build (the
    # custom command re-checks it) does not recompile the module for an
    # edit that changes no table, e.g. a comment in the list.
    try:
        with open(args.output, encoding='utf-8') as f:
            if f.read() == text:
                return 0
    except OSError:
        pass
    # Written under another name and renamed, so an interrupted run never
    # leaves a truncated source that looks up to date.
    tmp = args.output + '.tmp'
    with open(tmp, 'w', encoding='utf-8') as f:
        f.write(text)
    os.replace(tmp, args.output)
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
