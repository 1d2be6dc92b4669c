-- The TechEmpower Framework Benchmarks' (TFB) database of bench/tfb/run
-- and of the specs (spec/support/pg.lua's pg.TFB): the `world` and
-- `fortune` tables its database tests read and write, as TFB's
-- toolset/databases/postgres/create-postgres.sql makes them
-- (TFB also keeps quoted mixed-case copies, "World" and "Fortune"; the apps
-- here, like TFB's, query the lower-case ones, so those are left out).
--
--   world    10,000 rows: `id` 1..10000 the primary key, `randomnumber` an
--            integer in 1..10000 (TFB writes the column randomNumber,
--            unquoted, which PostgreSQL folds to lower case; the JSON
--            answers spell it randomNumber). The numbers come from a fixed
--            seed, so every run starts from the same table.
--   fortune  TFB's 12 rows, word for word (id 11 is the one an app must
--            escape; id 12 is not ASCII).
--
-- Run as the tables' owner on their database (TFB's names: benchmarkdbuser
-- on hello_world), with psql; pg_stat_statements, which TFB's query counts
-- read, is the caller's to create (it needs a superuser).
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

CREATE TABLE fortune (
  id integer NOT NULL,
  message varchar(2048) NOT NULL,
  PRIMARY KEY (id)
);

INSERT INTO fortune (id, message) VALUES
  (1, 'fortune: No such file or directory'),
  (2, 'A computer scientist is someone who fixes things that aren''t broken.'),
  (3, 'After enough decimal places, nobody gives a damn.'),
  (4, 'A bad random number generator: 1, 1, 1, 1, 1, 4.33e+67, 1, 1, 1'),
  (5, 'A computer program does what you tell it to do, not what you want it to do.'),
  (6, 'Emacs is a nice operating system, but I prefer UNIX. — Tom Christaensen'),
  (7, 'Any program that runs right is obsolete.'),
  (8, 'A list is only as strong as its weakest link. — Donald Knuth'),
  (9, 'Feature: A bug with seniority.'),
  (10, 'Computers make very fast, very accurate mistakes.'),
  (11, '<script>alert("This should not be displayed in a browser alert box.");</script>'),
  (12, 'フレームワークのベンチマーク');

COMMIT;

ANALYZE world;
ANALYZE fortune;
