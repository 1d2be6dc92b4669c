/*
 * XML for the mock's matchers (see ../ffi.h): documents parsed by libxml2,
 * written out in a normalized form that lua/moonport/core/xml.lua reads
 * into a tree to compare as WireMock's equalToXml does, and XPath
 * expressions evaluated on them (matchesXPath, the {{xPath}} template
 * helper).
 *
 * Parsing reads nothing but the text given: no network, no external
 * entities or DTDs, libxml2's limits on depth and entity expansion left
 * on, and its messages kept in the parser context instead of printed.
 * A document and a compiled expression belong to the caller, who frees
 * them with mp_xml_free and mp_xpath_free; what the functions write back
 * lives in the FFI's scratch buffer, valid until the next call.
 *
 * The normalized form is what WireMock's comparison (XMLUnit with
 * ignoreWhitespace and ignoreComments) looks at, and nothing else:
 * comments and whitespace-only text are dropped, text is trimmed, CDATA
 * and entity references become text, namespace declarations and prefixes
 * go, names are "{uri}local" or "local", and an element's attributes come
 * sorted by name. Records follow one another; none holds a NUL, which XML
 * text cannot:
 *
 *     E name \0            an element starts
 *     A name \0 value \0   one of its attributes, right after it
 *     T text \0            text
 *     P target \0 data \0  a processing instruction
 *     )                    the element ends
 */
#include "ffi.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xpath.h>
#include <libxml/xpathInternals.h>

#include "errors.h"
#include "scratch.h"

/* XML_PARSE_NOCDATA: CDATA sections arrive as text. No XML_PARSE_NOENT:
 * entities are not substituted, so an external one is never fetched; an
 * internal one's text is still read through its reference. */
#define PARSE_OPTIONS                                                   \
  (XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING |          \
   XML_PARSE_NOCDATA)

/* A message in err: libxml2's, without its trailing newline. */
static void set_error(char *err, size_t errlen, const char *what,
                      const xmlError *e) {
  if (errlen == 0) return;
  if (e == NULL || e->message == NULL) {
    snprintf(err, errlen, "%s", what);
    return;
  }
  size_t n = strlen(e->message);
  while (n > 0 && (e->message[n - 1] == '\n' || e->message[n - 1] == ' '))
    n--;
  snprintf(err, errlen, "%.*s", (int)n, e->message);
}

/* libxml2 reports XPath errors through its error handlers, which print
 * them: these take them instead, and xmlGetLastError still holds the
 * last one. The parser's own go to its context. */
static void quiet_structured(void *ctx, xmlErrorPtr e) {
  (void)ctx;
  (void)e;
}

static void quiet_generic(void *ctx, const char *msg, ...) {
  (void)ctx;
  (void)msg;
}

static void quiet(void) {
  xmlSetStructuredErrorFunc(NULL, quiet_structured);
  xmlSetGenericErrorFunc(NULL, quiet_generic);
}

void *mp_xml_parse(const char *text, size_t len, char *err, size_t errlen) {
  xmlDocPtr doc = NULL;
  if (len > INT_MAX) {
    snprintf(err, errlen, "document too large");
    return NULL;
  }
  xmlParserCtxtPtr ctxt = xmlNewParserCtxt();
  if (ctxt == NULL) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  doc = xmlCtxtReadMemory(ctxt, text, (int)len, NULL, NULL, PARSE_OPTIONS);
  if (doc == NULL || !ctxt->wellFormed) {
    set_error(err, errlen, "not well-formed XML", xmlCtxtGetLastError(ctxt));
    goto err;
  }
  if (xmlDocGetRootElement(doc) == NULL) {
    snprintf(err, errlen, "no root element");
    goto err;
  }
  xmlFreeParserCtxt(ctxt);
  return doc;
err:
  if (doc != NULL) xmlFreeDoc(doc);
  xmlFreeParserCtxt(ctxt);
  return NULL;
}

void mp_xml_free(void *doc) {
  if (doc != NULL) xmlFreeDoc(doc);
}

/* Output into the scratch buffer. */
typedef struct out {
  size_t len;
  int failed;
} out;

static void put(out *o, const void *data, size_t n) {
  if (o->failed) return;
  char *buf = mp__ffi_scratch(o->len + n + 1);
  if (buf == NULL) {
    o->failed = 1;
    return;
  }
  memcpy(buf + o->len, data, n);
  o->len += n;
}

static void put_str(out *o, const char *s) { put(o, s, strlen(s)); }

