/* The compiled twin of canonical.py for the targets most traffic is made of.
 *
 * canonicalize(target, flags, form) returns the very Result the pure-Python driver returns (URL,
 * edits, findings), or None when the target lies outside what this twin handles; the caller then
 * runs the Python reference.  Handled: an origin-form path ("/a?b", not "//a"), or an absolute
 * http/https/ws/wss URL whose authority is an ASCII letters-digits-hyphens host that does not end
 * in a number, with an optional port.  The path, query and fragment may hold anything: escapes,
 * stray "%", characters to escape, non-ASCII text and surrogateescape'd raw bytes.  Everything that
 * would raise a finding other than the path's dot segments ("%25", "%00", "%0D", "%u", overlong
 * UTF-8 leads, escaped slashes or dots, a backslash), a userinfo, an IP literal, an IDN or a
 * numeric host goes back to Python, which is the reference: tests/core/test_speedups.py holds the
 * two to the same output.
 *
 * The tables (allowed characters per component, the unreserved sets, the default ports) come from
 * charsets.py and policy.py through setup(), so that the grammar lives in one place.  The output is
 * ASCII; every rewrite is recorded exactly as rules.Edits records it: adjacent edits of one rule in
 * one component merge into one.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

/* ---- rule, component and finding names, in the spelling of policy.RULES */

enum {
    R_LOWER_SCHEME, R_LOWER_HOST, R_DROP_EMPTY_PORT, R_STRIP_PORT_ZEROS, R_DROP_DEFAULT_PORT,
    R_DECODE, R_UPPER, R_STRAY, R_UNSAFE, R_NON_ASCII, R_DOTS, R_EMPTY_PATH, R_STRIP_FRAGMENT,
    R_COUNT
};
static const char *const RULE_NAMES[R_COUNT] = {
    "lowercase-scheme", "lowercase-host", "drop-empty-port", "strip-port-zeros",
    "drop-default-port", "decode-unreserved", "uppercase-escape", "encode-stray-percent",
    "encode-unsafe", "encode-non-ascii", "remove-dot-segments", "empty-path", "strip-fragment",
};

enum { C_SCHEME, C_HOST, C_PORT, C_PATH, C_QUERY, C_FRAGMENT, C_COUNT };
static const char *const COMPONENT_NAMES[C_COUNT] = {
    "scheme", "host", "port", "path", "query", "fragment",
};

enum { F_DOT, F_ABOVE_ROOT, F_PARAM_DOTDOT, F_COUNT };
static const char *const FINDING_NAMES[F_COUNT] = {
    "dot-segment", "dot-segment-above-root", "path-parameter-dotdot",
};

/* Policy switches: canonical.py derives a policy's flags from FLAGS (exported below).  Rules
 * this twin guards by refusing the input (merge-slashes: "//" in the path) have a bit; rules that
 * cannot act on a handled target (idna-host, numeric-host, strip-host-dot, the escaped-slash and
 * backslash rules, the required repairs) have none, and neither have the query rules, which
 * canonical.py runs on this twin's result (their name patterns are Python's fnmatch). */
#define FL_LOWER_SCHEME (1 << 0)
#define FL_LOWER_HOST (1 << 1)
#define FL_DROP_EMPTY_PORT (1 << 2)
#define FL_STRIP_PORT_ZEROS (1 << 3)
#define FL_DROP_DEFAULT_PORT (1 << 4)
#define FL_DECODE (1 << 5)
#define FL_UPPER (1 << 6)
#define FL_DOTS (1 << 7)
#define FL_EMPTY_PATH (1 << 8)
#define FL_STRIP_FRAGMENT (1 << 9)
#define FL_MERGE_SLASHES (1 << 10)
#define FL_UNRESERVED_2396 (1 << 11)

static const struct {
    const char *rule;
    int bit;
} POLICY_FLAGS[] = {
    {"lowercase-scheme", FL_LOWER_SCHEME},
    {"lowercase-host", FL_LOWER_HOST},
    {"drop-empty-port", FL_DROP_EMPTY_PORT},
    {"strip-port-zeros", FL_STRIP_PORT_ZEROS},
    {"drop-default-port", FL_DROP_DEFAULT_PORT},
    {"decode-unreserved", FL_DECODE},
    {"uppercase-escape", FL_UPPER},
    {"remove-dot-segments", FL_DOTS},
    {"empty-path", FL_EMPTY_PATH},
    {"strip-fragment", FL_STRIP_FRAGMENT},
    {"merge-slashes", FL_MERGE_SLASHES},
    /* no bit: canonical.py runs them on the twin's result */
    {"drop-params", 0},
    {"sort-query", 0},
    {"drop-empty-query", 0},
    /* no bit: they cannot act on a target this twin accepts */
    {"idna-host", 0},
    {"strip-host-dot", 0},
    {"numeric-host", 0},
    {"backslash-as-slash", 0},
    {"decode-escaped-slash", 0},
    {"reject-escaped-slash", 0},
    {"encode-stray-percent", 0},
    {"encode-unsafe", 0},
    {"encode-non-ascii", 0},
    {"dot-prefix", 0},
};

