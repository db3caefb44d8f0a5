/* The plain records of an audit log, matched and counted in C (audit/bulk.py's `Scanner`).
 *
 * Scanner.scan does what bulk.py's regular expression (`_LINE.findall`) and its counting do
 * for a block of whole lines: each line is checked against the exact shape of a record as the
 * writer writes it (see bulk.py for why a line of that shape is one that json.loads reads to
 * the same values) and, when it is one, its fields are counted in hash tables keyed by their
 * bytes; no Python object is made per plain record.  A record with findings is counted so too
 * and handed back whole for its findings (`found`), and a line of any other shape is handed
 * back whole (`others`), each for json.loads.  What bulk.py's pure-Python Scanner returns for a
 * block, this returns too, the same values (tests/audit/test_bulk_scanner.py holds the two to
 * it); bulk.py picks this one when it is built.
 *
 * The grammar below is _RECORD's, term by term, with its possessive quantifiers: every optional
 * part is told by a literal prefix no other part starts with, so that no backtracking is ever
 * needed and one pass decides.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define TIME 23 /* bytes of a time: 2026-11-22T04:00:07.250 */

/* ---- byte classes */

/* A string's byte that needs no escape and is ASCII: _CHAR of bulk.py. */
static unsigned char PLAIN[256];
/* The bytes after a backslash that make one of JSON's escapes but \\uXXXX (RFC 8259 §7). */
static unsigned char ESCAPED[256];
static unsigned char HEX[256];

static void init_classes(void) {
    for (int c = 0x20; c < 0x80; c++) PLAIN[c] = 1;
    PLAIN['"'] = 0;
    PLAIN['\\'] = 0;
    for (const char *c = "\"\\/bfnrt"; *c; c++) ESCAPED[(unsigned char)*c] = 1;
    for (const char *c = "0123456789abcdefABCDEF"; *c; c++) HEX[(unsigned char)*c] = 1;
}

/* ---- the grammar of a plain record; each returns the end of what it read, or NULL */

typedef const unsigned char *cur;

static inline cur lit(cur p, cur end, const char *s, size_t n) {
    if ((size_t)(end - p) < n || memcmp(p, s, n) != 0) return NULL;
    return p + n;
}
#define LIT(p, end, s) lit((p), (end), (s), sizeof(s) - 1)

/* Whether any of the eight bytes of w is no PLAIN byte: below 0x20, above 0x7f, '"' or '\\'
 * (the bit tricks of "Bit Twiddling Hacks", "Determine if a word has a byte less than n" and
 * "... has a zero byte", applied to w and to w with '"' and '\\' taken out). */
static inline uint64_t any_unplain(uint64_t w) {
    const uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
    uint64_t quote = w ^ (ones * '"'), slash = w ^ (ones * '\\');
    return ((w - ones * 0x20) | (quote - ones) | (slash - ones) | w) & high;
}

/* _STR: "..." of PLAIN bytes; eight at a time while the line has that many left. */
static inline cur str_(cur p, cur end) {
    if (p >= end || *p != '"') return NULL;
    p++;
    for (uint64_t w; end - p >= 8; p += 8) {
        memcpy(&w, p, 8);
        if (any_unplain(w)) break;
    }
    while (p < end && PLAIN[*p]) p++;
    if (p >= end || *p != '"') return NULL;
    return p + 1;
}

/* _ANY: a string not captured, "..." of PLAIN bytes and JSON's escapes, which json.loads
 * reads (a lone surrogate too); anything else after a backslash is no JSON. */
static inline cur any_str_(cur p, cur end) {
    if (p >= end || *p != '"') return NULL;
    p++;
    for (;;) {
        for (uint64_t w; end - p >= 8; p += 8) {
            memcpy(&w, p, 8);
            if (any_unplain(w)) break;
        }
        while (p < end && PLAIN[*p]) p++;
        if (p >= end) return NULL;
        if (*p == '"') return p + 1;
        if (*p != '\\' || end - p < 2) return NULL;
        if (ESCAPED[p[1]]) {
            p += 2;
        } else if (p[1] == 'u' && end - p >= 6 && HEX[p[2]] && HEX[p[3]] && HEX[p[4]] &&
                   HEX[p[5]]) {
            p += 6;
        } else {
            return NULL;
        }
    }
}

