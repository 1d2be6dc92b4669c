-- Table-driven HTTP/1.1 conformance: adversarial request bytes, each sent on
-- a fresh connection, with the status the core must answer and whether the
-- connection must close after it. Every row names the RFC 9110 / RFC 9112
-- section (or CVE) whose rule it checks.
--
-- A row:
--   ref     the rule checked: "RFC 9112 §6.3 (CL+TE)", "CVE-...", ...
--   desc    a few words on the bytes
--   raw     the exact bytes sent, in one write
--   status  the status expected, or "ok" for any 2xx
--   close   true: the connection must end after the answer, with no further
--           bytes; false: it must stay usable (a second request answered)
--   body    (optional) the exact response body expected
--   allow   (optional) the Allow header expected
--   head    (optional) the request was HEAD: the answer has no body
--   interim (optional) a 1xx answer counts as the answer (none may come)
--   why     (optional) words the JSON error message must contain. Given on
--           the rows the core's own pre-scan of the head answers (NUL, bare
--           CR, obs-fold): llhttp's strict mode refuses most of those bytes
--           too, so without it a row would pass with the pre-scan gone.
--
-- Every answer the core gives as an error must carry a JSON body with an
-- "error" string. The server runs with small limits so that the size rows
-- stay small: 2048-byte heads, 20 header fields, 1024-byte bodies.
local helpers = require("spec.helpers")
local support = require("spec.support.server")

local MAX_HEAD, MAX_FIELDS, MAX_BODY = 2048, 20, 1024

local H = "Host: x\r\n"

-- "GET <target> HTTP/1.1", Host, `fields`, blank line, `body`.
local function get(target, fields, body)
  return "GET " .. target .. " HTTP/1.1\r\n" .. H .. (fields or "") .. "\r\n" .. (body or "")
end

-- A POST /echo with `fields` and `body` (no framing added).
local function post(fields, body)
  return "POST /echo HTTP/1.1\r\n" .. H .. (fields or "") .. "\r\n" .. (body or "")
end

-- A chunked POST /echo whose body is `chunks`, the raw chunked bytes.
local function chunked(chunks)
  return post("Transfer-Encoding: chunked\r\n", chunks)
end