static PyObject *rule_str[R_COUNT], *component_str[C_COUNT], *finding_str[F_COUNT];
static PyObject *ResultType, *EditType, *FindingType;

/* policy.DEFAULT_PORTS, as setup() hands it over: the schemes this twin handles. */
#define SCHEME_MAX 8
#define SCHEMES_MAX 8
static struct {
    char name[SCHEME_MAX];
    Py_ssize_t n;
    PyObject *port;
} schemes[SCHEMES_MAX];
static int nschemes;
static PyObject *empty_str, *colon_str, *slash_str;

static unsigned char allowed_path[128], allowed_query[128], allowed_fragment[128];
static unsigned char unreserved[128], unreserved_2396[128];
static int ready;

static const char HEX[] = "0123456789ABCDEF";

/* ---- a growable byte buffer (the output is ASCII) */

typedef struct {
    char *p;
    Py_ssize_t n, cap;
} Buf;

static int buf_reserve(Buf *b, Py_ssize_t extra) {
    if (b->n + extra <= b->cap) return 0;
    Py_ssize_t cap = b->cap ? b->cap : 64;
    while (cap < b->n + extra) {
        if (cap > PY_SSIZE_T_MAX / 2) { PyErr_NoMemory(); return -1; }
        cap *= 2;
    }
    char *p = PyMem_Realloc(b->p, (size_t)cap);
    if (!p) { PyErr_NoMemory(); return -1; }
    b->p = p;
    b->cap = cap;
    return 0;
}

static inline int buf_put(Buf *b, const char *s, Py_ssize_t k) {
    if (k == 0) return 0; /* an empty buffer's pointer is NULL: no memcpy from it */
    if (buf_reserve(b, k) < 0) return -1;
    memcpy(b->p + b->n, s, (size_t)k);
    b->n += k;
    return 0;
}

static inline int buf_putc(Buf *b, char c) {
    if (b->n >= b->cap && buf_reserve(b, 1) < 0) return -1;
    b->p[b->n++] = c;
    return 0;
}

static PyObject *ascii_str(const char *s, Py_ssize_t n) {
    PyObject *o = PyUnicode_New(n, 127);
    if (o) memcpy(PyUnicode_DATA(o), s, (size_t)n);
    return o;
}

/* ---- edits and findings, recorded as rules.Edits and findings.Findings record them */

typedef struct {
    int rule, component;
    Py_ssize_t start, end;
    PyObject *before; /* owned; NULL: the input's text from start to end */
    PyObject *after;  /* owned; NULL: afters[a0:a0 + alen] */
    Py_ssize_t a0, alen;
} EditRec;

typedef struct {
    int rule;
    Py_ssize_t offset, dstart, dend, count;
} FindRec;

typedef struct {
    PyObject *target;
    int kind;
    const void *data;
    Py_ssize_t len;
    int flags;
    EditRec *edits;
    Py_ssize_t nedits, capedits;
    Buf afters;
    FindRec findings[F_COUNT];
    int nfindings;
} State;

#define CH(st, i) PyUnicode_READ((st)->kind, (st)->data, (i))

static EditRec *new_edit(State *st) {
    if (st->nedits == st->capedits) {
        Py_ssize_t cap = st->capedits ? st->capedits * 2 : 16;
        EditRec *e = PyMem_Realloc(st->edits, (size_t)cap * sizeof(EditRec));
        if (!e) { PyErr_NoMemory(); return NULL; }
        st->edits = e;
        st->capedits = cap;
    }
    EditRec *e = &st->edits[st->nedits++];
    memset(e, 0, sizeof *e);
    return e;
}

/* A character rule's edit: its text before is the input's own; merged into the last edit when
 * that one is of the same rule and component and ends where this one starts. */
static int char_edit(State *st, int rule, int component, Py_ssize_t start, Py_ssize_t end,
                     const char *after, Py_ssize_t alen) {
    if (st->nedits) {
        EditRec *last = &st->edits[st->nedits - 1];
        if (last->end == start && last->rule == rule && last->component == component &&
            !last->before && !last->after) {
            last->end = end;
            last->alen += alen;
            return buf_put(&st->afters, after, alen);
        }
    }
    EditRec *e = new_edit(st);
    if (!e) return -1;
    e->rule = rule;
    e->component = component;
    e->start = start;
    e->end = end;
    e->a0 = st->afters.n;
    e->alen = alen;
    return buf_put(&st->afters, after, alen);
}

/* A structural rule's edit: steals the references to before (NULL: the input's text) and after. */
static int whole_edit(State *st, int rule, int component, Py_ssize_t start, Py_ssize_t end,
                      PyObject *before, PyObject *after) {
    if (!after || (before == NULL && PyErr_Occurred())) {
        Py_XDECREF(before);
        Py_XDECREF(after);
        return -1;
    }
    EditRec *e = new_edit(st);
    if (!e) { Py_XDECREF(before); Py_DECREF(after); return -1; }
    e->rule = rule;
    e->component = component;
    e->start = start;
    e->end = end;
    e->before = before;
    e->after = after;
    return 0;
}

