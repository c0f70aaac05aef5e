#!/usr/bin/python3
"""Secure runtimes side by side (issue #11; printed, not asserted):

  create-to-ready p50/p99 (the SDK's sequence, as server_bench.py: POST
  /v1/sandboxes until 202, the two endpoint lookups, then execd's /ping
  through the server proxy until 200) on three real servers started at once,
  each with every knob that matters set explicitly:
    native         [runtime] type = "native", [native] user_namespaces = false
    native+userns  [runtime] type = "native", [native] user_namespaces = true
    gvisor         [runtime] type = "gvisor" (runsc, platform ptrace)
  all from the same imported busybox image (scripts/make-image-busybox.sh),
  entrypoint `tail -f /dev/null`, [network] mode --network (default "none").
  Beside them, the floor of the gvisor figure: a bare `runsc run` of the same
  rootfs (scripts/make-busybox-rootfs.sh, as the image is made), same global
  flags as the backend (--platform=ptrace --network=none --host-uds=create
  --ignore-cgroups), running `echo ready` into a pipe on its stdout: timed
  from the exec of runsc to that byte.
  The N rounds are interleaved (each round does one create of every mode, in
  a rotating order) so the machine's load falls on all modes alike.

  idle memory: one sandbox of each kind, ready and then left idle for
  --settle seconds:
    idle PSS    sum of Pss (/proc/<pid>/smaps_rollup) over all of the
                sandbox's host processes: native, execd (its PID 1) and its
                descendants; gvisor, every process whose command line names
                the sandbox id (runsc-sandbox, runsc-gofer) and their
                descendants (the ptrace stubs). Plus, both, the members of the
                sandbox's own cgroup if it has one.
    cgroup      the sandbox's own cgroup's memory.current (v2) or
                memory.usage_in_bytes (v1): everything charged to it, page
                cache included; "-" when it has none (gvisor with
                --ignore-cgroups).

Usage: secure_bench.py [--n 50] [--network none|nat] [--settle 2] [--json]
Needs root and runsc (without runsc: the native modes only, said so).
Servers: tests/integration/serverlib.py (temp dirs under $HOME, as the other
benches: /tmp is slower on this VM), pull_policy "never", DNS upstream a
closed local port, a subnet free on the host."""
import argparse, json, os, shutil, subprocess, sys, tempfile, time, types

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
from server_bench import CREATE_BODY, Client, pct  # noqa: E402
from serverlib import SERVER_BIN, Server, cg_base_name, free_subnet  # noqa: E402

RUNSC = shutil.which("runsc")
IMAGE = "busybox"
BODY = dict(CREATE_BODY, image={"uri": IMAGE}, entrypoint=["tail", "-f", "/dev/null"])
# The backend's global flags (src/runtime/gvisor/runsc.c), for the bare run.
RUNSC_FLAGS = ["--platform=ptrace", "--network=none", "--host-uds=create", "--ignore-cgroups"]

MODES = [  # name, [runtime] type, [native] user_namespaces
    ("native", "native", "false"),
    ("native+userns", "native", "true"),
    ("gvisor", "gvisor", "false"),
]


def sh(cmd):
    return " ".join(cmd)


