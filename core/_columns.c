/* The loop of the data-frame integrations over an Arrow string column (urlsan/_columns.py).
 *
 * map_strings reads the column's own buffers (validity bitmap, offsets, UTF-8 data, as
 * pyarrow's Array.buffers() gives them) and writes the result column's buffers directly: no
 * list of the inputs, no list of the outputs, no pa.array() over them.  An ASCII row that the
 * compiled twin serves (most real URLs) is canonicalized straight from the data buffer into the
 * result's (core/_twin.h): no Python object is made for it.  Any other row is one call of a
 * Python callable (urlsan.core.canonicalize, whose compiled entry runs in C, or a SURT key
 * function) on the row as a str; the one Python object per row beyond that str is what the
 * callable returns.  The policy's query rules run here too, on the twin's URL (rules_run),
 * where urlsan/_columns.py's query_spec hands them over; else in Python, one call per URL
 * with a query.
 *
 * Optional like the twin (core/_speedups.c): without it, urlsan/_columns.py builds the lists.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#include <structmember.h>

#include "_entry.h"
#include "_twin.h"

/* The result's data buffer: a bytes object written in place, grown by doubling, cut to size
 * at the end (no copy of the whole column). */
typedef struct {
    PyObject *obj;
    Py_ssize_t size, cap;
} Bytes;

static int bytes_reserve(Bytes *b, Py_ssize_t want) {
    if (want <= b->cap) return 0;
    Py_ssize_t cap = b->cap ? b->cap : 4096;
    while (cap < want) {
        if (cap > PY_SSIZE_T_MAX / 2) {
            PyErr_NoMemory();
            return -1;
        }
        cap *= 2;
    }
    if (!b->obj) {
        b->obj = PyBytes_FromStringAndSize(NULL, cap);
        if (!b->obj) return -1;
    } else if (_PyBytes_Resize(&b->obj, cap) < 0) { /* frees it and sets it NULL */
        return -1;
    }
    b->cap = cap;
    return 0;
}

static int bytes_put(Bytes *b, const char *s, Py_ssize_t n) {
    if (b->size + n > b->cap && bytes_reserve(b, b->size + n) < 0) return -1;
    if (n) memcpy(PyBytes_AS_STRING(b->obj) + b->size, s, (size_t)n);
    b->size += n;
    return 0;
}

static int is_ascii(const unsigned char *p, int64_t n) {
    uint64_t any = 0, word;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) { /* eight bytes at a time */
        memcpy(&word, p + i, 8);
        any |= word;
    }
    for (; i < n; i++) any |= p[i];
    return (any & 0x8080808080808080ull) == 0;
}

/* ---- the result: the url column, and (map_result) the changed and rules columns */

static PyObject *new_bitmap(Py_ssize_t n) {
    PyObject *b = PyBytes_FromStringAndSize(NULL, (n + 7) / 8);
    if (b) memset(PyBytes_AS_STRING(b), 0, (size_t)((n + 7) / 8));
    return b;
}

static inline void set_bit(PyObject *bitmap, Py_ssize_t i) {
    ((unsigned char *)PyBytes_AS_STRING(bitmap))[i >> 3] |= (unsigned char)(1u << (i & 7));
}

typedef struct {
    PyObject *url_bits, *url_offs; /* validity, int64 offsets */
    Bytes url;                     /* the URLs' UTF-8 */
    Py_ssize_t url_nulls;
    int full; /* the changed and rules columns too, with their own validity (a refused URL has
               * a null url, yet changed false and the rule that refused) */
    PyObject *row_bits, *changed, *list_offs; /* validity, bits, int32 offsets into the names */
    Bytes name_offs, names;                   /* the rule names: int32 offsets, UTF-8 */
    Py_ssize_t row_nulls;
    int32_t nnames;
} Out;

static void out_close(Out *o) {
    Py_CLEAR(o->url_bits);
    Py_CLEAR(o->url_offs);
    Py_CLEAR(o->url.obj);
    Py_CLEAR(o->row_bits);
    Py_CLEAR(o->changed);
    Py_CLEAR(o->list_offs);
    Py_CLEAR(o->name_offs.obj);
    Py_CLEAR(o->names.obj);
}

static int out_open(Out *o, Py_ssize_t length, int full, Py_ssize_t reserve) {
    memset(o, 0, sizeof *o);
    o->full = full;
    o->url_bits = new_bitmap(length);
    o->url_offs = PyBytes_FromStringAndSize(NULL, (length + 1) * 8);
    if (!o->url_bits || !o->url_offs || bytes_reserve(&o->url, reserve) < 0) return -1;
    ((int64_t *)PyBytes_AS_STRING(o->url_offs))[0] = 0;
    if (!full) return 0;
    o->row_bits = new_bitmap(length);
    o->changed = new_bitmap(length);
    o->list_offs = PyBytes_FromStringAndSize(NULL, (length + 1) * 4);
    int32_t zero = 0;
    if (!o->row_bits || !o->changed || !o->list_offs ||
        bytes_put(&o->name_offs, (const char *)&zero, 4) < 0)
        return -1;
    ((int32_t *)PyBytes_AS_STRING(o->list_offs))[0] = 0;
    return 0;
}

/* Row i ends: its offsets (a null or a row left empty has none of its own). */
static void out_end(Out *o, Py_ssize_t i) {
    ((int64_t *)PyBytes_AS_STRING(o->url_offs))[i + 1] = o->url.size;
    if (o->full) ((int32_t *)PyBytes_AS_STRING(o->list_offs))[i + 1] = o->nnames;
}

static int out_url(Out *o, Py_ssize_t i, const char *url, Py_ssize_t n) {
    set_bit(o->url_bits, i);
    return bytes_put(&o->url, url, n);
}

/* A rule name of row i's rules (the caller sees to each once). */
static int out_name(Out *o, PyObject *name) {
    Py_ssize_t n;
    const char *text = PyUnicode_Check(name) ? PyUnicode_AsUTF8AndSize(name, &n) : NULL;
    if (!text) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "a rule name is no str");
        return -1;
    }
    if (o->nnames == INT32_MAX || o->names.size + n > INT32_MAX) {
        PyErr_SetString(PyExc_OverflowError, "more rule names than an Arrow list holds");
        return -1;
    }
    if (bytes_put(&o->names, text, n) < 0) return -1;
    int32_t end = (int32_t)o->names.size;
    o->nnames++;
    return bytes_put(&o->name_offs, (const char *)&end, 4);
}

/* Row i's changed and rules: the names of each part, each name once, in order. */
static int out_rules(Out *o, Py_ssize_t i, int changed, PyObject *const *names, Py_ssize_t n) {
    set_bit(o->row_bits, i);
    if (changed) set_bit(o->changed, i);
    for (Py_ssize_t k = 0; k < n; k++) {
        int seen = 0;
        for (Py_ssize_t j = 0; j < k && !seen; j++) {
            seen = names[j] == names[k];
            /* two interned strs are equal only as one object (the twin's and the query rules'
             * names are) */
            int both = PyUnicode_CheckExact(names[j]) && PyUnicode_CheckExact(names[k]) &&
                       PyUnicode_CHECK_INTERNED(names[j]) && PyUnicode_CHECK_INTERNED(names[k]);
            if (!seen && !both) {
                int eq = PyUnicode_Compare(names[j], names[k]);
                if (eq == -1 && PyErr_Occurred()) return -1;
                seen = eq == 0;
            }
        }
        if (!seen && out_name(o, names[k]) < 0) return -1;
    }
    return 0;
}

/* ---- the query rules in C: core/query.py's drop-params, sort-query and drop-empty-query on
 * the twin's canonical URL, as driver.query_rules_url runs them (its steps after the query's
 * character pass), for a policy whose parameter specs urlsan/_columns.py's query_spec hands
 * over: shell patterns of ASCII characters, "*" and "?" only (no "[...]" class), lowercase as
 * params.parse_spec makes them.  params.py matches a name against fnmatch.translate's regex of
 * each pattern, case-insensitively, whole; a host pattern P as "(?:.*\.)?P", so that it
 * covers the host and every host below it.  A name is compared as the canonical URL writes it:
 * "utm%5Fsource" is "utm_source" only where decode-unreserved made it so. */

typedef struct {
    const char *s;
    Py_ssize_t n;
} Text;

typedef struct {
    Text host;   /* the host pattern, when scoped */
    int scoped;  /* 0: every host */
    Text *names; /* the name patterns */
    Py_ssize_t n;
} Spec;

/* A parameter of the query: its text (s, n), the length of its name (what precedes its first
 * "="), and its place in the query as split. */
typedef struct {
    const char *s;
    Py_ssize_t n, name, k;
} Pair;

/* What a row's ";" path parameters ask (rules_open): nothing (drop-params is off, or drops
 * nothing), a look at their names (path_params_kept), or the twin's declining the row. */
enum { PATH_KEPT, PATH_LOOK, PATH_DECLINE };

/* The name patterns of the specs that apply everywhere (no spec scoped by host), by the first
 * character of the names they may match: a name is tried against those of its own first
 * character alone (a pattern that starts with "*" or "?" is under every character). */