static void add_finding(State *st, int rule, Py_ssize_t offset, Py_ssize_t dstart,
                        Py_ssize_t dend) {
    for (int i = 0; i < st->nfindings; i++) {
        if (st->findings[i].rule == rule) { st->findings[i].count++; return; }
    }
    FindRec *f = &st->findings[st->nfindings++];
    f->rule = rule;
    f->offset = offset;
    f->dstart = dstart;
    f->dend = dend;
    f->count = 1;
}

static void state_free(State *st) {
    for (Py_ssize_t i = 0; i < st->nedits; i++) {
        Py_XDECREF(st->edits[i].before);
        Py_XDECREF(st->edits[i].after);
    }
    PyMem_Free(st->edits);
    PyMem_Free(st->afters.p);
}

/* A NamedTuple (Edit, Finding, Result) from stolen items, built as tuple.__new__(type, items)
 * builds it: the supported way to make a tuple subclass instance. */
static PyObject *named(PyObject *type, Py_ssize_t n, PyObject **items) {
    PyObject *plain = PyTuple_New(n);
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!plain || !items[i]) {
            for (Py_ssize_t k = i; k < n; k++) Py_XDECREF(items[k]);
            Py_XDECREF(plain);
            return NULL;
        }
        PyTuple_SET_ITEM(plain, i, items[i]);
    }
    PyObject *args = PyTuple_Pack(1, plain);
    Py_DECREF(plain);
    if (!args) return NULL;
    PyObject *o = PyTuple_Type.tp_new((PyTypeObject *)type, args, NULL);
    Py_DECREF(args);
    return o;
}

static PyObject *freeze_edits(State *st) {
    PyObject *t = PyTuple_New(st->nedits);
    if (!t) return NULL;
    for (Py_ssize_t i = 0; i < st->nedits; i++) {
        EditRec *e = &st->edits[i];
        PyObject *items[6];
        items[0] = Py_NewRef(rule_str[e->rule]);
        items[1] = Py_NewRef(component_str[e->component]);
        items[2] = PyLong_FromSsize_t(e->start);
        items[3] = PyLong_FromSsize_t(e->end);
        items[4] = e->before ? Py_NewRef(e->before) : PyUnicode_Substring(st->target, e->start, e->end);
        items[5] = e->after ? Py_NewRef(e->after) : ascii_str(st->afters.p + e->a0, e->alen);
        PyObject *edit = named(EditType, 6, items);
        if (!edit) { Py_DECREF(t); return NULL; }
        PyTuple_SET_ITEM(t, i, edit);
    }
    return t;
}

static PyObject *freeze_findings(State *st) {
    PyObject *t = PyTuple_New(st->nfindings);
    if (!t) return NULL;
    for (int i = 0; i < st->nfindings; i++) {
        FindRec *f = &st->findings[i];
        PyObject *items[5];
        items[0] = Py_NewRef(finding_str[f->rule]);
        items[1] = Py_NewRef(component_str[C_PATH]);
        items[2] = PyLong_FromSsize_t(f->offset);
        items[3] = PyUnicode_Substring(st->target, f->dstart, f->dend);
        items[4] = PyLong_FromSsize_t(f->count);
        PyObject *finding = named(FindingType, 5, items);
        if (!finding) { Py_DECREF(t); return NULL; }
        PyTuple_SET_ITEM(t, i, finding);
    }
    return t;
}

/* ---- characters */

static inline int hexval(Py_UCS4 c) {
    if (c >= '0' && c <= '9') return (int)(c - '0');
    if (c >= 'A' && c <= 'F') return (int)(c - 'A' + 10);
    if (c >= 'a' && c <= 'f') return (int)(c - 'a' + 10);
    return -1;
}

/* Escaped bytes the Python side reports as findings (findings._ESCAPE_TRICKS): "%25" (double
 * encoding), "%00", "%0D", "%0A", and the leads of overlong UTF-8.  Refused here, conservatively
 * (a "%C0" that is not overlong goes to Python too). */
static inline int tricky_byte(int byte) {
    return byte == 0x25 || byte == 0x00 || byte == 0x0D || byte == 0x0A || byte == 0xC0 ||
           byte == 0xC1 || byte == 0xE0 || byte == 0xF0;
}

enum { OK = 0, FAIL = -1, REFUSE = 1 };

/* rules.Scanner.scan: decode-unreserved, uppercase-escape, encode-stray-percent, encode-unsafe,
 * encode-non-ascii, in one pass over target[s:e], written to out. */
