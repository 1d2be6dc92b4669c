-- bench/pg/run's database: the `world` table of the TechEmpower Framework
-- Benchmarks (TFB), the one its "single query" and "multiple queries"
-- tests read: 10,000 rows, `id` 1..10000 the primary key, `randomnumber`
-- an integer in 1..10000. TFB writes the column as randomNumber, unquoted,
-- which PostgreSQL folds to lower case; the JSON answers spell it
-- randomNumber.
--
-- Run as the table's owner on its database (bench/pg/run: benchmarkdbuser
-- on hello_world, TFB's names), in one transaction. The random numbers come
-- from a fixed seed, so every run measures the same table.
BEGIN;

CREATE TABLE world (
  id integer NOT NULL,
  randomnumber integer NOT NULL DEFAULT 0,
  PRIMARY KEY (id)
);

SELECT setseed(0.15);
INSERT INTO world (id, randomnumber)
SELECT n, 1 + floor(random() * 10000)::integer
FROM generate_series(1, 10000) AS n;

COMMIT;

ANALYZE world;
