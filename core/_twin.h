/* The compiled twin's way in for C callers (core/_speedups.c gives it, core/_columns.c takes
 * it): the module attribute urlsan.core._speedups.ASCII_URL is a capsule, named
 * URLSAN_TWIN_API_NAME, holding an UrlsanTwinApi.
 *
 * ascii_url(p, n, flags, query_rules, sink, ctx) canonicalizes the ASCII target p[0:n] as
 * canonicalize(target, policy) does but for the policy's query rules, where flags and
 * query_rules are what urlsan.core.canonical.ascii_twin(policy) gives, and calls sink once
 * with what it made (valid during the call only), then returns 1: the canonical URL, where its
 * host is (host_at, host_end; -1, -1: it has none) and the rules of its edits.  The sink runs
 * the query rules when query_rules is set (urlsan.core.driver.query_rules_url); their edits go
 * before the fragment's.  Or it returns 0, leaving the target to canonicalize (the twin
 * declines it, or under query rules it has a ";" before its query); or -1 with a Python
 * exception set (the InvalidTarget of a strict policy; sink returned -1; no memory). */
#ifndef URLSAN_TWIN_H
#define URLSAN_TWIN_H

#include <Python.h>

#define URLSAN_TWIN_API_NAME "urlsan.core._speedups.ASCII_URL"
#define URLSAN_TWIN_API_VERSION 1

/* The rules of the edits made, each once, in the order they ran (Edit.rule: an interned str,
 * borrowed): rules[0:fragment] those of the components before the fragment, rules[fragment:n]
 * the fragment's (which may name a rule again). */
#define URLSAN_MAX_RULES 48
typedef struct {
    PyObject *rules[URLSAN_MAX_RULES];
    int n, fragment;
} UrlsanFired;

typedef struct {
    const char *url;
    Py_ssize_t length, host_at, host_end;
    const UrlsanFired *fired;
} UrlsanMade;

typedef int (*urlsan_url_sink)(void *ctx, const UrlsanMade *made);

typedef struct {
    int version; /* URLSAN_TWIN_API_VERSION */
    int (*ascii_url)(const char *p, Py_ssize_t n, int flags, int query_rules,
                     urlsan_url_sink sink, void *ctx);
} UrlsanTwinApi;

#endif
