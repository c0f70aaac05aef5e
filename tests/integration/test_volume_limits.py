"""pvc claims have a hard size (docs/volumes.md): each is an ext4 image of the claim's
`storage` (or [storage] volume_default_size) on a loop device, so writing past it fails
with ENOSPC inside the sandbox and the host spends at most that much on it; sharing,
deleteOnSandboxTermination (no loop device or mount left), bad sizes (400, nothing made),
an existing claim keeping its size, restarts (SIGKILL and SIGTERM, with a sandbox that
keeps running across them) and claims made by older servers as plain directories."""
import glob
import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serverlib import *  # noqa: E402,F403

t = TAP()
MiB = 1 << 20
SIZE = "VOLUME::INVALID_SIZE"


def sh(s, sid, cmd):
    ev = s.execd(sid).sse("/command", json={"command": cmd}).events
    return stdout_lines(ev), stderr_lines(ev), exit_code(ev)


def pvc_vol(claim, mount="/mnt/p", **pvc):
    return {"name": "p", "mountPath": mount, "pvc": dict(claimName=claim, **pvc)}


def claim_dir(s, claim):
    return os.path.join(s.state_dir, "volumes", claim)


def image(s, claim):
    return os.path.join(claim_dir(s, claim), "disk.img")


def loops_backed_by(path):
    out = []
    for f in glob.glob("/sys/block/loop*/loop/backing_file"):
        try:
            with open(f) as fh:
                bf = fh.read().strip()
        except OSError:
            continue
        if bf.startswith(path):
            out.append(bf)
    return out


def mounted(path):
    with open("/proc/self/mountinfo") as f:
        return any(l.split()[4] == path for l in f)


def df_bytes(s, sid, path="/mnt/p"):
    out, err, rc = sh(s, sid, "df -B1 -P %s | tail -1" % path)
    t.eq(rc, 0, "df %s inside the sandbox (%r)" % (path, err))
    return int(out[0].split()[1])


def test_limit(s):
    a = s.new(volumes=[pvc_vol("lim", storage="64Mi")])
    t.eq(os.stat(image(s, "lim")).st_size, 64 * MiB, "the claim is a 64 MiB image")
    t.ok(mounted(os.path.join(claim_dir(s, "lim"), "data")), "mounted on the claim's data")
    t.eq(loops_backed_by(image(s, "lim")), [image(s, "lim")], "through one loop device")
    out, err, rc = sh(s, a["id"], "ls -A /mnt/p; echo keep > /mnt/p/keep.txt && "
                      "head -c 4194304 /dev/urandom > /mnt/p/pre.bin && sha256sum /mnt/p/pre.bin")
    t.eq(rc, 0, "write before the limit (%r)" % err)
    t.eq(len(out), 1, "the claim starts empty (no lost+found)", out)
    digest = out[-1].split()[0]
    out, err, rc = sh(s, a["id"], "dd if=/dev/zero of=/mnt/p/big bs=1M count=100; r=$?; sync; exit $r")
    t.ok(rc not in (0, None), "writing 100 MiB into a 64 MiB claim fails", (rc, err))
    t.ok(any("No space left on device" in l for l in err), "with ENOSPC", err)
    st = os.stat(image(s, "lim"))
    t.ok(st.st_blocks * 512 <= 64 * MiB, "the host spends at most 64 MiB on it (du %d)"
         % (st.st_blocks * 512))
    t.ok(st.st_blocks * 512 >= 40 * MiB, "and du does see the data (%d)" % (st.st_blocks * 512))
    b = s.new(volumes=[pvc_vol("lim", "/shared", storage="1Gi")])
    out, err, rc = sh(s, b["id"], "cat /shared/keep.txt; sha256sum /shared/pre.bin")
    t.eq(out[:1], ["keep"], "a second sandbox sees the data written before the limit", err)
    t.eq(out[1].split()[0] if len(out) > 1 else None, digest, "intact")
    size = df_bytes(s, b["id"], "/shared")
    t.ok(48 * MiB <= size <= 64 * MiB, "an existing claim keeps its size (df %d)" % size)
    t.eq(os.stat(image(s, "lim")).st_size, 64 * MiB, "its image was not resized")
    _, err, rc = sh(s, b["id"], "rm /shared/big && echo more > /shared/more.txt")
    t.eq(rc, 0, "freeing space makes the claim writable again (%r)" % err)
    out, _, _ = sh(s, a["id"], "cat /mnt/p/more.txt")
    t.eq(out, ["more"], "the first sandbox sees it (the same filesystem)")
    for x in (a, b):
        s.delete("/v1/sandboxes/" + x["id"])


def test_default_size(s):
    a = s.new(volumes=[pvc_vol("dflt")])
    t.eq(os.stat(image(s, "dflt")).st_size, 32 * MiB, "no storage: [storage] volume_default_size")
    size = df_bytes(s, a["id"])
    t.ok(24 * MiB <= size <= 32 * MiB, "df inside reports about 32 MiB (%d)" % size)
    s.delete("/v1/sandboxes/" + a["id"])


