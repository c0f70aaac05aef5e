"""Attacks on pvc claims (docs/volumes.md) by hostile clients and sandboxes.

Claims are sparse images: the disk gives a claim its blocks only when the sandbox writes
them. The server must not promise more than the disk holds, or claims that each passed
the free-space check fill the host's disk together once sandboxes write into them (the
server's own state, other claims and every sandbox on that filesystem then fail). The
test keeps volumes_dir on a small filesystem of its own, so it never fills this
machine's disk."""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serverlib import *  # noqa: E402,F403

t = TAP()
MiB = 1 << 20
SIZE = "VOLUME::INVALID_SIZE"


def sh(s, sid, cmd):
    ev = s.execd(sid).sse("/command", json={"command": cmd}, timeout=120).events
    return stdout_lines(ev), stderr_lines(ev), exit_code(ev)


def pvc_vol(claim, mount="/mnt/p", name="p", **pvc):
    return {"name": name, "mountPath": mount, "pvc": dict(claimName=claim, **pvc)}


def avail(path):
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


class SmallFs:
    """A 256 MiB ext4 filesystem of the test's own, loop-mounted, for volumes_dir."""

    def __init__(self):
        self.tmp = tempfile.mkdtemp(prefix="osb-smallfs-")
        self.img = os.path.join(self.tmp, "fs.img")
        self.dir = os.path.join(self.tmp, "vol")
        os.mkdir(self.dir)
        with open(self.img, "wb") as f:
            f.truncate(256 * MiB)
        subprocess.run(["mkfs.ext4", "-q", "-F", "-m", "0", self.img], check=True)
        subprocess.run(["mount", "-o", "loop", self.img, self.dir], check=True)

    def close(self):
        subprocess.run(["umount", "-l", self.dir])
        subprocess.run(["rm", "-rf", self.tmp])


def claims(vdir):
    return sorted(n for n in os.listdir(vdir) if n != "lost+found")


def test_overcommit(s, vdir):
    free = avail(vdir)
    big = "%dMi" % (free * 6 // 10 // MiB)  # two of these do not fit
    before = claims(vdir)
    r = s.create(volumes=[pvc_vol("oc-one", storage=big),
                          pvc_vol("oc-two", "/mnt/q", "q", storage=big)])
    t.is_error(r, 400, SIZE, "one request making two claims that do not fit together (%s each "
               "of %d free) is refused" % (big, free))
    t.ok("volumes[1].pvc.storage" in r.text, "naming the second claim", r.text)
    t.eq(claims(vdir), before, "nothing was made")
    a = s.new(volumes=[pvc_vol("oc-a", storage=big, deleteOnSandboxTermination=True)])
    t.ok(avail(vdir) > free * 3 // 10, "the first claim's sparse image leaves the disk mostly "
         "free (%d of %d)" % (avail(vdir), free))
    r = s.create(volumes=[pvc_vol("oc-b", storage=big)])
    t.is_error(r, 400, SIZE, "a second %s claim, which the disk could not hold once both are "
               "written, is refused although the free space alone would pass" % big)
    t.ok("oc-b" not in claims(vdir) and len(s.list_all()) == 1, "nothing was made for it")
    # What the refusal prevents: the first claim, written to its limit, gets ENOSPC from its
    # own filesystem while the disk under it keeps room.
    _, err, rc = sh(s, a["id"], "dd if=/dev/zero of=/mnt/p/fill bs=1M count=1000; r=$?; "
                    "sync; exit $r")
    t.ok(rc not in (0, None) and any("No space left" in l for l in err),
         "filling the claim stops at its own limit (ENOSPC)", err[-2:])
    t.ok(avail(vdir) > 0, "the disk under the claims still has room (%d)" % avail(vdir))
    t.eq(s.delete("/v1/sandboxes/" + a["id"]).status, 204, "delete the sandbox and its claim")
    t.ok(wait_for(lambda: avail(vdir) >= free * 9 // 10, timeout=30),
         "its space comes back", avail(vdir))
    b = s.new(volumes=[pvc_vol("oc-b", storage=big)])
    t.ok("oc-b" in claims(vdir), "with the first claim gone the second fits")
    s.delete("/v1/sandboxes/" + b["id"])


def main():
    fs = SmallFs()
    try:
        extra = ('[storage]\nvolumes_dir = "%s"\nvolume_default_size = "16Mi"\n'
                 'volume_max_size = "1Pi"\n' % fs.dir)
        with Server(min_timeout=1, extra=extra) as s:
            t.run(test_overcommit, s, fs.dir, timeout=180)
    finally:
        fs.close()
    t.done()


if __name__ == "__main__":
    main()
