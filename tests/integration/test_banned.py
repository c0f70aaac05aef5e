"""scripts/check-banned.py: it finds a banned call in each scanned folder, not
one in a comment, a string or a longer name, and src/ (with fuzz/ and
tests/unit/) has none."""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from osbtest import TAP

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CHECK = os.path.join(ROOT, "scripts", "check-banned.py")
t = TAP()


def run_on(files):
    with tempfile.TemporaryDirectory() as d:
        for rel, text in files.items():
            p = os.path.join(d, rel)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "w") as f:
                f.write(text)
        r = subprocess.run([sys.executable, CHECK, d], capture_output=True, text=True, timeout=60)
        return r.returncode, r.stdout.splitlines()


HARMLESS = ('/* strcpy(a, b) would overflow */\n'
            'static const char *s = "sprintf(x)";\n'
            'int my_atoi(const char *s);\n'
            'void f(struct o *p) { p->strtok(1); x.gets(2); strtok_r(a, b, c); }\n')
rc, out = run_on({"src/common/a.c": HARMLESS})
t.ok(rc == 0 and out == [], "comments, strings, longer names and members are not calls",
     "\n".join(out))

for folder in ("src/server", "fuzz", "tests/unit/net"):
    rc, out = run_on({folder + "/a.c": HARMLESS + "\nvoid g(char *d)\n{\n    strcpy(d, \"x\");\n}\n"})
    t.ok(rc == 1 and any(l.startswith(folder + "/a.c:8: strcpy() is banned; use snprintf")
                         for l in out), "a strcpy call in %s/ is found, with its line" % folder,
         "\n".join(out))

rc, out = run_on({"src/x/b.h": "#define N(s) atoi (s)\nint v = atol(\"1\");\n"})
t.ok(rc == 1 and [l.split(" is banned")[0] for l in out if "is banned" in l] ==
     ["src/x/b.h:1: atoi()", "src/x/b.h:2: atol()"],
     "calls in a header and in a macro body are found", "\n".join(out))

r = subprocess.run([sys.executable, CHECK, ROOT], capture_output=True, text=True, timeout=60)
t.ok(r.returncode == 0, "the tree calls no banned function", r.stdout.strip())
t.done()