typedef struct {
    const Text **patterns; /* NULL: not built (specs scoped by host, or too many patterns) */
    Py_ssize_t at[257];    /* the patterns of first character c: patterns[at[c]:at[c + 1]] */
} Index;

typedef struct {
    int drop, sort, empty, by_host; /* which rules are on; a spec is scoped by host */
    Index drop_index, keep_index;
    int path;                       /* PATH_KEPT, PATH_LOOK or PATH_DECLINE */
    PyObject *rule[3];              /* their names: drop-params, sort-query, drop-empty-query */
    Spec *drops, *keeps;            /* the policy's specs */
    Py_ssize_t ndrops, nkeeps;
    Text *patterns;                 /* every spec's name patterns, one allocation */
    const Spec **drop_on, **keep_on; /* the specs that apply on the host at hand */
    Py_ssize_t ndrop_on, nkeep_on;
    Pair *pairs;                    /* the query's parameters, and room for them sorted */
    Py_ssize_t cap;
    char *url;                      /* the URL the rules made */
    Py_ssize_t url_cap;
} Rules;

static inline unsigned char lower(unsigned char c) {
    return c >= 'A' && c <= 'Z' ? (unsigned char)(c + 32) : c;
}

/* fnmatch's whole match of the pattern p (lowercase) on s, case-insensitively: "*" any run,
 * "?" any one character, any other a character of its own. */
static int glob(const char *p, Py_ssize_t pn, const char *s, Py_ssize_t sn) {
    Py_ssize_t i = 0, j = 0, star = -1, mark = 0;
    while (j < sn) {
        if (i < pn && p[i] != '*' && (p[i] == '?' || p[i] == (char)lower((unsigned char)s[j]))) {
            i++;
            j++;
        } else if (i < pn && p[i] == '*') {
            star = i++;
            mark = j;
        } else if (star >= 0) { /* the last "*" takes one more character */
            i = star + 1;
            j = ++mark;
        } else {
            return 0;
        }
    }
    while (i < pn && p[i] == '*') i++;
    return i == pn;
}

/* params._host: the host pattern covers the host, or a host it is the tail of after a ".". */
static int host_covered(const Text *pattern, const char *h, Py_ssize_t hn) {
    if (glob(pattern->s, pattern->n, h, hn)) return 1;
    for (Py_ssize_t k = 0; k < hn; k++)
        if (h[k] == '.' && glob(pattern->s, pattern->n, h + k + 1, hn - k - 1)) return 1;
    return 0;
}

static int named(const Spec *const *specs, Py_ssize_t count, const Index *index,
                 const char *name, Py_ssize_t n) {
    if (index->patterns && n) {
        unsigned char c = lower((unsigned char)name[0]);
        for (Py_ssize_t k = index->at[c]; k < index->at[c + 1]; k++)
            if (glob(index->patterns[k]->s, index->patterns[k]->n, name, n)) return 1;
        return 0;
    }
    for (Py_ssize_t k = 0; k < count; k++) {
        const Spec *spec = specs[k];
        for (Py_ssize_t j = 0; j < spec->n; j++) {
            const Text *p = &spec->names[j];
            /* a first character of its own that differs: the common case, decided here */
            if (p->n && p->s[0] != '*' && p->s[0] != '?' &&
                (!n || p->s[0] != (char)lower((unsigned char)name[0])))
                continue;
            if (glob(p->s, p->n, name, n)) return 1;
        }
    }
    return 0;
}

/* params.Matcher.for_host: the specs that apply on host h (the URL's as written; "" for
 * none), into drop_on and keep_on. */
static void rules_for_host(Rules *q, const char *h, Py_ssize_t hn) {
    q->ndrop_on = q->nkeep_on = 0;
    for (Py_ssize_t k = 0; k < q->ndrops; k++)
        if (!q->drops[k].scoped || host_covered(&q->drops[k].host, h, hn))
            q->drop_on[q->ndrop_on++] = &q->drops[k];
    for (Py_ssize_t k = 0; k < q->nkeeps; k++)
        if (!q->keeps[k].scoped || host_covered(&q->keeps[k].host, h, hn))
            q->keep_on[q->nkeep_on++] = &q->keeps[k];
}

/* params._tests: on a host that a keep spec covers, every query parameter it does not name
 * goes (an allowlist); else those the drop specs name. */
static int query_drops(const Rules *q, const char *name, Py_ssize_t n) {
    if (q->nkeep_on) return !named(q->keep_on, q->nkeep_on, &q->keep_index, name, n);
    return named(q->drop_on, q->ndrop_on, &q->drop_index, name, n);
}

/* A ";name" path parameter goes when a drop spec names it and no keep spec does. */
static int path_drops(const Rules *q, const char *name, Py_ssize_t n) {
    return named(q->drop_on, q->ndrop_on, &q->drop_index, name, n) &&
           !(q->nkeep_on && named(q->keep_on, q->nkeep_on, &q->keep_index, name, n));
}

/* The index of the specs (each applying everywhere); -1: no memory. */
static int index_build(Index *x, const Spec *const *specs, Py_ssize_t count) {
    Py_ssize_t total = 0;
    for (Py_ssize_t k = 0; k < count; k++) total += specs[k]->n;
    if (total > 64) return 0; /* a long list: tried one by one (a pattern may be in 256 lists) */
    for (int pass = 0; pass < 2; pass++) { /* count, then fill */
        Py_ssize_t fill[256] = {0};
        for (Py_ssize_t k = 0; k < count; k++)
            for (Py_ssize_t j = 0; j < specs[k]->n; j++) {
                const Text *p = &specs[k]->names[j];
                int wild = !p->n || p->s[0] == '*' || p->s[0] == '?';
                int lo = wild ? 0 : (unsigned char)p->s[0], hi = wild ? 256 : lo + 1;
                for (int c = lo; c < hi; c++) {
                    if (pass) x->patterns[x->at[c] + fill[c]] = p;
                    fill[c]++;
                }
            }
        if (pass) break;
        x->at[0] = 0;
        for (int c = 0; c < 256; c++) x->at[c + 1] = x->at[c] + fill[c];
        x->patterns = PyMem_Malloc((size_t)(x->at[256] + 1) * sizeof *x->patterns);
        if (!x->patterns) {
            PyErr_NoMemory();
            return -1;
        }
    }
    return 0;
}

static void rules_close(Rules *q) {
    if (!q) return;
    PyMem_Free(q->drop_index.patterns);
    PyMem_Free(q->keep_index.patterns);
    PyMem_Free(q->drops);
    PyMem_Free(q->patterns);
    PyMem_Free(q->drop_on);
    PyMem_Free(q->pairs);
    PyMem_Free(q->url);
}

/* A pattern as query_spec hands it: ASCII, lowercase, "*", "?" and literal characters. */
static int pattern_of(PyObject *obj, Text *out) {
    out->s = PyUnicode_Check(obj) ? PyUnicode_AsUTF8AndSize(obj, &out->n) : NULL;
    if (!out->s) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "a pattern is no str");
        return -1;
    }
    for (Py_ssize_t k = 0; k < out->n; k++) {
        unsigned char c = (unsigned char)out->s[k];
        if (c >= 0x80 || c == '[' || (c >= 'A' && c <= 'Z')) {
            PyErr_Format(PyExc_ValueError, "pattern %R: not ASCII, lowercase, without [...]", obj);
            return -1;
        }
    }
    return 0;
}

/* The specs of one kind: a tuple of (host pattern or None, tuple of name patterns). */
static int specs_of(PyObject *tuple, Spec *specs, Text **patterns, int *by_host) {
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(tuple); k++) {
        PyObject *item = PyTuple_GET_ITEM(tuple, k), *host, *names;
        if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 2 ||
            !PyTuple_Check(names = PyTuple_GET_ITEM(item, 1))) {
            PyErr_SetString(PyExc_TypeError, "a spec: (host or None, names: tuple)");
            return -1;
        }
        host = PyTuple_GET_ITEM(item, 0);
        Spec *spec = &specs[k];
        spec->scoped = host != Py_None;
        if (spec->scoped && pattern_of(host, &spec->host) < 0) return -1;
        *by_host |= spec->scoped;
        spec->names = *patterns;
        spec->n = PyTuple_GET_SIZE(names);
        for (Py_ssize_t j = 0; j < spec->n; j++)
            if (pattern_of(PyTuple_GET_ITEM(names, j), (*patterns)++) < 0) return -1;
    }
    return 0;
}

static Py_ssize_t count_patterns(PyObject *tuple) {
    Py_ssize_t count = 0;
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(tuple); k++) {
        PyObject *item = PyTuple_GET_ITEM(tuple, k);
        if (PyTuple_Check(item) && PyTuple_GET_SIZE(item) == 2 &&
            PyTuple_Check(PyTuple_GET_ITEM(item, 1)))
            count += PyTuple_GET_SIZE(PyTuple_GET_ITEM(item, 1));
    }
    return count;
}

/* urlsan/_columns.py's query_spec: (drop: bool, sort: bool, empty: bool, drop specs, keep
 * specs, (the three rules' names)). */