/* null or _STR */
static inline cur null_or_str(cur p, cur end) {
    cur q = LIT(p, end, "null");
    return q ? q : str_(p, end);
}

/* null or _ANY */
static inline cur null_or_any(cur p, cur end) {
    cur q = LIT(p, end, "null");
    return q ? q : any_str_(p, end);
}

/* _INT: -?+(?:0|[1-9][0-9]{0,99}).  What follows is a literal that is no digit, so taking
 * the most digits allowed decides (101 digits or more: the literal fails on the 101st). */
static inline cur int_(cur p, cur end) {
    if (p < end && *p == '-') p++;
    if (p >= end) return NULL;
    if (*p == '0') return p + 1;
    if (*p < '1' || *p > '9') return NULL;
    p++;
    for (int n = 0; n < 99 && p < end && *p >= '0' && *p <= '9'; n++) p++;
    return p;
}

static inline int is_digit(cur p) { return *p >= '0' && *p <= '9'; }

typedef struct {
    const char *p;
    Py_ssize_t n;
} Span;

static inline Span span(cur a, cur b) {
    Span s = {(const char *)a, (Py_ssize_t)(b - a)};
    return s;
}

/* What one plain record holds for the report: the captures of _RECORD. */
typedef struct {
    Span time, minute, second, client, origin, action;
    int status_null;
    int findings; /* some: the line goes back to Python too, for them (bulk.py's Scan.found) */
    Span edits;   /* the edits, [...]: left out of the line that goes back (counted here) */
} Record;

/* The time: 2026-11-22T04:00:07.250Z, the "Z" left out of the capture. */
static cur time_(cur p, cur end, Record *r) {
    static const char shape[] = "dddd-dd-ddTdd:dd:6d.dddZ";
    if ((size_t)(end - p) < sizeof(shape) - 1) return NULL;
    for (size_t i = 0; i < sizeof(shape) - 1; i++) {
        char want = shape[i];
        if (want == 'd' ? !is_digit(p + i) : want == '6' ? (p[i] < '0' || p[i] > '5') : p[i] != want)
            return NULL;
    }
    r->time = span(p, p + TIME);
    r->minute = span(p, p + 16);
    r->second = span(p + 17, p + 19);
    return p + 24;
}

/* The client, "ip" or "ip:port": the address captured, without its port. */
static cur client_(cur p, cur end, Record *r) {
    cur start = p;
    while (p < end && PLAIN[*p] && *p != ':' && *p != '[') p++;
    if (p == start) return NULL;
    r->client = span(start, p);
    if (p < end && *p == ':') {
        p++;
        while (p < end && PLAIN[*p] && *p != ':') p++;
    }
    return LIT(p, end, "\"");
}

/* One edit: its rule written to *out as {"rule":"..."}, the rest checked and left out. */
static cur edit_(cur p, cur end, unsigned char **out) {
    cur rule, q;
    if (!(p = LIT(p, end, "{\"rule\":"))) return NULL;
    rule = p;
    if (!(p = str_(p, end))) return NULL;
    q = p;
    if (!(p = LIT(p, end, ",\"component\":")) || !(p = any_str_(p, end))) return NULL;
    if (!(p = LIT(p, end, ",\"start\":")) || !(p = int_(p, end))) return NULL;
    if (!(p = LIT(p, end, ",\"end\":")) || !(p = int_(p, end))) return NULL;
    if (!(p = LIT(p, end, ",\"before\":")) || !(p = any_str_(p, end))) return NULL;
    if (!(p = LIT(p, end, ",\"after\":")) || !(p = any_str_(p, end))) return NULL;
    if (!(p = LIT(p, end, "}"))) return NULL;
    memcpy(*out, "{\"rule\":", 8);
    memcpy(*out + 8, rule, (size_t)(q - rule));
    (*out)[8 + (q - rule)] = '}';
    *out += 8 + (q - rule) + 1;
    return p;
}

/* The edits: [] or [EDIT,...], their rules only written to out (bulk.py's _EDIT_TAIL taken
 * out), which has room for as many bytes as the edits take in the line. */
