--- moonport.pg: PostgreSQL for handlers, on libpq in pipeline mode
-- (server/upstream/pg.c). A client is per worker and shared by every
-- request: one connection carries the queries of many requests at once,
-- each prepared once per connection and ended by its own Sync. This
-- module sends the queries, waits once for all of a call's queries, and
-- turns results into Lua: rows as tables keyed by column name, values
-- typed by their OID.
-- @module moonport.core.pg

local ffi = require("ffi")
local json = require("moonport.json")
local runner = require("moonport.core.runner")

ffi.cdef[[
int mp_pg_open(const char *conninfo, int pool_size);
const char *mp_pg_default(void);
int mp_pg_pin_open(int client);
void mp_pg_pin_close(int pin);
int mp_pg_query(int client, int pin, const char *sql, int nparams,
                const char **values, const int *lengths, double timeout_ms,
                double *op);
int mp_pg_await(void);
int mp_pg_result(double op, const char **msg, int *shape);
const char *mp_pg_fname(double op, int col);
int mp_pg_ftype(double op, int col);
int mp_pg_value(double op, int row, int col, const char **out);
const char *mp_pg_affected(double op);
const char *mp_pg_error_field(double op, int field);
void mp_pg_release(double op);
int mp_pg_listen_open(int client, const char *channel, double *id);
int mp_pg_listen_next(double id, const char **payload, size_t *len);
]]

local C = ffi.C
local ffi_string = ffi.string
local mp_pg_open, mp_pg_default = C.mp_pg_open, C.mp_pg_default
local mp_pg_pin_open, mp_pg_pin_close = C.mp_pg_pin_open, C.mp_pg_pin_close
local mp_pg_query, mp_pg_await = C.mp_pg_query, C.mp_pg_await
local mp_pg_result, mp_pg_fname = C.mp_pg_result, C.mp_pg_fname
local mp_pg_ftype, mp_pg_value = C.mp_pg_ftype, C.mp_pg_value
local mp_pg_affected, mp_pg_error_field = C.mp_pg_affected, C.mp_pg_error_field
local mp_pg_release = C.mp_pg_release
local mp_pg_listen_open, mp_pg_listen_next = C.mp_pg_listen_open, C.mp_pg_listen_next

local MP_AGAIN, MP_BAD_CONTEXT = C.MP_AGAIN, C.MP_BAD_CONTEXT
local MP_TIMEOUT, MP_CLOSED, MP_STATE = C.MP_TIMEOUT, C.MP_CLOSED, C.MP_STATE
local MP_NOMEM, MP_DECLINED = C.MP_NOMEM, C.MP_DECLINED

local type, tostring, tonumber, error = type, tostring, tonumber, error
local setmetatable, select, pcall = setmetatable, select, pcall
local format, floor = string.format, math.floor
local suspend = runner.suspend
local null = json.null

-- Parameters go through these arrays (a query's parameters are copied by
-- libpq before the call returns). The strings are kept alive in strs.
local MAX_PARAMS = 65535
local values_arr = ffi.new("const char *[?]", 256)
local lengths_arr = ffi.new("int[?]", 256)
local params_cap = 256
local op_out = ffi.new("double[1]")
local msg_out = ffi.new("const char *[1]")
local str_out = ffi.new("const char *[1]")
local shape_out = ffi.new("int[2]")

local pg = { null = null }

-- Errors -------------------------------------------------------------------

local Error = {}
Error.__index = Error
Error.__tostring = function(e)
  if e.sqlstate then return e.sqlstate .. ": " .. e.message end
  return e.message
end

local function new_error(message, fields)
  fields = fields or {}
  fields.message = message
  return setmetatable(fields, Error)
end

local function field(op, code)
  local p = mp_pg_error_field(op, code)
  if p == nil then return nil end
  return ffi_string(p)
end

local function server_error(op)
  local position = field(op, 80) -- 'P'
  return new_error(field(op, 77) or "error", { -- 'M'
    sqlstate = field(op, 67), -- 'C'
    detail = field(op, 68), -- 'D'
    hint = field(op, 72), -- 'H'
    position = position and tonumber(position) or nil,
    severity = field(op, 86), -- 'V'
  })
end

-- Values -------------------------------------------------------------------