static int rules_open(Rules *q, PyObject *spec) {
    memset(q, 0, sizeof *q);
    PyObject *drops, *keeps, *names;
    if (!PyTuple_Check(spec) || PyTuple_GET_SIZE(spec) != 6 ||
        !PyTuple_Check(drops = PyTuple_GET_ITEM(spec, 3)) ||
        !PyTuple_Check(keeps = PyTuple_GET_ITEM(spec, 4)) ||
        !PyTuple_Check(names = PyTuple_GET_ITEM(spec, 5)) || PyTuple_GET_SIZE(names) != 3) {
        PyErr_SetString(PyExc_TypeError,
                        "query rules: (drop, sort, empty, drop specs, keep specs, names)");
        return -1;
    }
    int *on[3] = {&q->drop, &q->sort, &q->empty};
    for (int k = 0; k < 3; k++) {
        if ((*on[k] = PyObject_IsTrue(PyTuple_GET_ITEM(spec, k))) < 0) return -1;
        q->rule[k] = PyTuple_GET_ITEM(names, k);
        if (!PyUnicode_Check(q->rule[k])) {
            PyErr_SetString(PyExc_TypeError, "a rule name is no str");
            return -1;
        }
    }
    q->ndrops = PyTuple_GET_SIZE(drops);
    q->nkeeps = PyTuple_GET_SIZE(keeps);
    Py_ssize_t nspecs = q->ndrops + q->nkeeps;
    Py_ssize_t npatterns = count_patterns(drops) + count_patterns(keeps);
    q->drops = PyMem_Calloc((size_t)nspecs + 1, sizeof(Spec));
    q->patterns = PyMem_Calloc((size_t)npatterns + 1, sizeof(Text));
    q->drop_on = PyMem_Calloc((size_t)nspecs + 1, sizeof(Spec *));
    if (!q->drops || !q->patterns || !q->drop_on) {
        PyErr_NoMemory();
        return -1;
    }
    q->keeps = q->drops + q->ndrops;
    q->keep_on = q->drop_on + q->ndrops;
    Text *patterns = q->patterns;
    if (specs_of(drops, q->drops, &patterns, &q->by_host) < 0 ||
        specs_of(keeps, q->keeps, &patterns, &q->by_host) < 0)
        return -1;
    rules_for_host(q, "", 0); /* no spec scoped by host: the same specs on every host */
    if (!q->by_host && (index_build(&q->drop_index, q->drop_on, q->ndrop_on) < 0 ||
                        index_build(&q->keep_index, q->keep_on, q->nkeep_on) < 0))
        return -1;
    /* Scoped specs: which drop on a row's host is known in the sink, after the twin ran. */
    q->path = !q->drop || !q->ndrops ? PATH_KEPT : q->by_host ? PATH_DECLINE : PATH_LOOK;
    return 0;
}

static int rules_room(Rules *q, Py_ssize_t pairs, Py_ssize_t url) {
    if (pairs > q->cap) {
        Pair *more = PyMem_Realloc(q->pairs, (size_t)pairs * sizeof(Pair));
        if (!more) goto no_memory;
        q->pairs = more;
        q->cap = pairs;
    }
    if (url > q->url_cap) {
        char *more = PyMem_Realloc(q->url, (size_t)url);
        if (!more) goto no_memory;
        q->url = more;
        q->url_cap = url;
    }
    return 0;
no_memory:
    PyErr_NoMemory();
    return -1;
}

/* query.sort's order: by name alone (str order, which is byte order in ASCII), stably. */
static int pair_order(const void *pa, const void *pb) {
    const Pair *a = pa, *b = pb;
    int c = memcmp(a->s, b->s, (size_t)(a->name < b->name ? a->name : b->name));
    if (c) return c;
    if (a->name != b->name) return a->name < b->name ? -1 : 1;
    return a->k < b->k ? -1 : a->k > b->k;
}

static void sort_pairs(Pair *p, Py_ssize_t n) {
    if (n > 16) {
        qsort(p, (size_t)n, sizeof *p, pair_order);
        return;
    }
    for (Py_ssize_t i = 1; i < n; i++) { /* insertion: stable, and quick for a few */
        Pair x = p[i];
        Py_ssize_t j = i;
        for (; j > 0 && pair_order(&p[j - 1], &x) > 0; j--) p[j] = p[j - 1];
        p[j] = x;
    }
}

/* driver.query_rules_url on the URL u[0:n] (host: where the rules read specs scoped by host):
 * 1 with *out, *out_n the URL they made and fired[0:*nfired] the rules that rewrote it, in the
 * order they ran; 0 when none did; -1 no memory. */
static int rules_run(Rules *q, const char *u, Py_ssize_t n, const char *host, Py_ssize_t host_n,
                     const char **out, Py_ssize_t *out_n, PyObject **fired, int *nfired) {
    const char *hash = memchr(u, '#', (size_t)n);
    Py_ssize_t end = hash ? hash - u : n;
    const char *mark = memchr(u, '?', (size_t)end);
    *nfired = 0;
    if (!mark) return 0;
    Py_ssize_t start = mark - u + 1, size = end - start, count = 1;
    const char *text = u + start;
    for (Py_ssize_t i = 0; i < size; i++) count += text[i] == '&';
    if (q->by_host) rules_for_host(q, host, host_n);
    int drop = q->drop && size && (q->ndrop_on || q->nkeep_on);
    int sort = q->sort && count > 1;
    if (!drop && !sort && !(q->empty && !size)) return 0;
    if (rules_room(q, count, n) < 0) return -1;
    Pair *pairs = q->pairs;
    for (Py_ssize_t i = 0, at = 0, k = 0; i <= size; i++) { /* text.split("&") */
        if (i < size && text[i] != '&') continue;
        const char *eq = memchr(text + at, '=', (size_t)(i - at));
        pairs[k] = (Pair){text + at, i - at, eq ? eq - (text + at) : i - at, k};
        k++;
        at = i + 1;
    }
    int present = 1; /* the query is left, if empty */
    Py_ssize_t kept = count;
    if (drop) {
        kept = 0;
        for (Py_ssize_t k = 0; k < count; k++)
            if (!query_drops(q, pairs[k].s, pairs[k].name)) {
                pairs[kept] = pairs[k];
                pairs[kept].k = kept;
                kept++;
            }
        if (kept < count) {
            fired[(*nfired)++] = q->rule[0];
            present = kept > 1 || (kept == 1 && pairs[0].n); /* "" is no query: None */
        }
    }
    if (present && q->sort && kept > 1) {
        sort_pairs(pairs, kept);
        for (Py_ssize_t k = 0; k < kept; k++)
            if (pairs[k].k != k) {
                fired[(*nfired)++] = q->rule[1];
                break;
            }
    }
    if (present && q->empty && !size) {
        fired[(*nfired)++] = q->rule[2];
        present = 0;
    }
    if (!*nfired) return 0;
    char *w = q->url;
    memcpy(w, u, (size_t)(start - 1));
    w += start - 1;
    if (present) {
        *w++ = '?';
        for (Py_ssize_t k = 0; k < kept; k++) {
            if (k) *w++ = '&';
            memcpy(w, pairs[k].s, (size_t)pairs[k].n);
            w += pairs[k].n;
        }
    }
    memcpy(w, u + end, (size_t)(n - end));
    w += n - end;
    *out = q->url;
    *out_n = w - q->url;
    return 1;
}

/* A name character that the character pass leaves as it is in any policy: unreserved,
 * sub-delims but ";" and "=", ":" and "@" (RFC 3986 §3.3). */
static unsigned char name_plain[256];

/* Whether the ";name" path parameters of the row p[0:n] (every ";" before its query or
 * fragment: the authority's too, which only errs on the side of the reference) keep their
 * names through the character pass and are each one that drop-params keeps.  Then the
 * reference's path step leaves the path as it is, and the twin's URL is the reference's. */
static int path_params_kept(const Rules *q, const unsigned char *p, Py_ssize_t n) {
    Py_ssize_t end = 0;
    while (end < n && p[end] != '?' && p[end] != '#') end++;
    const unsigned char *semi = memchr(p, ';', (size_t)end);
    while (semi) {
        Py_ssize_t at = semi - p + 1, i = at;
        while (i < end && p[i] != ';' && p[i] != '/' && p[i] != '=') {
            if (!name_plain[p[i]]) return 0;
            i++;
        }
        if (path_drops(q, (const char *)p + at, i - at)) return 0;
        semi = memchr(p + i, ';', (size_t)(end - i));
    }
    return 1;
}

/* ---- the twin straight from the buffer (core/_twin.h) */

/* The twin's way in, when given one: (capsule, flags, query, policy, rules), as
 * urlsan._columns.column_twin(policy) makes it; rules (query_spec) None: the policy's query
 * rules are query's, a Python call. */
typedef struct {
    const UrlsanTwinApi *api; /* NULL: every row goes to the Python callable */
    int flags;
    PyObject *query, *policy; /* query(url, policy, host) -> (url, rules); or None */
    Rules *rules;             /* the query rules in C; NULL: query's */
    Rules rules_here;
    Out *out;
    Py_ssize_t i;             /* the row */
    const char *row;          /* its text, stripped */
    Py_ssize_t row_n;
} Twin;

static void twin_close(Twin *t) { rules_close(t->rules); }