static int scan(State *st, int component, Py_ssize_t s, Py_ssize_t e, Buf *out) {
    const unsigned char *allowed = component == C_PATH    ? allowed_path
                                   : component == C_QUERY ? allowed_query
                                                          : allowed_fragment;
    const unsigned char *unres = (st->flags & FL_UNRESERVED_2396) ? unreserved_2396 : unreserved;
    int decode = st->flags & FL_DECODE, upper = st->flags & FL_UPPER;
    if (buf_reserve(out, e - s) < 0) return FAIL;
    for (Py_ssize_t i = s; i < e; i++) {
        Py_UCS4 c = CH(st, i);
        if (c < 128 && allowed[c]) {
            if (buf_putc(out, (char)c) < 0) return FAIL;
            continue;
        }
        char enc[12];
        if (c == '%') {
            int hi = i + 2 < e ? hexval(CH(st, i + 1)) : -1;
            int lo = hi >= 0 ? hexval(CH(st, i + 2)) : -1;
            if (lo < 0) {
                if (i + 1 < e && (CH(st, i + 1) | 0x20) == 'u') return REFUSE; /* %uXXXX */
                if (char_edit(st, R_STRAY, component, i, i + 1, "%25", 3) < 0 ||
                    buf_put(out, "%25", 3) < 0)
                    return FAIL;
                continue;
            }
            int byte = hi << 4 | lo;
            if (tricky_byte(byte)) return REFUSE;
            if (component == C_PATH && (byte == 0x2F || byte == 0x5C || byte == 0x2E))
                return REFUSE; /* escaped-slash and encoded-dot-segment findings */
            if (decode && byte < 128 && unres[byte]) {
                enc[0] = (char)byte;
                if (char_edit(st, R_DECODE, component, i, i + 3, enc, 1) < 0 ||
                    buf_putc(out, enc[0]) < 0)
                    return FAIL;
            } else {
                enc[0] = '%';
                enc[1] = HEX[hi];
                enc[2] = HEX[lo];
                Py_UCS4 h1 = CH(st, i + 1), h2 = CH(st, i + 2);
                if (upper && ((char)h1 != enc[1] || (char)h2 != enc[2])) {
                    if (char_edit(st, R_UPPER, component, i, i + 3, enc, 3) < 0) return FAIL;
                } else {
                    enc[1] = (char)h1;
                    enc[2] = (char)h2;
                }
                if (buf_put(out, enc, 3) < 0) return FAIL;
            }
            i += 2;
            continue;
        }
        if (c < 128) {
            if (c == '\\') return REFUSE; /* the backslash finding and rules */
            enc[0] = '%';
            enc[1] = HEX[c >> 4];
            enc[2] = HEX[c & 15];
            if (char_edit(st, R_UNSAFE, component, i, i + 1, enc, 3) < 0 ||
                buf_put(out, enc, 3) < 0)
                return FAIL;
            continue;
        }
        /* RFC 3986 §2.5: a character as its UTF-8 octets (surrogatepass); a surrogateescape'd
         * byte (U+DC80..U+DCFF) as that byte. */
        unsigned char bytes[4];
        int n;
        if (c >= 0xDC80 && c <= 0xDCFF) {
            if (c == 0xDCC0 || c == 0xDCC1) return REFUSE; /* raw overlong UTF-8 lead */
            bytes[0] = (unsigned char)(c - 0xDC00);
            n = 1;
        } else if (c < 0x800) {
            bytes[0] = (unsigned char)(0xC0 | (c >> 6));
            bytes[1] = (unsigned char)(0x80 | (c & 0x3F));
            n = 2;
        } else if (c < 0x10000) {
            bytes[0] = (unsigned char)(0xE0 | (c >> 12));
            bytes[1] = (unsigned char)(0x80 | ((c >> 6) & 0x3F));
            bytes[2] = (unsigned char)(0x80 | (c & 0x3F));
            n = 3;
        } else {
            bytes[0] = (unsigned char)(0xF0 | (c >> 18));
            bytes[1] = (unsigned char)(0x80 | ((c >> 12) & 0x3F));
            bytes[2] = (unsigned char)(0x80 | ((c >> 6) & 0x3F));
            bytes[3] = (unsigned char)(0x80 | (c & 0x3F));
            n = 4;
        }
        for (int k = 0; k < n; k++) {
            enc[3 * k] = '%';
            enc[3 * k + 1] = HEX[bytes[k] >> 4];
            enc[3 * k + 2] = HEX[bytes[k] & 15];
        }
        if (char_edit(st, R_NON_ASCII, component, i, i + 1, enc, 3 * n) < 0 ||
            buf_put(out, enc, 3 * n) < 0)
            return FAIL;
    }
    return OK;
}

/* ---- the path: findings.path's dot-segment walk, and RFC 3986 §5.2.4 */

static int is_dots(State *st, Py_ssize_t s, Py_ssize_t e) {
    return (e - s == 1 && CH(st, s) == '.') ||
           (e - s == 2 && CH(st, s) == '.' && CH(st, s + 1) == '.');
}

