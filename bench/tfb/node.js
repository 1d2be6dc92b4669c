// The Node.js peer of bench/tfb: the TechEmpower Framework Benchmarks' (TFB)
// six test types on Node's http module, one process, with one of two
// PostgreSQL drivers from npm (the versions of bench/tfb/package-lock.json):
//
//   postgres  postgres.js (npm `postgres`), one connection (`max: 1`), as
//             TFB's nodejs, express-postgresjs and fastify entries: postgres.js
//             sends each query at once on that connection, so the queries of
//             concurrent requests are pipelined on it, and prepares each
//             statement once;
//   pg        node-postgres (npm `pg`), a Pool of 50 connections, the pool
//             TFB's express-postgres entry gives node-postgres (through
//             Sequelize, `pool.max: 50` per process); a connection runs one
//             query at a time, so concurrency comes from the pool. Statements
//             are named, so each connection prepares them once.
//
//   DATABASE_URL=postgres://... NODE_PATH=.../node_modules \
//       node bench/tfb/node.js PORT [postgres|pg]
//
// The driver: the second argument, else TFB_NODE_DRIVER, else postgres.
//
// GET /json               {"message":"Hello, World!"}, a new object each time
// GET /db                 one random world row {"id":N,"randomNumber":M}
// GET /queries?queries=Q  Q random rows, one query each, issued at once and
//                         awaited together (Promise.all, as TFB's entries);
//                         Q an integer clamped to 1..500, anything else 1
// GET /fortunes           the fortune table plus one fortune added here,
//                         sorted by message, through a Handlebars template
//                         (TFB's nodejs entry compiles this one in its
//                         helper.js; its postgres handler later switched to
//                         string concatenation, which TFB's rules reject)
// GET /updates?queries=Q  Q random rows read as in /queries, each given a new
//                         random number, written back in one UPDATE ... FROM
//                         (VALUES ...) with the ids sorted (TFB's nodejs and
//                         express entries' bulk update; as there, the ids are
//                         drawn independently, and an id drawn twice is
//                         written once, with one of its two numbers)
// GET /plaintext          Hello, World!
//
// Every answer carries Server: Node (TFB's nodejs entry), the Date Node's
// http module adds, its Content-Type and Content-Length.
'use strict';

const http = require('http');
const Handlebars = require('handlebars');

const port = Number(process.argv[2]);
const driver = process.argv[3] || process.env.TFB_NODE_DRIVER || 'postgres';
if (!Number.isInteger(port) || port <= 0 || !process.env.DATABASE_URL
    || (driver !== 'postgres' && driver !== 'pg')) {
  console.error('usage: DATABASE_URL=postgres://... node node.js PORT [postgres|pg]');
  process.exit(2);
}

// The node-postgres pool's size (TFB's express-postgres entry).
const PG_POOL_MAX = 50;

function randomNumber() {
  return 1 + Math.floor(Math.random() * 10000);
}

// Each driver: find(id) -> {id, randomNumber}; fortunes() -> [{id, message}];
// bulkUpdate(worlds) writes each world's randomNumber.
function postgresjs() {
  const postgres = require('postgres');
  const sql = postgres(process.env.DATABASE_URL, { max: 1 });
  return {
    find: async (id) => {
      const rows = await sql`SELECT id, randomnumber FROM world WHERE id = ${id}`;
      return { id: rows[0].id, randomNumber: rows[0].randomnumber };
    },
    fortunes: () => sql`SELECT id, message FROM fortune`,
    bulkUpdate: async (worlds) => {
      const values = sql(worlds.map((w) => [w.id, w.randomNumber])
        .sort((a, b) => a[0] - b[0]));
      await sql`UPDATE world SET randomnumber = (v.r)::int
        FROM (VALUES ${values}) AS v(id, r) WHERE world.id = (v.id)::int`;
    },
  };
}