static cur edits_(cur p, cur end, unsigned char *out, Span *shape) {
    unsigned char *o = out;
    if (!(p = LIT(p, end, "["))) return NULL;
    *o++ = '[';
    if (p < end && *p == '{') {
        if (!(p = edit_(p, end, &o))) return NULL;
        while (p < end && *p == ',') {
            *o++ = ',';
            if (!(p = edit_(p + 1, end, &o))) return NULL;
        }
    }
    if (!(p = LIT(p, end, "]"))) return NULL;
    *o++ = ']';
    shape->p = (const char *)out;
    shape->n = o - out;
    return p;
}

/* _FINDING: one finding as the writer writes it, "offsets" with more than one occurrence. */
static cur finding_(cur p, cur end) {
    cur q;
    if (!(p = LIT(p, end, "{\"rule\":")) || !(p = any_str_(p, end))) return NULL;
    if (!(p = LIT(p, end, ",\"component\":")) || !(p = any_str_(p, end))) return NULL;
    if (!(p = LIT(p, end, ",\"offset\":")) || !(p = int_(p, end))) return NULL;
    if (!(p = LIT(p, end, ",\"detail\":")) || !(p = any_str_(p, end))) return NULL;
    if (!(p = LIT(p, end, ",\"occurrences\":")) || !(p = int_(p, end))) return NULL;
    if ((q = LIT(p, end, ",\"offsets\":["))) {
        if (!(p = int_(q, end))) return NULL;
        while ((q = LIT(p, end, ","))) /* (?:,_INT)*+ then \]: a "," not before an int fails */
            if (!(p = int_(q, end))) return NULL;
        if (!(p = LIT(p, end, "]"))) return NULL;
    }
    if (!(p = LIT(p, end, ",\"severity\":")) || !(p = any_str_(p, end))) return NULL;
    return LIT(p, end, "}");
}

/* _FINDINGS: [] (a plain record), or findings, then the record's severity and its target's. */
static cur findings_(cur p, cur end, Record *r) {
    cur q;
    if (!(p = LIT(p, end, "["))) return NULL;
    if ((q = LIT(p, end, "]"))) return q;
    if (!(p = finding_(p, end))) return NULL;
    while ((q = LIT(p, end, ",")))
        if (!(p = finding_(q, end))) return NULL;
    if (!(p = LIT(p, end, "]"))) return NULL;
    r->findings = 1;
    if ((q = LIT(p, end, ",\"severity\":")) && !(p = any_str_(q, end))) return NULL;
    if ((q = LIT(p, end, ",\"target_severity\":"))) {
        if (!(p = any_str_(q, end)) || !(p = LIT(p, end, ",\"severity_reason\":"))) return NULL;
        if (!(p = any_str_(p, end))) return NULL;
    }
    return p;
}

/* The part after the action: edits, findings, the rejection, the status. */
static cur tail_(cur p, cur end, Record *r, unsigned char *out, Span *shape) {
    if (!(p = LIT(p, end, ",\"edits\":"))) return NULL;
    cur q = p;
    if (!(p = edits_(p, end, out, shape))) return NULL;
    r->edits = span(q, p);
    if ((q = LIT(p, end, ",\"edits_truncated\":")) && !(p = int_(q, end))) return NULL;
    if (!(p = LIT(p, end, ",\"findings\":")) || !(p = findings_(p, end, r))) return NULL;
    if ((q = LIT(p, end, ",\"reason\":")) && !(p = any_str_(q, end))) return NULL;
    if ((q = LIT(p, end, ",\"rejected_by\":")) && !(p = any_str_(q, end))) return NULL;
    if ((q = LIT(p, end, ",\"truncated\":true"))) p = q;
    if (!(p = LIT(p, end, ",\"status\":"))) return NULL;
    if ((q = LIT(p, end, "null"))) {
        r->status_null = 1;
        p = q;
    } else if (!(p = int_(p, end))) {
        return NULL;
    }
    return LIT(p, end, "}");
}