-- `n` header fields X-F1..X-Fn.
local function fields(n)
  local out = {}
  for i = 1, n do out[#out + 1] = ("X-F%d: v\r\n"):format(i) end
  return table.concat(out)
end

-- `n` one-byte chunks, each with an extension of about `ext` bytes.
local function chunks_with_extensions(n, ext)
  local out = {}
  for _ = 1, n do out[#out + 1] = "1;e=" .. ("e"):rep(ext) .. "\r\nx\r\n" end
  return table.concat(out) .. "0\r\n\r\n"
end

local rows = {
  ------------------------------------------------------------------------
  -- Bare CR, NUL and obs-fold: the core's pre-scan of the head (400)
  ------------------------------------------------------------------------
  { ref = "CVE-2024-27982 (\\r\\n\\rX)", desc = "bare CR at the start of a header line",
    raw = "GET /ok HTTP/1.1\r\n\rX: y\r\n" .. H .. "\r\n", status = 400, close = true,
    why = "bare CR" },
  { ref = "CVE-2023-30589 (CR-only line end)", desc = "header line ended by a bare CR",
    raw = "GET /ok HTTP/1.1\r\nHost: x\rX: y\r\n\r\n", status = 400, close = true,
    why = "bare CR" },
  { ref = "RFC 9112 §2.2 bare CR", desc = "bare CR inside a header value",
    raw = get("/ok", "X: a\rb\r\n"), status = 400, close = true,
    why = "bare CR" },
  { ref = "RFC 9112 §2.2 bare CR", desc = "bare CR inside a header name",
    raw = get("/ok", "X\rY: v\r\n"), status = 400, close = true,
    why = "bare CR" },
  { ref = "RFC 9112 §2.2 bare CR", desc = "bare CR in the request line",
    raw = "GET /ok\r HTTP/1.1\r\n" .. H .. "\r\n", status = 400, close = true,
    why = "bare CR" },
  { ref = "RFC 9112 §2.2 bare CR", desc = "bare CR before the request line",
    raw = "\rGET /ok HTTP/1.1\r\n" .. H .. "\r\n", status = 400, close = true,
    why = "bare CR" },
  { ref = "RFC 9112 §2.2 bare CR", desc = "bare CR before the blank line ending the head",
    raw = "GET /ok HTTP/1.1\r\n" .. H .. "X: v\r\n\r\r\n", status = 400, close = true,
    why = "bare CR" },
  { ref = "RFC 9112 §5.2 obs-fold", desc = "continuation line starting with SP",
    raw = get("/ok", "X: a\r\n b\r\n"), status = 400, close = true,
    why = "folding" },
  { ref = "RFC 9112 §5.2 obs-fold", desc = "continuation line starting with HTAB",
    raw = get("/ok", "X: a\r\n\tb\r\n"), status = 400, close = true,
    why = "folding" },
  { ref = "CVE-2022-32215 (multi-line Transfer-Encoding)", desc = "Transfer-Encoding value folded onto the next line",
    raw = post("Transfer-Encoding:\r\n chunked\r\nContent-Length: 5\r\n", "hello"), status = 400, close = true,
    why = "folding" },
  { ref = "RFC 9112 §2.2 (SP after start-line)", desc = "whitespace before the first header line",
    raw = "GET /ok HTTP/1.1\r\n Host: x\r\n\r\n", status = 400, close = true,
    why = "folding" },
  { ref = "RFC 9110 §5.5 NUL", desc = "NUL in a header value",
    raw = get("/ok", "X: a\0b\r\n"), status = 400, close = true,
    why = "NUL" },
  { ref = "RFC 9110 §5.5 NUL", desc = "NUL in a header name",
    raw = get("/ok", "X-Na\0me: v\r\n"), status = 400, close = true,
    why = "NUL" },
  { ref = "RFC 9112 §3 NUL", desc = "NUL in the request target",
    raw = "GET /o\0k HTTP/1.1\r\n" .. H .. "\r\n", status = 400, close = true,
    why = "NUL" },
  { ref = "RFC 9112 §3 NUL", desc = "NUL in the method",
    raw = "G\0ET /ok HTTP/1.1\r\n" .. H .. "\r\n", status = 400, close = true,
    why = "NUL" },

  ------------------------------------------------------------------------
  -- Host (400)
  ------------------------------------------------------------------------
  { ref = "RFC 9112 §3.2 (no Host)", desc = "HTTP/1.1 request without Host",
    raw = "GET /ok HTTP/1.1\r\n\r\n", status = 400, close = true },
  { ref = "RFC 9112 §3.2 (no Host)", desc = "absolute-form target does not stand in for a missing Host",
    raw = "GET http://example.test/ok HTTP/1.1\r\n\r\n", status = 400, close = true },
  { ref = "RFC 9112 §3.2 (two Host)", desc = "two Host fields with different values",
    raw = "GET /ok HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", status = 400, close = true },
  { ref = "RFC 9112 §3.2 (two Host)", desc = "two Host fields, same value, names in different case",
    raw = "GET /ok HTTP/1.1\r\nhost: x\r\nHOST: x\r\n\r\n", status = 400, close = true },
  { ref = "RFC 9112 §3.2 (Host value)", desc = "Host with userinfo",
    raw = "GET /ok HTTP/1.1\r\nHost: user@x\r\n\r\n", status = 400, close = true, why = "Host" },
  { ref = "RFC 9112 §3.2 (Host value)", desc = "Host with a path",
    raw = "GET /ok HTTP/1.1\r\nHost: x/ok\r\n\r\n", status = 400, close = true, why = "Host" },
  { ref = "RFC 9112 §3.2 (Host value)", desc = "Host with a space inside",
    raw = "GET /ok HTTP/1.1\r\nHost: a b\r\n\r\n", status = 400, close = true, why = "Host" },
  { ref = "RFC 9110 §4.2.1 (empty host)", desc = "Host with a port and no host",
    raw = "GET /ok HTTP/1.1\r\nHost: :8080\r\n\r\n", status = 400, close = true, why = "Host" },
  { ref = "RFC 9112 §3.2 (Host value)", desc = "Host with an unclosed IPv6 literal",
    raw = "GET /ok HTTP/1.1\r\nHost: [::1:8080\r\n\r\n", status = 400, close = true, why = "Host" },
  { ref = "RFC 9112 §3.2 (Host value)", desc = "Host with a port that is not digits",
    raw = "GET /ok HTTP/1.1\r\nHost: x:http\r\n\r\n", status = 400, close = true, why = "Host" },
  { ref = "RFC 9110 §4.2.4 (userinfo)", desc = "absolute-form target with userinfo",
    raw = get("http://user:pw@example.test/ok"), status = 400, close = true, why = "authority" },
  { ref = "RFC 9110 §4.2.1 (empty host)", desc = "absolute-form target with an empty host",
    raw = get("http:///ok"), status = 400, close = true, why = "authority" },
  { ref = "RFC 9112 §3.2 (Host value)", desc = "Host with an IPv6 literal and a port",
    raw = "GET /ok HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n", status = "ok", close = false, body = "ok" },
  { ref = "RFC 9112 §3.2 (Host value)", desc = "Host with a name, a port and a percent-encoding",
    raw = "GET /ok HTTP/1.1\r\nHost: ex%41mple.test:8080\r\n\r\n", status = "ok", close = false, body = "ok" },

  ------------------------------------------------------------------------
  -- Message framing: Content-Length and Transfer-Encoding (400, 501)
  ------------------------------------------------------------------------
  { ref = "RFC 9112 §6.3 (CL+TE)", desc = "Content-Length, then Transfer-Encoding: chunked",
    raw = post("Content-Length: 5\r\nTransfer-Encoding: chunked\r\n", "0\r\n\r\n"), status = 400, close = true },
  { ref = "RFC 9112 §6.3 (CL+TE)", desc = "Transfer-Encoding: chunked, then Content-Length",
    raw = post("Transfer-Encoding: chunked\r\nContent-Length: 5\r\n", "0\r\n\r\n"), status = 400, close = true },
  { ref = "RFC 9112 §6.3 (CL+TE)", desc = "Content-Length: 0 with chunked, a request hidden in the body",
    raw = post("Content-Length: 0\r\nTransfer-Encoding: chunked\r\n",
      "0\r\n\r\nGET /p/smuggled HTTP/1.1\r\nHost: x\r\n\r\n"), status = 400, close = true },
  { ref = "RFC 9112 §6.3 (two CL)", desc = "two Content-Length fields, 5 and 6",
    raw = post("Content-Length: 5\r\nContent-Length: 6\r\n", "hello!"), status = 400, close = true },
  { ref = "RFC 9110 §8.6 (CL list)", desc = "one Content-Length field holding 5, 6",
    raw = post("Content-Length: 5, 6\r\n", "hello!"), status = 400, close = true },
  { ref = "RFC 9112 §6.3 (chunked not last)", desc = "Transfer-Encoding: chunked, identity",
    raw = post("Transfer-Encoding: chunked, identity\r\n", "0\r\n\r\n"), status = 400, close = true },
  { ref = "RFC 9112 §6.3 (chunked not last)", desc = "Transfer-Encoding: chunked, gzip",
    raw = post("Transfer-Encoding: chunked, gzip\r\n", "0\r\n\r\n"), status = 400, close = true },
  { ref = "RFC 9112 §6.1 (TE in HTTP/1.0)", desc = "chunked body in an HTTP/1.0 request",
    raw = "POST /echo HTTP/1.0\r\n" .. H .. "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
    status = 400, close = true },
  { ref = "RFC 9112 §6.1 (TE in HTTP/1.0)", desc = "HTTP/1.0 keep-alive request with chunked body",
    raw = "POST /echo HTTP/1.0\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    status = 400, close = true },
  { ref = "RFC 9112 §6.3 (TE not ending in chunked)", desc = "Transfer-Encoding: gzip alone",
    raw = post("Transfer-Encoding: gzip\r\n", "hello"), status = 400, close = true },
  { ref = "RFC 9112 §6.3 (TE not ending in chunked)", desc = "Transfer-Encoding: identity",
    raw = post("Transfer-Encoding: identity\r\n", "hello"), status = 400, close = true },
  { ref = "RFC 9112 §6.3 (TE not ending in chunked)", desc = "chunked, then gzip in a second field",
    raw = post("Transfer-Encoding: chunked\r\nTransfer-Encoding: gzip\r\n", "0\r\n\r\n"), status = 400, close = true },
  { ref = "RFC 9113 §3.4 (HTTP/2 preface)", desc = "the HTTP/2 connection preface",
    raw = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", status = 505, close = true },
  { ref = "RFC 9110 §5.1 (field name is a token)", desc = "empty field name before the colon",
    raw = "GET /ok HTTP/1.1\r\nHost: x\r\n: v\r\n\r\n", status = 400, close = true },
  { ref = "RFC 9110 §5.1 (field name is a token)", desc = "a line that is only a colon",
    raw = "GET /ok HTTP/1.1\r\nHost: x\r\n:\r\n\r\n", status = 400, close = true },
  { ref = "RFC 9112 §3 (request-line)", desc = "a space after the HTTP version",
    raw = "GET /ok HTTP/1.1 \r\nHost: x\r\n\r\n", status = 400, close = true },
  { ref = "RFC 9112 §6.1 (unknown coding)", desc = "Transfer-Encoding: gzip, chunked",
    raw = post("Transfer-Encoding: gzip, chunked\r\n", "0\r\n\r\n"), status = 501, close = true },
  { ref = "RFC 9112 §6.1 (unknown coding)", desc = "Transfer-Encoding: deflate, chunked",
    raw = post("Transfer-Encoding: deflate, chunked\r\n", "0\r\n\r\n"), status = 501, close = true },
  { ref = "RFC 9112 §6.1 (unknown coding)", desc = "gzip and chunked in two Transfer-Encoding fields",
    raw = post("Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n", "0\r\n\r\n"), status = 501, close = true },

  ------------------------------------------------------------------------
  -- Chunked coding (400)
  ------------------------------------------------------------------------
  { ref = "RFC 9112 §7.1 (chunk-size)", desc = "chunk size that is not hex",
    raw = chunked("zz\r\nhello\r\n0\r\n\r\n"), status = 400, close = true },
  { ref = "RFC 9112 §7.1 (chunk-size)", desc = "negative chunk size",
    raw = chunked("-1\r\nhello\r\n0\r\n\r\n"), status = 400, close = true },
  { ref = "RFC 9112 §7.1 (chunk-size)", desc = "chunk size with a 0x prefix",
    raw = chunked("0x5\r\nhello\r\n0\r\n\r\n"), status = 400, close = true },
  { ref = "CVE-2013-2028 (chunk size overflow)", desc = "17 hex digits of chunk size",
    raw = chunked("fffffffffffffffff\r\nhello\r\n0\r\n\r\n"), status = 400, close = true },
  { ref = "RFC 9112 §7.1 (chunk-data CRLF)", desc = "chunk data longer than its size",
    raw = chunked("5\r\nhelloXX\r\n0\r\n\r\n"), status = 400, close = true },
  { ref = "RFC 9112 §7.1.1 (chunk-ext)", desc = "quoted chunk extension value left open",
    raw = chunked("5;a=\"b\r\nhello\r\n0\r\n\r\n"), status = 400, close = true, why = "extension" },
  { ref = "RFC 9112 §7.1.1 (chunk-ext)", desc = "chunk extension value with a space inside a token",
    raw = chunked("5;a=b c\r\nhello\r\n0\r\n\r\n"), status = 400, close = true, why = "extension" },
  { ref = "RFC 9110 §5.1 (field-name token)", desc = "trailer field with an empty name",
    raw = chunked("5\r\nhello\r\n0\r\n: v\r\n\r\n"), status = 400, close = true, why = "trailer" },

  ------------------------------------------------------------------------
  -- Field names and request lines (400)
  ------------------------------------------------------------------------
  { ref = "RFC 9110 §5.1 (field-name token)", desc = "space inside a header name",
    raw = get("/ok", "Bad Name: v\r\n"), status = 400, close = true },
  { ref = "CVE-2019-20444 (no colon)", desc = "header line without a colon",
    raw = get("/ok", "NoColonHere\r\n"), status = 400, close = true },
  { ref = "CVE-2019-16869 (SP before colon)", desc = "Transfer-Encoding : chunked with Content-Length",
    raw = post("Transfer-Encoding : chunked\r\nContent-Length: 3\r\n", "abc"), status = 400, close = true },
  { ref = "RFC 9112 §5.1 (SP before colon)", desc = "Host : x",
    raw = "GET /ok HTTP/1.1\r\nHost : x\r\n\r\n", status = 400, close = true },
  { ref = "RFC 9112 §5.1 (HTAB before colon)", desc = "a tab between name and colon",
    raw = get("/ok", "X-A\t: b\r\n"), status = 400, close = true },
  { ref = "RFC 9110 §5.1 (field-name token)", desc = "delimiter ( in a header name",
    raw = get("/ok", "X(y): v\r\n"), status = 400, close = true },
  { ref = "RFC 9112 §3 (HTTP/0.9)", desc = "request line with no version",
    raw = "GET /ok\r\n\r\n", status = 400, close = true },
  { ref = "RFC 9112 §3 (HTTP/0.9)", desc = "request line with no version, then fields",
    raw = "GET /ok\r\nHost: x\r\n\r\n", status = 400, close = true },
  { ref = "RFC 9112 §3 (HTTP/0.9)", desc = "request line with no version and nothing after it",
    raw = "GET /ok\r\n", status = 400, close = true, why = "version" },
  { ref = "RFC 9112 §3 (HTTP/0.9)", desc = "request line with no version, then a field and no blank line",
    raw = "GET /ok\r\nHost: x\r\n", status = 400, close = true, why = "version" },
  { ref = "RFC 9112 §3.2.4 (asterisk-form)", desc = "GET *",
    raw = "GET * HTTP/1.1\r\n" .. H .. "\r\n", status = 400, close = true, why = "OPTIONS" },
  { ref = "RFC 9112 §3.2.4 (asterisk-form)", desc = "OPTIONS *x",
    raw = "OPTIONS *x HTTP/1.1\r\n" .. H .. "\r\n", status = 400, close = true, why = "target" },
  { ref = "RFC 9110 §9.3.6 (CONNECT)", desc = "CONNECT to an origin server",
    raw = "CONNECT example.test:443 HTTP/1.1\r\nHost: example.test:443\r\n\r\n", status = 501, close = true,
    why = "CONNECT" },
  { ref = "RFC 9112 §3 (garbage)", desc = "control bytes and text instead of a request line",
    raw = "\1\2\3garbage\r\n\r\n", status = 400, close = true },
  { ref = "RFC 9112 §3 (garbage)", desc = "a TLS ClientHello on the plain-text port",
    raw = "\22\3\1\0\200\1\0\0\124\3\3", status = 400, close = true },
  { ref = "RFC 9112 §3 (leading whitespace)", desc = "SP before the method",
    raw = " GET /ok HTTP/1.1\r\n" .. H .. "\r\n", status = 400, close = true },
  { ref = "RFC 9112 §3 (leading whitespace)", desc = "HTAB before the method",
    raw = "\tGET /ok HTTP/1.1\r\n" .. H .. "\r\n", status = 400, close = true },
  { ref = "RFC 9110 §9.1 (method token)", desc = "( in the method",
    raw = "G(T /ok HTTP/1.1\r\n" .. H .. "\r\n", status = 400, close = true },
  { ref = "RFC 9110 §9.1 (method token)", desc = "@ in the method",
    raw = "G@T /ok HTTP/1.1\r\n" .. H .. "\r\n", status = 400, close = true },
  { ref = "RFC 9110 §9.1 (method token)", desc = "DEL in the method",
    raw = "GE\127T /ok HTTP/1.1\r\n" .. H .. "\r\n", status = 400, close = true },

  ------------------------------------------------------------------------
  -- Versions (505) and expectations (417)
  ------------------------------------------------------------------------
  { ref = "RFC 9110 §15.6.6 (HTTP/1.2)", desc = "HTTP/1.2",
    raw = "GET /ok HTTP/1.2\r\n" .. H .. "\r\n", status = 505, close = true },
  { ref = "RFC 9110 §15.6.6 (HTTP/2.0)", desc = "HTTP/2.0 in an HTTP/1 request line",
    raw = "GET /ok HTTP/2.0\r\n" .. H .. "\r\n", status = 505, close = true },
  { ref = "RFC 9110 §15.6.6 (HTTP/3.0)", desc = "HTTP/3.0",
    raw = "GET /ok HTTP/3.0\r\n" .. H .. "\r\n", status = 505, close = true },
  { ref = "RFC 9110 §15.6.6 (HTTP/0.9)", desc = "HTTP/0.9 spelled out as a version",
    raw = "GET /ok HTTP/0.9\r\n" .. H .. "\r\n", status = 505, close = true },
  { ref = "RFC 9110 §10.1.1 (Expect)", desc = "Expect: 200-ok",
    raw = get("/ok", "Expect: 200-ok\r\n"), status = 417, close = true },
  { ref = "RFC 9110 §10.1.1 (Expect)", desc = "Expect: 100-continue with a second member",
    raw = get("/ok", "Expect: 100-continue, x\r\n"), status = 417, close = true },

  ------------------------------------------------------------------------
  -- Size limits (414, 431, 413)
  ------------------------------------------------------------------------
  { ref = "RFC 9110 §15.5.15 (414)", desc = "request line past --max-header-size",
    raw = get("/p/" .. ("a"):rep(MAX_HEAD + 50)), status = 414, close = true },
  { ref = "RFC 6585 §5 (431)", desc = "one header value past --max-header-size",
    raw = get("/ok", "X: " .. ("a"):rep(MAX_HEAD + 50) .. "\r\n"), status = 431, close = true },
  { ref = "RFC 6585 §5 (431)", desc = "head past --max-header-size in 9 fields of 250 bytes",
    raw = get("/ok", (function()
      local out = {}
      for i = 1, 9 do out[#out + 1] = ("X-P%d: %s\r\n"):format(i, ("p"):rep(250)) end
      return table.concat(out)
    end)()), status = 431, close = true },
  { ref = "RFC 6585 §5 (431)", desc = "Host and 20 more fields, past --max-headers",
    raw = get("/ok", fields(MAX_FIELDS)), status = 431, close = true },
  { ref = "RFC 9112 §7.1.2 (trailer size)", desc = "trailer field past --max-header-size",
    raw = chunked("5\r\nhello\r\n0\r\nX-T: " .. ("t"):rep(MAX_HEAD + 50) .. "\r\n\r\n"),
    status = 431, close = true },
  { ref = "CVE-2024-22019 (chunk extension size)", desc = "one chunk extension past --max-header-size",
    raw = chunked("5;" .. ("e"):rep(MAX_HEAD + 50) .. "\r\nhello\r\n0\r\n\r\n"),
    status = 431, close = true },
  { ref = "CVE-2023-39326 (chunk extensions add up)", desc = "30 chunks with 100-byte extensions",
    raw = chunked(chunks_with_extensions(30, 100)), status = 431, close = true },
  { ref = "RFC 9112 §7.1.1 (extensions+trailers)", desc = "extension and trailer each under the limit, past it together",
    raw = chunked("5;e=" .. ("e"):rep(1200) .. "\r\nhello\r\n0\r\nX-T: " .. ("t"):rep(1200) .. "\r\n\r\n"),
    status = 431, close = true },
  { ref = "RFC 9110 §15.5.14 (413 declared)", desc = "Content-Length one past --max-body-size",
    raw = post("Content-Length: " .. (MAX_BODY + 1) .. "\r\n"), status = 413, close = true },
  { ref = "RFC 9110 §15.5.14 (413 declared)", desc = "Expect: 100-continue with a body too large",
    raw = post("Expect: 100-continue\r\nContent-Length: " .. (MAX_BODY + 1) .. "\r\n"), status = 413, close = true,
    interim = true },
  { ref = "RFC 9110 §15.5.14 (413 arriving)", desc = "chunked body growing one byte past the limit",
    raw = chunked(("%x\r\n%s\r\n%x\r\n%s\r\n1\r\nb\r\n0\r\n\r\n"):format(
      MAX_BODY / 2, ("b"):rep(MAX_BODY / 2), MAX_BODY / 2, ("b"):rep(MAX_BODY / 2))),
    status = 413, close = true },
  { ref = "RFC 9110 §15.5.14 (413 arriving)", desc = "one chunk one byte past the limit",
    raw = chunked(("%x\r\n%s\r\n0\r\n\r\n"):format(MAX_BODY + 1, ("b"):rep(MAX_BODY + 1))),
    status = 413, close = true },
  { ref = "RFC 9110 §15.5.14 (413 chunk size)", desc = "chunk size line past the limit, no data sent",
    raw = chunked(("%x\r\n"):format(MAX_BODY + 1)), status = 413, close = true },
  { ref = "RFC 9110 §15.5.14 (413 chunk size)", desc = "chunk size 2^64-1, no data sent",
    raw = chunked("ffffffffffffffff\r\n"), status = 413, close = true },
  { ref = "RFC 9110 §15.5.14 (413 chunk size)", desc = "a chunk, then a size past what the limit leaves",
    raw = chunked(("%x\r\n%s\r\n%x;x=\"y\"\r\n"):format(MAX_BODY / 2, ("b"):rep(MAX_BODY / 2), MAX_BODY / 2 + 1)),
    status = 413, close = true },
  { ref = "CVE-2024-22019 (chunk extension size)", desc = "quoted chunk extension with ; inside, past --max-header-size",
    raw = chunked("5;e=\"" .. (";"):rep(MAX_HEAD + 50) .. "\"\r\nhello\r\n0\r\n\r\n"),
    status = 431, close = true },

  ------------------------------------------------------------------------
  -- Absolute-form targets: routed by their path
  ------------------------------------------------------------------------
  { ref = "RFC 9112 §3.2.2 (absolute-form)", desc = "http://host/p/abc routed to /p/*rest",
    raw = get("http://example.test/p/abc"), status = "ok", close = false, body = "rest=abc" },
  { ref = "RFC 9112 §3.2.2 (absolute-form)", desc = "authority with a port, path and query",
    raw = get("http://example.test:8080/p/x?q=1"), status = "ok", close = false, body = "rest=x" },
  { ref = "RFC 9112 §3.2.2 (absolute-form)", desc = "no path means /",
    raw = get("http://example.test"), status = "ok", close = false, body = "root" },
  { ref = "RFC 9112 §3.2.2 (absolute-form)", desc = "https scheme",
    raw = get("https://example.test/ok"), status = "ok", close = false, body = "ok" },

  ------------------------------------------------------------------------
  -- Valid edge cases that must be accepted
  ------------------------------------------------------------------------
  { ref = "RFC 9110 §5.5 (empty value)", desc = "header with an empty value",
    raw = get("/ok", "X-Empty:\r\n"), status = "ok", close = false, body = "ok" },
  { ref = "RFC 9110 §5.5 (empty value)", desc = "header whose value is one space",
    raw = get("/ok", "X-Empty: \r\n"), status = "ok", close = false, body = "ok" },
  { ref = "RFC 9110 §5.5 (HTAB in value)", desc = "tabs inside a header value",
    raw = get("/ok", "X-Tab: a\tb \t c\r\n"), status = "ok", close = false, body = "ok" },
  { ref = "RFC 9110 §7.2 (empty Host)", desc = "Host with an empty value",
    raw = "GET /ok HTTP/1.1\r\nHost:\r\n\r\n", status = "ok", close = false, body = "ok" },
  { ref = "RFC 9112 §3.2 (HTTP/1.0 Host)", desc = "HTTP/1.0 without Host, closed after",
    raw = "GET /ok HTTP/1.0\r\n\r\n", status = "ok", close = true, body = "ok" },
  { ref = "RFC 9112 §9.3 (HTTP/1.0 keep-alive)", desc = "HTTP/1.0 with Connection: keep-alive",
    raw = "GET /ok HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", status = "ok", close = false, body = "ok" },
  { ref = "RFC 9112 §2.2 (leading CRLF)", desc = "empty lines before the request line",
    raw = "\r\n\r\n" .. get("/ok"), status = "ok", close = false, body = "ok" },
  { ref = "RFC 9112 §7.1.1 (chunk-ext)", desc = "chunk extension 5;a=b",
    raw = chunked("5;a=b\r\nhello\r\n0\r\n\r\n"), status = "ok", close = false, body = "5" },
  { ref = "RFC 9112 §7.1.1 (chunk-ext)", desc = "quoted chunk extension 5;a=\"b\"",
    raw = chunked("5;a=\"b\"\r\nhello\r\n0\r\n\r\n"), status = "ok", close = false, body = "5" },
  { ref = "RFC 9112 §7.1.1 (chunk-ext)", desc = "quoted chunk extension holding ; and =",
    raw = chunked("5;a=\"b;c=d\";e\r\nhello\r\n0\r\n\r\n"), status = "ok", close = false, body = "5" },
  { ref = "RFC 9110 §5.6.4 (quoted-pair)", desc = "quoted chunk extension with an escaped quote",
    raw = chunked("5;a=\"b\\\"c\"\r\nhello\r\n0\r\n\r\n"), status = "ok", close = false, body = "5" },
  { ref = "RFC 9112 §7.1.1 (chunk-ext BWS)", desc = "blanks around ; and = in chunk extensions",
    raw = chunked("5 ;\ta = b ; c\r\nhello\r\n0\r\n\r\n"), status = "ok", close = false, body = "5" },
  { ref = "RFC 9110 §6.5.1 (trailer limits)", desc = "Connection: close in the trailer section changes nothing",
    raw = chunked("5\r\nhello\r\n0\r\nConnection: close\r\n\r\n"), status = "ok", close = false, body = "5" },
  { ref = "RFC 9110 §7.6.1 (Connection list)", desc = "Connection: close followed by HTAB",
    raw = get("/ok", "Connection: close\t\r\n"), status = "ok", close = true, body = "ok" },
  { ref = "RFC 9110 §7.6.1 (Connection list)", desc = "Connection: a list with close after HTAB",
    raw = get("/ok", "Connection: x-option,\tclose\r\n"), status = "ok", close = true, body = "ok" },
  { ref = "RFC 9112 §9.3 (HTTP/1.0 keep-alive)", desc = "Connection: keep-alive followed by HTAB in HTTP/1.0",
    raw = "GET /ok HTTP/1.0\r\nConnection: keep-alive\t\r\n\r\n", status = "ok", close = false, body = "ok" },
  { ref = "RFC 9110 §9.3.7 (OPTIONS *)", desc = "OPTIONS * lists the methods the routes serve",
    raw = "OPTIONS * HTTP/1.1\r\n" .. H .. "\r\n", status = "ok", close = false, allow = "GET, HEAD, POST",
    body = "" },
  { ref = "RFC 9112 §7.1.2 (trailers)", desc = "two trailer fields after the last chunk",
    raw = chunked("5\r\nhello\r\n0\r\nX-T: 1\r\nX-U: 2\r\n\r\n"), status = "ok", close = false, body = "5" },
  { ref = "RFC 9112 §7.1 (HEXDIG case)", desc = "lower-case chunk sizes a and 1f",
    raw = chunked("a\r\n0123456789\r\n1f\r\n" .. ("x"):rep(31) .. "\r\n0\r\n\r\n"),
    status = "ok", close = false, body = "41" },
  { ref = "RFC 9112 §7.1 (HEXDIG case)", desc = "upper-case chunk size 1F",
    raw = chunked("1F\r\n" .. ("x"):rep(31) .. "\r\n0\r\n\r\n"), status = "ok", close = false, body = "31" },
  { ref = "RFC 9112 §6.3 (chunked alone)", desc = "chunked body, Content-Length absent",
    raw = chunked("5\r\nhello\r\n0\r\n\r\n"), status = "ok", close = false, body = "5" },
  { ref = "RFC 9112 §6.3 (chunked alone)", desc = "empty chunked body",
    raw = chunked("0\r\n\r\n"), status = "ok", close = false, body = "0" },
  { ref = "RFC 9112 §6.3 (CL)", desc = "body of exactly --max-body-size",
    raw = post("Content-Length: " .. MAX_BODY .. "\r\n", ("b"):rep(MAX_BODY)),
    status = "ok", close = false, body = tostring(MAX_BODY) },
  { ref = "RFC 6585 §5 (431 boundary)", desc = "Host and 19 more fields, at --max-headers",
    raw = get("/ok", fields(MAX_FIELDS - 1)), status = "ok", close = false, body = "ok" },
  { ref = "RFC 9110 §10.1.1 (100-continue)", desc = "Expect: 100-continue with a body",
    raw = post("Expect: 100-continue\r\nContent-Length: 5\r\n", "hello"), status = "ok", close = false, body = "5" },
  { ref = "RFC 9110 §10.1.1 (100-continue)", desc = "Expect value compared case-insensitively",
    raw = get("/ok", "Expect: 100-Continue\r\n"), status = "ok", close = false, body = "ok" },
  { ref = "RFC 9110 §9.3.2 (HEAD)", desc = "HEAD on a GET route: no body",
    raw = "HEAD /ok HTTP/1.1\r\n" .. H .. "\r\n", status = "ok", close = false, head = true },
  { ref = "RFC 9110 §15.5.6 (405 Allow)", desc = "OPTIONS on a GET-only path",
    raw = "OPTIONS /ok HTTP/1.1\r\n" .. H .. "\r\n", status = 405, close = false, allow = "GET, HEAD" },
  { ref = "RFC 9110 §15.5.6 (405 Allow)", desc = "GET on a POST-only path",
    raw = get("/echo"), status = 405, close = false, allow = "POST" },
  { ref = "RFC 9110 §15.5.5 (404)", desc = "no route for the path",
    raw = get("/nope"), status = 404, close = false },
}

-- Pipelined batches, each sent in one write: the good requests are answered
-- in order, then the error, then the connection ends; nothing after the bad
-- request is answered.
local pipelines = {
  { ref = "RFC 9112 §9.3.2 (pipelining) + bare CR", desc = "three GETs, a bare CR, then a GET",
    raw = get("/ok") .. get("/p/1") .. get("/p/2") ..
      "GET /ok HTTP/1.1\r\nHost: x\rX: y\r\n\r\n" .. get("/p/never"),
    expect = { { 200, "ok" }, { 200, "rest=1" }, { 200, "rest=2" }, { 400 } } },
  { ref = "RFC 9112 §9.3.2 (pipelining) + CL+TE", desc = "bodies, then a smuggling attempt",
    raw = post("Content-Length: 5\r\n", "hello") .. chunked("3\r\nabc\r\n0\r\n\r\n") ..
      post("Content-Length: 44\r\nTransfer-Encoding: chunked\r\n",
        "0\r\n\r\nGET /p/smuggled HTTP/1.1\r\nHost: x\r\n\r\n") .. get("/p/never"),
    expect = { { 200, "5" }, { 200, "3" }, { 400 } } },
  { ref = "RFC 9112 §9.3.2 (pipelining) + 404/405", desc = "404 and 405 keep the pipeline going until a 505",
    raw = get("/nope") .. get("/echo") .. get("/ok") ..
      "GET /ok HTTP/2.0\r\n" .. H .. "\r\n" .. get("/p/never"),
    expect = { { 404 }, { 405 }, { 200, "ok" }, { 505 } } },
  { ref = "RFC 9112 §9.3.2 (pipelining) + 431", desc = "two GETs, then too many fields",
    raw = get("/ok") .. get("/ok") .. get("/ok", fields(MAX_FIELDS)) .. get("/p/never"),
    expect = { { 200, "ok" }, { 200, "ok" }, { 431 } } },
  { ref = "RFC 9112 §9.3.2 (pipelining) + 413", desc = "a GET, then a declared body too large",
    raw = get("/ok") .. post("Content-Length: " .. (MAX_BODY + 1) .. "\r\n") .. get("/p/never"),
    expect = { { 200, "ok" }, { 413 } } },
  { ref = "RFC 9112 §9.3.2 (pipelining) + 417", desc = "HEAD and GET, then Expect: 200-ok",
    raw = "HEAD /ok HTTP/1.1\r\n" .. H .. "\r\n" .. get("/p/a") ..
      get("/ok", "Expect: 200-ok\r\n") .. get("/p/never"),
    expect = { { 200, "", head = true }, { 200, "rest=a" }, { 417 } } },
}

local SECOND = get("/ok")

local function check_error_body(resp)
  if resp.status >= 400 then helpers.json_error(resp) end
end

local function check_status(resp, want)
  if want == "ok" then
    assert(resp.status >= 200 and resp.status < 300,
      ("want a 2xx answer, got %d: %s"):format(resp.status, helpers.shorten(resp.body)))
  else
    assert(resp.status == want,
      ("want %d, got %d: %s"):format(want, resp.status, helpers.shorten(resp.body)))
  end
end

describe("conformance", function()
  local server = support.serve("spec/fixtures/conformance.lua", {
    "--max-header-size", tostring(MAX_HEAD),
    "--max-headers", tostring(MAX_FIELDS),
    "--max-body-size", tostring(MAX_BODY),
  })

  local conn
  after_each(function()
    if conn then conn:close() end
    conn = nil
  end)

  it("has at least 60 rows", function()
    assert(#rows >= 60, ("only %d rows"):format(#rows))
  end)

  for _, row in ipairs(rows) do
    local want = row.status == "ok" and "2xx" or tostring(row.status)
    local name = ("%s: %s -> %s%s"):format(row.ref, row.desc, want,
      row.close and ", closed" or ", kept open")
    it(name, function()
      conn = helpers.connect(server.port)
      -- A server that answers early may close before taking every byte;
      -- the answer is what counts.
      conn:try_send(row.raw)
      local resp = conn:read_response({ head = row.head, interim = row.interim })
      assert(resp, "the connection ended without an answer")
      check_status(resp, row.status)
      check_error_body(resp)
      if row.why then
        local msg = helpers.json_error(resp)
        assert(msg:lower():find(row.why:lower(), 1, true),
          ("want an error about %q, got %q"):format(row.why, msg))
      end
      if row.body then assert.equal(row.body, resp.body) end
      if row.allow then assert.equal(row.allow, resp.headers["allow"]) end
      if row.head then
        assert.equal("", resp.body)
        assert.equal("2", resp.headers["content-length"])
      end
      if row.close then
        local ended, why = conn:wait_eof(5)
        assert(ended, "the connection did not close after the answer: " .. tostring(why))
      else
        assert.is_not.equal("close", (resp.headers["connection"] or ""):lower())
        assert.equal("", conn.buf, "bytes beyond the one answer")
        conn:send(SECOND)
        local again = conn:read_response()
        assert(again, "the connection ended instead of answering a second request")
        assert.equal(200, again.status)
        assert.equal("ok", again.body)
      end
    end)
  end

  describe("pipelining", function()
    for _, p in ipairs(pipelines) do
      it(("%s: %s"):format(p.ref, p.desc), function()
        conn = helpers.connect(server.port)
        conn:try_send(p.raw)
        for i, e in ipairs(p.expect) do
          local resp = conn:read_response({ head = e.head })
          assert(resp, ("the connection ended after %d of %d answers"):format(i - 1, #p.expect))
          assert(resp.status == e[1], ("answer %d: want %d, got %d: %s"):format(
            i, e[1], resp.status, helpers.shorten(resp.body)))
          if e[2] then assert.equal(e[2], resp.body) end
          check_error_body(resp)
          if i < #p.expect then
            assert.is_not.equal("close", (resp.headers["connection"] or ""):lower())
          end
        end
        local ended, why = conn:wait_eof(5)
        assert(ended, "after the error: " .. tostring(why))
      end)
    end
  end)
end)