static int twin_open(Twin *t, PyObject *spec, Out *out) {
    t->api = NULL;
    t->rules = NULL;
    t->out = out;
    if (spec == Py_None) return 0;
    if (!PyTuple_Check(spec) || PyTuple_GET_SIZE(spec) != 5) {
        PyErr_SetString(PyExc_TypeError,
                        "twin: None or (capsule, flags: int, query, policy, rules)");
        return -1;
    }
    const UrlsanTwinApi *api = PyCapsule_GetPointer(PyTuple_GET_ITEM(spec, 0), URLSAN_TWIN_API_NAME);
    long flags = PyLong_AsLong(PyTuple_GET_ITEM(spec, 1));
    if (!api || (flags == -1 && PyErr_Occurred())) return -1;
    if (api->version != URLSAN_TWIN_API_VERSION || flags < 0 || flags > INT_MAX) {
        PyErr_SetString(PyExc_ValueError, "twin: another version of the twin, or flags it has not");
        return -1;
    }
    t->query = PyTuple_GET_ITEM(spec, 2);
    t->policy = PyTuple_GET_ITEM(spec, 3);
    PyObject *rules = PyTuple_GET_ITEM(spec, 4);
    if (rules != Py_None && t->query != Py_None) {
        t->rules = &t->rules_here;
        if (rules_open(t->rules, rules) < 0) return -1;
    }
    t->api = api;
    t->flags = (int)flags;
    return 0;
}

/* query(url, policy, host) on the twin's URL: (url: str, rules: tuple of str), new reference. */
static PyObject *twin_query(Twin *t, const UrlsanMade *made) {
    PyObject *args[3] = {PyUnicode_DecodeASCII(made->url, made->length, NULL), t->policy, NULL};
    args[2] = made->host_at < 0 ? Py_NewRef(Py_None)
                                : PyUnicode_DecodeASCII(made->url + made->host_at,
                                                        made->host_end - made->host_at, NULL);
    PyObject *done = args[0] && args[2] ? PyObject_Vectorcall(t->query, args, 3, NULL) : NULL;
    Py_XDECREF(args[0]);
    Py_XDECREF(args[2]);
    if (done && !(PyTuple_Check(done) && PyTuple_GET_SIZE(done) == 2 &&
                  PyUnicode_Check(PyTuple_GET_ITEM(done, 0)) &&
                  PyTuple_Check(PyTuple_GET_ITEM(done, 1)))) {
        PyErr_SetString(PyExc_TypeError, "query() returns (url: str, rules: tuple)");
        Py_CLEAR(done);
    }
    return done;
}

/* What the twin hands over: its URL (with query rules and a "?", the URL they make of it) and,
 * for the full result, whether it differs from the row and the rules of its edits (the query
 * rules' before the fragment's, as canonicalize orders them). */
static int twin_sink(void *ctx, const UrlsanMade *made) {
    Twin *t = ctx;
    Out *o = t->out;
    const char *url = made->url;
    Py_ssize_t n = made->length, more = 0;
    PyObject *queried = NULL, *const *extra = NULL, *fired[3];
    if (t->rules) {
        int nfired = 0;
        const char *host = made->host_at < 0 ? "" : made->url + made->host_at;
        Py_ssize_t host_n = made->host_at < 0 ? 0 : made->host_end - made->host_at;
        if (rules_run(t->rules, url, n, host, host_n, &url, &n, fired, &nfired) < 0) return -1;
        extra = fired;
        more = nfired;
    } else if (t->query != Py_None && memchr(url, '?', (size_t)n)) {
        if (!(queried = twin_query(t, made))) return -1;
        url = PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(queried, 0), &n);
        extra = PySequence_Fast_ITEMS(PyTuple_GET_ITEM(queried, 1));
        more = PyTuple_GET_SIZE(PyTuple_GET_ITEM(queried, 1));
    }
    int rc = url ? out_url(o, t->i, url, n) : -1;
    if (rc == 0 && o->full) {
        const UrlsanFired *f = made->fired;
        PyObject *names[URLSAN_MAX_RULES + 8]; /* the twin's, and the (three) query rules */
        const Py_ssize_t room = sizeof names / sizeof *names;
        Py_ssize_t k = 0;
        for (int j = 0; j < f->fragment; j++) names[k++] = f->rules[j];
        for (Py_ssize_t j = 0; j < more && k < room; j++) names[k++] = extra[j];
        for (int j = f->fragment; j < f->n && k < room; j++) names[k++] = f->rules[j];
        int changed = n != t->row_n || memcmp(url, t->row, (size_t)n) != 0;
        rc = out_rules(o, t->i, changed, names, k);
    }
    Py_XDECREF(queried);
    return rc;
}

/* Row i, the text p[0:n], canonicalized by the twin into the result: 1 done, 0 the Python
 * callable's to do, -1 an error that is not an Exception (an Exception leaves the row to the
 * callable, which raises it again and then takes its fallback). */
static int twin_row(Twin *t, Py_ssize_t i, const unsigned char *p, int64_t n) {
    if (!t->api || !is_ascii(p, n)) return 0;
    /* Under query rules the twin leaves a row with a ";" before its query to canonicalize
     * (path parameters go before dot removal: driver.query_rules_after).  With the rules in C
     * and no spec scoped by host, a row whose path parameters all stay is the twin's. */
    int query_rules = t->query != Py_None;
    Rules *q = t->rules;
    if (q && q->path != PATH_DECLINE) {
        if (q->path == PATH_LOOK && memchr(p, ';', (size_t)n) &&
            !path_params_kept(q, p, (Py_ssize_t)n))
            return 0;
        query_rules = 0;
    }
    Out *o = t->out;
    Py_ssize_t url_size = o->url.size, names_size = o->names.size, offs_size = o->name_offs.size;
    int32_t nnames = o->nnames;
    t->i = i;
    t->row = (const char *)p;
    t->row_n = (Py_ssize_t)n;
    int rc = t->api->ascii_url((const char *)p, (Py_ssize_t)n, t->flags, query_rules, twin_sink, t);
    if (rc >= 0) return rc;
    /* what the row wrote goes; its bits are set again, or not, by the Python call */
    o->url.size = url_size;
    o->names.size = names_size;
    o->name_offs.size = offs_size;
    o->nnames = nnames;
    unsigned char mask = (unsigned char)~(1u << (i & 7));
    ((unsigned char *)PyBytes_AS_STRING(o->url_bits))[i >> 3] &= mask;
    if (o->full) {
        ((unsigned char *)PyBytes_AS_STRING(o->row_bits))[i >> 3] &= mask;
        ((unsigned char *)PyBytes_AS_STRING(o->changed))[i >> 3] &= mask;
    }
    if (!PyErr_ExceptionMatches(PyExc_Exception)) return -1;
    PyErr_Clear();
    return 0;
}

/* ASCII white space, as urlsan.core.many.BLANKS: " \t\r\n\v\f". */
static int is_blank(unsigned char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

typedef struct {
    PyObject *call, *tail, *fallback;
    Py_ssize_t field;
    PyObject *args[8];
    Py_ssize_t nargs;
} Call;

/* The value of one row (new reference): call(text, *tail)[field], or fallback(text) when the
 * call raises an Exception; NULL with an error set when the fallback raises too. */
static PyObject *row_value(Call *c, PyObject *text) {
    c->args[1] = text;
    PyObject *r = PyObject_Vectorcall(c->call, c->args + 1,
                                      (size_t)c->nargs | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
    if (!r) {
        if (c->fallback == Py_None || !PyErr_ExceptionMatches(PyExc_Exception)) return NULL;
        PyErr_Clear();
        return PyObject_CallOneArg(c->fallback, text);
    }
    if (c->field < 0) return r;
    PyObject *v;
    if (PyTuple_Check(r) && PyTuple_GET_SIZE(r) > c->field) {
        v = Py_NewRef(PyTuple_GET_ITEM(r, c->field));
    } else {
        PyErr_Format(PyExc_TypeError, "the call returned %.100s, not a tuple of more than %zd",
                     Py_TYPE(r)->tp_name, c->field);
        v = NULL;
    }
    Py_DECREF(r);
    return v;
}

/* A row's value from Python into the result: for the url column alone a str or None; for the
 * full result a tuple (url: str | None, changed: bool | None, rules: list of str | None), where
 * a changed of None makes changed and rules null. */
static int out_value(Out *o, Py_ssize_t i, PyObject *value, PyObject *text, const char *raw,
                     Py_ssize_t raw_n) {
    PyObject *url = value;
    if (o->full) {
        if (!PyTuple_Check(value) || PyTuple_GET_SIZE(value) != 3) {
            PyErr_SetString(PyExc_TypeError, "a row's value is no (url, changed, rules)");
            return -1;
        }
        url = PyTuple_GET_ITEM(value, 0);
        PyObject *changed = PyTuple_GET_ITEM(value, 1), *rules = PyTuple_GET_ITEM(value, 2);
        if (changed == Py_None) {
            o->row_nulls++;
        } else if (!PyList_Check(rules)) {
            PyErr_SetString(PyExc_TypeError, "a row's rules are no list");
            return -1;
        } else {
            int is_changed = PyObject_IsTrue(changed);
            if (is_changed < 0 || out_rules(o, i, is_changed, PySequence_Fast_ITEMS(rules),
                                            PyList_GET_SIZE(rules)) < 0)
                return -1;
        }
    }
    if (url == Py_None) {
        o->url_nulls++;
        return 0;
    }
    if (url == text) return out_url(o, i, raw, raw_n); /* unchanged: the input's own bytes */
    Py_ssize_t n;
    const char *utf8 = PyUnicode_Check(url) ? PyUnicode_AsUTF8AndSize(url, &n) : NULL;
    if (!utf8) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_TypeError, "a row's url is %.100s, not str or None",
                         Py_TYPE(url)->tp_name);
        return -1;
    }
    return out_url(o, i, utf8, n);
}