/* The line [p, end) (end: its \n) is a plain record: 1 and *r filled, else 0. */
static int record_(cur p, cur end, Record *r, unsigned char *out, Span *shape) {
    cur q, start;
    r->status_null = 0;
    r->findings = 0;
    if (!(p = LIT(p, end, "{\"ts\":\"")) || !(p = time_(p, end, r))) return 0;
    if (!(p = LIT(p, end, "\",\"client\":\"")) || !(p = client_(p, end, r))) return 0;
    if (!(p = LIT(p, end, ",\"method\":")) || !(p = any_str_(p, end))) return 0;
    if (!(p = LIT(p, end, ",\"scheme\":"))) return 0;
    start = p;
    if (!(p = str_(p, end))) return 0;
    if (!(p = LIT(p, end, ",\"host\":")) || !(p = null_or_str(p, end))) return 0;
    r->origin = span(start, p);
    if (!(p = LIT(p, end, ",\"http_version\":")) || !(p = any_str_(p, end))) return 0;
    if ((q = LIT(p, end, ",\"profile\":")) && !(p = any_str_(q, end))) return 0;
    if (!(p = LIT(p, end, ",\"before\":")) || !(p = any_str_(p, end))) return 0;
    if (!(p = LIT(p, end, ",\"after\":")) || !(p = null_or_any(p, end))) return 0;
    if (!(p = LIT(p, end, ",\"action\":"))) return 0;
    start = p;
    if (!(p = str_(p, end))) return 0;
    r->action = span(start, p);
    p = tail_(p, end, r, out, shape);
    return p == end;
}

/* ---- hash tables keyed by up to three byte strings, each entry owning a copy of its key */

#define MAXKEY 3

typedef struct {
    uint64_t hash; /* 0: an empty slot */
    char *key;     /* the parts, one after the other (then, in the minutes' table, the
                      earliest and the latest time of the minute) */
    uint32_t len[MAXKEY];
    Py_ssize_t count;
} Entry;

typedef struct {
    Entry *slots;
    size_t cap, used;
    size_t last; /* the slot of the last key got, tried first (cap: none): records in a row
                    share their action, minute and often their edits */
    int parts;
    int times; /* the minutes' table: each key followed by two times */
} Table;

static uint64_t hash_parts(const Span *k, int parts) {
    uint64_t h = 0x9E3779B97F4A7C15ull;
    for (int i = 0; i < parts; i++) {
        const unsigned char *p = (const unsigned char *)k[i].p;
        Py_ssize_t n = k[i].n, j = 0;
        for (; j + 8 <= n; j += 8) {
            uint64_t w;
            memcpy(&w, p + j, 8);
            h = (h ^ w) * 0xFF51AFD7ED558CCDull;
            h ^= h >> 29;
        }
        uint64_t w = (uint64_t)n << 56;
        for (; j < n; j++) w ^= (uint64_t)p[j] << (8 * (j & 7));
        h = (h ^ w) * 0xC4CEB9FE1A85EC53ull;
        h ^= h >> 32;
    }
    return h ? h : 1;
}