/* findings.path on an absolute path without escapes of "." "/" "\\" (those were refused). */
static void path_findings(State *st, Py_ssize_t s, Py_ssize_t e) {
    Py_ssize_t dot = PyUnicode_FindChar(st->target, '.', s, e, 1);
    if (dot == -2) PyErr_Clear(); /* cannot happen with valid indices; then no findings */
    if (dot < 0) return;
    Py_ssize_t depth = 0, seg = s;
    for (Py_ssize_t i = 0; seg <= e; i++) {
        Py_ssize_t end = seg;
        while (end < e && CH(st, end) != '/') end++;
        if (is_dots(st, seg, end)) {
            add_finding(st, F_DOT, seg, seg, end);
            if (end - seg == 2 && i > 0) {
                if (depth == 0)
                    add_finding(st, F_ABOVE_ROOT, seg, seg, end);
                else
                    depth--;
            }
        } else {
            Py_ssize_t semi = seg;
            while (semi < end && CH(st, semi) != ';') semi++;
            if (semi < end && is_dots(st, seg, semi))
                add_finding(st, F_PARAM_DOTDOT, seg, seg, end); /* "/..;/": Tomcat climbs */
            else if (i > 0)
                depth++;
        }
        seg = end + 1;
    }
}

static int buf_is_dots(const char *p, Py_ssize_t n) {
    return (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.');
}

/* rules.remove_dot_segments on path[0:n] (which starts with "/"), into out.  Linear: the kept
 * segments are a stack of offsets into path. */
static int remove_dot_segments(const char *path, Py_ssize_t n, Buf *out) {
    Py_ssize_t nseg = 1;
    for (Py_ssize_t i = 1; i < n; i++) nseg += path[i] == '/';
    Py_ssize_t *kept = PyMem_Malloc((size_t)nseg * 2 * sizeof(Py_ssize_t));
    if (!kept) { PyErr_NoMemory(); return -1; }
    Py_ssize_t top = 0, seg = 1;
    while (seg <= n) {
        Py_ssize_t end = seg;
        while (end < n && path[end] != '/') end++;
        int last = end >= n;
        if (buf_is_dots(path + seg, end - seg)) {
            if (end - seg == 2 && top) top--;
            if (last) { kept[2 * top] = seg; kept[2 * top + 1] = seg; top++; } /* ends in "/" */
        } else {
            kept[2 * top] = seg;
            kept[2 * top + 1] = end;
            top++;
        }
        seg = end + 1;
    }
    int rc = buf_putc(out, '/');
    for (Py_ssize_t k = 0; rc == 0 && k < top; k++) {
        if (k) rc = buf_putc(out, '/');
        if (rc == 0) rc = buf_put(out, path + kept[2 * k], kept[2 * k + 1] - kept[2 * k]);
    }
    PyMem_Free(kept);
    return rc;
}

static int has_dot_segments(const char *p, Py_ssize_t n) {
    Py_ssize_t seg = 0;
    while (seg <= n) {
        Py_ssize_t end = seg;
        while (end < n && p[end] != '/') end++;
        if (buf_is_dots(p + seg, end - seg)) return 1;
        seg = end + 1;
    }
    return 0;
}

/* ---- the driver: canonical._Canonicalizer.run for the handled targets */

static PyObject *twin_canonicalize(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 3 || !PyUnicode_Check(args[0]) || !PyLong_Check(args[1]) ||
        !PyUnicode_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "canonicalize(target: str, flags: int, form: str)");
        return NULL;
    }
    PyObject *target = args[0], *form = args[2];
#if PY_VERSION_HEX < 0x030C0000
    if (PyUnicode_READY(target) < 0) return NULL; /* a legacy str of the deprecated C API */