typedef struct {
    Py_buffer validity, offsets, data;
    int has_validity, has_data, large;
} Column;

static void column_release(Column *col) {
    if (col->has_validity) PyBuffer_Release(&col->validity);
    if (col->has_data) PyBuffer_Release(&col->data);
    PyBuffer_Release(&col->offsets);
}

static int column_open(Column *col, PyObject *validity, PyObject *offsets, PyObject *data,
                       int large) {
    memset(col, 0, sizeof *col);
    col->large = large;
    if (PyObject_GetBuffer(offsets, &col->offsets, PyBUF_SIMPLE) < 0) return -1;
    if (validity != Py_None) {
        if (PyObject_GetBuffer(validity, &col->validity, PyBUF_SIMPLE) < 0) goto fail;
        col->has_validity = 1;
    }
    if (data != Py_None) {
        if (PyObject_GetBuffer(data, &col->data, PyBUF_SIMPLE) < 0) goto fail;
        col->has_data = 1;
    }
    return 0;
fail:
    column_release(col);
    return -1;
}

static int64_t column_offset(Column *col, Py_ssize_t i) {
    if (col->large) return ((const int64_t *)col->offsets.buf)[i];
    return ((const int32_t *)col->offsets.buf)[i];
}

/* The rows of an Arrow string column: offset, length and its buffers, checked. */
typedef struct {
    Column col;
    Py_ssize_t offset, length, data_size;
    const unsigned char *in, *valid;
} Rows;

static int rows_open(Rows *r, PyObject *const *args) {
    /* args: validity, offsets, data, offset, length, large */
    r->offset = PyLong_AsSsize_t(args[3]);
    r->length = PyLong_AsSsize_t(args[4]);
    int large = PyObject_IsTrue(args[5]);
    if (PyErr_Occurred() || large < 0) return -1;
    if (r->offset < 0 || r->length < 0) {
        PyErr_SetString(PyExc_ValueError, "offset and length must not be negative");
        return -1;
    }
    if (column_open(&r->col, args[0], args[1], args[2], large) < 0) return -1;
    Py_ssize_t width = large ? 8 : 4;
    if (r->col.offsets.len < (r->offset + r->length + 1) * width ||
        (r->col.has_validity && r->col.validity.len * 8 < r->offset + r->length)) {
        column_release(&r->col);
        PyErr_SetString(PyExc_ValueError, "the buffers are shorter than offset + length");
        return -1;
    }
    r->data_size = r->col.has_data ? r->col.data.len : 0;
    r->in = r->col.has_data ? (const unsigned char *)r->col.data.buf : NULL;
    r->valid = r->col.has_validity ? (const unsigned char *)r->col.validity.buf : NULL;
    return 0;
}

/* The bytes of the rows: room for them in the result, and a little more. */
static Py_ssize_t rows_bytes(Rows *r) {
    if (!r->length) return 0;
    int64_t first = column_offset(&r->col, r->offset);
    int64_t last = column_offset(&r->col, r->offset + r->length);
    if (first < 0 || last < first || last > r->data_size) return 0;
    return (Py_ssize_t)(last - first) + (Py_ssize_t)(last - first) / 8 + 64;
}

/* Row i stripped of ASCII white space into [*s, *e): 1, or 0 when it is null or blank, or -1
 * (an offset outside the data). */
static int rows_text(Rows *r, Py_ssize_t i, int64_t *s, int64_t *e) {
    Py_ssize_t row = r->offset + i;
    if (r->valid && !(r->valid[row >> 3] & (1u << (row & 7)))) return 0;
    *s = column_offset(&r->col, row);
    *e = column_offset(&r->col, row + 1);
    if (*s < 0 || *e < *s || *e > r->data_size) {
        PyErr_SetString(PyExc_ValueError, "an offset is outside the data buffer");
        return -1;
    }
    while (*s < *e && is_blank(r->in[*s])) (*s)++;
    while (*e > *s && is_blank(r->in[*e - 1])) (*e)--;
    return *s < *e;
}

/* The loop both functions run: each row null, the twin's, or call's. */
static int map_rows(Rows *r, Twin *twin, Call *c, Out *o) {
    for (Py_ssize_t i = 0; i < r->length; i++) {
        int64_t s, e;
        int has = rows_text(r, i, &s, &e);
        if (has < 0) return -1;
        int served = has ? twin_row(twin, i, r->in + s, e - s) : 0;
        if (served < 0) return -1;
        if (!has) {
            o->url_nulls++;
            o->row_nulls += o->full;
        } else if (!served) {
            const char *raw = (const char *)r->in + s;
            PyObject *text = PyUnicode_DecodeUTF8(raw, (Py_ssize_t)(e - s), NULL);
            PyObject *value = text ? row_value(c, text) : NULL;
            int failed = !value || out_value(o, i, value, text, raw, (Py_ssize_t)(e - s)) < 0;
            Py_XDECREF(value);
            Py_XDECREF(text);
            if (failed) return -1;
        }
        out_end(o, i);
    }
    return 0;
}

/* A bytes object cut to the size written (the Bytes gives it up). */
static PyObject *bytes_take(Bytes *b) {
    if (!b->obj) return PyBytes_FromStringAndSize("", 0);
    if (_PyBytes_Resize(&b->obj, b->size) < 0) return NULL; /* freed and set NULL */
    PyObject *obj = b->obj;
    b->obj = NULL;
    return obj;
}

static int call_open(Call *c, PyObject *const *args) {
    /* args: call, tail, field, fallback */
    if (!PyTuple_Check(args[1]) || PyTuple_GET_SIZE(args[1]) > 6) {
        PyErr_SetString(PyExc_TypeError, "tail: a tuple of at most 6");
        return -1;
    }
    c->call = args[0];
    c->tail = args[1];
    c->fallback = args[3];
    c->field = PyLong_AsSsize_t(args[2]);
    if (c->field == -1 && PyErr_Occurred()) return -1;
    c->nargs = 1 + PyTuple_GET_SIZE(c->tail);
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(c->tail); k++)
        c->args[2 + k] = PyTuple_GET_ITEM(c->tail, k);
    return 0;
}

/* map(args, nargs, full): the two functions below, which differ in their result only. */
static PyObject *map(PyObject *const *args, Py_ssize_t nargs, int full, const char *use) {
    if (nargs != 11) {
        PyErr_SetString(PyExc_TypeError, use);
        return NULL;
    }
    Call c;
    Rows r;
    Out o;
    Twin twin = {0};
    if (call_open(&c, args) < 0 || rows_open(&r, args + 4) < 0) return NULL;
    PyObject *result = NULL;
    if (out_open(&o, r.length, full, rows_bytes(&r)) < 0 || twin_open(&twin, args[10], &o) < 0 ||
        map_rows(&r, &twin, &c, &o) < 0)
        goto done;
    PyObject *url = bytes_take(&o.url);
    if (!url) goto done;
    PyObject *url_bits = o.url_nulls ? o.url_bits : Py_None;
    if (!full) {
        result = Py_BuildValue("(nOON)", o.url_nulls, url_bits, o.url_offs, url);
        goto done;
    }
    PyObject *name_offs = bytes_take(&o.name_offs), *names = bytes_take(&o.names);
    if (name_offs && names)
        result = Py_BuildValue("(nOONnOOONN)", o.url_nulls, url_bits, o.url_offs, url,
                               o.row_nulls, o.row_nulls ? o.row_bits : Py_None, o.changed,
                               o.list_offs, name_offs, names);
    else {
        Py_DECREF(url);
        Py_XDECREF(name_offs);
        Py_XDECREF(names);
    }
done:
    twin_close(&twin);
    out_close(&o);
    column_release(&r.col);
    return result;
}

/* map_strings(call, tail, field, fallback, validity, offsets, data, offset, length, large,
 *             twin)
 *   -> (null_count, validity: bytes | None, offsets: bytes (int64), data: bytes)
 *
 * For each of the length rows from offset of an Arrow string column (large: int64 offsets,
 * else int32): null stays null; the text stripped of ASCII white space is null when blank,
 * else the twin's canonical URL of it, when twin is (capsule, flags, query, policy, rules)
 * and the twin serves it (core/_twin.h; call must then be canonicalize with that policy), else
 * call(text, *tail) (its item field when field >= 0), or fallback(text) when the call raises
 * an Exception and fallback is not None.  A value of None is null, a str is the row. */
