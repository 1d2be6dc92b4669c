// The Node.js peer of bench/pg/run: TechEmpower's single query and
// multiple queries tests on Node's http module and postgres.js (npm
// `postgres`), one process, one database connection (`max: 1`, as in
// TechEmpower's nodejs-postgres entry: postgres.js pipelines the queries of
// concurrent requests on it).
//
//   DATABASE_URL=postgres://... NODE_PATH=.../node_modules node bench/pg/node.js PORT
//
// GET /db                -> {"id":N,"randomNumber":M}
// GET /queries?queries=Q -> [{"id":N,"randomNumber":M}, ...], Q clamped to
//                           1..500 (1 when it is not an integer), the Q
//                           queries issued at once and awaited together
'use strict';

const http = require('http');
const postgres = require('postgres');

const port = Number(process.argv[2]);
if (!Number.isInteger(port) || port <= 0 || !process.env.DATABASE_URL) {
  console.error('usage: DATABASE_URL=postgres://... node node.js PORT');
  process.exit(2);
}

const sql = postgres(process.env.DATABASE_URL, { max: 1 });

function randomId() {
  return 1 + Math.floor(Math.random() * 10000);
}

// One row by primary key, as {id, randomNumber}.
async function world(id) {
  const rows = await sql`SELECT id, randomnumber FROM world WHERE id = ${id}`;
  return { id: rows[0].id, randomNumber: rows[0].randomnumber };
}

function count(raw) {
  const n = /^\s*-?\d+\s*$/.test(raw || '') ? parseInt(raw, 10) : 1;
  return n < 1 ? 1 : n > 500 ? 500 : n;
}

function send(res, status, body) {
  res.writeHead(status, {
    'Content-Type': 'application/json',
    'Content-Length': Buffer.byteLength(body),
  });
  res.end(body);
}

async function handle(req, res) {
  const q = req.url.indexOf('?');
  const path = q < 0 ? req.url : req.url.slice(0, q);
  if (req.method === 'GET' && path === '/db') {
    return send(res, 200, JSON.stringify(await world(randomId())));
  }
  if (req.method === 'GET' && path === '/queries') {
    const params = new URLSearchParams(q < 0 ? '' : req.url.slice(q + 1));
    const n = count(params.get('queries'));
    const jobs = new Array(n);
    for (let i = 0; i < n; i++) jobs[i] = world(randomId());
    return send(res, 200, JSON.stringify(await Promise.all(jobs)));
  }
  send(res, 404, JSON.stringify({ error: 'not found' }));
}

const server = http.createServer((req, res) => {
  handle(req, res).catch((err) => send(res, 500, JSON.stringify({ error: String(err) })));
});
server.keepAliveTimeout = 75000;
server.headersTimeout = 76000;

server.listen(port, '127.0.0.1', () => {
  console.log(`node ${process.version} listening on http://127.0.0.1:${port}`);
});

for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, () => process.exit(0));
}
