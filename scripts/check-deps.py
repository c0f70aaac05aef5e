#!/usr/bin/python3
"""Checks the #include structure of src/: folder rules and circles.

usage: check-deps.py [ROOT]   (ROOT holds src/; default: this repository)

Prints one line per problem and exits 1 when there is any:
- a forbidden include (the folder rules below, also in each folder's README);
- an include circle between files (a.h includes b.h includes a.h);
- a circle between modules. A module is foo.c with foo.h (a .c with no header
  of its own that only implements part of bar.h, which has bar.c, is part of
  module bar). Module A depends on module B when a file of A includes a header
  that declares a function defined in B's .c and A uses that function. So a
  header shared by several .c files (http/conn.h, execd/execd.h) yields the
  edges its users really take, and a header included only for its types adds
  none: what is flagged is a circle the linker would see;
- a circle between top-level folders of src/ (runtime/native counts as runtime).
"""
import os
import re
import sys

# folder -> folders it may not include ("*" = any folder outside ALLOWED).
FORBIDDEN = {
    "runtime": {"http", "image", "server"},
    "http": {"server", "runtime", "execd"},
    "net": {"server", "runtime", "execd"},
    "image": {"server", "runtime", "execd"},
    "vault": {"server", "runtime", "execd", "image"},
}
# folder -> the only folders it may include (besides itself).
ALLOWED = {
    "common": set(),
    "execd": {"common", "http"},
    # The clients talk to servers only through libopensandbox (lib/, the
    # public header osb/opensandbox.h); from src/ they take only common.
    "cli": {"common"},
    "mcp": {"common"},
}

INCLUDE_RE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)
COMMENT_RE = re.compile(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)
DEFINE_RE = re.compile(r'^\s*#.*(?:\\\n.*)*$', re.M)
# A function definition starts in column 0 and is not static.
DEF_RE = re.compile(r'^(?!static\b|typedef\b|extern\b)[A-Za-z_][\w \t\*]*?\b([A-Za-z_]\w*)\s*\(', re.M)
DECL_RE = re.compile(r'\b([A-Za-z_]\w*)\s*\(')
WORD_RE = re.compile(r'[A-Za-z_]\w*')
TAG_RE = re.compile(r'\b(?:struct|union|enum)\s+[A-Za-z_]\w*')


def strip(text):
    """Source without comments, strings and preprocessor lines."""
    return DEFINE_RE.sub("", COMMENT_RE.sub(lambda m: " " if m.group(0)[0] == "/" else '""', text))


def top(rel):
    """Top-level folder of a path relative to src/."""
    return rel.split("/", 1)[0]


def stem(rel):
    return rel.rsplit(".", 1)[0]


def close_paren(code, i):
    depth = 0
    for j in range(i, len(code)):
        if code[j] == "(":
            depth += 1
        elif code[j] == ")":
            depth -= 1
            if depth == 0:
                return j
    return len(code)


def definitions(code):
    """Names of the non-static functions a .c defines."""
    out = set()
    for m in DEF_RE.finditer(code):
        end = close_paren(code, m.end() - 1)
        if code[end + 1:].lstrip().startswith("{"):
            out.add(m.group(1))
    return out


class Tree:
    def __init__(self, root):
        self.src = os.path.join(root, "src")
        self.files = {}  # rel path -> {"inc": [rel], "code": str}
        for d, _, names in os.walk(self.src):
            for n in names:
                if n.endswith((".c", ".h")):
                    p = os.path.join(d, n)
                    rel = os.path.relpath(p, self.src)
                    with open(p, encoding="utf-8", errors="replace") as f:
                        text = f.read()
                    self.files[rel] = {"inc": INCLUDE_RE.findall(text), "code": strip(text)}
        self.defs = {r: definitions(f["code"]) for r, f in self.files.items() if r.endswith(".c")}
        self.decls = {r: set(DECL_RE.findall(f["code"])) for r, f in self.files.items()
                      if r.endswith(".h")}
        self.module = {r: self.module_of(r) for r in self.files}

    def module_of(self, rel):
        s = stem(rel)
        if rel.endswith(".h") or s + ".h" in self.files:
            return s
        # A .c without a header of its own: part of the one module whose
        # header (with a .c of the same name) declares what it defines.
        owners = {stem(h) for h, d in self.decls.items()
                  if d & self.defs[rel] and stem(h) + ".c" in self.files}
        return owners.pop() if len(owners) == 1 else s

    def includes(self):
        """(file, included file) pairs for the includes that name a file of src/."""
        for rel in sorted(self.files):
            for inc in self.files[rel]["inc"]:
                if inc in self.files:
                    yield rel, inc


def folder_rules(tree):
    out = []
    for rel, inc in tree.includes():
        a, b = top(rel), top(inc)
        if a == b:
            continue
        if b in FORBIDDEN.get(a, ()) or (a in ALLOWED and b not in ALLOWED[a]):
            out.append("forbidden include: src/%s includes %s (src/%s/ may not include src/%s/)"
                       % (rel, inc, a, b))
    return out


def sccs(nodes, edges):
    """Strongly connected components with more than one node (Tarjan, iterative)."""
    index, low, on, stack, out, n = {}, {}, set(), [], [], [0]
    for v0 in sorted(nodes):
        if v0 in index:
            continue
        work = [(v0, iter(sorted(edges.get(v0, ()))))]
        index[v0] = low[v0] = n[0]; n[0] += 1; stack.append(v0); on.add(v0)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = n[0]; n[0] += 1; stack.append(w); on.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop(); on.discard(w); comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return sorted(out)


def report(kind, comps, why):
    out = []
    for comp in comps:
        links = [why[(a, b)] for a in comp for b in comp if (a, b) in why]
        out.append("%s circle: %s (%s)" % (kind, " <-> ".join(comp), "; ".join(sorted(links))))
    return out


def file_circles(tree):
    edges, why = {}, {}
    for rel, inc in tree.includes():
        edges.setdefault(rel, set()).add(inc)
        why[(rel, inc)] = "%s includes %s" % (rel, inc)
    return report("file include", sccs(tree.files, edges), why)


def module_circles(tree):
    edges, why = {}, {}
    words = {}
    for rel, f in tree.files.items():
        # A struct, union or enum tag is a type, not a use of a function
        # that happens to share its name (struct osb_nat_create).
        code = TAG_RE.sub(" ", f["code"])
        words.setdefault(tree.module[rel], set()).update(WORD_RE.findall(code))
    for rel, inc in tree.includes():
        a = tree.module[rel]
        for c, defined in tree.defs.items():
            b = tree.module[c]
            if b == a:
                continue
            used = sorted(defined & tree.decls.get(inc, set()) & words[a])
            if used:
                edges.setdefault(a, set()).add(b)
                why.setdefault((a, b), "%s includes %s for %s() of %s" % (rel, inc, used[0], c))
    return report("module", sccs(set(tree.module.values()), edges), why)


def folder_circles(tree):
    edges, why = {}, {}
    for rel, inc in tree.includes():
        a, b = top(rel), top(inc)
        if a != b:
            edges.setdefault(a, set()).add(b)
            why.setdefault((a, b), "%s includes %s" % (rel, inc))
    return report("folder", sccs({top(r) for r in tree.files}, edges), why)


def check(root):
    tree = Tree(root)
    return folder_rules(tree) + file_circles(tree) + module_circles(tree) + folder_circles(tree)


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    problems = check(root)
    for p in problems:
        print(p)
    if problems:
        print("check-deps: %d problem(s); the rules are in scripts/check-deps.py" % len(problems))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