function nodePostgres() {
  const { Pool } = require('pg');
  const pool = new Pool({ connectionString: process.env.DATABASE_URL, max: PG_POOL_MAX });
  // One text per count of rows: ($1::int, $2::int), ($3::int, $4::int), ...
  const updateSql = [];
  function updateText(n) {
    if (!updateSql[n]) {
      const values = [];
      for (let i = 0; i < n; i++) values.push(`($${2 * i + 1}::int, $${2 * i + 2}::int)`);
      updateSql[n] = `UPDATE world SET randomnumber = v.r FROM (VALUES ${values.join(', ')})`
        + ' AS v(id, r) WHERE world.id = v.id';
    }
    return updateSql[n];
  }
  return {
    find: async (id) => {
      const res = await pool.query({
        name: 'world', text: 'SELECT id, randomnumber FROM world WHERE id = $1', values: [id],
      });
      return { id: res.rows[0].id, randomNumber: res.rows[0].randomnumber };
    },
    fortunes: async () => (await pool.query({
      name: 'fortunes', text: 'SELECT id, message FROM fortune',
    })).rows,
    bulkUpdate: async (worlds) => {
      const sorted = worlds.slice().sort((a, b) => a.id - b.id);
      const values = [];
      for (const w of sorted) values.push(w.id, w.randomNumber);
      await pool.query({ name: `update-${sorted.length}`, text: updateText(sorted.length), values });
    },
  };
}

const db = driver === 'pg' ? nodePostgres() : postgresjs();

const fortunesTemplate = Handlebars.compile(
  '<!DOCTYPE html><html><head><title>Fortunes</title></head><body><table>'
  + '<tr><th>id</th><th>message</th></tr>'
  + '{{#each fortunes}}<tr><td>{{id}}</td><td>{{message}}</td></tr>{{/each}}'
  + '</table></body></html>');

const TYPES = {
  json: 'application/json',
  html: 'text/html; charset=utf-8',
  plain: 'text/plain; charset=utf-8',
};

function send(res, status, type, body) {
  res.writeHead(status, {
    Server: 'Node',
    'Content-Type': TYPES[type],
    'Content-Length': Buffer.byteLength(body),
  });
  res.end(body);
}

// TFB's queries parameter: an integer clamped to 1..500, anything else 1.
function count(raw) {
  const n = /^\s*-?\d+\s*$/.test(raw || '') ? parseInt(raw, 10) : 1;
  return n < 1 ? 1 : n > 500 ? 500 : n;
}

function randomWorlds(n) {
  const jobs = new Array(n);
  for (let i = 0; i < n; i++) jobs[i] = db.find(randomNumber());
  return Promise.all(jobs);
}

async function handle(req, res, path, query) {
  switch (path) {
    case '/json':
      return send(res, 200, 'json', JSON.stringify({ message: 'Hello, World!' }));
    case '/plaintext':
      return send(res, 200, 'plain', 'Hello, World!');
    case '/db':
      return send(res, 200, 'json', JSON.stringify(await db.find(randomNumber())));
    case '/queries':
      return send(res, 200, 'json',
        JSON.stringify(await randomWorlds(count(new URLSearchParams(query).get('queries')))));
    case '/fortunes': {
      const fortunes = await db.fortunes();
      const rows = [{ id: 0, message: 'Additional fortune added at request time.' }];
      for (const f of fortunes) rows.push({ id: f.id, message: f.message });
      rows.sort((a, b) => (a.message < b.message ? -1 : a.message > b.message ? 1 : 0));
      return send(res, 200, 'html', fortunesTemplate({ fortunes: rows }));
    }
    case '/updates': {
      const worlds = await randomWorlds(count(new URLSearchParams(query).get('queries')));
      for (const w of worlds) w.randomNumber = randomNumber();
      await db.bulkUpdate(worlds);
      return send(res, 200, 'json', JSON.stringify(worlds));
    }
    default:
      return send(res, 404, 'plain', 'Not Found');
  }
}

const server = http.createServer((req, res) => {
  const q = req.url.indexOf('?');
  const path = q < 0 ? req.url : req.url.slice(0, q);
  const query = q < 0 ? '' : req.url.slice(q + 1);
  if (req.method !== 'GET') return send(res, 405, 'plain', 'Method Not Allowed');
  handle(req, res, path, query).catch((err) => {
    console.error(`${req.url}: ${err.stack || err}`);
    if (!res.headersSent) send(res, 500, 'json', JSON.stringify({ error: String(err) }));
  });
});
server.keepAliveTimeout = 75000;
server.headersTimeout = 76000;

server.listen(port, '127.0.0.1', () => {
  console.log(`node ${process.version} (${driver}) listening on http://127.0.0.1:${port}`);
});

for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, () => process.exit(0));
}
