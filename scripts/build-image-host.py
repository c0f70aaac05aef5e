#!/usr/bin/python3
"""The --from-host half of build-image.sh: which installed packages an image
needs and which of the host's files they are.

  build-image-host.py closure PKG...   "package version" of PKG... and of
                                       their installed dependencies
                                       (Depends and Pre-Depends, recursively;
                                       of "a | b" the first installed one;
                                       virtual names by the installed package
                                       providing them), sorted
  build-image-host.py files PKG...     the files of that closure (dpkg -L),
                                       with symlinked directories resolved
                                       (/bin/sh is /usr/bin/sh on a merged-/usr
                                       host) and the update-alternatives links
                                       whose target is among them, NUL-separated

Exit 3 naming the packages that are not installed on the host.
"""
import os
import subprocess
import sys


def installed():
    """{name: (version, deps)} of installed packages, {virtual: [providers]}."""
    fmt = "${Package}\t${Architecture}\t${db:Status-Status}\t${Version}\t${Provides}\t" \
          "${Pre-Depends}, ${Depends}\n"
    out = subprocess.run(["dpkg-query", "-W", "-f", fmt], capture_output=True, text=True,
                         check=True).stdout
    native = subprocess.run(["dpkg", "--print-architecture"], capture_output=True, text=True,
                            check=True).stdout.strip()
    pkgs, provides = {}, {}
    for line in out.splitlines():
        f = line.split("\t")
        if len(f) < 6 or f[2] != "installed":
            continue
        name, arch = f[0], f[1]
        if name in pkgs and arch not in (native, "all"):
            continue  # a foreign-architecture copy of a package we have
        pkgs[name] = (f[3], f[5])
        for p in f[4].split(","):
            p = p.split("(")[0].strip()
            if p:
                provides.setdefault(p, []).append(name)
    return pkgs, provides


def resolve(name, pkgs, provides):
    name = name.split(":")[0]  # pkg:any, pkg:amd64
    if name in pkgs:
        return name
    for p in provides.get(name, []):
        return p
    return None


def closure(roots):
    pkgs, provides = installed()
    missing = [r for r in roots if r not in pkgs]
    if missing:
        sys.stderr.write("not installed on this host: %s (install them, or build with "
                         "--debootstrap)\n" % " ".join(missing))
        sys.exit(3)
    seen, todo = set(), list(roots)
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        for dep in pkgs[p][1].split(","):
            alts = [a.split("(")[0].strip() for a in dep.split("|")]
            for a in alts:
                r = resolve(a, pkgs, provides) if a else None
                if r:
                    todo.append(r)
                    break
    return sorted((p, pkgs[p][0]) for p in seen)


VIRTUAL = ("", "proc", "sys", "dev", "run", "tmp")


def canonical(path):
    d, b = os.path.split(path)
    return os.path.join(os.path.realpath(d), b)


def alternatives(have):
    """Master and slave links of update-alternatives whose target we ship."""
    out = []
    base = "/var/lib/dpkg/alternatives"
    try:
        names = os.listdir(base)
    except OSError:
        return out
    for name in names:
        try:
            with open(os.path.join(base, name)) as f:
                lines = f.read().split("\n")
        except OSError:
            continue
        # mode, master link, then (slave name, slave link) pairs up to "".
        links = [(name, lines[1])] if len(lines) > 1 else []
        i = 2
        while i + 1 < len(lines) and lines[i]:
            links.append((lines[i], lines[i + 1]))
            i += 2
        for alt, link in links:
            etc = "/etc/alternatives/" + alt
            try:
                target = os.path.realpath(etc)
            except OSError:
                continue
            if canonical(target) in have and os.path.islink(etc) and os.path.lexists(link):
                out += [etc, canonical(link)]
    return out


def files(roots):
    pkgs = [p for p, _ in closure(roots)]
    have = set()
    order = []
    # dpkg -L of many packages at once: one process.
    out = subprocess.run(["dpkg-query", "-L"] + pkgs, capture_output=True, text=True).stdout
    for line in out.splitlines():
        if not line.startswith("/"):
            continue  # "diverted by ...", "package diverts others to: ..."
        p = canonical(line) if line != "/." else "/"
        if p.split("/")[1] in VIRTUAL:
            continue  # mount points the runtime provides (udev lists /sys, ...)
        if p in have or p == "/" or not os.path.lexists(p):
            continue
        have.add(p)
        order.append(p)
    for p in alternatives(have):
        if p not in have:
            have.add(p)
            order.append(p)
    sys.stdout.write("".join(p.lstrip("/") + "\0" for p in order))


def main():
    if len(sys.argv) < 3 or sys.argv[1] not in ("closure", "files"):
        sys.stderr.write(__doc__)
        return 2
    if sys.argv[1] == "closure":
        for p, v in closure(sys.argv[2:]):
            print(p, v)
    else:
        files(sys.argv[2:])
    return 0


if __name__ == "__main__":
    sys.exit(main())