static PyObject *map_strings(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    return map(args, nargs, 0,
               "map_strings(call, tail: tuple (at most 6), field: int, fallback, validity, "
               "offsets, data, offset: int, length: int, large: bool, twin)");
}

/* map_result(call, tail, field, fallback, validity, offsets, data, offset, length, large, twin)
 *   -> (url_nulls, url_validity, url_offsets (int64), url_data,
 *       row_nulls, row_validity, changed (bits), rules_offsets (int32), name_offsets (int32),
 *       names)
 *
 * map_strings's rows with the changed and rules columns besides (urlsan.core.many.columns):
 * the twin's rows from the buffer, each other row call(text, *tail)[field] (or fallback(text))
 * as a tuple (url, changed, rules).  changed and rules have their own validity: a null or
 * blank row is null in all three, a refused one has a null url only. */
static PyObject *map_result(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    return map(args, nargs, 1,
               "map_result(call, tail: tuple (at most 6), field: int, fallback, validity, "
               "offsets, data, offset: int, length: int, large: bool, twin)");
}

/* --- SURT keys: the ia profile's common URLs in C (core/surt.py) ---------------------------
 *
 * ia_plain(url) -> str | None: the ia profile's cdx-form key of a common http(s) URL, or None
 * for any other URL, which core/surt.py's full steps (_ia_key_full) key.  It runs those steps
 * (handyurl.parse, GoogleURLCanonicalizer, IAURLCanonicalizer, the key) where they come down to
 * byte work, and tests/core/test_surt.py holds it to them (hypothesis and the corpora).  It
 * takes a URL that is
 *   ASCII without control bytes or DEL, and without white space at its end (handyurl strips
 *   the ends and drops TAB, CR and LF anywhere: such a URL is the full steps');
 *   "http://" or "https://", in any case;
 *   then a host of printable ASCII but space and "/?#@:[%" (no userinfo, IP literal or escape:
 *   those take the full steps' IDNA and inet_aton), without empty labels, and either not all
 *   digits and dots or a dotted quad as inet_ntoa writes it (the numeric-host step gives that
 *   back as it is, and takes any other: "010.1" is octal);
 *   a port of 1 to 5 digits up to 65535; a path, query and fragment of printable ASCII or
 *   space.
 * The text is lowered first: IA lowers host, path and query at the end, and lowering commutes
 * with the unescaping before it (a hex digit reads alike in either case; the bytes an escape
 * gives are lowered on the way out).  Path and query are unescaped until no escape is left
 * (urllib's unquote_to_bytes, as surt does), the path's dot and empty segments resolved
 * (_normalize_path), both escaped once (bytes outside printable ASCII, "#" and "%") and the
 * query's parameters sorted.  Declined after those steps: a path holding "/(" and ".aspx" (an
 * ASP.NET session id may be in it), a query holding "cfid=", "sessionid" or "sid=" and 32
 * letters or digits (the session ids IAURLCanonicalizer strips: each of its patterns needs
 * one of those). */

/* What a byte of a path or query is to the steps after the split: its end (a delimiter or a
 * byte ia_plain does not take), or one that asks for a step (an escape to undo, a space to
 * escape, a "(" of a session id, a "/" that may start a dot or empty segment, an "&" between
 * parameters to sort).  Every other byte is copied as it is: most URLs hold no escape. */
enum { END = 0x80, PERCENT = 1, SPACE = 2, PAREN = 4, SLASH = 8, AMP = 16, DOTS = 32 };
/* A host's bytes: HOST_DOT, HOST_DIGIT, HOST_NAME (any other it takes), 0 for its end. */
enum { HOST_DIGIT = 1, HOST_DOT = 2, HOST_NAME = 4 };
static unsigned char host_class[256], path_class[256], query_class[256], fragment_ok[256];

static void plain_tables(void) {
    for (int c = 0; c < 256; c++) {
        int text = c >= 0x20 && c < 0x7f;
        host_class[c] = text ? HOST_NAME : 0;
        fragment_ok[c] = (unsigned char)text;
        path_class[c] = query_class[c] = text ? 0 : END;
    }
    for (const char *c = " /?#@:[%"; *c; c++) host_class[(unsigned char)*c] = 0;
    for (int c = '0'; c <= '9'; c++) host_class[c] = HOST_DIGIT;
    host_class['.'] = HOST_DOT;
    path_class['?'] = path_class['#'] = query_class['#'] = END;
    path_class['%'] = query_class['%'] = PERCENT;
    path_class[' '] = query_class[' '] = SPACE;
    path_class['('] = PAREN;
    path_class['/'] = SLASH;
    query_class['&'] = AMP;
}

/* The offset where the part from i ends (a byte of class END, or n); *seen: the classes met,
 * DOTS for a "/" before a "." or "/". */
static Py_ssize_t part_end(const char *u, Py_ssize_t i, Py_ssize_t n, const unsigned char *class,
                           int *seen) {
    int f = 0;
    for (; i < n; i++) {
        unsigned char k = class[(unsigned char)u[i]];
        if (!k) continue;
        if (k & END) break;
        f |= k;
        if (k & SLASH && i + 1 < n && (u[i + 1] == '.' || u[i + 1] == '/')) f |= DOTS;
    }
    *seen = f;
    return i;
}

static int has(const char *s, Py_ssize_t n, const char *what) {
    Py_ssize_t k = (Py_ssize_t)strlen(what);
    for (Py_ssize_t i = 0; i + k <= n; i++)
        if (s[i] == what[0] && memcmp(s + i, what, (size_t)k) == 0) return 1;
    return 0;
}

typedef struct {
    const char *s;
    Py_ssize_t n, eq; /* eq: the offset of the first "=", or -1 */
} Arg;

/* Python's order of (name,) and (name, value) tuples. */
static int arg_order(const void *pa, const void *pb) {
    const Arg *a = pa, *b = pb;
    Py_ssize_t an = a->eq < 0 ? a->n : a->eq, bn = b->eq < 0 ? b->n : b->eq;
    int c = memcmp(a->s, b->s, (size_t)(an < bn ? an : bn));
    if (c || an != bn) return c ? c : (an < bn ? -1 : 1);
    if ((a->eq < 0) != (b->eq < 0)) return a->eq < 0 ? -1 : 1;
    if (a->eq < 0) return 0;
    Py_ssize_t av = a->n - an - 1, bv = b->n - bn - 1;
    c = memcmp(a->s + an + 1, b->s + bn + 1, (size_t)(av < bv ? av : bv));
    return c ? c : (av < bv ? -1 : av > bv);
}

/* The query's parameters sorted into out (n bytes); -1: no memory. */
static int sort_query(const char *q, Py_ssize_t n, char *out) {
    Py_ssize_t count = 1;
    for (Py_ssize_t i = 0; i < n; i++) count += q[i] == '&';
    Arg *args = PyMem_Malloc((size_t)count * sizeof(Arg));
    if (!args) return -1;
    Py_ssize_t k = 0, start = 0;
    for (Py_ssize_t i = 0; i <= n; i++) {
        if (i < n && q[i] != '&') continue;
        Arg *a = &args[k++];
        a->s = q + start;
        a->n = i - start;
        a->eq = -1;
        for (Py_ssize_t j = 0; j < a->n; j++)
            if (a->s[j] == '=') {
                a->eq = j;
                break;
            }
        start = i + 1;
    }
    qsort(args, (size_t)count, sizeof(Arg), arg_order);
    Py_ssize_t w = 0;
    for (k = 0; k < count; k++) {
        if (k) out[w++] = '&';
        memcpy(out + w, args[k].s, (size_t)args[k].n);
        w += args[k].n;
    }
    PyMem_Free(args);
    return 0;
}

/* A host of digits and dots that _numeric_host gives back as it is: four numbers of 0 to 255
 * without leading zeros (inet_aton reads "010" as octal, and fewer parts fill the bytes left). */
static int dotted_quad(const char *h, Py_ssize_t n) {
    int parts = 0, value = 0, digits = 0;
    for (Py_ssize_t i = 0; i <= n; i++) {
        if (i == n || h[i] == '.') {
            if (!digits || value > 255 || (digits > 1 && h[i - digits] == '0')) return 0;
            parts++;
            value = digits = 0;
        } else if (++digits > 3) {
            return 0;
        } else {
            value = value * 10 + (h[i] - '0');
        }
    }
    return parts == 4;
}

typedef struct {
    Py_ssize_t host, host_end, port, port_end, path, path_end, query, query_end;
    int path_seen, query_seen; /* part_end's classes */
} Plain;

