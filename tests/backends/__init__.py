"""urlsan.core.backends held against the real servers it models.

What runs here: `corpus.py` writes the targets (byte sweeps, the evasion families, paths from
tests/data); ``test_agreement.py`` starts each server once per module on 127.0.0.1 from a
temporary directory (never the system's service), sends every target on a fresh connection,
and requires the model to agree on every one: refused or not, and the path.

What each server reports, and how the test reads it (tests/harness: echo, nginx_echo, apache,
go, node, wsgi_echo, servlet, lighttpd, caddy, haproxy):

nginx 1.22 (Debian's nginx)
    ``return 200 "$uri"``: the decoded, normalized path its locations match, as bytes.
Apache httpd 2.4 (Debian's apache2)
    a mod_lua handler (``LuaMapHandler "^/"``) writing ``r.uri``: the path after
    ``ap_normalize_path`` and ``ap_unescape_url``, as bytes.  No other module is loaded.
Tomcat 10.1 (Debian's tomcat10), Jetty 9.4 (Debian's jetty9)
    apps/Echo.java mapped to ``/*`` in the ROOT application: ``getServletPath() +
    getPathInfo()`` in UTF-8.  Java text cannot hold a lone surrogate in UTF-8: Jetty's
    ``%uD800`` reaches the application as U+D800 and comes back as "?", which the test
    expects (`expected_body`).
Go 1.19 (Debian's golang-go)
    apps/echo.go: ``r.URL.Path`` as bytes, from a plain handler (``go``) and from the same
    handler under ``http.ServeMux`` (``go-mux``).  The mux answers a path that ``path.Clean``
    changes with a 301 to the clean path; the test follows it once, as a client does, and
    reads the path the mux then routes.
Node 20 (``node``)
    apps/echo.js: ``http.createServer`` and the reading of an Express 4 router: the pathname
    (before ``?`` and ``#``) decoded by ``decodeURIComponent``, 400 when that throws.
lighttpd 1.4 (Debian's lighttpd)
    a ``url.redirect`` to ``${url.path}`` inside a ``$HTTP["url"] =^ "/"`` condition: the path
    such conditions match, percent-encoded in the ``Location`` header, decoded by the test.
Caddy 2.6 (Debian's caddy)
    ``respond "{http.request.uri.path}"``: what a handler sees (``caddy``); and the capture of
    a ``path_regexp`` matching the whole path: what its path matchers test (``caddy-path``).
HAProxy 2.6 (Debian's haproxy)
    ``http-request return`` of ``lf-string "%[path]"``: the path an ACL's ``path`` fetch matches,
    with no ``normalize-uri`` action (``haproxy-path``) and after all five path normalizers
    (``haproxy``; tests/harness/haproxy.py names them in order).  The log-format string writes
    DEL as ``%7F`` (`expected_body`).
werkzeug (the project's own dependency)
    its development server in a thread, answering ``request.path`` (UTF-8, U+FFFD for what
    is not).

A status other than 200 is a refusal: the application was not reached.  Bytes a server's
application received that are no UTF-8 are compared as the model maps them
(``os.fsdecode``'s surrogate escapes for the servers that pass bytes on).
"""