/* "{uri}local" or "local", and a NUL. */
static void put_name(out *o, const xmlNs *ns, const xmlChar *name) {
  if (ns != NULL && ns->href != NULL && ns->href[0] != '\0') {
    put(o, "{", 1);
    put_str(o, (const char *)ns->href);
    put(o, "}", 1);
  }
  put_str(o, (const char *)name);
  put(o, "", 1);
}

static int is_space(int c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Text trimmed, as a T record; nothing when it is all white space. */
static void put_text(out *o, const char *s, size_t n) {
  while (n > 0 && is_space((unsigned char)s[0])) s++, n--;
  while (n > 0 && is_space((unsigned char)s[n - 1])) n--;
  if (n == 0) return;
  put(o, "T", 1);
  put(o, s, n);
  put(o, "", 1);
}

static int attr_order(const void *a, const void *b) {
  const xmlAttr *x = *(const xmlAttr *const *)a;
  const xmlAttr *y = *(const xmlAttr *const *)b;
  const char *ux = x->ns && x->ns->href ? (const char *)x->ns->href : "";
  const char *uy = y->ns && y->ns->href ? (const char *)y->ns->href : "";
  int c = strcmp(ux, uy);
  return c != 0 ? c : strcmp((const char *)x->name, (const char *)y->name);
}

static void put_node(out *o, xmlNodePtr node);

/* The children of node: consecutive text, CDATA and entity references
 * joined into one text before trimming, as a DOM with entities expanded
 * holds them. */
static void put_children(out *o, xmlNodePtr node) {
  xmlBufferPtr text = NULL;
  for (xmlNodePtr c = node->children; c != NULL; c = c->next) {
    if (c->type == XML_TEXT_NODE || c->type == XML_CDATA_SECTION_NODE ||
        c->type == XML_ENTITY_REF_NODE) {
      if (text == NULL && (text = xmlBufferCreate()) == NULL) {
        o->failed = 1;
        return;
      }
      if (c->type == XML_ENTITY_REF_NODE) {
        xmlChar *s = xmlNodeGetContent(c);
        if (s != NULL) xmlBufferCat(text, s);
        xmlFree(s);
      } else if (c->content != NULL) {
        xmlBufferCat(text, c->content);
      }
      continue;
    }
    if (text != NULL) {
      put_text(o, (const char *)xmlBufferContent(text),
               (size_t)xmlBufferLength(text));
      xmlBufferEmpty(text);
    }
    put_node(o, c);
  }
  if (text != NULL) {
    put_text(o, (const char *)xmlBufferContent(text),
             (size_t)xmlBufferLength(text));
    xmlBufferFree(text);
  }
}

static void put_element(out *o, xmlNodePtr node) {
  put(o, "E", 1);
  put_name(o, node->ns, node->name);
  size_t n = 0;
  for (xmlAttrPtr a = node->properties; a != NULL; a = a->next) n++;
  if (n > 0) {
    xmlAttrPtr *attrs = malloc(n * sizeof *attrs);
    if (attrs == NULL) {
      o->failed = 1;
      return;
    }
    size_t i = 0;
    for (xmlAttrPtr a = node->properties; a != NULL; a = a->next)
      attrs[i++] = a;
    qsort(attrs, n, sizeof *attrs, attr_order);
    for (i = 0; i < n; i++) {
      xmlChar *v = xmlNodeListGetString(node->doc, attrs[i]->children, 1);
      put(o, "A", 1);
      put_name(o, attrs[i]->ns, attrs[i]->name);
      if (v != NULL) put_str(o, (const char *)v);
      put(o, "", 1);
      xmlFree(v);
    }
    free(attrs);
  }
  put_children(o, node);
  put(o, ")", 1);
}

static void put_node(out *o, xmlNodePtr node) {
  switch (node->type) {
  case XML_ELEMENT_NODE:
    put_element(o, node);
    break;
  case XML_PI_NODE:
    put(o, "P", 1);
    put_str(o, (const char *)node->name);
    put(o, "", 1);
    if (node->content != NULL) put_str(o, (const char *)node->content);
    put(o, "", 1);
    break;
  default:
    /* Comments, a DOCTYPE, XInclude markers: not compared. */
    break;
  }
}

int mp_xml_canonical(void *doc, const char **result) {
  xmlDocPtr d = doc;
  out o = {0, 0};
  for (xmlNodePtr c = d->children; c != NULL; c = c->next) put_node(&o, c);
  put(&o, "", 0);
  if (o.failed) return MP_NOMEM;
  if (o.len > INT_MAX) return MP_INVALID;
  size_t cap;
  *result = mp__ffi_scratch_now(&cap);
  return (int)o.len;
}

void *mp_xpath_compile(const char *expr, size_t len, char *err,
                       size_t errlen) {
  char *copy = malloc(len + 1);
  if (copy == NULL) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  memcpy(copy, expr, len);
  copy[len] = '\0';
  quiet();
  xmlResetLastError();
  xmlXPathCompExprPtr xp = NULL;
  if (memchr(expr, '\0', len) == NULL) xp = xmlXPathCompile((xmlChar *)copy);
  if (xp == NULL) set_error(err, errlen, "not an XPath expression",
                            xmlGetLastError());
  xmlResetLastError();
  free(copy);
  return xp;
}

void mp_xpath_free(void *xp) {
  if (xp != NULL) xmlXPathFreeCompExpr(xp);
}

/* A node's text, as WireMock gives it: an element (or the document)
 * written out as XML, indented by two spaces and ending in a newline (as
 * Java's Transformer writes it), anything else its text. */
static void put_result(out *o, xmlDocPtr doc, xmlNodePtr node) {
  if (node->type == XML_ELEMENT_NODE || node->type == XML_DOCUMENT_NODE) {
    xmlBufferPtr buf = xmlBufferCreate();
    if (buf == NULL) {
      o->failed = 1;
      return;
    }
    xmlNodePtr n = node->type == XML_DOCUMENT_NODE
                       ? xmlDocGetRootElement((xmlDocPtr)node)
                       : node;
    if (n != NULL) xmlNodeDump(buf, doc, n, 0, 1);
    put(o, xmlBufferContent(buf), (size_t)xmlBufferLength(buf));
    put(o, "\n", 1);
    xmlBufferFree(buf);
  } else if (node->type == XML_NAMESPACE_DECL) {
    const xmlNs *ns = (const xmlNs *)node;
    if (ns->href != NULL) put_str(o, (const char *)ns->href);
  } else {
    xmlChar *s = xmlNodeGetContent(node);
    if (s != NULL) put_str(o, (const char *)s);
    xmlFree(s);
  }
  put(o, "", 1);
}

int mp_xpath_eval(void *doc, void *xp, const char *ns, size_t nslen,
                  int *kind, const char **result, size_t *len) {
  int rc = MP_INVALID;
  xmlXPathObjectPtr res = NULL;
  xmlXPathContextPtr ctx = xmlXPathNewContext(doc);
  if (ctx == NULL) return MP_NOMEM;
  /* Namespaces: "prefix\0uri\0" pairs. */
  size_t i = 0;
  while (i < nslen) {
    const char *prefix = ns + i;
    size_t plen = strnlen(prefix, nslen - i);
    if (i + plen + 1 >= nslen) goto err;
    const char *uri = prefix + plen + 1;
    size_t ulen = strnlen(uri, nslen - i - plen - 1);
    if (i + plen + 1 + ulen >= nslen) goto err;
    if (xmlXPathRegisterNs(ctx, (const xmlChar *)prefix,
                           (const xmlChar *)uri) != 0)
      goto err;
    i += plen + 1 + ulen + 1;
  }
  quiet();
  res = xmlXPathCompiledEval(xp, ctx);
  xmlResetLastError();
  if (res == NULL) goto err;
  out o = {0, 0};
  int count = 0;
  char num[64];
  switch (res->type) {
  case XPATH_NODESET:
    *kind = MP_XPATH_NODES;
    if (res->nodesetval != NULL) {
      for (int k = 0; k < res->nodesetval->nodeNr; k++) {
        put_result(&o, doc, res->nodesetval->nodeTab[k]);
        count++;
      }
    }
    break;
  case XPATH_NUMBER:
    /* Lua formats it as WireMock does (Java's NumberFormat). */
    *kind = MP_XPATH_NUMBER;
    snprintf(num, sizeof num, "%.17g", res->floatval);
    put_str(&o, num);
    put(&o, "", 1);
    count = 1;
    break;
  case XPATH_BOOLEAN:
    *kind = MP_XPATH_TEXT;
    put_str(&o, res->boolval ? "true" : "false");
    put(&o, "", 1);
    count = 1;
    break;
  case XPATH_STRING:
    *kind = MP_XPATH_TEXT;
    if (res->stringval != NULL) put_str(&o, (const char *)res->stringval);
    put(&o, "", 1);
    count = 1;
    break;
  default:
    goto err;
  }
  put(&o, "", 0);
  if (o.failed) {
    rc = MP_NOMEM;
    goto err;
  }
  size_t cap;
  *result = mp__ffi_scratch_now(&cap);
  *len = o.len;
  rc = count;
err:
  if (res != NULL) xmlXPathFreeObject(res);
  xmlXPathFreeContext(ctx);
  return rc;
}