/* The parts of a lowered URL (offsets), 0 when ia_plain does not take it. */
static int plain_split(const char *u, Py_ssize_t n, Plain *p) {
    Py_ssize_t i;
    if (n >= 7 && memcmp(u, "http://", 7) == 0) i = 7;
    else if (n >= 8 && memcmp(u, "https://", 8) == 0) i = 8;
    else return 0;
    if (u[n - 1] == ' ') return 0; /* handyurl strips it */
    p->host = i;
    int seen = 0; /* HOST_NAME among them: not all digits and dots */
    for (unsigned char k; i < n && (k = host_class[(unsigned char)u[i]]); i++) {
        if (k == HOST_DOT && (i == p->host || u[i - 1] == '.')) return 0;
        seen |= k;
    }
    p->host_end = i;
    if (i == p->host || u[i - 1] == '.') return 0;
    if (!(seen & HOST_NAME) && !dotted_quad(u + p->host, i - p->host)) return 0;
    p->port = p->port_end = -1;
    if (i < n && u[i] == ':') {
        p->port = ++i;
        while (i < n && u[i] >= '0' && u[i] <= '9' && i - p->port < 6) i++;
        p->port_end = i;
        if (i == p->port || i - p->port > 5) return 0;
    }
    p->path = p->path_end = -1;
    p->path_seen = p->query_seen = 0;
    if (i < n && u[i] == '/') {
        p->path = i;
        i = p->path_end = part_end(u, i, n, path_class, &p->path_seen);
    }
    p->query = p->query_end = -1;
    if (i < n && u[i] == '?') {
        p->query = ++i;
        i = p->query_end = part_end(u, i, n, query_class, &p->query_seen);
    }
    if (i < n && u[i] == '#')
        for (i++; i < n && fragment_ok[(unsigned char)u[i]];) i++;
    return i == n;
}

static int hex_value(unsigned char c) {
    if (c >= '0' && c <= '9') return c - '0';
    c = lower(c);
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* _unescape_repeatedly in place: every "%" and two hex digits decoded, left to right (as
 * unquote_to_bytes does), pass after pass until one decodes nothing; the new length. */
static Py_ssize_t unescape(char *s, Py_ssize_t n) {
    int decoded = 1;
    while (decoded) {
        Py_ssize_t w = 0;
        decoded = 0;
        for (Py_ssize_t i = 0; i < n; i++) {
            int hi, lo;
            if (s[i] == '%' && i + 2 < n && (hi = hex_value((unsigned char)s[i + 1])) >= 0 &&
                (lo = hex_value((unsigned char)s[i + 2])) >= 0) {
                s[w++] = (char)(hi * 16 + lo);
                i += 2;
                decoded = 1;
            } else {
                s[w++] = s[i];
            }
        }
        n = w;
    }
    return n;
}

typedef struct {
    Py_ssize_t start, n;
} Segment;

/* _normalize_path of s (n bytes from a "/") into out: "." segments dropped, ".." taking off the
 * segment before it (kept where there is none), empty segments dropped but the last; "/" when
 * none is left.  kept: room for n segments.  The length written. */
static Py_ssize_t normalize(const char *s, Py_ssize_t n, Segment *kept, char *out) {
    Py_ssize_t k = 0, w = 0;
    for (Py_ssize_t i = 1; i <= n;) {
        Py_ssize_t e = i;
        while (e < n && s[e] != '/') e++;
        if (e - i == 2 && s[i] == '.' && s[i + 1] == '.') {
            if (k) k--;
            else kept[k++] = (Segment){i, 2};
        } else if (!(e - i == 1 && s[i] == '.')) {
            kept[k++] = (Segment){i, e - i};
        }
        i = e + 1;
    }
    out[w++] = '/';
    for (Py_ssize_t j = 0; j < k; j++) {
        if (j + 1 < k && !kept[j].n) continue;
        memcpy(out + w, s + kept[j].start, (size_t)kept[j].n);
        w += kept[j].n;
        if (j + 1 < k) out[w++] = '/';
    }
    return w;
}

/* _escape_once, then lower(): bytes outside printable ASCII, "#" and "%" as "%xx". */
static Py_ssize_t escape_lower(const char *s, Py_ssize_t n, char *out) {
    static const char hex[] = "0123456789abcdef";
    Py_ssize_t w = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c > ' ' && c < 0x7f && c != '#' && c != '%') {
            out[w++] = (char)lower(c);
        } else {
            out[w++] = '%';
            out[w++] = hex[c >> 4];
            out[w++] = hex[c & 15];
        }
    }
    return w;
}

/* A query IAURLCanonicalizer may strip a session id from (the text its patterns need). */
static int session_query(const char *q, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i + 5 <= n; i++) {
        if (q[i] == 'c' && memcmp(q + i, "cfid=", 5) == 0) return 1;
        if (q[i] != 's') continue;
        if (i + 9 <= n && memcmp(q + i, "sessionid", 9) == 0) return 1;
        if (i + 36 > n || memcmp(q + i, "sid=", 4) != 0) continue;
        Py_ssize_t j = i + 4;
        while (j < i + 36 && ((q[j] >= 'a' && q[j] <= 'z') || (q[j] >= '0' && q[j] <= '9'))) j++;
        if (j == i + 36) return 1;
    }
    return 0;
}

/* plain_path's steps for a path with an escape, a space or a dot or empty segment: unescaped,
 * dot segments resolved, escaped once; the length written, -2: no memory.  few: room for 32
 * segments. */
static Py_ssize_t plain_path_steps(const char *s, Py_ssize_t n, int seen, char *work, char *out,
                                   Segment *few) {
    Segment *kept = few;
    memcpy(work, s, (size_t)n);
    if (seen & PERCENT) n = unescape(work, n);
    const char *path = work;
    char *normal = NULL;
    if (has(work, n, "/.") || has(work, n, "//")) {
        if (n > 32 && !(kept = PyMem_Malloc((size_t)n * sizeof(Segment)))) return -2;
        if (!(normal = PyMem_Malloc((size_t)n))) {
            if (kept != few) PyMem_Free(kept);
            return -2;
        }
        n = normalize(work, n, kept, normal);
        path = normal;
        if (kept != few) PyMem_Free(kept);
    }
    Py_ssize_t w = escape_lower(path, n, out);
    PyMem_Free(normal);
    return w;
}

/* The path's key (s: n lowered bytes from a "/", seen: part_end's classes) written at out;
 * -1: declined, -2: no memory.  work: room for n bytes. */
static Py_ssize_t plain_path(const char *s, Py_ssize_t n, int seen, char *work, char *out) {
    Segment few[32];
    Py_ssize_t w;
    if (!(seen & (PERCENT | SPACE | DOTS))) { /* lowered already: nothing else to do */
        memcpy(out, s, (size_t)n);
        w = n;
    } else {
        w = plain_path_steps(s, n, seen, work, out, few);
        if (w < 0) return w;
    }
    if (seen & (PAREN | PERCENT) && has(out, w, "/(") && has(out, w, ".aspx")) return -1;
    return w > 1 && out[w - 1] == '/' ? w - 1 : w;
}

/* The query's key (s: n lowered bytes, seen: part_end's classes) written at out; -1:
 * declined, -2: no memory.  work: room for 4n bytes. */
static Py_ssize_t plain_query(const char *s, Py_ssize_t n, int seen, char *work, char *out) {
    const char *escaped = s; /* lowered already, when there is nothing to unescape or escape */
    if (seen & (PERCENT | SPACE)) {
        char *at = work + n; /* after the n bytes unescaping works in */
        memcpy(work, s, (size_t)n);
        n = escape_lower(work, seen & PERCENT ? unescape(work, n) : n, at);
        escaped = at;
    }
    if (session_query(escaped, n)) return -1;
    if (!(seen & (AMP | PERCENT)) || !memchr(escaped, '&', (size_t)n)) { /* one parameter */
        memcpy(out, escaped, (size_t)n);
    } else if (sort_query(escaped, n, out) < 0) {
        return -2;
    }
    return n;
}

/* The key of u (lowered, split into p) at out; work: room for 4 * n bytes. */
static PyObject *plain_key(const char *u, Plain *p, int https, char *work, char *out) {
    Py_ssize_t w = 0, hs = p->host, he = p->host_end;
    if (he - hs >= 4 && memcmp(u + hs, "www", 3) == 0) { /* www\d*\. folded */
        Py_ssize_t j = hs + 3;
        while (j < he && u[j] >= '0' && u[j] <= '9') j++;
        if (j < he && u[j] == '.') hs = j + 1;
    }
    for (Py_ssize_t e = he; e > hs;) { /* the labels reversed, joined by "," */
        Py_ssize_t b = e;
        while (b > hs && u[b - 1] != '.') b--;
        memcpy(out + w, u + b, (size_t)(e - b));
        w += e - b;
        if (b > hs) out[w++] = ',';
        e = b - 1;
    }
    if (p->port >= 0) {
        long number = 0;
        for (Py_ssize_t j = p->port; j < p->port_end; j++) number = number * 10 + (u[j] - '0');
        if (number > 65535) Py_RETURN_NONE; /* InvalidTarget: the full steps say why */
        if (number && number != (https ? 443 : 80)) w += sprintf(out + w, ":%ld", number);
    }
    out[w++] = ')';
    Py_ssize_t made;
    if (p->path < 0) {
        out[w++] = '/';
    } else {
        made = plain_path(u + p->path, p->path_end - p->path, p->path_seen, work, out + w);
        if (made < 0) return made == -1 ? Py_NewRef(Py_None) : PyErr_NoMemory();
        w += made;
    }
    if (p->query >= 0 && p->query_end > p->query) {
        out[w++] = '?';
        made = plain_query(u + p->query, p->query_end - p->query, p->query_seen, work, out + w);
        if (made < 0) return made == -1 ? Py_NewRef(Py_None) : PyErr_NoMemory();
        w += made;
    }
    PyObject *key = PyUnicode_New(w, 127); /* ASCII: no UTF-8 to decode */
    if (key) memcpy(PyUnicode_DATA(key), out, (size_t)w);
    return key;
}