#endif
    long flags = PyLong_AsLong(args[1]);
    if (flags == -1 && PyErr_Occurred()) return NULL;
    if (flags < 0 || flags > INT_MAX) {
        PyErr_SetString(PyExc_ValueError, "flags out of range: this policy is not the twin's");
        return NULL;
    }
    if (!ready) {
        PyErr_SetString(PyExc_RuntimeError, "urlsan.core._speedups.setup() was not called");
        return NULL;
    }
    State st;
    memset(&st, 0, sizeof st);
    st.target = target;
    st.kind = PyUnicode_KIND(target);
    st.data = PyUnicode_DATA(target);
    st.len = PyUnicode_GET_LENGTH(target);
    st.flags = (int)flags;
    Py_ssize_t len = st.len;
    int origin;
    if (PyUnicode_CompareWithASCIIString(form, "auto") == 0)
        origin = len > 0 && CH(&st, 0) == '/' && !(len > 1 && CH(&st, 1) == '/');
    else if (PyUnicode_CompareWithASCIIString(form, "origin") == 0)
        origin = 1;
    else if (PyUnicode_CompareWithASCIIString(form, "absolute") == 0)
        origin = 0;
    else
        Py_RETURN_NONE;

    Buf out = {0}, path = {0}, resolved = {0};
    PyObject *result = NULL;
    int rc = REFUSE;
    Py_ssize_t i = 0;

    if (origin) {
        /* RFC 9112 §3.2.1 origin-form: "/" and no "//" (which needs the dot-prefix guard) */
        if (!(len > 0 && CH(&st, 0) == '/') || (len > 1 && CH(&st, 1) == '/')) goto done;
    } else {
        /* scheme "://" with the scheme one of policy.DEFAULT_PORTS (http, https, ws, wss) */
        char sch[SCHEME_MAX];
        Py_ssize_t n = 0;
        while (i < len && n < SCHEME_MAX) {
            Py_UCS4 c = CH(&st, i);
            if (c == ':') break;
            if (!((c | 0x20) >= 'a' && (c | 0x20) <= 'z')) goto done;
            sch[n++] = (char)(c | 0x20);
            i++;
        }
        if (n == 0 || i + 2 >= len || CH(&st, i) != ':' || CH(&st, i + 1) != '/' ||
            CH(&st, i + 2) != '/')
            goto done;
        PyObject *default_port = NULL;
        for (int k = 0; k < nschemes; k++) {
            if (schemes[k].n == n && memcmp(schemes[k].name, sch, (size_t)n) == 0) {
                default_port = schemes[k].port;
                break;
            }
        }
        if (!default_port) goto done;
        int cased = 0;
        for (Py_ssize_t k = 0; k < n; k++) cased |= (char)CH(&st, k) != sch[k];
        if (cased) {
            if (!(flags & FL_LOWER_SCHEME)) goto done; /* "HTTP" is then no known scheme */
            if (whole_edit(&st, R_LOWER_SCHEME, C_SCHEME, 0, n, NULL, ascii_str(sch, n)) < 0) {
                rc = FAIL;
                goto done;
            }
        }
        if (buf_put(&out, sch, n) < 0 || buf_put(&out, "://", 3) < 0) { rc = FAIL; goto done; }
        i += 3;

        /* authority: host [":" port], the host letters, digits, "-" and "." only */
        Py_ssize_t hs = i, colon = -1, ae;
        for (ae = i; ae < len; ae++) {
            Py_UCS4 c = CH(&st, ae);
            if (c == '/' || c == '?' || c == '#') break;
            if (c == ':') {
                if (colon >= 0) goto done;
                colon = ae;
            } else if (colon >= 0) {
                if (!(c >= '0' && c <= '9')) goto done;
            } else if (!((c | 0x20) >= 'a' && (c | 0x20) <= 'z') && !(c >= '0' && c <= '9') &&
                       c != '-' && c != '.') {
                goto done; /* userinfo, IP literal, escapes, IDN, characters to escape */
            }
        }
        Py_ssize_t he = colon >= 0 ? colon : ae;
        if (he == hs || CH(&st, he - 1) == '.') goto done; /* empty host; strip-host-dot */
        /* rules.ends_in_number: a last label of digits, or "0x…", is a numeric host */
        Py_ssize_t label = he;
        while (label > hs && CH(&st, label - 1) != '.') label--;
        int digits = 1;
        for (Py_ssize_t k = label; k < he; k++) digits &= CH(&st, k) >= '0' && CH(&st, k) <= '9';
        if (digits || (he - label >= 2 && CH(&st, label) == '0' && (CH(&st, label + 1) | 0x20) == 'x'))
            goto done;
        Py_ssize_t out_host = out.n;
        int host_cased = 0;
        for (Py_ssize_t k = hs; k < he; k++) {
            Py_UCS4 c = CH(&st, k);
            int lower = (flags & FL_LOWER_HOST) && c >= 'A' && c <= 'Z';
            host_cased |= lower;
            if (buf_putc(&out, (char)(lower ? c | 0x20 : c)) < 0) { rc = FAIL; goto done; }
        }
        if (host_cased &&
            whole_edit(&st, R_LOWER_HOST, C_HOST, hs, he, NULL,
                       ascii_str(out.p + out_host, he - hs)) < 0) {
            rc = FAIL;
            goto done;
        }
        if (colon >= 0) {
            Py_ssize_t ps = colon + 1, pe = ae, zs = ps;
            if (ps == pe) {
                if (flags & FL_DROP_EMPTY_PORT) {
                    if (whole_edit(&st, R_DROP_EMPTY_PORT, C_PORT, colon, ps,
                                   Py_NewRef(colon_str), Py_NewRef(empty_str)) < 0) {
                        rc = FAIL;
                        goto done;
                    }
                } else if (buf_putc(&out, ':') < 0) {
                    rc = FAIL;
                    goto done;
                }
            } else {
                if ((flags & FL_STRIP_PORT_ZEROS) && pe - ps > 1 && CH(&st, ps) == '0') {
                    while (zs < pe - 1 && CH(&st, zs) == '0') zs++;
                    if (whole_edit(&st, R_STRIP_PORT_ZEROS, C_PORT, ps, pe, NULL,
                                   PyUnicode_Substring(target, zs, pe)) < 0) {
                        rc = FAIL;
                        goto done;
                    }
                }
                PyObject *port = PyUnicode_Substring(target, zs, pe);
                if (!port) { rc = FAIL; goto done; }
                int is_default = (flags & FL_DROP_DEFAULT_PORT) &&
                                 PyUnicode_Compare(port, default_port) == 0;
                if (is_default) {
                    PyObject *before = PyUnicode_Concat(colon_str, port);
                    Py_DECREF(port);
                    if (whole_edit(&st, R_DROP_DEFAULT_PORT, C_PORT, colon, pe, before,
                                   Py_NewRef(empty_str)) < 0) {
                        rc = FAIL;
                        goto done;
                    }
                } else {
                    Py_DECREF(port);
                    if (buf_putc(&out, ':') < 0) { rc = FAIL; goto done; }
                    for (Py_ssize_t k = zs; k < pe; k++)
                        if (buf_putc(&out, (char)CH(&st, k)) < 0) { rc = FAIL; goto done; }
                }
            }
        }
        i = ae;
    }

    /* path */
    Py_ssize_t ps = i, pe = i;
    while (pe < len && CH(&st, pe) != '?' && CH(&st, pe) != '#') pe++;
    path_findings(&st, ps, pe);
    rc = scan(&st, C_PATH, ps, pe, &path);
    if (rc != OK) goto done;
    rc = REFUSE;
    if ((flags & FL_MERGE_SLASHES) && path.n > 1) {
        for (Py_ssize_t k = 1; k < path.n; k++)
            if (path.p[k] == '/' && path.p[k - 1] == '/') goto done;
    }
    if ((flags & FL_DOTS) && path.n && has_dot_segments(path.p, path.n)) {
        if (remove_dot_segments(path.p, path.n, &resolved) < 0) { rc = FAIL; goto done; }
        if (origin && resolved.n > 1 && resolved.p[1] == '/') goto done; /* needs "/." */
        if (resolved.n != path.n || memcmp(resolved.p, path.p, (size_t)path.n) != 0) {
            if (whole_edit(&st, R_DOTS, C_PATH, ps, pe, ascii_str(path.p, path.n),
                           ascii_str(resolved.p, resolved.n)) < 0) {
                rc = FAIL;
                goto done;
            }
            Buf swap = path;
            path = resolved;
            resolved = swap;
        }
    }
    if (!origin && path.n == 0 && (flags & FL_EMPTY_PATH)) {
        if (whole_edit(&st, R_EMPTY_PATH, C_PATH, ps, ps, Py_NewRef(empty_str),
                       Py_NewRef(slash_str)) < 0) {
            rc = FAIL;
            goto done;
        }
        if (buf_putc(&path, '/') < 0) { rc = FAIL; goto done; }
    }
    if (buf_put(&out, path.p, path.n) < 0) { rc = FAIL; goto done; }
    i = pe;

    /* query */
    if (i < len && CH(&st, i) == '?') {
        Py_ssize_t qe = i + 1;
        while (qe < len && CH(&st, qe) != '#') qe++;
        if (buf_putc(&out, '?') < 0) { rc = FAIL; goto done; }
        rc = scan(&st, C_QUERY, i + 1, qe, &out);
        if (rc != OK) goto done;
        rc = REFUSE;
        i = qe;
    }

    /* fragment */
    if (i < len) { /* CH(i) == '#' */
        if (flags & FL_STRIP_FRAGMENT) {
            if (whole_edit(&st, R_STRIP_FRAGMENT, C_FRAGMENT, i, len, NULL,
                           Py_NewRef(empty_str)) < 0) {
                rc = FAIL;
                goto done;
            }
        } else {
            if (buf_putc(&out, '#') < 0) { rc = FAIL; goto done; }
            rc = scan(&st, C_FRAGMENT, i + 1, len, &out);
            if (rc != OK) goto done;
        }
    }

    {
        PyObject *items[4];
        items[0] = Py_NewRef(target);
        /* Nothing rewritten: the output is the input, which is then returned itself. */
        int same = st.nedits == 0 && PyUnicode_IS_ASCII(target) && out.n == len &&
                   memcmp(out.p, st.data, (size_t)len) == 0;
        items[1] = same ? Py_NewRef(target) : ascii_str(out.p, out.n);
        items[2] = freeze_edits(&st);
        items[3] = freeze_findings(&st);
        result = named(ResultType, 4, items);
        rc = result ? OK : FAIL;
    }