# ------------------------------------------------------------------ servers
def start_server(name, rtype, userns, network, tar):
    """A serverlib.Server with the mode's knobs and the busybox image."""
    # serverlib gives each server a userns_range of its own (16 ranges),
    # free of every other server's on this machine (tests, other worktrees).
    native = "user_namespaces = %s" % userns
    subnet = free_subnet()
    extra = ('[network]\nmode = "%s"\nsubnet = "%s"\npool_size = 2\n'
             'dns_upstreams = ["127.0.0.1:9"]\n' % (network, subnet))
    if rtype == "gvisor":
        # Servers without a [gvisor] table ignore it (not one of their
        # tables); the start-up line below says which platform is used.
        extra += '[gvisor]\nplatform = "ptrace"\nrunsc = "%s"\n' % RUNSC
    s = Server(api_key="bench-" + os.urandom(6).hex(), native=native, extra=extra,
               tmp_dir=os.path.expanduser("~"), userns_slots=16)
    s.subnet = subnet  # released by stop()
    with open(s.config) as f:
        text = f.read()
    with open(s.config, "w") as f:
        f.write(text.replace("[runtime]\n", '[runtime]\ntype = "%s"\n' % rtype, 1))
    imp = [SERVER_BIN, "--config", s.config, "image", "import", IMAGE, tar]
    p = subprocess.run(imp, capture_output=True, text=True)
    if p.returncode != 0:
        s.stop()
        raise SystemExit("%s: image import failed: %s" % (name, p.stderr))
    s.start()
    if rtype == "gvisor" and "platform ptrace" not in s.log_text():
        s.stop()
        raise SystemExit("gvisor server does not say it runs platform ptrace:\n" + s.log_text())
    s.bench = types.SimpleNamespace(name=name, client=Client(types.SimpleNamespace(
        port=s.port, key=s.api_key)), ready=[], fails=0, errors=[])
    s.bench.commands = [sh(imp), sh([SERVER_BIN, "--config", s.config])]
    s.bench.knobs = knob_lines(s.config)
    with open(s.config) as f:
        s.bench.config_text = f.read()
    s.bench.says = [l.split(": ", 1)[-1] for l in s.log_text().splitlines()
                    if "sandbox runtime" in l or "user namespace" in l]
    return s


def knob_lines(cfg):
    """The config lines that decide what a sandbox is, for the report."""
    keep, table, out = ("type", "user_namespaces", "userns_range", "mode", "platform", "runsc"), "", []
    with open(cfg) as f:
        for line in f:
            line = line.strip()
            if line.startswith("["):
                table = line
            elif line.split(" ", 1)[0] in keep:
                out.append("%s %s" % (table, line))
    return out


def one_create(s):
    b = s.bench
    try:
        sid, secs = b.client.create_ready(BODY)
        b.ready.append(secs * 1000)
        b.client.delete(sid)
    except Exception as e:  # counted, reported; the other modes go on
        b.fails += 1
        if len(b.errors) < 3:
            b.errors.append(str(e)[:300])


