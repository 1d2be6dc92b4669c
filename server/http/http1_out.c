/*
 * HTTP/1.1 response heads as bytes (see http1_out.h). A head is written in
 * one pass into a buffer reserved for its whole length; the Server line
 * is formatted once, at startup.
 */
#include "http1_out.h"

#include <stdio.h>
#include <string.h>

#include "errors.h"
#include "http1.h"

const char *mp_http1_reason(int status) {
  switch (status) {
    case 100: return "Continue";
    case 101: return "Switching Protocols";
    case 200: return "OK";
    case 201: return "Created";
    case 202: return "Accepted";
    case 203: return "Non-Authoritative Information";
    case 204: return "No Content";
    case 205: return "Reset Content";
    case 206: return "Partial Content";
    case 300: return "Multiple Choices";
    case 301: return "Moved Permanently";
    case 302: return "Found";
    case 303: return "See Other";
    case 304: return "Not Modified";
    case 307: return "Temporary Redirect";
    case 308: return "Permanent Redirect";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 402: return "Payment Required";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 406: return "Not Acceptable";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 410: return "Gone";
    case 411: return "Length Required";
    case 412: return "Precondition Failed";
    case 413: return "Content Too Large";
    case 414: return "URI Too Long";
    case 415: return "Unsupported Media Type";
    case 416: return "Range Not Satisfiable";
    case 417: return "Expectation Failed";
    case 418: return "I'm a teapot";
    case 421: return "Misdirected Request";
    case 422: return "Unprocessable Content";
    case 425: return "Too Early";
    case 426: return "Upgrade Required";
    case 428: return "Precondition Required";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 451: return "Unavailable For Legal Reasons";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    case 505: return "HTTP Version Not Supported";
  }
  return "Unknown";
}

size_t mp_http1_date_line(char *out, time_t t) {
  struct tm tm;
  gmtime_r(&t, &tm);
  /* strftime's %a and %b follow the locale; IMF-fixdate needs English. */
  static const char days[7][4] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
  static const char months[12][4] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                     "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  int n = snprintf(out, 40, "Date: %s, %02d %s %04d %02d:%02d:%02d GMT\r\n",
                   days[tm.tm_wday], tm.tm_mday, months[tm.tm_mon],
                   tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
  return n > 0 ? (size_t)n : 0;
}

/* Appends the decimal digits of v. */
static size_t put_u64(char *out, uint64_t v) {
  char tmp[24];
  size_t n = 0;
  do {
    tmp[n++] = (char)('0' + v % 10);
    v /= 10;
  } while (v != 0);
  for (size_t i = 0; i < n; i++) out[i] = tmp[n - 1 - i];
  return n;
}

#define PUT(lit)                          \
  do {                                    \
    memcpy(p, lit, sizeof(lit) - 1);      \
    p += sizeof(lit) - 1;                 \
  } while (0)

/* The Server line every head carries, formatted once. */
static char server_line[sizeof "Server: \r\n" + MP_H1_SERVER_MAX] =
    "Server: moonport\r\n";
static size_t server_len = sizeof "Server: moonport\r\n" - 1;

int mp_http1_set_server(const char *value) {
  if (value == NULL) {
    server_len = 0;
    return 0;
  }
  size_t n = strlen(value);
  if (n == 0 || n > MP_H1_SERVER_MAX || !mp_http1_valid_value(value, n))
    return MP_INVALID;
  server_len = (size_t)snprintf(server_line, sizeof server_line,
                                "Server: %s\r\n", value);
  return 0;
}

int mp_http1_write_head(mp_buf *out, const mp_http1_head *h) {
  const char *reason = h->reason ? h->reason : mp_http1_reason(h->status);
  size_t rlen = h->reason ? h->reason_len : strlen(reason);
  size_t ctlen = h->content_type ? strlen(h->content_type) : 0;
  size_t slen = h->own_server ? 0 : server_len;
  size_t need = 16 + rlen + slen + h->date_len + 16 + ctlen + 40 +
                h->extra_len + 32;
  if (mp_buf_reserve(out, need) != 0) return MP_NOMEM;

  char *p = out->data + out->len;
  if (h->status == 200 && h->reason == NULL) {
    PUT("HTTP/1.1 200 OK\r\n");
  } else {
    PUT("HTTP/1.1 ");
    p += put_u64(p, (uint64_t)h->status);
    *p++ = ' ';
    memcpy(p, reason, rlen);
    p += rlen;
    PUT("\r\n");
  }
  memcpy(p, server_line, slen);
  p += slen;
  memcpy(p, h->date, h->date_len);
  p += h->date_len;
  if (h->content_type != NULL) {
    PUT("Content-Type: ");
    memcpy(p, h->content_type, ctlen);
    p += ctlen;
    PUT("\r\n");
  }
  if (h->content_length >= 0) {
    PUT("Content-Length: ");
    p += put_u64(p, (uint64_t)h->content_length);
    PUT("\r\n");
  } else if (h->content_length == MP_H1_LENGTH_CHUNKED) {
    PUT("Transfer-Encoding: chunked\r\n");
  }
  if (h->extra_len > 0) {
    memcpy(p, h->extra, h->extra_len);
    p += h->extra_len;
  }
  if (h->connection == MP_H1_CONN_CLOSE)
    PUT("Connection: close\r\n");
  else if (h->connection == MP_H1_CONN_KEEPALIVE)
    PUT("Connection: keep-alive\r\n");
  PUT("\r\n");
  out->len = (size_t)(p - out->data);
  return 0;
}