-- PostgreSQL's text form of an array ("{1,2,NULL}", "{\"a b\",c}") as a
-- Lua array, each element converted by conv.
local function parse_array(s, conv)
  local out, n, i, len = {}, 0, 2, #s
  if s:sub(1, 1) ~= "{" then return s end
  if s == "{}" then return setmetatable({}, json.array_mt) end
  while i <= len do
    local c = s:sub(i, i)
    if c == '"' then
      local buf, j = {}, i + 1
      while j <= len do
        local d = s:sub(j, j)
        if d == "\\" then
          buf[#buf + 1] = s:sub(j + 1, j + 1)
          j = j + 2
        elseif d == '"' then
          break
        else
          buf[#buf + 1] = d
          j = j + 1
        end
      end
      n = n + 1
      out[n] = conv(table.concat(buf))
      i = j + 2 -- past the quote and the comma or brace
    elseif c == "{" then -- a nested array
      local depth, j = 0, i
      repeat
        local d = s:sub(j, j)
        if d == "{" then depth = depth + 1 elseif d == "}" then depth = depth - 1 end
        j = j + 1
      until depth == 0 or j > len
      n = n + 1
      out[n] = parse_array(s:sub(i, j - 1), conv)
      i = j + 1
    else
      local j = s:find("[,}]", i)
      local item = s:sub(i, j - 1)
      n = n + 1
      if item == "NULL" then out[n] = null else out[n] = conv(item) end
      i = j + 1
    end
  end
  return out
end

local function as_int(s)
  local n = tonumber(s)
  -- int8 past 2^53 does not fit a double exactly: kept as text.
  if n == nil or n >= 9007199254740992 or n <= -9007199254740992 then return s end
  return n
end

local function as_float(s)
  if s == "NaN" then return 0 / 0 end
  if s == "Infinity" then return math.huge end
  if s == "-Infinity" then return -math.huge end
  return tonumber(s)
end

local function as_bool(s) return s == "t" end

local function as_json(s)
  local v = json.decode(s)
  if v == nil then return s end
  return v
end

local function as_bytea(s)
  if s:sub(1, 2) ~= "\\x" then return s end
  return (s:sub(3):gsub("%x%x", function(h) return string.char(tonumber(h, 16)) end))
end

-- "2024-01-02 03:04:05.123+00" -> "2024-01-02T03:04:05.123+00"
local function as_timestamp(s) return (s:gsub(" ", "T", 1)) end

local function identity(s) return s end

-- How a value of each type OID comes out (pg_type.oid).
local CONVERT = {
  [20] = as_int, [21] = as_int, [23] = as_int, [26] = as_int,
  [700] = as_float, [701] = as_float,
  [16] = as_bool,
  [114] = as_json, [3802] = as_json,
  [17] = as_bytea,
  [1114] = as_timestamp, [1184] = as_timestamp,
}
local ARRAY_OF = {
  [1005] = as_int, [1007] = as_int, [1016] = as_int,
  [1021] = as_float, [1022] = as_float, [1000] = as_bool,
  [1009] = identity, [1015] = identity, [1014] = identity,
  [199] = as_json, [3807] = as_json, [2951] = identity,
  [1115] = as_timestamp, [1185] = as_timestamp, [1182] = identity,
  [1231] = identity, [1001] = as_bytea,
}

-- The rows of an ended query, as Lua tables.
local function rows_of(op, nrows, ncols)
  local names, convs, arrays = {}, {}, {}
  for c = 0, ncols - 1 do
    names[c] = ffi_string(mp_pg_fname(op, c))
    local oid = mp_pg_ftype(op, c)
    convs[c] = CONVERT[oid]
    arrays[c] = ARRAY_OF[oid]
  end
  -- An array, so that no rows encode as [] (moonport.json).
  local rows = setmetatable({}, json.array_mt)
  for r = 0, nrows - 1 do
    local row = {}
    for c = 0, ncols - 1 do
      local len = mp_pg_value(op, r, c, str_out)
      if len < 0 then
        row[names[c]] = null
      else
        local s = ffi_string(str_out[0], len)
        local conv, elem = convs[c], arrays[c]
        if conv then
          s = conv(s)
        elseif elem then
          s = parse_array(s, elem)
        end
        row[names[c]] = s
      end
    end
    rows[r + 1] = row
  end
  local affected = tonumber(ffi_string(mp_pg_affected(op)))
  return rows, affected
end

-- One ended query's answer: its rows and the count of rows it
-- affected (nil when the command says none), or nil and an error.
local function outcome(op)
  local rc = mp_pg_result(op, msg_out, shape_out)
  local rows, affected, err
  if rc == 0 then
    rows, affected = rows_of(op, shape_out[0], shape_out[1])
  elseif rc == MP_DECLINED then
    err = server_error(op)
  elseif rc == MP_TIMEOUT then
    err = new_error("timeout")
  elseif rc == MP_NOMEM then
    mp_pg_release(op)
    error("moonport.pg: " .. ffi_string(msg_out[0]), 0)
  else
    local msg = ffi_string(msg_out[0])
    if rc ~= MP_CLOSED then msg = msg ~= "" and msg or "failed" end
    err = new_error(msg ~= "" and (msg:gsub("\n+$", "")) or "connection closed")
  end
  mp_pg_release(op)
  if err then return nil, err end
  return rows, affected
end

-- Parameters ---------------------------------------------------------------

local keep = {} -- the parameter strings of the query being sent

local function param_text(v)
  local tv = type(v)
  if v == nil or v == null then return nil end
  if tv == "string" then return v end
  if tv == "number" then
    if v == floor(v) and v > -1e15 and v < 1e15 then return format("%d", v) end
    return format("%.17g", v)
  end
  if tv == "boolean" then return v and "t" or "f" end
  if tv == "table" then return json.encode(v) end
  error("moonport.pg: a parameter cannot be a " .. tv, 4)
end

-- Sends one statement, its n parameters args[first .. first + n - 1]: the
-- op handle, or nil and an error.
local function send(client, pin, sql, args, first, n, timeout)
  if type(sql) ~= "string" then error("moonport.pg: sql must be a string", 3) end
  if n > MAX_PARAMS then error("moonport.pg: too many parameters", 3) end
  if n > params_cap then
    params_cap = n
    values_arr = ffi.new("const char *[?]", n)
    lengths_arr = ffi.new("int[?]", n)
  end
  for i = 1, n do
    local s = param_text(args[first + i - 1])
    keep[i] = s
    if s == nil then
      values_arr[i - 1] = nil
      lengths_arr[i - 1] = 0
    else
      if s:find("\0", 1, true) then
        error("moonport.pg: parameter " .. i .. " holds a NUL byte, which PostgreSQL text cannot", 3)
      end
      values_arr[i - 1] = s
      lengths_arr[i - 1] = #s
    end
  end
  local rc = mp_pg_query(client, pin, sql, n, values_arr, lengths_arr, timeout or 0, op_out)
  for i = 1, n do keep[i] = nil end
  if rc == MP_BAD_CONTEXT then
    error("moonport.pg: queries are only available while serving (in handlers, "
          .. "light threads and timers), not while the app loads", 3)
  end
  if rc == MP_STATE then return nil, new_error("too many queries queued on the connection") end
  if rc ~= 0 then return nil, new_error("cannot send the query (" .. tostring(rc) .. ")") end
  return op_out[0]
end

-- Waits until every query the request sent has ended. false when the
-- client left meanwhile.
local function await()
  while true do
    local rc = mp_pg_await()
    if rc == 0 then return true end
    if rc ~= MP_AGAIN then return true end
    if not suspend() then return false end
  end
end

-- Clients ------------------------------------------------------------------

local Client = {}
Client.__index = Client

local function query(self, sql, ...)
  local n = select("#", ...)
  local op, err = send(self.id, self.pin or -1, sql, { ... }, 1, n, self.timeout_ms)
  if not op then return nil, err end
  if not await() then
    mp_pg_release(op)
    return nil, new_error("closed")
  end
  return outcome(op)
end

local function batch(self, list)
  if type(list) ~= "table" then error("moonport.pg: batch takes a list of {sql, args...}", 2) end
  local ops, results = {}, {}
  for i = 1, #list do
    local item = list[i]
    local op, err = send(self.id, self.pin or -1, item[1], item, 2, #item - 1, self.timeout_ms)
    ops[i] = op or false
    if not op then results[i] = { err = err } end
  end
  local here = await()
  for i = 1, #list do
    local op = ops[i]
    if op then
      if not here then
        mp_pg_release(op)
        results[i] = { err = new_error("closed") }
      else
        local rows, affected = outcome(op)
        if rows then
          results[i] = { rows = rows, affected = affected }
        else
          results[i] = { err = affected }
        end
      end
    end
  end
  return results
end

--- Runs sql with $1..$n parameters. Returns the rows (an array of tables
-- keyed by column name) and the count of rows the command affected or
-- returned, or nil and an error table ({message, sqlstate, detail, hint,
-- position}, printable).
-- @usage local rows, err = db:query("SELECT * FROM users WHERE id = $1", id)
function Client:query(sql, ...) return query(self, sql, ...) end

--- Sends every statement of list ({sql, args...} each) in one pipeline and
-- waits once: one entry per statement, in order, {rows = rows, affected =
-- n} or {err = err}; a failing statement does not abort the others.
-- @usage local results = db:batch({ {"SELECT 1"}, {"SELECT $1::int", 2} })
function Client:batch(list) return batch(self, list) end

--- The same client with another timeout, in ms, for the queries made
-- through it: a per-query override of --pg-timeout.
-- @usage local rows, err = db:timeout(200):query("SELECT slow()")
function Client:timeout(ms)
  if type(ms) ~= "number" or ms <= 0 or ms ~= ms then
    error("moonport.pg: timeout takes a positive number of ms", 2)
  end
  return setmetatable({ id = self.id, timeout_ms = ms }, Client)
end

local Tx = {}
Tx.__index = Tx
function Tx:query(sql, ...) return query(self, sql, ...) end
function Tx:batch(list) return batch(self, list) end

--- Runs fn(tx) in a transaction on a connection of its own (BEGIN, then
-- COMMIT; ROLLBACK when fn raises, and the error is raised again). tx has
-- query and batch. A transaction inside fn (tx:transaction) is a
-- savepoint. Returns what fn returned.
-- @usage db:transaction(function(tx) tx:query("UPDATE ...") end)
function Client:transaction(fn)
  if type(fn) ~= "function" then error("moonport.pg: transaction takes a function", 2) end
  local pin = mp_pg_pin_open(self.id)
  if pin == MP_BAD_CONTEXT then
    error("moonport.pg: transactions are only available while serving", 2)
  end
  if pin == MP_STATE then
    return nil, new_error("too many transactions at once (64 per worker)")
  end
  if pin < 0 then return nil, new_error("cannot open a connection for the transaction") end
  local tx = setmetatable({ id = self.id, pin = pin, timeout_ms = self.timeout_ms }, Tx)
  local ok, err = query(tx, "BEGIN")
  if not ok then
    mp_pg_pin_close(pin)
    return nil, err
  end
  local results = { pcall(fn, tx) }
  if results[1] then
    local done, cerr = query(tx, "COMMIT")
    mp_pg_pin_close(pin)
    if not done then return nil, cerr end
    return unpack(results, 2)
  end
  query(tx, "ROLLBACK")
  mp_pg_pin_close(pin)
  error(results[2], 0)
end

local savepoints = 0
function Tx:transaction(fn)
  savepoints = savepoints + 1
  local name = "mp_sp" .. savepoints
  local ok, err = query(self, "SAVEPOINT " .. name)
  if not ok then return nil, err end
  local results = { pcall(fn, self) }
  if results[1] then
    query(self, "RELEASE SAVEPOINT " .. name)
    return unpack(results, 2)
  end
  query(self, "ROLLBACK TO SAVEPOINT " .. name)
  error(results[2], 0)
end

local len_out = ffi.new("size_t[1]")

--- Calls fn(channel, payload) for every NOTIFY on channel, in a timer
-- (outside any request; fn may query, sleep and use sockets), from a
-- connection of the client's own that LISTENs, and LISTENs again after a
-- reconnect. Listening again to the same channel (a reload runs the app
-- again) replaces the old listener. fn's errors are logged. Returns true,
-- or nil and an error.
-- @usage db:listen("orders", function(channel, payload) cache:delete(payload) end)
function Client:listen(channel, fn)
  if type(channel) ~= "string" or channel == "" then
    error("moonport.pg: listen takes a channel name", 2)
  end
  if type(fn) ~= "function" then error("moonport.pg: listen takes a function", 2) end
  if mp_pg_listen_open(self.id, channel, op_out) ~= 0 then
    return nil, new_error("too many listeners")
  end
  local id = op_out[0]
  local log = require("moonport.core.log").log
  local ok, err = require("moonport").timer.at(0, function(premature)
    if premature then return end
    while true do
      local rc = mp_pg_listen_next(id, str_out, len_out)
      if rc == 0 then
        local payload = ffi_string(str_out[0], len_out[0])
        local fine, ferr = pcall(fn, channel, payload)
        if not fine then log("error", "moonport.pg: listener of " .. channel .. " failed: " .. tostring(ferr)) end
      elseif rc == MP_AGAIN then
        if not suspend() then return end
      else
        return -- replaced by a later listen, or the worker stops
      end
    end
  end)
  if not ok then return nil, new_error(tostring(err)) end
  return true
end

--- A client for conninfo (libpq's "key=value ..." string or a
-- postgresql:// URI). opts: pool_size (pipelined connections per worker,
-- default 1), timeout (ms per query; default --pg-timeout). No I/O until
-- the first query, so an app makes it when it loads.
-- @usage local db = require("moonport.pg").connect("postgresql://app@localhost/app")
function pg.connect(conninfo, opts)
  if type(conninfo) ~= "string" then error("moonport.pg.connect: conninfo must be a string", 2) end
  opts = opts or {}
  local id = mp_pg_open(conninfo, tonumber(opts.pool_size) or 1)
  if id < 0 then error("moonport.pg.connect: out of clients", 2) end
  return setmetatable({ id = id, timeout_ms = tonumber(opts.timeout) }, Client)
end

--- The client of --pg, else of DATABASE_URL, else of libpq's PG*
-- environment (an empty conninfo).
-- @usage local db = require("moonport.pg").default()
function pg.default(opts)
  local p = mp_pg_default()
  local conninfo = p ~= nil and ffi_string(p) or os.getenv("DATABASE_URL") or ""
  return pg.connect(conninfo, opts)
end

pg.Error = Error

return pg
