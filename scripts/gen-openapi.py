#!/usr/bin/python3
"""Writes src/server/openapi/openapi.json, the document the server serves at
/openapi.json (and renders at /docs): upstream's lifecycle spec, with
upstream's diagnostics spec, upstream's egress spec mounted where this server
answers it (under /sandboxes/{sandboxId}/proxy/18080) and our own routes
(src/server/openapi/extensions.yml) merged in.

The JSON is kept in the repository so that building needs neither Python nor
PyYAML (the Makefile embeds the bytes with scripts/embed.sh); run this after
changing a spec or extensions.yml. `--check` writes nothing and fails when the
file differs from what it would write (tests/integration/test_openapi.py).
"""
import copy
import json
import os
import sys

import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
SPECS = os.path.join(ROOT, "docs", "specs")
OUT = os.path.join(ROOT, "src", "server", "openapi", "openapi.json")
EGRESS_MOUNT = "/sandboxes/{sandboxId}/proxy/18080"
METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")


def load(path):
    with open(path) as f:
        # Anchors in extensions.yml share objects; a deep copy keeps the
        # renames below from touching one document through another.
        return copy.deepcopy(yaml.safe_load(f))


def rewrite_refs(node, old, new):
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "$ref" and v == old:
                node[k] = new
            else:
                rewrite_refs(v, old, new)
    elif isinstance(node, list):
        for v in node:
            rewrite_refs(v, old, new)


def merge_components(base, doc, prefix):
    """Components of doc join base's; one with the name of a different base
    component is renamed prefix+name (and doc's references follow), so an
    upstream spec keeps its own meaning. prefix None: a clash is an error."""
    comps = doc.get("components", {})
    for section, items in comps.items():
        for name in list(items):
            have = base["components"].setdefault(section, {}).get(name)
            if have is None or have == items[name]:
                continue
            if prefix is None:
                sys.exit("gen-openapi: components/%s/%s clashes with upstream's" % (section, name))
            new = prefix + name
            ref = "#/components/%s/" % section
            rewrite_refs(doc, ref + name, ref + new)
            items[new] = items.pop(name)
    for section, items in doc.get("components", {}).items():
        for name, v in items.items():
            base["components"][section].setdefault(name, v)


def merge_paths(base, doc, mount="", extra_param=None, security=None):
    for path, item in doc["paths"].items():
        if extra_param:
            item.setdefault("parameters", []).insert(0, extra_param)
        for m in METHODS:
            if m in item and security is not None:
                item[m].setdefault("security", security)
        dst = base["paths"].setdefault(mount + path, {})
        for k, v in item.items():
            if k in dst and k in METHODS:
                sys.exit("gen-openapi: %s %s is defined twice" % (k.upper(), mount + path))
            if k == "parameters" and k in dst:
                continue
            dst[k] = v


def add_tags(base, doc):
    known = {t["name"] for t in base.get("tags", [])}
    for t in doc.get("tags", []):
        if t["name"] not in known:
            base.setdefault("tags", []).append(t)
            known.add(t["name"])


NOTE = """
## This server

This document is served by OpenSandbox in C at `/openapi.json` (and as a page
at `/docs`), without an API key. Every route answers at `/v1/...` and at
`/...`. Beside upstream's lifecycle routes it holds upstream's diagnostics
routes, upstream's egress API as this server answers it (under
`/sandboxes/{sandboxId}/proxy/18080`, with the `OPENSANDBOX-EGRESS-AUTH`
token), and this server's own routes: warm pools (`/pools`, also
`/warmpools`), batch create (`/sandboxes/batch`), images (`/images`), the
server proxy and the legacy diagnostics. Its documentation is in
`docs/server.md` of the source tree.
"""

OWN_TAGS = [
    {"name": "Server", "description": "Health, this document, SDK telemetry"},
    {"name": "Proxy", "description": "The server proxy to a port of a sandbox"},
    {"name": "Egress", "description": "Upstream's egress API, answered by the server on port 18080"},
    {"name": "Pools", "description": "Warm pools of started sandboxes (ours)"},
    {"name": "Images", "description": "The image store (ours)"},
]


def build():
    base = load(os.path.join(SPECS, "sandbox-lifecycle.yml"))
    base["info"]["description"] = base["info"]["description"].rstrip("\n") + "\n" + NOTE
    base["servers"] = [{"url": "/v1", "description": "this server (also without /v1)"}]

    diag = load(os.path.join(SPECS, "diagnostic-api.yml"))
    merge_components(base, diag, "Diagnostic")
    merge_paths(base, diag)
    add_tags(base, diag)

    egress = load(os.path.join(SPECS, "egress-api.yaml"))
    merge_components(base, egress, "Egress")
    sid = {"$ref": "#/components/parameters/SandboxId"}
    merge_paths(base, egress, EGRESS_MOUNT, sid, [{"egressAuth": []}])
    add_tags(base, egress)

    ours = load(os.path.join(ROOT, "src", "server", "openapi", "extensions.yml"))
    merge_components(base, ours, None)
    merge_paths(base, ours)
    add_tags(base, {"tags": OWN_TAGS})
    return json.dumps(base, indent=1, ensure_ascii=False) + "\n"


def main():
    text = build()
    if sys.argv[1:] == ["--check"]:
        with open(OUT) as f:
            if f.read() != text:
                sys.exit("gen-openapi: %s is out of date: run scripts/gen-openapi.py" % OUT)
        return
    with open(OUT, "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