def test_delete_on_termination(s):
    a = s.new(volumes=[pvc_vol("gone", storage="16Mi", deleteOnSandboxTermination=True)])
    img, data = image(s, "gone"), os.path.join(claim_dir(s, "gone"), "data")
    t.eq(loops_backed_by(img), [img], "a loop device backs the claim")
    _, err, rc = sh(s, a["id"], "echo x > /mnt/p/x")
    t.eq(rc, 0, "write into it (%r)" % err)
    t.eq(s.delete("/v1/sandboxes/" + a["id"]).status, 204, "delete the sandbox")
    t.ok(not os.path.exists(claim_dir(s, "gone")), "the claim's directory and image are gone")
    t.ok(not mounted(data), "its mount is gone")
    t.ok(wait_for(lambda: not loops_backed_by(img), timeout=30), "and so is its loop device",
         loops_backed_by(img))


def test_bad_sizes(s):
    before = sorted(os.listdir(os.path.join(s.state_dir, "volumes")))
    for size, why in (("0", "below the smallest"), ("1Ki", "below the smallest"),
                      ("2Pi", "volume_max_size"), ("900Ti", "free")):
        r = s.create(volumes=[pvc_vol("bad-size", storage=size)])
        t.is_error(r, 400, SIZE, "storage %s is refused" % size)
        t.ok(why in r.text and "volumes[0].pvc.storage" in r.text, "the error says why", r.text)
    t.is_error(s.create(volumes=[pvc_vol("bad-size", storage="-1Gi")]), 400,
               "SANDBOX::INVALID_PARAMETER", "a negative size is not a size")
    t.eq(sorted(os.listdir(os.path.join(s.state_dir, "volumes"))), before, "nothing was made")
    t.eq(s.list_all(), [], "and no sandbox record was left")


def test_restart(s):
    a = s.new(volumes=[pvc_vol("keep", storage="16Mi")])
    _, err, rc = sh(s, a["id"], "echo one > /mnt/p/one")
    t.eq(rc, 0, "write (%r)" % err)
    data = os.path.join(claim_dir(s, "keep"), "data")
    s.restart()  # SIGKILL: the host's mount stays
    b = s.new(volumes=[pvc_vol("keep", "/k")])
    out, _, _ = sh(s, b["id"], "cat /k/one")
    t.eq(out, ["one"], "after a crash the claim's data is there")
    s.delete("/v1/sandboxes/" + b["id"])
    s.kill(signal.SIGTERM)
    t.ok(not mounted(data), "a stopping server unmounts its view of the claim")
    t.eq(len(loops_backed_by(image(s, "keep"))), 1, "the running sandbox still holds the device")
    s.start()
    c = s.new(volumes=[pvc_vol("keep", "/k")])
    t.ok(mounted(data), "a create naming the claim mounts it again")
    t.eq(len(loops_backed_by(image(s, "keep"))), 1, "through the same loop device")
    _, err, rc = sh(s, c["id"], "cat /k/one && echo two > /k/two")
    t.eq(rc, 0, "the data is there and the claim is writable (%r)" % err)
    out, _, _ = sh(s, a["id"], "cat /mnt/p/two")
    t.eq(out, ["two"], "the sandbox that ran across the restart sees the new file (one "
         "filesystem, not two mounts of one image)")
    for x in (a, c):
        s.delete("/v1/sandboxes/" + x["id"])


def test_legacy_plain_claim(s):
    os.makedirs(os.path.join(claim_dir(s, "legacy"), "data"))
    with open(os.path.join(claim_dir(s, "legacy"), "data", "old.txt"), "w") as f:
        f.write("old\n")
    a = s.new(volumes=[pvc_vol("legacy")])
    out, _, _ = sh(s, a["id"], "cat /mnt/p/old.txt")
    t.eq(out, ["old"], "a claim made by an older server (a plain directory) still works")
    t.ok("plain directory made by an older server" in s.log_text(), "with a warning in the log")
    s.delete("/v1/sandboxes/" + a["id"])


def main():
    extra = '[storage]\nvolume_default_size = "32Mi"\nvolume_max_size = "1Pi"\n'
    with Server(min_timeout=1, extra=extra) as s:
        t.run(test_limit, s, timeout=120)
        t.run(test_default_size, s, timeout=60)
        t.run(test_delete_on_termination, s, timeout=60)
        t.run(test_bad_sizes, s, timeout=60)
        t.run(test_restart, s, timeout=120)
        t.run(test_legacy_plain_claim, s, timeout=60)
        state = s.state_dir
    t.ok(wait_for(lambda: not loops_backed_by(state), timeout=30),
         "no loop device is left once the server is gone", loops_backed_by(state))


t.run(main, timeout=500)
t.done()
