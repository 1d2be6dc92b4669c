"""A real client cookie jar (Python's http.cookiejar) against a server on
127.0.0.1: the jar sees the URLs as http://HOST:PORT/..., so that Domain
and Path are judged against a host name, while the requests go to the
loopback address. Used by spec/integration/reqres_spec.lua.

Usage: python3 cookie_jar.py PORT HOST PATH...

GETs each PATH in turn (a PATH may name another host as HOST2:/path) with
the Cookie header the jar makes for it, and gives the jar each response's
Set-Cookie fields. Prints JSON: for each PATH the Cookie header sent and
the response body (JSON, or null), then the cookies left in the jar."""
import http.client
import http.cookiejar
import json
import sys
import urllib.request


def fetch(jar, port, host, path):
    request = urllib.request.Request("http://%s:%d%s" % (host, port, path))
    jar.add_cookie_header(request)
    headers = dict(request.header_items())
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    connection.request("GET", path, headers=headers)
    response = connection.getresponse()
    body = response.read().decode("utf-8", "replace")
    jar.extract_cookies(response, request)
    connection.close()
    return headers.get("Cookie"), body


def main():
    port, host = int(sys.argv[1]), sys.argv[2]
    jar = http.cookiejar.CookieJar()
    gets = []
    for target in sys.argv[3:]:
        target_host, path = host, target
        if not target.startswith("/"):
            target_host, path = target.split(":", 1)
        sent, body = fetch(jar, port, target_host, path)
        try:
            body = json.loads(body)
        except ValueError:
            body = None
        gets.append({"path": target, "cookie": sent, "body": body})
    cookies = []
    for c in jar:
        cookies.append({
            "name": c.name, "value": c.value, "domain": c.domain,
            "domain_specified": c.domain_specified, "path": c.path,
            "secure": c.secure, "expires": c.expires,
            "http_only": c.has_nonstandard_attr("HttpOnly"),
            "same_site": c.get_nonstandard_attr("SameSite"),
        })
    print(json.dumps({"cookies": cookies, "gets": gets}))


main()