static int table_init(Table *t, int parts) {
    t->cap = 64;
    t->used = 0;
    t->last = t->cap;
    t->parts = parts;
    t->times = 0;
    t->slots = PyMem_Calloc(t->cap, sizeof(Entry));
    if (!t->slots) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

static void table_free(Table *t) {
    if (!t->slots) return;
    for (size_t i = 0; i < t->cap; i++) PyMem_Free(t->slots[i].key);
    PyMem_Free(t->slots);
    t->slots = NULL;
    t->cap = t->used = 0;
}

static int table_grow(Table *t) {
    size_t cap = t->cap * 2;
    Entry *slots = PyMem_Calloc(cap, sizeof(Entry));
    if (!slots) {
        PyErr_NoMemory();
        return -1;
    }
    for (size_t i = 0; i < t->cap; i++) {
        if (!t->slots[i].hash) continue;
        size_t j = (size_t)t->slots[i].hash & (cap - 1);
        while (slots[j].hash) j = (j + 1) & (cap - 1);
        slots[j] = t->slots[i];
    }
    PyMem_Free(t->slots);
    t->slots = slots;
    t->cap = t->last = cap;
    return 0;
}

static int same_key(const Entry *e, const Span *k, int parts) {
    const char *at = e->key;
    for (int i = 0; i < parts; i++) {
        if ((Py_ssize_t)e->len[i] != k[i].n || memcmp(at, k[i].p, (size_t)k[i].n) != 0) return 0;
        at += k[i].n;
    }
    return 1;
}

/* The entry of key k, made (count 0) if there is none: *made says so.  NULL: no memory. */
static Entry *table_get(Table *t, const Span *k, int *made) {
    *made = 0;
    if (t->last < t->cap && same_key(&t->slots[t->last], k, t->parts)) return &t->slots[t->last];
    uint64_t h = hash_parts(k, t->parts);
    size_t j = (size_t)h & (t->cap - 1);
    for (;; j = (j + 1) & (t->cap - 1)) {
        Entry *e = &t->slots[j];
        if (!e->hash) break;
        if (e->hash == h && same_key(e, k, t->parts)) {
            t->last = j;
            return e;
        }
    }
    if ((t->used + 1) * 2 > t->cap) {
        if (table_grow(t) < 0) return NULL;
        for (j = (size_t)h & (t->cap - 1); t->slots[j].hash; j = (j + 1) & (t->cap - 1)) {
        }
    }
    Entry *e = &t->slots[j];
    Py_ssize_t size = 0;
    for (int i = 0; i < t->parts; i++) {
        if (k[i].n > (Py_ssize_t)UINT32_MAX) {
            PyErr_SetString(PyExc_OverflowError, "a field longer than 4 GiB");
            return NULL;
        }
        size += k[i].n;
    }
    e->key = PyMem_Malloc((size_t)size + (t->times ? 2 * TIME : 1));
    if (!e->key) {
        PyErr_NoMemory();
        return NULL;
    }
    size = 0;
    for (int i = 0; i < t->parts; i++) {
        memcpy(e->key + size, k[i].p, (size_t)k[i].n);
        e->len[i] = (uint32_t)k[i].n;
        size += k[i].n;
    }
    e->hash = h;
    e->count = 0;
    t->used++;
    t->last = j;
    *made = 1;
    return e;
}

/* An entry's key as Python: bytes for one part, a tuple of bytes for more. */
static PyObject *entry_key(const Entry *e, int parts) {
    if (parts == 1) return PyBytes_FromStringAndSize(e->key, e->len[0]);
    PyObject *key = PyTuple_New(parts);
    if (!key) return NULL;
    const char *at = e->key;
    for (int i = 0; i < parts; i++) {
        PyObject *part = PyBytes_FromStringAndSize(at, e->len[i]);
        if (!part) {
            Py_DECREF(key);
            return NULL;
        }
        PyTuple_SET_ITEM(key, i, part);
        at += e->len[i];
    }
    return key;
}

/* {key: count} of the entries counted since the last call, their counts then set to 0. */
static PyObject *table_counts(Table *t) {
    PyObject *out = PyDict_New();
    if (!out) return NULL;
    for (size_t i = 0; i < t->cap; i++) {
        Entry *e = &t->slots[i];
        if (!e->hash || !e->count) continue;
        PyObject *key = entry_key(e, t->parts), *n = NULL;
        if (!key || !(n = PyLong_FromSsize_t(e->count)) || PyDict_SetItem(out, key, n) < 0) {
            Py_XDECREF(key);
            Py_XDECREF(n);
            Py_DECREF(out);
            return NULL;
        }
        Py_DECREF(key);
        Py_DECREF(n);
        e->count = 0;
    }
    return out;
}

/* {minute: (earliest, latest)} */
static PyObject *table_spans(Table *t) {
    PyObject *out = PyDict_New();
    if (!out) return NULL;
    for (size_t i = 0; i < t->cap; i++) {
        Entry *e = &t->slots[i];
        if (!e->hash) continue;
        const char *lo = e->key + e->len[0];
        PyObject *key = entry_key(e, 1);
        PyObject *value =
            key ? Py_BuildValue("(y#y#)", lo, (Py_ssize_t)TIME, lo + TIME, (Py_ssize_t)TIME)
                : NULL;
        if (!value || PyDict_SetItem(out, key, value) < 0) {
            Py_XDECREF(key);
            Py_XDECREF(value);
            Py_DECREF(out);
            return NULL;
        }
        Py_DECREF(key);
        Py_DECREF(value);
    }
    return out;
}

/* ---- the Scanner: one log being read */

typedef struct {
    PyObject_HEAD
    Table actions, hosts, clients, edits; /* counted over the log, until take() */
    unsigned char *shape;                 /* room for the edits' rules of one line */
    size_t shape_cap;
} Scanner;

static void scanner_dealloc(Scanner *self) {
    table_free(&self->actions);
    table_free(&self->hosts);
    table_free(&self->clients);
    table_free(&self->edits);
    PyMem_Free(self->shape);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *scanner_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    if (PyTuple_GET_SIZE(args) || (kwds && PyDict_GET_SIZE(kwds))) {
        PyErr_SetString(PyExc_TypeError, "Scanner() takes no arguments");
        return NULL;
    }
    Scanner *self = (Scanner *)type->tp_alloc(type, 0);
    if (!self) return NULL;
    if (table_init(&self->actions, 1) < 0 || table_init(&self->hosts, 2) < 0 ||
        table_init(&self->clients, 2) < 0 || table_init(&self->edits, 1) < 0) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

/* A first: (line, kind, value), kind 0 for an action, 2 for an edits shape (summary.py's). */
static int append_first(PyObject *firsts, Py_ssize_t i, int kind, Span value) {
    PyObject *item = Py_BuildValue("(niy#)", i, kind, value.p, value.n);
    if (!item) return -1;
    int err = PyList_Append(firsts, item);
    Py_DECREF(item);
    return err;
}

typedef struct {
    Table times, minutes;
    PyObject *others, *firsts, *found;
    Py_ssize_t plain, nulls;
    int seconds;
} Block;

/* Count one plain record, line i of the block. */
static int count_record(Scanner *self, Block *b, Py_ssize_t i, const Record *r, Span shape) {
    int made;
    Entry *e;
    if (!(e = table_get(&self->actions, &r->action, &made))) return -1;
    if (made && append_first(b->firsts, i, 0, r->action) < 0) return -1;
    e->count++;
    if (!(e = table_get(&self->edits, &shape, &made))) return -1;
    if (made && append_first(b->firsts, i, 2, shape) < 0) return -1;
    e->count++;
    Span pair[3] = {r->origin, r->action};
    if (!(e = table_get(&self->hosts, pair, &made))) return -1;
    e->count++;
    pair[0] = r->client;
    if (!(e = table_get(&self->clients, pair, &made))) return -1;
    e->count++;
    Span when[3] = {r->minute, b->seconds ? r->second : r->action, r->action};
    if (!(e = table_get(&b->times, when, &made))) return -1;
    e->count++;
    if (!(e = table_get(&b->minutes, &r->minute, &made))) return -1;
    char *lo = e->key + e->len[0], *hi = lo + TIME;
    if (made || memcmp(r->time.p, lo, TIME) < 0) memcpy(lo, r->time.p, TIME);
    if (made || memcmp(r->time.p, hi, TIME) > 0) memcpy(hi, r->time.p, TIME);
    b->plain++;
    b->nulls += r->status_null;
    return 0;
}

/* (i, the line [p, end) with its edits written []): json.loads reads the rest, for its
 * findings, in a third of the time; the edits were counted with the plain records'. */
static PyObject *found_item(Py_ssize_t i, cur p, cur end, Span edits) {
    Py_ssize_t before = (cur)edits.p - p, after = end - ((cur)edits.p + edits.n);
    PyObject *line = PyBytes_FromStringAndSize(NULL, before + 2 + after);
    if (!line) return NULL;
    char *o = PyBytes_AS_STRING(line);
    memcpy(o, p, (size_t)before);
    memcpy(o + before, "[]", 2);
    memcpy(o + before + 2, edits.p + edits.n, (size_t)after);
    PyObject *item = Py_BuildValue("(nN)", i, line);
    return item;
}

static int scan_lines(Scanner *self, Block *b, cur p, cur end, Py_ssize_t *count) {
    Py_ssize_t i = 0;
    for (cur nl; p < end && (nl = memchr(p, '\n', (size_t)(end - p))); p = nl + 1, i++) {
        Record r;
        Span shape;
        if ((size_t)(nl - p) > self->shape_cap) {
            PyMem_Free(self->shape);
            self->shape_cap = (size_t)(nl - p) * 2;
            if (!(self->shape = PyMem_Malloc(self->shape_cap))) {
                self->shape_cap = 0;
                PyErr_NoMemory();
                return -1;
            }
        }
        int plain = record_(p, nl, &r, self->shape, &shape);
        if (plain && count_record(self, b, i, &r, shape) < 0) return -1;
        if (plain && !r.findings) continue;
        PyObject *item = plain ? found_item(i, p, nl, r.edits)
                               : Py_BuildValue("(ny#)", i, (const char *)p, (Py_ssize_t)(nl - p));
        if (!item || PyList_Append(plain ? b->found : b->others, item) < 0) {
            Py_XDECREF(item);
            return -1;
        }
        Py_DECREF(item);
    }
    *count = i;
    return 0;
}

PyDoc_STRVAR(scan_doc,
             "scan(lines, seconds, /)\n--\n\n"
             "A block of whole lines: (lines, plain, nulls, others, firsts, times, minutes, found); "
             "see audit/bulk.py's Scanner.scan.");

static PyObject *scanner_scan(Scanner *self, PyObject *const *args, Py_ssize_t nargs) {
    Py_buffer view;
    int seconds;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "scan() takes 2 arguments");
        return NULL;
    }
    if ((seconds = PyObject_IsTrue(args[1])) < 0) return NULL;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) return NULL;
    Block b = {.seconds = seconds};
    PyObject *result = NULL, *times = NULL, *minutes = NULL;
    Py_ssize_t count = 0;
    if (table_init(&b.times, seconds ? 3 : 2) < 0 || table_init(&b.minutes, 1) < 0) goto done;
    b.minutes.times = 1;
    if (!(b.others = PyList_New(0)) || !(b.firsts = PyList_New(0))) goto done;
    if (!(b.found = PyList_New(0))) goto done;
    cur p = view.buf;
    if (scan_lines(self, &b, p, p + view.len, &count) < 0) goto done;
    if (!(times = table_counts(&b.times)) || !(minutes = table_spans(&b.minutes))) goto done;
    result = Py_BuildValue("(nnnOOOOO)", count, b.plain, b.nulls, b.others, b.firsts, times,
                           minutes, b.found);
