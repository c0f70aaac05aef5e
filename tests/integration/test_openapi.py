#!/usr/bin/python3
"""GET /openapi.json and GET /docs (docs/server.md, "Routes"): served without
a key, the document is the one in the tree and up to date with its sources
(scripts/gen-openapi.py --check), the page is self-contained HTML, every
operation the document lists has a route in the server (called with bogus ids,
none gets the fallback's "No route for"), and every route of the server's
tables is in the document."""
import html.parser
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serverlib import *  # noqa: E402,F401

t = TAP()
REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DOC_PATH = os.path.join(REPO, "src", "server", "openapi", "openapi.json")
KEY = "openapi-key"
METHODS = ("get", "post", "put", "patch", "delete")
# Values for the path parameters of the walk: ids no sandbox, snapshot, pool
# or image has, and ports the routes take.
BOGUS = {"port": "8080", "path": "x/y"}


def norm(path):
    return re.sub(r"\{[^}]+\}", "{}", path)


def load_doc():
    with open(DOC_PATH, "rb") as f:
        return f.read()


def test_generated():
    r = subprocess.run(["/usr/bin/python3", os.path.join(REPO, "scripts", "gen-openapi.py"),
                        "--check"], capture_output=True, text=True, timeout=60)
    t.ok(r.returncode == 0, "openapi.json is what gen-openapi.py makes of docs/specs and "
         "extensions.yml", r.stdout + r.stderr)


def test_document(s):
    r = s.req("GET", "/openapi.json", headers={"OPEN-SANDBOX-API-KEY": None})
    t.eq(r.status, 200, "GET /openapi.json without a key -> 200")
    t.eq(r.headers.get("content-type"), "application/json", "... application/json")
    t.ok(r.body == load_doc(), "... the document in the tree, byte for byte")
    doc = r.json()
    t.ok(doc.get("openapi", "").startswith("3.1"), "... an OpenAPI 3.1 document")
    r = s.req("GET", "/v1/openapi.json")
    t.eq(r.status, 200, "GET /v1/openapi.json with the key -> 200 too")


class PageCheck(html.parser.HTMLParser):
    """Collects ids, local links and outside references; checks nesting."""
    VOID = {"meta", "br", "hr", "img", "input", "link"}

    def __init__(self):
        super().__init__()
        self.ids, self.links, self.outside, self.scripts = set(), set(), [], 0
        self.stack, self.bad_nesting = [], []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "script":
            self.scripts += 1
        for k in ("src", "href"):
            v = a.get(k)
            if v and v.startswith("#"):
                self.links.add(v[1:])
            elif v and not v.startswith("/"):
                self.outside.append(v)
        if "id" in a:
            self.ids.add(a["id"])
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1] != tag:
            self.bad_nesting.append((tag, list(self.stack[-3:])))
            return
        self.stack.pop()


def test_page(s, doc):
    for route in ("/docs", "/redoc"):
        r = s.req("GET", route, headers={"OPEN-SANDBOX-API-KEY": None})
        t.eq(r.status, 200, "GET %s without a key -> 200" % route)
        t.eq(r.headers.get("content-type"), "text/html; charset=utf-8", "... text/html")
    page = PageCheck()
    page.feed(r.text)
    page.close()
    t.eq(page.scripts, 0, "the page runs no script")
    t.eq(page.outside, [], "the page refers to nothing outside the server")
    t.ok("<style>" in r.text and "@import" not in r.text and "url(" not in r.text,
         "its style is inline and loads nothing")
    t.eq(page.bad_nesting + page.stack, [], "its elements nest and close")
    t.eq(sorted(page.links - page.ids), [], "every link inside the page has its anchor")
    text = html.unescape(r.text)
    missing = [p for p in doc["paths"] if p not in text]
    t.eq(missing, [], "every path of the document is on the page")
    missing = [n for n in doc["components"]["schemas"] if "schema-" + n not in page.ids]
    t.eq(missing, [], "every schema of the document is on the page")


def call_path(path, op, item):
    params = item.get("parameters", []) + op.get("parameters", [])
    query = []
    for p in params:
        if "$ref" in p:
            continue  # the component parameters are all path ids
        if p.get("in") == "query" and p.get("required"):
            query.append("%s=bogus" % p["name"])
    path = re.sub(r"\{([^}]+)\}", lambda m: BOGUS.get(m.group(1), "bogus-" + m.group(1)), path)
    return path + ("?" + "&".join(query) if query else "")


def test_walk(s, doc):
    """Each operation with bogus ids: whatever it answers, it is a route's answer."""
    for path, item in doc["paths"].items():
        for m in METHODS:
            if m not in item:
                continue
            op = item[m]
            target = call_path(path, op, item)
            # the console is a page, not an API: no /v1 copy
            for prefix in ("",) if path.startswith("/console") else ("/v1", ""):
                body = {} if "requestBody" in op else None
                r = s.req(m.upper(), prefix + target, json=body, timeout=60)
                try:
                    code = r.json().get("code")
                except Exception:
                    code = None
                fallback = r.status == 404 and (code == "GENERAL::NOT_FOUND" or
                                                b"No route for" in r.body)
                t.ok(not fallback, "%s %s%s is a route (%d %s)" % (m.upper(), prefix, path,
                                                                  r.status, code), r.body[:300])


def c_routes():
    """(method or None, pattern) of every route table in src/server/*.c."""
    out = []
    src = os.path.join(REPO, "src", "server")
    for name in sorted(os.listdir(src)):
        if not name.endswith(".c"):
            continue
        with open(os.path.join(src, name)) as f:
            text = f.read()
        for table in re.findall(r"osb_http_route \w+\[\] = \{(.*?)\n\};", text, re.S):
            for m, pat in re.findall(r'\{(NULL|"[A-Z]+"), "(/[^"]*)"', table):
                out.append((None if m == "NULL" else m.strip('"'), pat))
    return out


def covers(doc_path, pattern):
    """A path of the document (parameters as {}) answers a route pattern
    (:param, *rest) when each segment is equal or either is a parameter; *rest
    takes one segment or more."""
    a, b = doc_path.strip("/").split("/"), pattern.strip("/").split("/")
    if b[-1] == "*rest":
        b = b[:-1]
        if len(a) <= len(b):
            return False
        a = a[:len(b)]
    return len(a) == len(b) and all(x == y or x == "{}" or y.startswith(":")
                                    for x, y in zip(a, b))


def test_tables(doc):
    routes = c_routes()
    t.ok(len(routes) > 40, "the server's route tables were read (%d routes)" % len(routes))
    missing = []
    for m, pat in routes:
        found = any(covers(norm(p), pat) and (m is None or m.lower() in item)
                    for p, item in doc["paths"].items())
        if not found:
            missing.append("%s %s" % (m or "any", pat))
    t.eq(missing, [], "every route of the server's tables is in the document")


def main():
    test_generated()
    doc = json.loads(load_doc())
    with Server(api_key=KEY, extra='[network]\nmode = "none"') as s:
        test_document(s)
        test_page(s, doc)
        test_walk(s, doc)
        test_tables(doc)
        t.eq(s.list_all(), [], "the walk created no sandbox")


t.run(main, timeout=300)
t.done()
