// The Node.js side of bench/http/run: GET /proxy makes one GET to the
// upstream's /hello and answers with its status and body, on Node's http
// module, one process, with one of two clients:
//
//   fetch   Node's global fetch (the undici bundled with Node), its default
//           dispatcher: a keep-alive Agent, as most Node code calls it;
//   undici  undici.request from npm (the version of
//           bench/http/package-lock.json) with an Agent of its own whose idle
//           connections stay 60 s, Node's fastest HTTP/1.1 client.
//
//   NODE_PATH=.../node_modules node bench/http/node.js PORT UPSTREAM_PORT fetch|undici
//
// Every answer carries the Content-Type moonport's res:send gives a string
// and Node's Content-Length.
'use strict';

const http = require('http');

const port = Number(process.argv[2]);
const upstreamPort = Number(process.argv[3]);
const client = process.argv[4];
if (!Number.isInteger(port) || port <= 0 || !Number.isInteger(upstreamPort) || upstreamPort <= 0
    || (client !== 'fetch' && client !== 'undici')) {
  console.error('usage: node node.js PORT UPSTREAM_PORT fetch|undici');
  process.exit(2);
}
const URL = `http://127.0.0.1:${upstreamPort}/hello`;

// get(): the upstream's [status, body].
let get;
if (client === 'fetch') {
  get = async () => {
    const r = await fetch(URL);
    return [r.status, await r.text()];
  };
} else {
  const { Agent, request } = require('undici');
  const agent = new Agent({ keepAliveTimeout: 60000, keepAliveMaxTimeout: 60000 });
  get = async () => {
    const { statusCode, body } = await request(URL, { dispatcher: agent });
    return [statusCode, await body.text()];
  };
}

function send(res, status, body) {
  res.writeHead(status, {
    'Content-Type': 'text/plain; charset=utf-8',
    'Content-Length': Buffer.byteLength(body),
  });
  res.end(body);
}

const server = http.createServer((req, res) => {
  if (req.method !== 'GET' || req.url !== '/proxy') {
    return send(res, 404, 'not found');
  }
  get().then(([status, body]) => send(res, status, body),
    (err) => send(res, 502, 'upstream: ' + err.message));
});

// As in bench/peers/node.js: idle keep-alive connections kept 75 s, not 5.
server.keepAliveTimeout = 75000;
server.headersTimeout = 76000;

server.listen(port, '127.0.0.1', () => {
  console.log(`node ${process.version} (${client}) listening on http://127.0.0.1:${port}`);
});

for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, () => process.exit(0));
}