# ------------------------------------------------------------ bare runsc run
class BareRunsc:
    """`runsc run` of the busybox rootfs, `echo ready` on a pipe: exec to byte."""

    def __init__(self, tmp):
        self.tmp = tmp
        self.root = os.path.join(tmp, "runsc")
        self.bundle = os.path.join(tmp, "bundle")
        os.makedirs(self.root)
        os.makedirs(self.bundle)
        env = dict(os.environ, EXECD_BIN="/nonexistent")  # the image has no execd either
        subprocess.run([os.path.join(ROOT, "scripts", "make-busybox-rootfs.sh"),
                        os.path.join(self.bundle, "rootfs")], env=env, check=True,
                       stderr=subprocess.DEVNULL)
        spec = {"ociVersion": "1.0.2",
                "process": {"terminal": False, "user": {"uid": 0, "gid": 0},
                            "args": ["/bin/echo", "ready"], "cwd": "/",
                            "env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]},
                "root": {"path": "rootfs", "readonly": True},
                "hostname": "bare",
                "mounts": [{"destination": "/proc", "type": "proc", "source": "proc"},
                           {"destination": "/sys", "type": "sysfs", "source": "sysfs"}],
                "linux": {"namespaces": [{"type": t} for t in
                                         ("pid", "ipc", "uts", "mount", "network")]}}
        with open(os.path.join(self.bundle, "config.json"), "w") as f:
            json.dump(spec, f)
        self.ready, self.fails, self.errors, self.seq = [], 0, [], 0
        self.name = "runsc run (bare)"

    def cmd(self, cid):
        return [RUNSC, "--root=" + self.root] + RUNSC_FLAGS + ["run", "--bundle", self.bundle, cid]

    def once(self):
        self.seq += 1
        cid = "bare-%d" % self.seq
        t0 = time.perf_counter()
        p = subprocess.Popen(self.cmd(cid), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, cwd=self.bundle)
        first = p.stdout.read(1)
        secs = time.perf_counter() - t0
        rest = p.stdout.read()
        err = p.stderr.read()
        rc = p.wait()
        if first + rest == b"ready\n" and rc == 0:
            self.ready.append(secs * 1000)
        else:
            self.fails += 1
            if len(self.errors) < 3:
                self.errors.append("rc %d, out %r, err %r" % (rc, first + rest, err[-300:]))
        subprocess.run([RUNSC, "--root=" + self.root] + RUNSC_FLAGS + ["delete", "--force", cid],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


# ------------------------------------------------------------------- memory
def children_map():
    kids = {}
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % p) as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        kids.setdefault(ppid, []).append(int(p))
    return kids


def with_descendants(roots):
    kids, out, todo = children_map(), set(), list(roots)
    while todo:
        p = todo.pop()
        if p not in out:
            out.add(p)
            todo += kids.get(p, [])
    return out


def cmdline_pids(marker):
    out = []
    for p in os.listdir("/proc"):
        if not p.isdigit() or int(p) == os.getpid():
            continue
        try:
            with open("/proc/%s/cmdline" % p, "rb") as f:
                if marker.encode() in f.read():
                    out.append(int(p))
        except OSError:
            pass
    return out


def cgroup_mounts():
    """{"v2": dir} and/or {"memory": dir} from /proc/self/mounts."""
    out = {}
    with open("/proc/self/mounts") as f:
        for line in f:
            _, mnt, fstype, opts = line.split()[:4]
            if fstype == "cgroup2":
                out.setdefault("v2", mnt)
            elif fstype == "cgroup" and "memory" in opts.split(","):
                out["memory"] = mnt
    return out


def sandbox_cgroup(pid, marks):
    """(memory file, procs dir) of the pid's cgroup when it is the sandbox's
    own (its path names one of marks), else (None, None)."""
    mounts = cgroup_mounts()
    try:
        with open("/proc/%d/cgroup" % pid) as f:
            lines = f.read().splitlines()
    except OSError:
        return None, None
    for line in lines:
        hid, ctrls, path = line.split(":", 2)
        if not any(m in path for m in marks):
            continue
        if hid == "0" and "v2" in mounts:
            d = mounts["v2"] + path
            if os.path.exists(d + "/memory.current"):
                return d + "/memory.current", d
        if "memory" in ctrls.split(",") and "memory" in mounts:
            d = mounts["memory"] + path
            return d + "/memory.usage_in_bytes", d
    return None, None


def cgroup_procs(d):
    out = set()
    for sub, _, files in os.walk(d):
        if "cgroup.procs" in files:
            try:
                with open(os.path.join(sub, "cgroup.procs")) as f:
                    out |= {int(x) for x in f.read().split()}
            except OSError:
                pass
    return out


def pss_kib(pid):
    """{"Pss": kB, "Pss_Anon": kB, ...} of one process (smaps_rollup)."""
    out = {}
    try:
        with open("/proc/%d/smaps_rollup" % pid) as f:
            for line in f:
                if line.startswith("Pss"):
                    k, v = line.split()[:2]
                    out[k.rstrip(":")] = int(v)
    except OSError:
        pass
    return out


def idle_memory(s, settle):
    """One idle sandbox of the server's kind: PSS, cgroup bytes, processes."""
    b = s.bench
    sid, _ = b.client.create_ready(BODY)
    try:
        time.sleep(settle)  # let it fall idle (a bench, not a test)
        if b.name == "gvisor":
            roots = cmdline_pids(sid)
        else:
            roots = [s.pid_of(sid)]
        procs = with_descendants([p for p in roots if p])
        marks = (sid, cg_base_name(s.state_dir) + "/")
        mem_file, cg_dir = None, None
        for p in sorted(procs):  # the first that is in a cgroup of its own
            mem_file, cg_dir = sandbox_cgroup(p, marks)
            if cg_dir:
                break
        if cg_dir:
            procs |= cgroup_procs(cg_dir)
        cg = None
        if mem_file:
            with open(mem_file) as f:
                cg = int(f.read()) / 2**20
        pss = [pss_kib(p) for p in procs]
        part = {k: sum(x.get(k, 0) for x in pss) / 1024 for k in ("Pss_Anon", "Pss_File", "Pss_Shmem")}
        return {"idle_pss_mib": sum(x.get("Pss", 0) for x in pss) / 1024, "cgroup_mib": cg,
                "pss_parts_mib": part,
                "cgroup_file": mem_file, "processes": sorted(procs),
                "process_names": sorted(proc_name(p) for p in procs)}
    finally:
        b.client.delete(sid)


def proc_name(pid):
    """argv[0]'s base name: runsc re-executes itself, so every comm is "exe";
    the Sentry's ptrace stubs have an empty command line."""
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            argv0 = f.read().split(b"\0", 1)[0].decode("utf-8", "replace")
    except OSError:
        return "?"
    return os.path.basename(argv0) or "(stub)"


# ------------------------------------------------------------------- report
def row(name, ready, fails, mem):
    r = {"mode": name, "n": len(ready), "failed": fails,
         "p50_ms": pct(ready, .5) if ready else None, "p99_ms": pct(ready, .99) if ready else None,
         "max_ms": max(ready) if ready else None}
    if mem:
        r.update(mem)
    return r


def fmt(v, spec):
    return "-" if v is None else format(v, spec)


def print_table(rows):
    print("%-18s %4s %9s %9s %14s %11s" % ("mode", "n", "p50 ms", "p99 ms", "idle PSS MiB",
                                          "cgroup MiB"))
    for r in rows:
        fail = "  (%d FAILED)" % r["failed"] if r["failed"] else ""
        print("%-18s %4d %9s %9s %14s %11s%s" % (
            r["mode"], r["n"], fmt(r["p50_ms"], ".1f"), fmt(r["p99_ms"], ".1f"),
            fmt(r.get("idle_pss_mib"), ".1f"), fmt(r.get("cgroup_mib"), ".1f"), fail))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=50, help="creates per mode (default 50)")
    ap.add_argument("--network", choices=("none", "nat"), default="none",
                    help='[network] mode of the servers (default "none", as the bare run)')
    ap.add_argument("--settle", type=float, default=2.0,
                    help="seconds an idle sandbox is left before its memory is read")
    ap.add_argument("--json", action="store_true", help="one JSON document instead of the table")
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("secure bench skipped: needs root")
        return
    modes = MODES if RUNSC else MODES[:2]
    tmp = tempfile.mkdtemp(prefix=".osb-bench-secure.", dir=os.path.expanduser("~"))
    servers, bare = [], None
    try:
        tar = os.path.join(tmp, "busybox.tar")
        subprocess.run([os.path.join(ROOT, "scripts", "make-image-busybox.sh"), tar], check=True)
        for name, rtype, userns in modes:
            servers.append(start_server(name, rtype, userns, a.network, tar))
        subjects = [(s.bench.name, lambda s=s: one_create(s)) for s in servers]
        if RUNSC:
            bare = BareRunsc(os.path.join(tmp, "bare"))
            subjects.append((bare.name, bare.once))
        load0 = os.getloadavg()
        for _ in range(3):  # warm-up: page cache, network pools, runsc's first start
            for _, f in subjects:
                f()
        for s in servers:
            s.bench.ready, s.bench.fails, s.bench.errors = [], 0, []
        if bare:
            bare.ready, bare.fails, bare.errors = [], 0, []
        t0 = time.monotonic()
        for i in range(a.n):
            k = i % len(subjects)
            for _, f in subjects[k:] + subjects[:k]:
                f()
        took = time.monotonic() - t0
        load1 = os.getloadavg()
        rows = []
        for s in servers:
            mem = idle_memory(s, a.settle)
            rows.append(row(s.bench.name, s.bench.ready, s.bench.fails, mem))
            rows[-1].update(commands=s.bench.commands, config=s.bench.knobs,
                            config_text=s.bench.config_text,
                            server_says=s.bench.says, errors=s.bench.errors)
        if bare:
            rows.append(row(bare.name, bare.ready, bare.fails, None))
            rows[-1].update(commands=[sh(bare.cmd("bare-N"))], errors=bare.errors,
                            process=["/bin/echo", "ready"], bundle=bare.bundle)
        doc = {"bench": "secure_bench", "argv": [sys.executable] + sys.argv, "n": a.n,
               "network": a.network, "image": IMAGE, "entrypoint": BODY["entrypoint"],
               "cpus": os.cpu_count(), "loadavg_before": load0, "loadavg_after": load1,
               "rounds_seconds": took, "runsc": runsc_version(), "rows": rows}
        if not RUNSC:
            doc["note"] = "runsc is not installed: gvisor and the bare runsc run were skipped"
        report(doc, a.json)
    finally:
        for s in servers:
            problems = s.stop()
            if problems:
                print("# server %s teardown: %s" % (s.bench.name, "; ".join(problems)),
                      file=sys.stderr)
        shutil.rmtree(tmp, ignore_errors=True)