/* ia_plain's work on a str: the key, None, or NULL with an exception. */
static PyObject *plain_text(PyObject *url) {
#if PY_VERSION_HEX < 0x030C0000
    if (PyUnicode_READY(url) < 0) return NULL;
#endif
    if (!PyUnicode_IS_ASCII(url)) Py_RETURN_NONE;
    Py_ssize_t n = PyUnicode_GET_LENGTH(url);
    const char *raw = (const char *)PyUnicode_DATA(url);
    /* the lowered URL (n), the work of path and query (4n), the key (4n + a port) */
    char small[2048], *buf = n <= 200 ? small : PyMem_Malloc((size_t)(9 * n + 16));
    if (!buf) return PyErr_NoMemory();
    char *low = buf, *work = buf + n, *out = buf + 5 * n;
    for (Py_ssize_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)raw[i];
        low[i] = (char)lower(c); /* a control byte or DEL: plain_split declines it */
    }
    Plain p;
    PyObject *key;
    if (plain_split(low, n, &p)) {
        key = plain_key(low, &p, low[4] == 's', work, out);
    } else {
        key = Py_NewRef(Py_None);
    }
    if (buf != small) PyMem_Free(buf);
    return key;
}

static PyObject *ia_plain(PyObject *self, PyObject *url) {
    (void)self;
    if (!PyUnicode_Check(url)) return PyErr_Format(PyExc_TypeError, "ia_plain() takes a str");
    return plain_text(url);
}

/* --- surt(url, *, profile="ia", form=None, policy=None), entered in C ------------------------
 *
 * core/surt.py's public surt, made by ia_entry(python, full) (surt.py's _entered_in_c): a call
 * with one str and no keyword but profile="ia" is the ia profile's cdx key, made by plain_text
 * here, or by full(url, False) (_ia_key_full) where plain_text declines: the call bench/surt.py
 * and most callers make, without a Python frame.  Every other call is python's (surt as written
 * in Python), which raises what it raises.  A heap type, kept in the module's state, so that
 * each interpreter has its own (the module declares per-interpreter GIL support). */

typedef struct {
    PyObject_HEAD
    PyObject *dict;           /* __doc__, __name__, __wrapped__ ...: the Python function's */
    vectorcallfunc vectorcall;
    PyObject *python, *full;
    PyObject *profile, *ia; /* "profile" and "ia", interned: a keyword is compared by address */
} SurtEntry;

typedef struct {
    PyObject *entry_type;
} State;

static PyObject *surt_entry_call(SurtEntry *self, PyObject *const *args, size_t nargsf,
                                 PyObject *kwnames) {
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs != 1 || !PyUnicode_CheckExact(args[0]))
        return PyObject_Vectorcall(self->python, args, nargsf, kwnames);
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t k = 0; k < nkw; k++) { /* profile="ia" is the default's call too */
        PyObject *name = PyTuple_GET_ITEM(kwnames, k), *value = args[1 + k];
        if ((name != self->profile && PyUnicode_Compare(name, self->profile) != 0) ||
            (value != self->ia &&
             !(PyUnicode_CheckExact(value) && PyUnicode_Compare(value, self->ia) == 0)))
            return PyObject_Vectorcall(self->python, args, nargsf, kwnames);
    }
    PyObject *key = plain_text(args[0]);
    if (key != Py_None) return key;
    Py_DECREF(key);
    PyObject *call[2] = {args[0], Py_False};
    return PyObject_Vectorcall(self->full, call, 2, NULL);
}

static int surt_entry_traverse(SurtEntry *self, visitproc visit, void *arg) {
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->dict);
    Py_VISIT(self->python);
    Py_VISIT(self->full);
    Py_VISIT(self->profile);
    Py_VISIT(self->ia);
    return 0;
}

static int surt_entry_clear(SurtEntry *self) {
    Py_CLEAR(self->dict);
    Py_CLEAR(self->python);
    Py_CLEAR(self->full);
    Py_CLEAR(self->profile);
    Py_CLEAR(self->ia);
    return 0;
}

static void surt_entry_dealloc(SurtEntry *self) {
    PyTypeObject *type = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    surt_entry_clear(self);
    type->tp_free((PyObject *)self);
    Py_DECREF(type);
}

static PyMemberDef surt_entry_members[] = {
    {"__dictoffset__", T_PYSSIZET, offsetof(SurtEntry, dict), READONLY, NULL},
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(SurtEntry, vectorcall), READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyType_Slot surt_entry_slots[] = {
    {Py_tp_doc, "surt with the ia profile's common call in C: see its __wrapped__."},
    {Py_tp_call, PyVectorcall_Call},
    {Py_tp_descr_get, urlsan_entry_get},
    {Py_tp_traverse, surt_entry_traverse},
    {Py_tp_clear, surt_entry_clear},
    {Py_tp_dealloc, surt_entry_dealloc},
    {Py_tp_methods, urlsan_entry_methods},
    {Py_tp_getset, urlsan_entry_getset},
    {Py_tp_members, surt_entry_members},
    {0, NULL},
};

static PyType_Spec surt_entry_spec = {
    .name = "urlsan.core._columns.compiled_function",
    .basicsize = sizeof(SurtEntry),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL |
             Py_TPFLAGS_IMMUTABLETYPE | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = surt_entry_slots,
};

/* ia_entry(python, full): the public surt; the caller copies python's __doc__, __name__ ...
 * onto it. */
static PyObject *ia_entry(PyObject *module, PyObject *args) {
    PyObject *python, *full;
    if (!PyArg_ParseTuple(args, "OO", &python, &full)) return NULL;
    State *state = PyModule_GetState(module);
    if (!state) return NULL;
    PyObject *profile = PyUnicode_InternFromString("profile"), *ia = PyUnicode_InternFromString("ia");
    if (!profile || !ia) {
        Py_XDECREF(profile);
        Py_XDECREF(ia);
        return NULL;
    }
    SurtEntry *e = PyObject_GC_New(SurtEntry, (PyTypeObject *)state->entry_type);
    if (!e) {
        Py_DECREF(profile);
        Py_DECREF(ia);
        return NULL;
    }
    e->dict = NULL;
    e->vectorcall = (vectorcallfunc)surt_entry_call;
    e->python = Py_NewRef(python);
    e->full = Py_NewRef(full);
    e->profile = profile;
    e->ia = ia;
    PyObject_GC_Track(e);
    return (PyObject *)e;
}

static int module_exec(PyObject *module) {
    State *state = PyModule_GetState(module);
    state->entry_type = PyType_FromModuleAndSpec(module, &surt_entry_spec, NULL);
    return state->entry_type ? 0 : -1;
}

static int module_traverse(PyObject *module, visitproc visit, void *arg) {
    State *state = PyModule_GetState(module);
    if (state) Py_VISIT(state->entry_type);
    return 0;
}

static int module_clear(PyObject *module) {
    State *state = PyModule_GetState(module);
    if (state) Py_CLEAR(state->entry_type);
    return 0;
}

static void module_free(void *module) { module_clear((PyObject *)module); }

static PyMethodDef methods[] = {
    {"map_strings", (PyCFunction)(void (*)(void))map_strings, METH_FASTCALL,
     "map_strings(call, tail, field, fallback, validity, offsets, data, offset, length, large,"
     " twin) -> (null_count, validity, offsets, data): the twin's canonical URL of each ASCII"
     " row it serves, one call for every other row of an Arrow string column, the result"
     " column's buffers written directly (int64 offsets)."},
    {"map_result", (PyCFunction)(void (*)(void))map_result, METH_FASTCALL,
     "map_result(call, tail, field, fallback, validity, offsets, data, offset, length, large,"
     " twin) -> the buffers of the url, changed and rules columns (urlsan.core.many.columns)."},
    {"ia_plain", ia_plain, METH_O,
     "ia_plain(url) -> str | None: the ia SURT key of a common http(s) URL (urlsan.core.surt's"
     " short path), None for any other URL."},
    {"ia_entry", ia_entry, METH_VARARGS,
     "ia_entry(python, full) -> urlsan.core.surt.surt with its common call (one str, the ia"
     " profile) in C: ia_plain's key, else full(url, False); python for any other call."},
    {NULL, NULL, 0, NULL},
};

static PyModuleDef_Slot slots[] = {
    {Py_mod_exec, module_exec},
#ifdef Py_mod_multiple_interpreters
    {Py_mod_multiple_interpreters, Py_MOD_PER_INTERPRETER_GIL_SUPPORTED},
#endif
    {0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "urlsan.core._columns",
    "One call per row of an Arrow string column, the result written as Arrow buffers.",
    sizeof(State), methods, slots, module_traverse, module_clear, module_free,
};

PyMODINIT_FUNC PyInit__columns(void) {
    plain_tables();
    for (const char *c = "-._~!$&'()*+,:@"; *c; c++) name_plain[(unsigned char)*c] = 1;
    for (int c = 0; c < 256; c++)
        name_plain[c] |= (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    return PyModuleDef_Init(&module);
}
