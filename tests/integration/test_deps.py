"""The include rules of src/ (scripts/check-deps.py): first the checker on small
fake trees (it must find a forbidden include and each kind of circle, and pass
a clean tree), then the checker on the real src/, which fails the test suite
when a rule is broken."""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from osbtest import TAP

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CHECK = os.path.join(ROOT, "scripts", "check-deps.py")
t = TAP()

# A clean tree: execd uses http and common; server sits on top of everything;
# http/conn.h is shared by server.c and ws.c, but ws.c only uses server.c.
CLEAN = {
    "common/err.h": '#include <stddef.h>\nint osb_err_set(int code);\n',
    "common/err.c": '#include "common/err.h"\nint osb_err_set(int code)\n{\n    return -code;\n}\n',
    "http/conn.h": '#include "common/err.h"\nvoid conn_write(int c);\nvoid ws_data(int c);\n',
    "http/server.c": '#include "http/conn.h"\nvoid conn_write(int c)\n{\n    (void)c;\n}\n',
    "http/ws.c": ('#include "http/conn.h"\nvoid ws_data(int c)\n{\n'
                  '    conn_write(osb_err_set(c));\n}\n'),
    "runtime/runtime.h": 'struct ops { int (*create)(void); };\nint rt_start(void);\n',
    "runtime/runtime.c": ('#include "runtime/runtime.h"\n#include "runtime/native/native.h"\n'
                          'int rt_start(void)\n{\n    return native_ops.create();\n}\n'),
    # The backend includes the interface for its types only: no circle.
    "runtime/native/native.h": '#include "runtime/runtime.h"\nextern struct ops native_ops;\n',
    "runtime/native/native.c": ('#include "runtime/native/native.h"\nstatic int create(void)\n'
                                '{\n    return 0;\n}\nstruct ops native_ops = { create };\n'),
    "execd/main.c": '#include "http/conn.h"\nint main(void)\n{\n    ws_data(1);\n    return 0;\n}\n',
    "server/main.c": ('#include "runtime/runtime.h"\n#include "http/conn.h"\n'
                      'int main(void)\n{\n    return rt_start();\n}\n'),
}


def run_on(files):
    with tempfile.TemporaryDirectory() as d:
        for rel, text in files.items():
            p = os.path.join(d, "src", rel)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "w") as f:
                f.write(text)
        r = subprocess.run([sys.executable, CHECK, d], capture_output=True, text=True, timeout=60)
        return r.returncode, [l for l in r.stdout.splitlines() if not l.startswith("check-deps:")]


def with_(**changes):
    files = dict(CLEAN)
    for k, v in changes.items():
        files[k.replace("__", "/").replace("_dot_", ".")] = v
    return files


rc, out = run_on(CLEAN)
t.ok(rc == 0 and out == [], "a clean tree passes (shared header, backend including the interface)",
     "\n".join(out))

rc, out = run_on(with_(runtime__native__native_dot_c=CLEAN["runtime/native/native.c"]
                       + '#include "server/main.c"\n'))
t.ok(rc == 1 and any("forbidden include: src/runtime/native/native.c includes server/main.c" in l
                     for l in out), "runtime/native including server/ is forbidden", "\n".join(out))

rc, out = run_on(with_(execd__main_dot_c='#include "runtime/runtime.h"\n' + CLEAN["execd/main.c"]))
t.ok(rc == 1 and any("src/execd/ may not include src/runtime/" in l for l in out),
     "execd including anything but common/ and http/ is forbidden", "\n".join(out))

rc, out = run_on(with_(common__err_dot_c='#include "http/conn.h"\n' + CLEAN["common/err.c"]))
t.ok(rc == 1 and any("src/common/ may not include src/http/" in l for l in out),
     "common including another folder is forbidden", "\n".join(out))

# server.c now calls ws.c back through the shared conn.h: a call circle that
# no pair of includes shows by itself.
rc, out = run_on(with_(http__server_dot_c='#include "http/conn.h"\nvoid conn_write(int c)\n{\n'
                       '    ws_data(c);\n}\n'))
t.ok(rc == 1 and any(l.startswith("module circle: http/server <-> http/ws (") for l in out),
     "a call circle through a shared header is a module circle", "\n".join(out))

# a.c includes b.h, b.c includes a.h: the plain module circle.
rc, out = run_on(with_(**{
    "http/a.h": 'void a(void);\n', "http/b.h": 'void b(void);\n',
    "http/a.c": '#include "http/a.h"\n#include "http/b.h"\nvoid a(void)\n{\n    b();\n}\n',
    "http/b.c": '#include "http/b.h"\n#include "http/a.h"\nvoid b(void)\n{\n    a();\n}\n'}))
t.ok(rc == 1 and ["module circle" in l for l in out].count(True) == 1
     and any("http/a <-> http/b (http/a.c includes http/b.h for b() of http/b.c" in l for l in out),
     "a.c including b.h and b.c including a.h is one module circle", "\n".join(out))

rc, out = run_on(with_(**{"http/x.h": '#include "http/y.h"\n', "http/y.h": '#include "http/x.h"\n'}))
t.ok(rc == 1 and any(l.startswith("file include circle: http/x.h <-> http/y.h") for l in out),
     "headers including each other are a file circle", "\n".join(out))

# net and image are allowed to include each other, but not both ways.
rc, out = run_on(with_(**{
    "net/n.h": '#include "image/i.h"\n', "image/i.h": 'int i;\n',
    "image/i.c": '#include "net/n.h"\n'}))
t.ok(rc == 1 and any(l.startswith("folder circle: image <-> net") for l in out),
     "two folders including each other are a folder circle", "\n".join(out))

r = subprocess.run([sys.executable, CHECK, ROOT], capture_output=True, text=True, timeout=60)
t.ok(r.returncode == 0, "src/ keeps the include rules and has no circle",
     r.stdout.strip() or r.stderr.strip())
t.done()
