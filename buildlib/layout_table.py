#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause
"""Build C tables describing the ABI layout of a set of C headers.

`table` mode parses the headers with clang's JSON AST dump, picks every tagged
struct/union and every enum declared in the listed headers, plus every macro
they #define, and writes a C file whose initialisers make the C compiler
compute sizeof/_Alignof/offsetof/enumerator/macro values.  Compiling the same
kind of table once against reference headers and once against ours (two
translation units, as the tag names collide) gives two comparable key/value
lists.  `driver` mode writes the GoogleTest program comparing the two.

Keys:
  struct X:sizeof, struct X:alignof, struct X.f:offset, struct X.a.b:offset,
  struct X.bits:bitwidth, enum E:sizeof, enum E:NAME, NAME (anonymous enum),
  #define NAME (integer valued), #define NAME:defined (anything else but
  empty macros such as include guards, which are skipped).
Bitfields get a :bitwidth key taken from the AST (no C expression yields it);
their bit offset is not in clang's JSON dump and is not recorded.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile


def fail(msg):
    sys.stderr.write("layout_table.py: error: %s\n" % msg)
    sys.exit(1)


def clang_base(args):
    cmd = [args.clang, "-x", "c", "-std=gnu11"]
    for d in args.include:
        cmd += ["-I", d]
    return cmd


def tu_text(headers):
    return "".join("#include <%s>\n" % h for h in headers)


def resolve_headers(args, tu):
    """Return {header: realpath} as clang resolved them, checking each one
    comes from one of the expected directories."""
    res = subprocess.run(clang_base(args) + ["-E", "-H", "-o", os.devnull, tu],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         universal_newlines=True)
    if res.returncode != 0:
        fail("clang could not preprocess the headers:\n" + res.stderr)
    seen = []
    for line in res.stderr.splitlines():
        m = re.match(r"^\.+ (.*)$", line)
        if m:
            seen.append(os.path.realpath(m.group(1)))
    expect = args.expect_dir or args.include
    if not expect:
        fail("no expected include directory given")
    if args.depfile:
        # Every file the headers pulled in, so the build regenerates the
        # table when any of them changes (not only the listed headers).
        deps = sorted(set(seen))
        with open(args.depfile, "w") as f:
            f.write("%s: %s\n" % (args.output.replace(" ", "\\ "),
                                   " ".join(d.replace(" ", "\\ ") for d in deps)))
    resolved = {}
    for h in args.header:
        wanted = [os.path.realpath(os.path.join(d, h)) for d in expect]
        hits = [p for p in seen if p.endswith("/" + h)]
        good = [p for p in hits if p in wanted]
        if not good:
            fail("header <%s> was not resolved from %s (clang used: %s)" %
                 (h, " ".join(expect), ", ".join(hits) or "nothing"))
        resolved[h] = good[0]
    return resolved


class AstWalker:
    """Walks the JSON AST in document order.  clang only prints a location's
    file when it changes, so the current file is tracked along the way."""

    def __init__(self, wanted_files):
        self.wanted = set(wanted_files)
        self.cur_file = None
        self.records = []      # (tag, name, node) defined in wanted files
        self.enums = []        # (name or None, node) in wanted files
        self.by_tag = {}       # "struct foo" -> definition node (any file)

    def _track(self, obj):
        if isinstance(obj, dict):
            if "offset" in obj and "file" in obj:
                self.cur_file = obj["file"]
            for k, v in obj.items():
                if k == "includedFrom":
                    continue
                if isinstance(v, (dict, list)):
                    self._track(v)
        elif isinstance(obj, list):
            for v in obj:
                self._track(v)

    def walk(self, node):
        if "loc" in node:
            self._track(node["loc"])
        decl_file = self.cur_file
        if "range" in node:
            self._track(node["range"])
        kind = node.get("kind")
        here = decl_file is not None and os.path.realpath(decl_file) in self.wanted
        if kind == "RecordDecl" and node.get("completeDefinition"):
            if node.get("name"):
                tag = "%s %s" % (node["tagUsed"], node["name"])
                self.by_tag.setdefault(tag, node)
                if here:
                    self.records.append((tag, node))
        elif kind == "EnumDecl" and here and "inner" in node:
            self.enums.append((node.get("name"), node))
        for k, v in node.items():
            if k in ("loc", "range"):
                continue
            if k == "inner":
                for child in v:
                    self.walk(child)
            elif isinstance(v, (dict, list)):
                self._track(v)


def bitwidth(field):
    for c in field.get("inner", []):
        if "value" in c:
            return int(c["value"])
    return None


def field_keys(walker, tag, prefix, rec, out, depth):
    """Append (key, C expression) for every member of rec, flattening
    anonymous members and descending into named struct members."""
    if depth > 8:
        return
    inner = rec.get("inner", [])
    pending_anon = None
    for child in inner:
        kind = child.get("kind")
        if kind == "RecordDecl":
            pending_anon = child if not child.get("name") else None
            continue
        if kind != "FieldDecl":
            continue
        name = child.get("name")
        qual = child.get("type", {}).get("qualType", "")
        desugared = child.get("type", {}).get("desugaredQualType", qual)
        nested = None
        if "(anonymous" in qual or "(unnamed" in qual:
            nested = pending_anon
        elif re.fullmatch(r"(struct|union) \w+", desugared):
            nested = walker.by_tag.get(desugared)
        pending_anon = None
        if not name:
            if nested is not None:
                field_keys(walker, tag, prefix, nested, out, depth + 1)
            continue
        path = prefix + name
        if child.get("isBitfield"):
            out.append(("%s.%s:bitwidth" % (tag, path), str(bitwidth(child))))
            continue
        out.append(("%s.%s:offset" % (tag, path),
                    "offsetof(%s, %s)" % (tag, path)))
        if nested is not None:
            field_keys(walker, tag, path + ".", nested, out, depth + 1)


def macro_candidates(args, tu, wanted):
    """Object- and function-like macros #defined in the wanted files."""
    res = subprocess.run(clang_base(args) + ["-E", "-dD", tu],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         universal_newlines=True)
    if res.returncode != 0:
        fail("clang -E -dD failed:\n" + res.stderr)
    cur = None
    found = []
    for line in res.stdout.splitlines():
        m = re.match(r'^# \d+ "(.*)"', line)
        if m:
            cur = m.group(1)
            continue
        m = re.match(r"^#define (\w+)(\(?)(.*)$", line)
        if not m or cur is None or os.path.realpath(cur) not in wanted:
            continue
        name, paren, body = m.group(1), m.group(2), m.group(3).strip()
        found.append((name, bool(paren), body))
    return found


