/* The loop of the data-frame integrations over an Arrow string column (urlsan/_columns.py).
 *
 * map_strings reads the column's own buffers (validity bitmap, offsets, UTF-8 data, as
 * pyarrow's Array.buffers() gives them) and writes the result column's buffers directly: no
 * list of the inputs, no list of the outputs, no pa.array() over them.  An ASCII row that the
 * compiled twin serves (most real URLs) is canonicalized straight from the data buffer into the
 * result's (core/_twin.h): no Python object is made for it.  Any other row is one call of a
 * Python callable (urlsan.core.canonicalize, whose compiled entry runs in C, or a SURT key
 * function) on the row as a str; the one Python object per row beyond that str is what the
 * callable returns.
 *
 * Optional like the twin (core/_speedups.c): without it, urlsan/_columns.py builds the lists.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

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
    unsigned char any = 0;
    for (int64_t i = 0; i < n; i++) any |= p[i];
    return any < 0x80;
}

/* The twin's way in, when map_strings is given one: (capsule, flags, query, policy), as
 * urlsan.core.canonical.ascii_twin(policy) makes it. */
typedef struct {
    const UrlsanTwinApi *api; /* NULL: every row goes to the Python callable */
    int flags;
    PyObject *query, *policy; /* query(url, policy, host) -> url: the query rules; or None */
    Bytes *out;
} Twin;

static int twin_open(Twin *t, PyObject *spec, Bytes *out) {
    t->api = NULL;
    t->out = out;
    if (spec == Py_None) return 0;
    if (!PyTuple_Check(spec) || PyTuple_GET_SIZE(spec) != 4) {
        PyErr_SetString(PyExc_TypeError, "twin: None or (capsule, flags: int, query, policy)");
        return -1;
    }
    const UrlsanTwinApi *api = PyCapsule_GetPointer(PyTuple_GET_ITEM(spec, 0), URLSAN_TWIN_API_NAME);
    long flags = PyLong_AsLong(PyTuple_GET_ITEM(spec, 1));
    if (!api || (flags == -1 && PyErr_Occurred())) return -1;
    if (api->version != URLSAN_TWIN_API_VERSION || flags < 0 || flags > INT_MAX) {
        PyErr_SetString(PyExc_ValueError, "twin: another version of the twin, or flags it has not");
        return -1;
    }
    t->api = api;
    t->flags = (int)flags;
    t->query = PyTuple_GET_ITEM(spec, 2);
    t->policy = PyTuple_GET_ITEM(spec, 3);
    return 0;
}

/* What the twin hands over: its canonical URL, written to the result; with query rules and a
 * "?", the URL that query(url, policy, host) makes of it. */
static int twin_sink(void *ctx, const char *url, Py_ssize_t n, Py_ssize_t host_at,
                     Py_ssize_t host_end) {
    Twin *t = ctx;
    if (t->query == Py_None || !memchr(url, '?', (size_t)n)) return bytes_put(t->out, url, n);
    PyObject *args[3] = {PyUnicode_DecodeASCII(url, n, NULL), t->policy, NULL};
    args[2] = host_at < 0 ? Py_NewRef(Py_None)
                          : PyUnicode_DecodeASCII(url + host_at, host_end - host_at, NULL);
    PyObject *done = args[0] && args[2] ? PyObject_Vectorcall(t->query, args, 3, NULL) : NULL;
    Py_XDECREF(args[0]);
    Py_XDECREF(args[2]);
    if (!done) return -1;
    Py_ssize_t size;
    const char *text = PyUnicode_Check(done) ? PyUnicode_AsUTF8AndSize(done, &size) : NULL;
    int rc = text ? bytes_put(t->out, text, size) : -1;
    if (!text && !PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "query() returned no str");
    Py_DECREF(done);
    return rc;
}

/* The row in[s:e] canonicalized by the twin into the result: 1 done, 0 the Python callable's
 * to do, -1 an error that is not an Exception (an Exception leaves the row to the callable,
 * which raises it again and then takes its fallback). */
