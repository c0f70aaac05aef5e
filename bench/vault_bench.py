"""The credential vault's proxy (issue 14; goals in brackets, printed, not
asserted): from inside a sandbox, HTTPS GETs to an intercepted (bound) name
beside the same server's twin reached through plain NAT (an unbound name on
its own address), p50 on one kept-alive connection and with a new connection
each; then a 100 MB download through the proxy and through NAT
[>= 500 MB/s through the proxy], with Python at both ends and with curl
against a Node https server (no Python at either end; vaultnet.py), and the server's CPU time
during each intercepted download (the proxy's own cost: on a 2-core machine
both ends of the transfer compete with it for the cores). The fake TLS internet is
vaultnet.py; the client is vaultprobe.py.

Usage: vault_bench.py [--n 200] [--mb 100] [--only python|curl] (--only: that
download through the proxy alone, e.g. to profile it)"""
import argparse
import json
import os
import shlex
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
import fakenet  # noqa: E402
import vaultnet  # noqa: E402
from serverlib import Server  # noqa: E402
from test_egress import Egress, net_config, new_sbx  # noqa: E402
from test_credential_vault import upload, PROBE, VAULT, bearer  # noqa: E402
from osbtest import stdout_lines, cpu_seconds  # noqa: E402


def probe(sb, *probes):
    ev = sb.sh("/usr/bin/python3 /tmp/vaultprobe.py %s" % shlex.quote(json.dumps(probes)),
               timeout=600)
    return [json.loads(x) for x in stdout_lines(ev)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--mb", type=int, default=100)
    ap.add_argument("--only", choices=("python", "curl"))
    a = ap.parse_args()
    print("== credential vault proxy (issue 14): intercepted vs plain NAT, from a sandbox")
    why = fakenet.available()
    if why:
        print("skipped: " + why)
        return
    with vaultnet.VaultNet() as vn:
        extra = net_config() + '[credential_vault]\nupstream_ca_file = "%s"\n' % vn.ca_file
        with Server(api_key="bench", extra=extra, tmp_dir=os.path.expanduser("~")) as s:
            policy = {"defaultAction": "deny",
                      "egress": [{"action": "allow", "target": n} for n in vaultnet.NAMES]}
            sb = new_sbx(s, networkPolicy=policy, credentialProxy={"enabled": True})
            upload(sb, "/tmp/vaultprobe.py", open(PROBE, "rb").read())
            upload(sb, "/tmp/testca.pem", open(vn.ca_file, "rb").read())
            n, size = a.n, a.mb << 20
            vault = dict(VAULT, bindings=VAULT["bindings"] + [bearer("fast", "fast.vault.test",
                                                                     "tok")])
            Egress(s, sb.id).post("/credential-vault", json=vault)
            vn.start_file_server("fast.vault.test", size)
            vn.start_file_server("fastnat.vault.test", size)
            if a.only:
                p = (["big", "https://api.vault.test/v1/big?n=%d" % size, size]
                     if a.only == "python" else ["curl", "https://fast.vault.test/file"])
                c0 = cpu_seconds(s.proc.pid)
                r = probe(sb, p)[0]
                print("%d MB download, %s, intercepted: %.1f MB/s, the server's CPU %.2f s"
                      % (a.mb, a.only, size / r["seconds"] / 1e6, cpu_seconds(s.proc.pid) - c0))
                return
            got = probe(sb, ["lat", "api.vault.test", "/v1/x", n],
                        ["lat", "bulk.vault.test", "/v1/x", n, "/tmp/testca.pem"])
            cpu = []  # the server's CPU seconds during each download (the proxy's work)
            for p in (["big", "https://api.vault.test/v1/big?n=%d" % size, size],
                      ["big", "https://bulk.vault.test/big?n=%d" % size, size,
                       "/tmp/testca.pem"],
                      ["curl", "https://fast.vault.test/file"],
                      ["curl", "https://fastnat.vault.test/file", "/tmp/testca.pem"]):
                c0 = cpu_seconds(s.proc.pid)
                got += probe(sb, p)
                cpu.append(cpu_seconds(s.proc.pid) - c0)
            icp, nat = got[0], got[1]
            for k, what in (("keepalive_p50_ms", "kept-alive connection"),
                            ("new_p50_ms", "new connection each")):
                print("GET p50, %-22s intercepted %6.2f ms  NAT %6.2f ms  added %+.2f ms" % (
                    what, icp[k], nat[k], icp[k] - nat[k]))
            for i, (name, r) in enumerate((("Python, intercepted", got[2]),
                                           ("Python, plain NAT", got[3]),
                                           ("curl/Node, intercepted", got[4]),
                                           ("curl/Node, plain NAT", got[5]))):
                if "bytes" in r and r["bytes"] == size:
                    print("%d MB download, %-28s %7.1f MB/s%s" % (
                        a.mb, name, size / r["seconds"] / 1e6,
                        "  [>= 500 MB/s]" if name.endswith("intercepted") else ""))
                else:
                    print("%d MB download, %s: %r" % (a.mb, name, r))
                if name.endswith("intercepted") and cpu[i] > 0:
                    # what the proxy itself can move: its bytes per CPU second
                    print("    the server's CPU for it: %.2f s, %.0f MB/s per core of proxy "
                          "work (the rest of the machine runs both ends)"
                          % (cpu[i], size / cpu[i] / 1e6))


if __name__ == "__main__":
    main()
