// The HTTP/2 server of tlsnet's fake TLS internet (tlsnet.TLSNet starts it in
// its network namespace; not a test on its own):
//
//     node vault_h2echo.js LOG ADDR NAME CERT KEY
//
// HTTPS on ADDR:443 with ALPN h2 and http/1.1 (Node's http2 module). Answers
// as vault_echo.py: /big?n=BYTES (n bytes of "x"), /echo-secret (the JSON
// echo plus the request's Authorization in x-echo-auth), anything else the
// JSON echo {server, sni, method, path, headers, version, body_length}.
// LOG gets the same JSON lines as vault_echo.py's ("tls" per handshake with
// "alpn", "http" per request with "version"). Prints "ready" once listening.
"use strict";
const fs = require("fs");
const http2 = require("http2");
const [log, addr, name, cert, key] = process.argv.slice(2);

function ev(o) {
  fs.appendFileSync(log, JSON.stringify(o) + "\n");
}

const srv = http2.createSecureServer({
  cert: fs.readFileSync(cert),
  key: fs.readFileSync(key),
  allowHTTP1: true,
});
srv.on("secureConnection", (s) =>
  ev({ kind: "tls", server: name, sni: s.servername, client: s.remoteAddress,
       alpn: s.alpnProtocol }));
srv.on("request", (req, res) => {
  const list = [];
  for (let i = 0; i < req.rawHeaders.length; i += 2)
    list.push([req.rawHeaders[i], req.rawHeaders[i + 1]]);
  const headers = {};
  for (const [k, v] of list) headers[k.toLowerCase()] = v;
  const sock = req.socket;
  const base = { server: name, sni: sock.servername || null, client: sock.remoteAddress,
                 method: req.method, path: req.url, headers, version: req.httpVersion };
  ev(Object.assign({ kind: "http", header_list: list }, base));
  const u = new URL(req.url, "https://" + name);
  let n = 0;
  req.on("data", (c) => { n += c.length; });
  req.on("end", () => {
    if (u.pathname === "/big") {
      const size = Number(u.searchParams.get("n") || 0);
      res.writeHead(200, { "content-type": "application/octet-stream", "content-length": size });
      res.end(Buffer.alloc(size, "x"));
      return;
    }
    const extra = u.pathname === "/echo-secret" ? { "x-echo-auth": headers.authorization || "" } : {};
    const body = JSON.stringify(Object.assign({ body_length: n }, base));
    res.writeHead(200, Object.assign({ "content-type": "application/json" }, extra));
    res.end(body);
  });
});
srv.on("sessionError", () => {});
srv.listen(443, addr, () => console.log("ready"));