static int twin_row(Twin *t, const unsigned char *p, int64_t n) {
    if (!t->api || !is_ascii(p, n)) return 0;
    Py_ssize_t size = t->out->size;
    int rc = t->api->ascii_url((const char *)p, (Py_ssize_t)n, t->flags, t->query != Py_None,
                               twin_sink, t);
    if (rc >= 0) return rc;
    t->out->size = size;
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

/* map_strings(call, tail, field, fallback, validity, offsets, data, offset, length, large,
 *             twin)
 *   -> (null_count, validity: bytes | None, offsets: bytes (int64), data: bytes)
 *
 * For each of the length rows from offset of an Arrow string column (large: int64 offsets,
 * else int32): null stays null; the text stripped of ASCII white space is null when blank,
 * else the twin's canonical URL of it, when twin is (capsule, flags, query, policy) and the
 * twin serves it (core/_twin.h; call must then be canonicalize with that policy), else call(text, *tail) (its item field when field >= 0), or fallback(text)
 * when the call raises an Exception and fallback is not None.  A value of None is null, a str
 * is the row. */
static PyObject *map_strings(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 11 || !PyTuple_Check(args[1]) || PyTuple_GET_SIZE(args[1]) > 6) {
        PyErr_SetString(PyExc_TypeError,
                        "map_strings(call, tail: tuple (at most 6), field: int, fallback, "
                        "validity, offsets, data, offset: int, length: int, large: bool, twin)");
        return NULL;
    }
    Twin twin;
    Bytes out = {0};
    if (twin_open(&twin, args[10], &out) < 0) return NULL;
    Call c = {.call = args[0], .tail = args[1], .fallback = args[3]};
    c.field = PyLong_AsSsize_t(args[2]);
    Py_ssize_t offset = PyLong_AsSsize_t(args[7]), length = PyLong_AsSsize_t(args[8]);
    int large = PyObject_IsTrue(args[9]);
    if (PyErr_Occurred() || large < 0) return NULL;
    if (offset < 0 || length < 0) {
        PyErr_SetString(PyExc_ValueError, "offset and length must not be negative");
        return NULL;
    }
    c.nargs = 1 + PyTuple_GET_SIZE(c.tail);
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(c.tail); k++)
        c.args[2 + k] = PyTuple_GET_ITEM(c.tail, k);

    Column col;
    if (column_open(&col, args[4], args[5], args[6], large) < 0) return NULL;
    Py_ssize_t width = large ? 8 : 4;
    Py_ssize_t data_size = col.has_data ? col.data.len : 0;
    if (col.offsets.len < (offset + length + 1) * width ||
        (col.has_validity && col.validity.len * 8 < offset + length)) {
        column_release(&col);
        PyErr_SetString(PyExc_ValueError, "the buffers are shorter than offset + length");
        return NULL;
    }
    const unsigned char *in = col.has_data ? (const unsigned char *)col.data.buf : NULL;
    const unsigned char *valid = col.has_validity ? (const unsigned char *)col.validity.buf : NULL;

    PyObject *result = NULL, *offsets_out = NULL, *validity_out = NULL, *data_out = NULL;
    Py_ssize_t nulls = 0, bitmap_size = (length + 7) / 8;
    offsets_out = PyBytes_FromStringAndSize(NULL, (length + 1) * 8);
    validity_out = PyBytes_FromStringAndSize(NULL, bitmap_size);
    if (!offsets_out || !validity_out) goto done;
    int64_t *offs = (int64_t *)PyBytes_AS_STRING(offsets_out);
    unsigned char *bits = (unsigned char *)PyBytes_AS_STRING(validity_out);
    memset(bits, 0, (size_t)bitmap_size);
    offs[0] = 0;
    if (length) { /* room for the input's bytes and a little more: few reallocations */
        int64_t first = column_offset(&col, offset), last = column_offset(&col, offset + length);
        if (first >= 0 && last >= first && last <= data_size &&
            bytes_reserve(&out, (Py_ssize_t)(last - first) + (Py_ssize_t)(last - first) / 8 + 64) < 0)
            goto done;
    }
    for (Py_ssize_t i = 0; i < length; i++) {
        Py_ssize_t row = offset + i;
        offs[i + 1] = out.size;
        if (valid && !(valid[row >> 3] & (1u << (row & 7)))) {
            nulls++;
            continue;
        }
        int64_t s = column_offset(&col, row), e = column_offset(&col, row + 1);
        if (s < 0 || e < s || e > data_size) {
            PyErr_SetString(PyExc_ValueError, "an offset is outside the data buffer");
            goto done;
        }
        while (s < e && is_blank(in[s])) s++;
        while (e > s && is_blank(in[e - 1])) e--;
        if (s == e) {
            nulls++;
            continue;
        }
        int served = twin_row(&twin, in + s, e - s);
        if (served < 0) goto done;
        if (served) {
            bits[i >> 3] |= (unsigned char)(1u << (i & 7));
            offs[i + 1] = out.size;
            continue;
        }
        PyObject *text = PyUnicode_DecodeUTF8((const char *)in + s, (Py_ssize_t)(e - s), NULL);
        if (!text) goto done;
        PyObject *value = row_value(&c, text);
        int failed = value == NULL;
        if (value == Py_None) {
            nulls++;
        } else if (value == text) { /* unchanged: the input's own bytes */
            failed = bytes_put(&out, (const char *)in + s, (Py_ssize_t)(e - s)) < 0;
        } else if (value && PyUnicode_Check(value)) {
            Py_ssize_t n;
            const char *utf8 = PyUnicode_AsUTF8AndSize(value, &n);
            failed = !utf8 || bytes_put(&out, utf8, n) < 0;
        } else if (value) {
            PyErr_Format(PyExc_TypeError, "a row's value is %.100s, not str or None",
                         Py_TYPE(value)->tp_name);
            failed = 1;
        }
        if (!failed && value != Py_None) bits[i >> 3] |= (unsigned char)(1u << (i & 7));
        Py_XDECREF(value);
        Py_DECREF(text);
        if (failed) goto done;
        offs[i + 1] = out.size;
    }
    if (out.obj && _PyBytes_Resize(&out.obj, out.size) < 0) goto done;
    data_out = out.obj ? out.obj : PyBytes_FromStringAndSize("", 0);
    out.obj = NULL;
    if (!data_out) goto done;
    result = Py_BuildValue("(nOOO)", nulls, nulls ? validity_out : Py_None, offsets_out, data_out);