def integer_macros(args, headers, names):
    """Which macros are integer constant expressions: try them all in one
    probe file and drop those clang rejects until the file compiles."""
    names = list(names)
    for _ in range(50):
        if not names:
            return set()
        body = tu_text(headers)
        first = body.count("\n") + 1
        # An integer constant expression, not merely an address constant
        # (a string macro cast to long long would be accepted otherwise).
        body += "".join("_Static_assert(((long long)(%s)) || 1, \"\");\n" % n
                        for n in names)
        with tempfile.NamedTemporaryFile("w", suffix=".c", delete=False) as f:
            f.write(body)
            probe = f.name
        try:
            res = subprocess.run(clang_base(args) + ["-fsyntax-only", "-w",
                                                     "-ferror-limit=0", probe],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 universal_newlines=True)
        finally:
            os.unlink(probe)
        if res.returncode == 0:
            return set(names)
        bad = set()
        for m in re.finditer(re.escape(probe) + r":(\d+):\d+: error", res.stderr):
            idx = int(m.group(1)) - first
            if 0 <= idx < len(names):
                bad.add(idx)
        if not bad:
            fail("cannot classify macros:\n" + res.stderr)
        names = [n for i, n in enumerate(names) if i not in bad]
    fail("macro classification did not converge")


def c_string(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def cmd_table(args):
    with tempfile.TemporaryDirectory() as tmp:
        tu = os.path.join(tmp, "layout_tu.c")
        with open(tu, "w") as f:
            f.write(tu_text(args.header))
        resolved = resolve_headers(args, tu)
        wanted = set(resolved.values())
        res = subprocess.run(clang_base(args) + ["-fsyntax-only", "-Xclang",
                                                 "-ast-dump=json", tu],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if res.returncode != 0:
            fail("clang failed on the headers:\n" + res.stderr.decode())
        ast = json.loads(res.stdout)
        macros = macro_candidates(args, tu, wanted)

    walker = AstWalker(wanted)
    walker.walk(ast)

    entries = []
    for tag, rec in walker.records:
        entries.append(("%s:sizeof" % tag, "sizeof(%s)" % tag))
        entries.append(("%s:alignof" % tag, "_Alignof(%s)" % tag))
        field_keys(walker, tag, "", rec, entries, 0)
    for name, en in walker.enums:
        if name:
            entries.append(("enum %s:sizeof" % name, "sizeof(enum %s)" % name))
        for c in en.get("inner", []):
            if c.get("kind") != "EnumConstantDecl":
                continue
            key = ("enum %s:%s" % (name, c["name"])) if name else c["name"]
            entries.append((key, "(long long)(%s)" % c["name"]))

    plain = [n for n, fn, body in macros if not fn and body]
    ints = integer_macros(args, args.header, sorted(set(plain)))
    for n, fn, body in macros:
        if not fn and not body:
            continue  # include guards and empty markers carry no ABI
        if n in ints:
            entries.append(("#define " + n, "(long long)(%s)" % n))
        else:
            entries.append(("#define %s:defined" % n, "1"))

    seen = set()
    lines = []
    for key, expr in entries:
        if key in seen:
            continue
        seen.add(key)
        lines.append("\t{ %s, %s },\n" % (c_string(key), expr))

    sym = args.symbol
    with open(args.output + ".tmp", "w") as f:
        f.write("/* Generated by buildlib/layout_table.py; do not edit. */\n")
        f.write("#include <stddef.h>\n")
        f.write(tu_text(args.header))
        f.write("\nstruct layout_entry { const char *key; long long value; };\n\n")
        f.write("const struct layout_entry %s[] = {\n" % sym)
        f.writelines(lines)
        f.write("};\n")
        f.write("const unsigned long %s_count = sizeof(%s) / sizeof(%s[0]);\n"
                % (sym, sym, sym))
    os.replace(args.output + ".tmp", args.output)


DRIVER = r'''// Generated by buildlib/layout_table.py; do not edit.
// Compares the layout table of our headers against the reference's.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <string>

struct layout_entry {
	const char *key;
	long long value;
};

extern "C" const struct layout_entry @REF@[];
extern "C" const unsigned long @REF@_count;
extern "C" const struct layout_entry @OURS@[];
extern "C" const unsigned long @OURS@_count;

namespace {

std::map<std::string, long long> to_map(const layout_entry *e, unsigned long n)
{
	std::map<std::string, long long> m;
	for (unsigned long i = 0; i < n; i++)
		m[e[i].key] = e[i].value;
	return m;
}

std::string trim(const std::string &s)
{
	auto b = s.find_first_not_of(" \t\r");
	if (b == std::string::npos)
		return "";
	return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

// An extras file lists keys only ours has, one per line, and keys whose
// value the newer upstream changed on purpose: "changed KEY = VALUE" (ours
// must hold exactly VALUE there).
std::set<std::string> read_extras(const std::string &path,
				  std::map<std::string, long long> &changed)
{
	std::set<std::string> keys;
	if (path.empty())
		return keys;
	std::ifstream in(path);
	EXPECT_TRUE(in.good()) << "cannot read extras file " << path;
	std::string line;
	while (std::getline(in, line)) {
		line = trim(line);
		// '#' starts a comment, except the one of a "#define NAME" key.
		auto hash = line.find('#', line.rfind("#define ", 0) == 0 ? 1 : 0);
		if (hash != std::string::npos)
			line = trim(line.substr(0, hash));
		if (line.rfind("changed ", 0) == 0) {
			auto eq = line.rfind(" = ");
			EXPECT_NE(eq, std::string::npos) << "bad changed line: " << line;
			if (eq != std::string::npos)
				changed[trim(line.substr(8, eq - 8))] = std::stoll(trim(line.substr(eq + 3)), nullptr, 0);
			continue;
		}
		if (!line.empty())
			keys.insert(line);
	}
	return keys;
}

} // namespace

TEST(Layout, @NAME@)
{
	auto ref = to_map(@REF@, @REF@_count);
	auto ours = to_map(@OURS@, @OURS@_count);
	std::map<std::string, long long> changed;
	auto extras = read_extras("@EXTRAS@", changed);
	unsigned long compared = 0;

	for (const auto &[key, value] : ref) {
		auto it = ours.find(key);
		if (it == ours.end()) {
			ADD_FAILURE() << "missing in ours: " << key
				      << " (reference " << value << ")";
			continue;
		}
		compared++;
		auto ch = changed.find(key);
		if (ch != changed.end()) {
			if (it->second != ch->second)
				ADD_FAILURE() << "changed key " << key << ": ours " << it->second
					      << ", expected " << ch->second << " (reference " << value << ")";
			else if (it->second == value)
				ADD_FAILURE() << "changed key equals the reference: " << key;
			continue;
		}
		if (it->second != value)
			ADD_FAILURE() << "mismatch: " << key << ": ours "
				      << it->second << ", reference " << value;
	}
	for (const auto &[key, value] : ours)
		if (!ref.count(key) && !extras.count(key))
			ADD_FAILURE() << "only in ours and not listed as an extra: "
				      << key << " = " << value;
	for (const auto &[key, value] : changed)
		if (!ref.count(key) || !ours.count(key))
			ADD_FAILURE() << "changed key not in both: " << key;
	for (const auto &key : extras) {
		if (!ours.count(key))
			ADD_FAILURE() << "stale extra (not in ours): " << key;
		else if (ref.count(key))
			ADD_FAILURE() << "extra is also in the reference: " << key;
	}
	std::printf("layout @NAME@: %lu keys compared (reference %zu, ours %zu, "
		    "extras %zu)\n", compared, ref.size(), ours.size(),
		    extras.size());
}
'''


def cmd_driver(args):
    text = (DRIVER.replace("@REF@", args.ref_symbol)
            .replace("@OURS@", args.our_symbol)
            .replace("@NAME@", re.sub(r"\W", "_", args.name))
            .replace("@EXTRAS@", args.extras or ""))
    with open(args.output + ".tmp", "w") as f:
        f.write(text)
    os.replace(args.output + ".tmp", args.output)


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="mode", required=True)
    t = sub.add_parser("table", help="write a layout table C file")
    t.add_argument("--clang", default="clang")
    t.add_argument("--include", "-I", action="append", default=[],
                   help="include directory, searched in order before the system's")
    t.add_argument("--expect-dir", action="append", default=[],
                   help="directory the headers must resolve from "
                        "(default: the --include directories)")
    t.add_argument("--header", action="append", required=True,
                   help="header relative to an include directory, e.g. rdma/ib_user_verbs.h")
    t.add_argument("--depfile", help="write a make-style dependency file")
    t.add_argument("--symbol", required=True)
    t.add_argument("--output", required=True)
    d = sub.add_parser("driver", help="write the GoogleTest comparison program")
    d.add_argument("--name", required=True)
    d.add_argument("--ref-symbol", required=True)
    d.add_argument("--our-symbol", required=True)
    d.add_argument("--extras", default="")
    d.add_argument("--output", required=True)
    args = p.parse_args()
    if args.mode == "table":
        cmd_table(args)
    else:
        cmd_driver(args)


if __name__ == "__main__":
    main()
