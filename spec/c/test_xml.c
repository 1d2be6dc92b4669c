/*
 * The XML door (ffi/xml.c) on strings: documents parsed and refused, the
 * normalized form equalToXml compares, XPath with and without namespaces,
 * its numbers, strings and booleans, and its errors. Every document and
 * expression is freed, so that the sanitizer build finds any leak.
 */
#define _GNU_SOURCE /* memmem */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "errors.h"
#include "ffi.h"

static char err[256];

/* The normalized form of text, NULs shown as '|' (a static buffer). */
static const char *canonical(const char *text) {
  static char shown[1024];
  void *doc = mp_xml_parse(text, strlen(text), err, sizeof err);
  if (doc == NULL) return NULL;
  const char *out;
  int n = mp_xml_canonical(doc, &out);
  if (n < 0 || (size_t)n >= sizeof shown) {
    mp_xml_free(doc);
    return NULL;
  }
  for (int i = 0; i < n; i++) shown[i] = out[i] ? out[i] : '|';
  shown[n] = '\0';
  mp_xml_free(doc);
  return shown;
}

/* The values expr finds in text, joined by '|', and their kind and
 * count (a static buffer); NULL when evaluation fails. */
static const char *xpath(const char *text, const char *expr, const char *ns,
                         size_t nslen, int *kind, int *count) {
  static char shown[1024];
  void *doc = mp_xml_parse(text, strlen(text), err, sizeof err);
  void *xp = mp_xpath_compile(expr, strlen(expr), err, sizeof err);
  const char *result = NULL;
  if (doc != NULL && xp != NULL) {
    const char *out;
    size_t len;
    *count = mp_xpath_eval(doc, xp, ns, nslen, kind, &out, &len);
    if (*count >= 0 && len < sizeof shown) {
      for (size_t i = 0; i < len; i++) shown[i] = out[i] ? out[i] : '|';
      shown[len] = '\0';
      result = shown;
    }
  }
  mp_xpath_free(xp);
  mp_xml_free(doc);
  return result;
}

int main(void) {
  const char *c;
  /* White space between elements, comments, prefixes, attribute order
   * and CDATA do not show; trimmed text and namespace URIs do. */
  c = canonical("<?xml version=\"1.0\"?><!-- c --><p:a xmlns:p=\"urn:x\" z=\"1\" b=\"2\">\n"
                "  <p:b> hi &amp; <![CDATA[there]]> </p:b><?pi data?><c/></p:a>");
  CHECK(c != NULL && strcmp(c, "E{urn:x}a|Ab|2|Az|1|E{urn:x}b|Thi & there|)Ppi|data|Ec|))") == 0);
  c = canonical("<a><b/>   </a>");
  CHECK(c != NULL && strcmp(c, "Ea|Eb|))") == 0);

  /* Refused: not well-formed, no root, a NUL. */
  CHECK(mp_xml_parse("<a><b></a>", 10, err, sizeof err) == NULL);
  CHECK(strstr(err, "a") != NULL);
  CHECK(mp_xml_parse("", 0, err, sizeof err) == NULL);
  CHECK(mp_xml_parse("<a>\0</a>", 8, err, sizeof err) == NULL);
  /* An external entity is not read. */
  static const char xxe[] =
      "<!DOCTYPE a [<!ENTITY e SYSTEM \"file:///etc/passwd\">]><a>&e;</a>";
  void *doc = mp_xml_parse(xxe, strlen(xxe), err, sizeof err);
  if (doc != NULL) {
    const char *out;
    int n = mp_xml_canonical(doc, &out);
    CHECK(n >= 0 && memmem(out, (size_t)n, "root", 4) == NULL);
    mp_xml_free(doc);
  }

  int kind = -1, count = -1;
  c = xpath("<a><b>1</b><b>2</b></a>", "/a/b/text()", "", 0, &kind, &count);
  CHECK(c != NULL && strcmp(c, "1|2|") == 0);
  CHECK_EQ_INT(count, 2);
  CHECK_EQ_INT(kind, MP_XPATH_NODES);
  c = xpath("<a><b><c>1</c></b></a>", "/a/b", "", 0, &kind, &count);
  CHECK(c != NULL && strcmp(c, "<b>\n  <c>1</c>\n</b>\n|") == 0);
  c = xpath("<a id=\"7\"/>", "/a/@id", "", 0, &kind, &count);
  CHECK(c != NULL && strcmp(c, "7|") == 0);
  c = xpath("<a/>", "/nothing", "", 0, &kind, &count);
  CHECK(c != NULL && count == 0 && kind == MP_XPATH_NODES);
  static const char ns[] = "s\0urn:s\0";
  c = xpath("<x:a xmlns:x=\"urn:s\"><x:b>v</x:b></x:a>", "/s:a/s:b/text()", ns,
            sizeof ns - 1, &kind, &count);
  CHECK(c != NULL && strcmp(c, "v|") == 0);
  c = xpath("<a><b/><b/></a>", "count(/a/b)", "", 0, &kind, &count);
  CHECK(c != NULL && strcmp(c, "2|") == 0 && kind == MP_XPATH_NUMBER);
  c = xpath("<a><b/></a>", "count(/a/b) = 1", "", 0, &kind, &count);
  CHECK(c != NULL && strcmp(c, "true|") == 0 && kind == MP_XPATH_TEXT);
  c = xpath("<a>t</a>", "string(/a)", "", 0, &kind, &count);
  CHECK(c != NULL && strcmp(c, "t|") == 0 && kind == MP_XPATH_TEXT);
  /* An unbound prefix, a malformed namespace list. */
  CHECK(xpath("<a/>", "/q:a", "", 0, &kind, &count) == NULL);
  CHECK_EQ_INT(count, MP_INVALID);
  CHECK(xpath("<a/>", "/a", "s\0urn", 5, &kind, &count) == NULL);
  /* Not an expression. */
  CHECK(mp_xpath_compile("/a/[[", 5, err, sizeof err) == NULL);
  CHECK(err[0] != '\0');
  CHECK(mp_xpath_compile("/a\0", 3, err, sizeof err) == NULL);
  return check_report("xml");
}
