// The Node.js peer: the benchmark routes on Node's own http module, one
// process, no framework.
//
//   node bench/peers/node.js PORT
//
// GET /hello      -> "Hello, World!" (text/plain)
// GET /users/:id  -> {"id":42,"name":"user-42"} (application/json),
//                    400 unless :id is a non-negative integer
'use strict';

const http = require('http');

const port = Number(process.argv[2]);
if (!Number.isInteger(port) || port <= 0) {
  console.error('usage: node node.js PORT');
  process.exit(2);
}

const USERS = /^\/users\/([^/?]+)$/;

function send(res, status, type, body) {
  res.writeHead(status, {
    'Content-Type': type,
    'Content-Length': Buffer.byteLength(body),
  });
  res.end(body);
}

const server = http.createServer((req, res) => {
  const path = req.url.split('?', 1)[0];
  if (req.method === 'GET' && path === '/hello') {
    return send(res, 200, 'text/plain; charset=utf-8', 'Hello, World!');
  }
  const m = req.method === 'GET' && USERS.exec(path);
  if (m) {
    if (!/^\d+$/.test(m[1])) {
      return send(res, 400, 'application/json',
        JSON.stringify({ error: 'id must be a non-negative integer' }));
    }
    const id = Number(m[1]);
    return send(res, 200, 'application/json',
      JSON.stringify({ id: id, name: 'user-' + id }));
  }
  send(res, 404, 'application/json', JSON.stringify({ error: 'not found' }));
});

// Node closes idle keep-alive connections after 5 s by default; the memory
// benchmark holds them open longer, like the other servers' defaults (60-75 s).
server.keepAliveTimeout = 75000;
server.headersTimeout = 76000;

server.listen(port, '127.0.0.1', () => {
  console.log(`node ${process.version} listening on http://127.0.0.1:${port}`);
});

for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, () => process.exit(0));
}