done:
    PyMem_Free(out.p);
    PyMem_Free(path.p);
    PyMem_Free(resolved.p);
    state_free(&st);
    if (rc == FAIL) {
        Py_XDECREF(result);
        return NULL;
    }
    if (rc == REFUSE) Py_RETURN_NONE;
    return result;
}

/* ---- setup: the tables and types from the Python side */

static int fill(unsigned char *table, PyObject *chars) {
    memset(table, 0, 128);
    Py_ssize_t n = PyUnicode_GET_LENGTH(chars);
    for (Py_ssize_t k = 0; k < n; k++) {
        Py_UCS4 c = PyUnicode_READ_CHAR(chars, k);
        if (c >= 128) {
            PyErr_SetString(PyExc_ValueError, "character tables are ASCII");
            return -1;
        }
        table[c] = 1;
    }
    return 0;
}

static PyObject *twin_setup(PyObject *self, PyObject *args) {
    PyObject *result, *edit, *finding, *path, *query, *fragment, *unres, *unres2396, *ports;
    (void)self;
    if (!PyArg_ParseTuple(args, "OOOUUUUUO!", &result, &edit, &finding, &path, &query, &fragment,
                          &unres, &unres2396, &PyDict_Type, &ports))
        return NULL;
    ready = 0; /* until every table is filled: a failed setup() leaves the twin unusable */
    PyObject *types[3] = {result, edit, finding};
    for (int k = 0; k < 3; k++) {
        if (!PyType_Check(types[k]) ||
            !PyType_IsSubtype((PyTypeObject *)types[k], &PyTuple_Type)) {
            PyErr_SetString(PyExc_TypeError, "Result, Edit and Finding must be tuple types");
            return NULL;
        }
    }
    if (fill(allowed_path, path) < 0 || fill(allowed_query, query) < 0 ||
        fill(allowed_fragment, fragment) < 0 || fill(unreserved, unres) < 0 ||
        fill(unreserved_2396, unres2396) < 0)
        return NULL;
    /* "%" and "\\" are never allowed raw: the scanner's branches rely on it. */
    allowed_path['%'] = allowed_query['%'] = allowed_fragment['%'] = 0;
    allowed_path['\\'] = allowed_query['\\'] = allowed_fragment['\\'] = 0;
    Py_XSETREF(ResultType, Py_NewRef(result));
    Py_XSETREF(EditType, Py_NewRef(edit));
    Py_XSETREF(FindingType, Py_NewRef(finding));
    for (int k = 0; k < nschemes; k++) Py_CLEAR(schemes[k].port);
    nschemes = 0;
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(ports, &pos, &key, &value)) {
        Py_ssize_t n;
        if (!PyUnicode_Check(key)) {
            PyErr_SetString(PyExc_TypeError, "default ports are keyed by scheme names (str)");
            return NULL;
        }
        const char *name = PyUnicode_AsUTF8AndSize(key, &n);
        if (!name) return NULL;
        if (!PyUnicode_Check(value) || !PyUnicode_IS_ASCII(value)) {
            PyErr_SetString(PyExc_TypeError, "default ports are str");
            return NULL;
        }
        int letters = n > 0 && n <= SCHEME_MAX;
        for (Py_ssize_t k = 0; letters && k < n; k++) letters = name[k] >= 'a' && name[k] <= 'z';
        if (!letters || nschemes == SCHEMES_MAX) continue; /* not handled here: Python's */
        memcpy(schemes[nschemes].name, name, (size_t)n);
        schemes[nschemes].n = n;
        schemes[nschemes].port = Py_NewRef(value);
        nschemes++;
    }
    ready = 1;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"canonicalize", (PyCFunction)(void (*)(void))twin_canonicalize, METH_FASTCALL,
     "canonicalize(target, flags, form) -> Result | None: the Python driver's Result, or None "
     "when the target is not one this twin handles."},
    {"setup", twin_setup, METH_VARARGS,
     "setup(Result, Edit, Finding, path, query, fragment, unreserved, unreserved_2396, "
     "default_ports): the types and tables, from urlsan.core."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "urlsan.core._speedups",
    .m_doc = "The compiled twin of urlsan.core.canonical for common targets.",
    .m_size = -1,
    .m_methods = methods,
};

