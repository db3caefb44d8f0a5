/* The compiled twin's way in for C callers (core/_speedups.c gives it, core/_columns.c takes
 * it): the module attribute urlsan.core._speedups.ASCII_URL is a capsule, named
 * URLSAN_TWIN_API_NAME, holding an UrlsanTwinApi.
 *
 * ascii_url(p, n, flags, query_rules, sink, ctx) canonicalizes the ASCII target p[0:n] as
 * canonicalize(target, policy) does but for the policy's query rules, where flags and
 * query_rules are what urlsan.core.canonical.ascii_twin(policy) gives: it calls
 * sink(ctx, url, length, host_at, host_end) once with the canonical URL (valid during the call
 * only) and where its host is (-1, -1: it has none), and returns 1; the sink runs the query
 * rules when query_rules is set (urlsan.core.driver.query_rules_url).  Or it returns 0, leaving
 * the target to canonicalize (the twin declines it, or under query rules it has a ";"
 * before its query); or -1
 * with a Python exception set (the InvalidTarget of a strict policy; sink returned -1; no
 * memory). */
#ifndef URLSAN_TWIN_H
#define URLSAN_TWIN_H

#include <Python.h>

#define URLSAN_TWIN_API_NAME "urlsan.core._speedups.ASCII_URL"
#define URLSAN_TWIN_API_VERSION 1

typedef int (*urlsan_url_sink)(void *ctx, const char *url, Py_ssize_t length, Py_ssize_t host_at,
                               Py_ssize_t host_end);

typedef struct {
    int version; /* URLSAN_TWIN_API_VERSION */
    int (*ascii_url)(const char *p, Py_ssize_t n, int flags, int query_rules,
                     urlsan_url_sink sink, void *ctx);
} UrlsanTwinApi;

#endif
