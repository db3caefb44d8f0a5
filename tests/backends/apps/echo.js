// An application behind Node's http module that answers with the path it routes on, read as an
// Express 4 router reads it: the pathname of req.url (before "?" and "#", as parseurl gives it),
// decoded by decodeURIComponent; a path that does not decode (URIError) is answered 400, as
// Express answers a parameter it cannot decode.
"use strict";
const http = require("http");

function pathOf(url) {
  const cut = url.search(/[?#]/);
  return cut < 0 ? url : url.slice(0, cut);
}

const server = http.createServer((req, res) => {
  let path;
  try {
    path = decodeURIComponent(pathOf(req.url));
  } catch (e) {
    res.writeHead(400, { "Content-Type": "text/plain" });
    res.end("URIError\n");
    return;
  }
  const body = Buffer.from(path, "utf8");
  res.writeHead(200, { "Content-Type": "application/octet-stream", "Content-Length": body.length });
  res.end(body);
});
server.listen(Number(process.argv[2] || 0), "127.0.0.1", () => {
  console.log("listening on " + server.address().port);
});