def runsc_version():
    if not RUNSC:
        return None
    p = subprocess.run([RUNSC, "--version"], capture_output=True, text=True)
    return p.stdout.splitlines()[0] if p.stdout else None


def report(doc, as_json):
    if as_json:
        print(json.dumps(doc, indent=1))
        return
    print("# secure runtimes: %d creates per mode in interleaved rounds (%.0f s), image %s, "
          "[network] mode %s, %d CPUs, load average %.2f before / %.2f after; %s" % (
              doc["n"], doc["rounds_seconds"], doc["image"], doc["network"], doc["cpus"],
              doc["loadavg_before"][0], doc["loadavg_after"][0], doc["runsc"] or "no runsc"))
    if doc["network"] != "none":
        print("# (the bare runsc run is --network=none whatever --network says; the gvisor "
              "backend runs a sandbox with a network slot as --network=host in the slot's netns)")
    print_table(doc["rows"])
    print("# p50/p99: create-to-ready (POST -> 202, endpoints 44772 and 18080, /ping through "
          "the server proxy -> 200); for the bare run, exec of runsc -> `ready` read from its "
          "stdout")
    print("# idle PSS: sum of Pss over the sandbox's host processes (file pages shared with other "
          "processes on the machine, e.g. other runsc sandboxes, count in part); cgroup: its own "
          "cgroup's memory charge (page cache included), '-' when it has none")
    print("# commands:")
    print("#   " + sh(doc["argv"]))
    for r in doc["rows"]:
        for c in r.get("commands", []):
            print("#   [%s] %s" % (r["mode"], c))
        for c in r.get("config", []):
            print("#   [%s]   %s" % (r["mode"], c))
        for c in r.get("server_says", []):
            print("#   [%s]   server: %s" % (r["mode"], c))
        if "process_names" in r:
            print("#   [%s]   idle processes measured: %s; PSS of them: %s" % (
                r["mode"], ", ".join(r["process_names"]),
                ", ".join("%s %.1f MiB" % (k[4:].lower(), v) for k, v in r["pss_parts_mib"].items())))
        for e in r.get("errors", []):
            print("#   [%s]   failure: %s" % (r["mode"], e))
    if doc.get("note"):
        print("# " + doc["note"])


if __name__ == "__main__":
    main()