done:
    Py_XDECREF(out.obj);
    Py_XDECREF(offsets_out);
    Py_XDECREF(validity_out);
    Py_XDECREF(data_out);
    column_release(&col);
    return result;
}

/* --- SURT keys: core/surt.py's _ia_key_plain, in C ---------------------------------------
 *
 * ia_plain(url) -> str | None: the ia profile's cdx-form key of a plain http(s) URL, or None
 * for any other URL (core/surt.py's full steps key it).  The same rules as _ia_key_plain, which
 * tests/core/test_surt.py holds this to: ASCII, lowered first; "http://" or "https://"; a host
 * of [a-z0-9_.-] that is not all digits and dots and has no empty label; a port of 1 to 5
 * digits up to 65535; a path and query of the characters below (no "%", no space, no "#"; no
 * "(" or ")" in the path); a fragment of printable ASCII; no "/." or "//" in the path; no
 * "sid", "sessionid" or "cfid" in the query. */

static unsigned char path_ok[256], query_ok[256];

static void plain_tables(void) {
    const char *path = "!$&'*+,-./0123456789:;=@[]_abcdefghijklmnopqrstuvwxyz~|^`{}\\\"<>";
    for (const char *c = path; *c; c++) path_ok[(unsigned char)*c] = query_ok[(unsigned char)*c] = 1;
    query_ok['('] = query_ok[')'] = query_ok['?'] = 1;
}

static int host_char(unsigned char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
}