done:
    Py_XDECREF(times);
    Py_XDECREF(minutes);
    Py_XDECREF(b.others);
    Py_XDECREF(b.firsts);
    Py_XDECREF(b.found);
    table_free(&b.times);
    table_free(&b.minutes);
    PyBuffer_Release(&view);
    return result;
}

PyDoc_STRVAR(take_doc,
             "take()\n--\n\n"
             "(actions, hosts, clients, edits): the counts since the last take, then zeroed; "
             "see audit/bulk.py's Scanner.take.");

static PyObject *scanner_take(Scanner *self, PyObject *Py_UNUSED(ignored)) {
    PyObject *a = table_counts(&self->actions), *h = a ? table_counts(&self->hosts) : NULL;
    PyObject *c = h ? table_counts(&self->clients) : NULL;
    PyObject *e = c ? table_counts(&self->edits) : NULL;
    PyObject *result = e ? PyTuple_Pack(4, a, h, c, e) : NULL;
    Py_XDECREF(a);
    Py_XDECREF(h);
    Py_XDECREF(c);
    Py_XDECREF(e);
    return result;
}

static PyMethodDef scanner_methods[] = {
    {"scan", (PyCFunction)(void (*)(void))scanner_scan, METH_FASTCALL, scan_doc},
    {"take", (PyCFunction)scanner_take, METH_NOARGS, take_doc},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject ScannerType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "urlsan.audit._bulk.Scanner",
    .tp_basicsize = sizeof(Scanner),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = PyDoc_STR("Scanner()\n--\n\nThe plain records of one log, counted in C."),
    .tp_new = scanner_new,
    .tp_dealloc = (destructor)scanner_dealloc,
    .tp_methods = scanner_methods,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "urlsan.audit._bulk",
    "The plain records of an audit log, matched and counted in C (audit/bulk.py).", -1,
    NULL, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__bulk(void) {
    init_classes();
    if (PyType_Ready(&ScannerType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    Py_INCREF(&ScannerType);
    if (PyModule_AddObject(m, "Scanner", (PyObject *)&ScannerType) < 0) {
        Py_DECREF(&ScannerType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