static int intern_all(PyObject **out, const char *const *names, int n) {
    for (int k = 0; k < n; k++) {
        out[k] = PyUnicode_InternFromString(names[k]);
        if (!out[k]) return -1;
    }
    return 0;
}

PyMODINIT_FUNC PyInit__speedups(void) {
    if (intern_all(rule_str, RULE_NAMES, R_COUNT) < 0 ||
        intern_all(component_str, COMPONENT_NAMES, C_COUNT) < 0 ||
        intern_all(finding_str, FINDING_NAMES, F_COUNT) < 0)
        return NULL;
    empty_str = PyUnicode_InternFromString("");
    colon_str = PyUnicode_InternFromString(":");
    slash_str = PyUnicode_InternFromString("/");
    if (!empty_str || !colon_str || !slash_str) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    PyObject *flags = PyDict_New();
    for (size_t k = 0; flags && k < sizeof POLICY_FLAGS / sizeof *POLICY_FLAGS; k++) {
        PyObject *bit = PyLong_FromLong(POLICY_FLAGS[k].bit);
        if (!bit || PyDict_SetItemString(flags, POLICY_FLAGS[k].rule, bit) < 0) Py_CLEAR(flags);
        Py_XDECREF(bit);
    }
    if (!flags || PyModule_AddObject(m, "FLAGS", flags) < 0 ||
        PyModule_AddIntConstant(m, "UNRESERVED_2396", FL_UNRESERVED_2396) < 0) {
        Py_XDECREF(flags);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