static int has(const char *s, Py_ssize_t n, const char *what) {
    Py_ssize_t k = (Py_ssize_t)strlen(what);
    for (Py_ssize_t i = 0; i + k <= n; i++)
        if (memcmp(s + i, what, (size_t)k) == 0) return 1;
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

typedef struct {
    Py_ssize_t host, host_end, port, port_end, path, path_end, query, query_end;
} Plain;

/* The parts of a lowered URL (offsets), 0 when it is not plain. */
static int plain_split(const char *u, Py_ssize_t n, Plain *p) {
    Py_ssize_t i;
    if (n >= 7 && memcmp(u, "http://", 7) == 0) i = 7;
    else if (n >= 8 && memcmp(u, "https://", 8) == 0) i = 8;
    else return 0;
    p->host = i;
    int letter = 0;
    while (i < n && host_char((unsigned char)u[i])) {
        letter |= u[i] != '.' && !(u[i] >= '0' && u[i] <= '9');
        if (u[i] == '.' && (i == p->host || u[i - 1] == '.')) return 0;
        i++;
    }
    p->host_end = i;
    if (i == p->host || u[i - 1] == '.' || !letter) return 0;
    p->port = p->port_end = -1;
    if (i < n && u[i] == ':') {
        p->port = ++i;
        while (i < n && u[i] >= '0' && u[i] <= '9' && i - p->port < 6) i++;
        p->port_end = i;
        if (i == p->port || i - p->port > 5) return 0;
    }
    p->path = p->path_end = -1;
    if (i < n && u[i] == '/') {
        p->path = i;
        while (i < n && path_ok[(unsigned char)u[i]]) i++;
        p->path_end = i;
    }
    p->query = p->query_end = -1;
    if (i < n && u[i] == '?') {
        p->query = ++i;
        while (i < n && query_ok[(unsigned char)u[i]]) i++;
        p->query_end = i;
    }
    if (i < n && u[i] == '#')
        for (i++; i < n && u[i] > ' ' && u[i] < 0x7f;) i++;
    return i == n;
}

static PyObject *plain_key(const char *u, Plain *p, int https, char *out) {
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
    Py_ssize_t ps = p->path, pe = p->path_end;
    if (ps < 0) {
        out[w++] = '/';
    } else {
        if (has(u + ps, pe - ps, "/.") || has(u + ps, pe - ps, "//")) Py_RETURN_NONE;
        if (pe - ps > 1 && u[pe - 1] == '/') pe--;
        memcpy(out + w, u + ps, (size_t)(pe - ps));
        w += pe - ps;
    }
    Py_ssize_t qs = p->query, qe = p->query_end;
    if (qs >= 0 && qe > qs) {
        const char *q = u + qs;
        if (has(q, qe - qs, "sid") || has(q, qe - qs, "sessionid") || has(q, qe - qs, "cfid"))
            Py_RETURN_NONE;
        out[w++] = '?';
        if (memchr(q, '&', (size_t)(qe - qs))) {
            if (sort_query(q, qe - qs, out + w) < 0) return PyErr_NoMemory();
        } else {
            memcpy(out + w, q, (size_t)(qe - qs));
        }
        w += qe - qs;
    }
    return PyUnicode_FromStringAndSize(out, w);
}

static PyObject *ia_plain(PyObject *self, PyObject *url) {
    (void)self;
    if (!PyUnicode_Check(url)) return PyErr_Format(PyExc_TypeError, "ia_plain() takes a str");
    if (!PyUnicode_IS_ASCII(url)) Py_RETURN_NONE;
    Py_ssize_t n = PyUnicode_GET_LENGTH(url);
    const char *raw = (const char *)PyUnicode_DATA(url);
    char small[512], *buf = n <= 240 ? small : PyMem_Malloc((size_t)(2 * n + 16));
    if (!buf) return PyErr_NoMemory();
    char *low = buf, *out = buf + n;
    for (Py_ssize_t i = 0; i < n; i++) {
        char c = raw[i];
        low[i] = c >= 'A' && c <= 'Z' ? (char)(c + 32) : c;
    }
    Plain p;
    PyObject *key;
    if (plain_split(low, n, &p)) {
        key = plain_key(low, &p, low[4] == 's', out);
    } else {
        key = Py_NewRef(Py_None);
    }
    if (buf != small) PyMem_Free(buf);
    return key;
}

static PyMethodDef methods[] = {
    {"map_strings", (PyCFunction)(void (*)(void))map_strings, METH_FASTCALL,
     "map_strings(call, tail, field, fallback, validity, offsets, data, offset, length, large,"
     " twin) -> (null_count, validity, offsets, data): the twin's canonical URL of each ASCII"
     " row it serves, one call for every other row of an Arrow string column, the result"
     " column's buffers written directly (int64 offsets)."},
    {"ia_plain", ia_plain, METH_O,
     "ia_plain(url) -> str | None: the ia SURT key of a plain http(s) URL (urlsan.core.surt's"
     " short path), None for any other URL."},
    {NULL, NULL, 0, NULL},
};

static PyModuleDef_Slot slots[] = {
#ifdef Py_mod_multiple_interpreters
    {Py_mod_multiple_interpreters, Py_MOD_PER_INTERPRETER_GIL_SUPPORTED},
#endif
    {0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "urlsan.core._columns",
    "One call per row of an Arrow string column, the result written as Arrow buffers.", 0,
    methods, slots, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__columns(void) {
    plain_tables();
    return PyModuleDef_Init(&module);
}
