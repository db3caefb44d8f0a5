/* The compiled twin of driver.py for the targets most traffic is made of.
 *
 * canonicalize(target, flags, form) returns the very Result the pure-Python driver returns (URL,
 * edits, findings), or None when the target lies outside what this twin handles; the caller then
 * runs the Python reference, and declined() says why (bench/core.py counts the reasons).  Under
 * a strict policy it raises the very InvalidTarget the reference raises where that would repair.
 * Handled: origin-form ("/a?b"; "//a" too when the caller says origin-form), authority-form and
 * asterisk-form targets, and absolute http/https/ws/wss URLs with any ASCII host: a reg-name (with
 * escapes and characters to escape too, and a ":" or "[" left in it: invalid-port,
 * invalid-ip-literal), an IPv4 address in any of its forms, an IPv6 literal with or without a zone;
 * with userinfo and a port.  The path, query and fragment may hold anything: escapes, stray "%",
 * characters to escape, non-ASCII text, surrogateescape'd raw bytes, and with them every finding
 * the reference reports there (dot segments raw and escaped, "%2E" inside a segment, "%25", "%00",
 * "%0D", "%u", overlong and other invalid UTF-8, raw spaces, controls and format characters,
 * escaped slashes, a backslash, what one or two lax decodes make climb above the root, what NFKC
 * makes a separator).  What it leaves to Python, which is the reference, is one table, DECLINES
 * below (an IDN, another scheme, a relative reference, a backslash or escaped slash in the path
 * under a rule on them, ...): tests/core/test_speedups.py gives each reason an example and holds
 * the two to the same output.
 *
 * Each step of driver.py is one static function here (step_scheme, step_authority with
 * step_host and step_port, step_path, step_query, step_fragment), walked by steps().  The tables
 * (allowed characters per component, the unreserved sets, the default ports) come from
 * charsets.py and policy.py through setup(), so that the grammar lives in one place.  The output
 * is ASCII; every rewrite is recorded exactly as rules.Edits records it: adjacent edits of one
 * rule in one component merge into one, and past FOLD_AFTER a component's edits fold (issue #13).
 *
 * Speed (issue #13: dirty targets at least as fast as url-py): a 1-byte (latin-1) target, nearly
 * every one, is read through its own buffer (State.s1) with memchr and byte loops; the strings
 * edits hold most ("%7e", "é", "%C3%A9", ":443", "https") and small offsets are made once; and
 * Edit and Finding tuples are reused once their Result is gone (pooled()).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <structmember.h> /* T_OBJECT_EX, READONLY: fields_as_slots */
#include <string.h>
#ifdef _MSC_VER
#include <intrin.h> /* _BitScanForward */
#endif

#include "_entry.h"
#include "_twin.h"

/* ---- rule, component and finding names, in the spelling of policy.RULES */

enum {
    R_LOWER_SCHEME, R_LOWER_HOST, R_DROP_EMPTY_PORT, R_STRIP_PORT_ZEROS, R_DROP_DEFAULT_PORT,
    R_DECODE, R_UPPER, R_STRAY, R_UNSAFE, R_NON_ASCII, R_DOTS, R_EMPTY_PATH, R_STRIP_FRAGMENT,
    R_STRIP_DOT, R_NUMERIC_HOST, R_DOT_PREFIX, R_COUNT
};
static const char *const RULE_NAMES[R_COUNT] = {
    "lowercase-scheme", "lowercase-host", "drop-empty-port", "strip-port-zeros",
    "drop-default-port", "decode-unreserved", "uppercase-escape", "encode-stray-percent",
    "encode-unsafe", "encode-non-ascii", "remove-dot-segments", "empty-path", "strip-fragment",
    "strip-host-dot", "numeric-host", "dot-prefix",
};

enum { C_SCHEME, C_USERINFO, C_HOST, C_PORT, C_PATH, C_QUERY, C_FRAGMENT, C_COUNT };
static const char *const COMPONENT_NAMES[C_COUNT] = {
    "scheme", "userinfo", "host", "port", "path", "query", "fragment",
};

enum {
    F_DOT, F_ENCODED_DOT, F_ABOVE_ROOT, F_PARAM_DOTDOT, F_ESCAPED_SLASH, F_BACKSLASH, F_DOUBLE,
    F_PERCENT_U, F_NUL, F_CRLF, F_OVERLONG, F_NUMERIC_HOST, F_USERINFO, F_STRAY, F_RAW_SPACE,
    F_CONTROL, F_FORMAT, F_INVALID_UTF8, F_ESCAPED_DOT, F_DECODED_CLIMB, F_INVALID_PORT,
    F_INVALID_LITERAL, F_NFKC, F_COUNT
};
static const char *const FINDING_NAMES[F_COUNT] = {
    "dot-segment", "encoded-dot-segment", "dot-segment-above-root", "path-parameter-dotdot",
    "escaped-slash", "backslash", "double-encoding", "percent-u", "nul-escape", "crlf-escape",
    "overlong-utf8", "numeric-host", "userinfo", "stray-percent", "raw-space", "control-char",
    "format-char", "invalid-utf8", "escaped-dot", "decoded-dot-segment-above-root",
    "invalid-port", "invalid-ip-literal", "nfkc-separator",
};

/* Policy switches: canonical.py derives a policy's flags from FLAGS (exported below).  Rules
 * this twin guards by refusing the input (merge-slashes: "//" in the path) have a bit; rules that
 * cannot act on a handled target (idna-host, numeric-host, strip-host-dot, the escaped-slash and
 * backslash rules, the required repairs) have none, and neither have the query rules, which
 * driver.py runs on this twin's result (their name patterns are Python's fnmatch). */
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
#define FL_SLASH_RULES (1 << 12) /* a rule on backslashes or escaped slashes: those go to Python */
#define FL_STRIP_DOT (1 << 13)
#define FL_NUMERIC_HOST (1 << 14)
/* Policy.strict: what the policy would have to repair raises InvalidTarget (exported as STRICT) */
#define FL_STRICT (1 << 15)

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
    /* this twin refuses a path with "\\", "%2F" or "%5C" when one of them is on */
    {"backslash-as-slash", FL_SLASH_RULES},
    {"decode-escaped-slash", FL_SLASH_RULES},
    {"reject-escaped-slash", FL_SLASH_RULES},
    /* no bit: driver.py runs them on the twin's result */
    {"drop-params", 0},
    {"sort-query", 0},
    {"drop-empty-query", 0},
    /* no bit: they cannot act on a target this twin accepts */
    {"idna-host", 0},
    {"strip-host-dot", FL_STRIP_DOT},
    {"numeric-host", FL_NUMERIC_HOST},
    {"encode-stray-percent", 0},
    {"encode-unsafe", 0},
    {"encode-non-ascii", 0},
    {"dot-prefix", 0},
};

static PyObject *rule_str[R_COUNT], *component_str[C_COUNT], *finding_str[F_COUNT];
static PyObject *ResultType, *EditType, *FindingType, *InvalidTargetType;

/* policy.DEFAULT_PORTS, as setup() hands it over: the schemes this twin handles. */
#define SCHEME_MAX 8
#define SCHEMES_MAX 8
static struct {
    char name[SCHEME_MAX + 3]; /* the scheme's n letters and "://" after them (no NUL): one
                                  copy writes both (RFC 3986 §3: scheme ":" "//" authority) */
    Py_ssize_t n;
    PyObject *port;       /* the default port, "80" */
    PyObject *name_str;   /* the scheme, lowercase: lowercase-scheme's text after */
    PyObject *colon_port; /* ":80": drop-default-port's text before */
    PyObject *spelled[1 << SCHEME_MAX]; /* "HTTp": its text before, by which letters are
                                           capitals (bit k: letter k), made on first use */
    /* "http://" as the first 8 bytes of a target hold it, for a scheme of up to 5 letters
     * (mask: 0xFF on its bytes, 0 on those after it; fold: 0x20 on its letters, which an "or"
     * lowercases) */
    uint64_t word, mask, fold;
} schemes[SCHEMES_MAX];
static int nschemes;
static PyObject *empty_str, *colon_str, *slash_str, *user_str, *password_str;
static PyObject *dot_guard_str; /* "/.": dot-prefix's text after (RFC 3986 §4.2, §5.2.4) */
static PyObject *empty_tuple;   /* (): most targets' findings, a clean one's edits, no call */

/* Indexed by a character below 256 (a 1-byte str's own): 0 from 128 on. */
static unsigned char allowed_path[256], allowed_query[256], allowed_fragment[256];
static unsigned char allowed_userinfo[256], allowed_host[256];
static unsigned char unreserved[256], unreserved_2396[256];
/* Each component's table (the scheme and the port have none: the host's stands in) */
static const unsigned char *const allowed_in[C_COUNT] = {
    [C_SCHEME] = allowed_host, [C_USERINFO] = allowed_userinfo, [C_HOST] = allowed_host,
    [C_PORT] = allowed_host,   [C_PATH] = allowed_path,         [C_QUERY] = allowed_query,
    [C_FRAGMENT] = allowed_fragment,
};
static int ready;

/* result.FOLD_AFTER and pipeline.RULES's order, from setup(): a component's character edits
 * after its first fold_after fold into its last; a folded edit's rule names its rules in that
 * order, joined by "+", made once per set of rules (folded_str, by its R_ bits). */
static Py_ssize_t fold_after = PY_SSIZE_T_MAX;
static int rule_rank[R_COUNT];
static PyObject *folded_str; /* dict: R_ bits -> name */

static const char HEX[] = "0123456789ABCDEF";

/* ---- a growable byte buffer (the output is ASCII) */

typedef struct {
    char *p;
    Py_ssize_t n, cap;
    char *stack; /* a caller's buffer that p starts as (most targets fit): not to be freed */
} Buf;

static int buf_grow(Buf *b, Py_ssize_t extra) {
    Py_ssize_t cap = b->cap ? b->cap : 64;
    while (cap < b->n + extra) {
        if (cap > PY_SSIZE_T_MAX / 2) { PyErr_NoMemory(); return -1; }
        cap *= 2;
    }
    char *p;
    if (b->p && b->p == b->stack) {
        p = PyMem_Malloc((size_t)cap);
        if (p) memcpy(p, b->p, (size_t)b->n);
    } else {
        p = PyMem_Realloc(b->p, (size_t)cap);
    }
    if (!p) { PyErr_NoMemory(); return -1; }
    b->p = p;
    b->cap = cap;
    return 0;
}

/* Room for extra more bytes: inlined, the test that most calls end with, without a call. */
static inline int buf_reserve(Buf *b, Py_ssize_t extra) {
    return b->n + extra <= b->cap ? 0 : buf_grow(b, extra);
}

static void buf_free(Buf *b) {
    if (b->p != b->stack) PyMem_Free(b->p);
}

static inline int buf_put(Buf *b, const char *s, Py_ssize_t k) {
    if (k == 0) return 0; /* an empty buffer's pointer is NULL: no memcpy from it */
    if (buf_reserve(b, k) < 0) return -1;
    memcpy(b->p + b->n, s, (size_t)k);
    b->n += k;
    return 0;
}

static inline int buf_putc(Buf *b, char c) {
    if (b->n >= b->cap && buf_grow(b, 1) < 0) return -1;
    b->p[b->n++] = c;
    return 0;
}

static PyObject *ascii_str(const char *s, Py_ssize_t n) {
    PyObject *o = PyUnicode_New(n, 127);
    if (o) memcpy(PyUnicode_DATA(o), s, (size_t)n);
    return o;
}

/* The value of each ASCII hex digit, -1 for every other character below 256: one load where
 * three ranges were tested (an escape's two digits are read for most edits of a dirty target),
 * and no range test at all for a byte (a one-byte target's character, an output byte). */
static const signed char HEX_VALUE[256] = {
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
     0,  1,  2,  3,  4,  5,  6,  7,  8,  9, -1, -1, -1, -1, -1, -1,
    -1, 10, 11, 12, 13, 14, 15, -1, -1, -1, -1, -1, -1, -1, -1, -1,
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
    -1, 10, 11, 12, 13, 14, 15, -1, -1, -1, -1, -1, -1, -1, -1, -1,
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
};

static inline int hexval(Py_UCS4 c) {
    return c < 256 ? HEX_VALUE[c] : -1;
}

/* ---- edits and findings, recorded as rules.Edits and findings.add record them */

typedef struct {
    int rule, component;
    int chars;        /* a character rule's edit: it may fold (FOLD_AFTER), and take a fold */
    unsigned rules;   /* the rules it holds, one bit per R_ value: several once folded */
    Py_ssize_t start, end;
    PyObject *before; /* owned; NULL: the input's text from start to end */
    PyObject *after;  /* owned; NULL until scan() ends: the output's bytes [a0, a0 + alen) */
    Py_ssize_t a0, alen;
} EditRec;

#define MAX_OFFSETS 16 /* result.MAX_OFFSETS: the offsets a finding keeps of its occurrences */

typedef struct {
    int rule, component;
    Py_ssize_t offset, dstart, dend, count;
    PyObject *detail; /* owned; NULL: the input's text from dstart to dend */
    Py_ssize_t offs[MAX_OFFSETS]; /* where the first occurrences are */
} FindRec;

typedef struct {
    PyObject *target;
    int kind;
    const void *data;
    const Py_UCS1 *s1;       /* data, when the target is a 1-byte (latin-1) str; else NULL */
    Py_ssize_t len;
    int flags;
    EditRec *edits;          /* edits_here, until more are made */
    Py_ssize_t nedits, capedits;
    Py_ssize_t in_component; /* how many of the edits are the last one's component's */
    FindRec findings[F_COUNT * C_COUNT]; /* one per rule and component, at most */
    int nfindings;
    Buf out;                 /* the canonical target, written component by component */
    Py_ssize_t pos;          /* where the next step reads the input */
    Py_ssize_t scan_end;     /* where scan_chars stopped: its end, or a "#" ending a query */
    int origin;              /* origin-form (no scheme and authority) */
    int authority;           /* authority-form: the target is all authority (RFC 9112 §3.2.3) */
    int scheme;              /* its index in schemes[]; -1: none (origin- or authority-form) */
    const char *why;         /* why the target was declined */
    int host_lower;          /* scan() reads a reg-name that lowercase-host lowercased */
    Py_ssize_t host_at, host_end; /* the host in the output (-1: none), as step_authority wrote it */
    int host_any;            /* host_class bits of the host's characters; -1: not read yet */
    /* Where short targets are made, without an allocation (nothing here is zeroed per call) */
    EditRec edits_here[16];
    char out_here[256];
} State;

#define CH(st, i) PyUnicode_READ((st)->kind, (st)->data, (i))

/* target[s:e] as a new str: the target's own slice, or (a target read as ASCII bytes, which has
 * no str: twin_ascii_url) a str of those bytes. */
static PyObject *target_slice(State *st, Py_ssize_t s, Py_ssize_t e) {
    if (!st->target) return ascii_str((const char *)st->s1 + s, e - s);
    return PyUnicode_Substring(st->target, s, e);
}

static EditRec *new_edit(State *st) {
    if (st->nedits == st->capedits) {
        Py_ssize_t cap = st->capedits * 2;
        EditRec *e;
        if (st->edits == st->edits_here) {
            e = PyMem_Malloc((size_t)cap * sizeof(EditRec));
            if (e) memcpy(e, st->edits, (size_t)st->nedits * sizeof(EditRec));
        } else {
            e = PyMem_Realloc(st->edits, (size_t)cap * sizeof(EditRec));
        }
        if (!e) { PyErr_NoMemory(); return NULL; }
        st->edits = e;
        st->capedits = cap;
    }
    EditRec *e = &st->edits[st->nedits++];
    memset(e, 0, sizeof *e);
    return e;
}

static EditRec *add_edit(State *st, int rule, int component, Py_ssize_t start,
                         Py_ssize_t end) {
    EditRec *e = new_edit(st);
    if (!e) return NULL;
    st->in_component = st->nedits > 1 && e[-1].component == component ? st->in_component + 1 : 1;
    e->rule = rule;
    e->rules = 1u << rule;
    e->component = component;
    e->start = start;
    e->end = end;
    return e;
}

/* A character rule's edit: its text before is the input's own, its text after is what scan()
 * writes to its output from offset at on.  As rules.Edits records it (issue #13): merged into the
 * last edit when that one is of the same rule and component and ends where this one starts; and
 * once the component holds fold_after edits, folded into the last one whatever its rule, the
 * untouched text between them included (scan() copies it unchanged to the output, so that the
 * folded edit's text after is still one run of the output). */
static int new_char_edit(State *st, int rule, int component, Py_ssize_t start, Py_ssize_t end,
                         Py_ssize_t at, Py_ssize_t alen) {
    EditRec *e = add_edit(st, rule, component, start, end);
    if (!e) return -1;
    e->chars = 1;
    e->a0 = at;
    e->alen = alen;
    return 0;
}

/* Inlined in scan_chars' loop, the merge with the last edit: no call for it. */
static inline int char_edit(State *st, int rule, int component, Py_ssize_t start, Py_ssize_t end,
                            Py_ssize_t at, Py_ssize_t alen) {
    if (st->nedits) {
        EditRec *last = &st->edits[st->nedits - 1];
        if (last->chars && !last->after && last->component == component &&
            ((last->end == start && last->rules == 1u << rule) ||
             (st->in_component >= fold_after && last->end <= start))) {
            last->end = end;
            last->alen = at + alen - last->a0;
            last->rules |= 1u << rule;
            return 0;
        }
    }
    return new_char_edit(st, rule, component, start, end, at, alen);
}

/* A structural rule's edit: steals the references to before (NULL: the input's text) and after. */
static int whole_edit(State *st, int rule, int component, Py_ssize_t start, Py_ssize_t end,
                      PyObject *before, PyObject *after) {
    if (!after || (before == NULL && PyErr_Occurred())) {
        Py_XDECREF(before);
        Py_XDECREF(after);
        return -1;
    }
    EditRec *e = add_edit(st, rule, component, start, end);
    if (!e) { Py_XDECREF(before); Py_DECREF(after); return -1; }
    e->before = before;
    e->after = after;
    return 0;
}

/* findings.add: the first occurrence of each rule in each component, and a count. */
static FindRec *add_finding(State *st, int rule, int component, Py_ssize_t offset,
                            Py_ssize_t dstart, Py_ssize_t dend) {
    for (int i = 0; i < st->nfindings; i++) {
        FindRec *f = &st->findings[i];
        if (f->rule == rule && f->component == component) {
            if (f->count < MAX_OFFSETS) f->offs[f->count] = offset;
            f->count++;
            return NULL;
        }
    }
    FindRec *f = &st->findings[st->nfindings++];
    f->rule = rule;
    f->component = component;
    f->offset = offset;
    f->dstart = dstart;
    f->dend = dend;
    f->count = 1;
    f->offs[0] = offset;
    f->detail = NULL;
    return f;
}

/* The same, with a detail of its own (stolen; NULL: an exception). */
static int add_finding_obj(State *st, int rule, int component, Py_ssize_t offset,
                           PyObject *detail) {
    if (!detail) return -1;
    FindRec *f = add_finding(st, rule, component, offset, 0, 0);
    if (f)
        f->detail = detail;
    else
        Py_DECREF(detail);
    return 0;
}

static inline void state_free(State *st) {
    for (Py_ssize_t i = 0; i < st->nedits; i++) {
        Py_XDECREF(st->edits[i].before);
        Py_XDECREF(st->edits[i].after);
    }
    for (int i = 0; i < st->nfindings; i++) Py_XDECREF(st->findings[i].detail);
    if (st->edits != st->edits_here) PyMem_Free(st->edits);
    buf_free(&st->out);
}

/* o itself (a tuple), untracked by the cyclic collector.  Every tuple made here holds only
 * strs, ints and tuples made here (untracked in turn, or the empty tuple): such a tuple can be in
 * no reference cycle.  CPython untracks such a tuple itself, but only an exact tuple and only at
 * a collection; a Result, an Edit and a Finding are tuple subclasses, which it never untracks.
 * So every Result a caller kept stayed tracked with its edits and findings, and each full
 * collection walked them all again: keeping the Results of 59,440 dirty URLs in a list cost
 * 11.2 us a URL, 1.2 us with them untracked.  Untracked without looking at the items, which
 * cost a test per item of every tuple (a fifth of an Edit's making). */
static inline PyObject *untracked(PyObject *o) {
    if (o) PyObject_GC_UnTrack(o);
    return o;
}

/* A NamedTuple (Edit, Finding, Result) from stolen items, built as tuple.__new__(type, items)
 * builds it: the supported way to make a tuple subclass instance. */
static PyObject *named(PyObject *type, Py_ssize_t n, PyObject **items) {
    PyObject *o = NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!items[i]) goto fail;
    }
    /* tuple.__new__(type, items) for a tuple subclass without __dict__ (a NamedTuple) is
     * type->tp_alloc(type, n) filled in place: CPython's own tuple_subtype_new, without the
     * argument tuples. */
    o = ((PyTypeObject *)type)->tp_alloc((PyTypeObject *)type, n);
    if (!o) goto fail;
    for (Py_ssize_t i = 0; i < n; i++) PyTuple_SET_ITEM(o, i, items[i]);
    return untracked(o);
fail:
    for (Py_ssize_t k = 0; k < n; k++) Py_XDECREF(items[k]);
    return NULL;
}

/* Results, edits and findings made lately, kept for reuse: one whose only reference is its
 * pool's (its holder let go of it) is refilled in place, as CPython's own zip() and enumerate()
 * refill their result tuple when the caller let go of it.  A proxy drops each Result after its
 * request, so that most of them and their edits cost no allocation.  A ring: the slot a new one
 * takes was taken size / (made per target) targets ago; a slot still in use is left to its
 * holder.  A Result kept here keeps its edits: its ring is short (2), so that theirs (64) finds
 * them let go of when it comes round. */
#define POOL_SIZE 64       /* a power of 2, as RESULT_POOL_SIZE: pooled() wraps with a mask */
#define RESULT_POOL_SIZE 2
#define POOL_TEXT_MAX 256
typedef struct {
    PyObject *slot[POOL_SIZE];
    int next;
} Pool;
static Pool edit_pool, finding_pool, result_pool; /* rings of POOL_SIZE, POOL_SIZE, RESULT_POOL_SIZE */

/* pooled() where the slot's one is still in use (or none is there yet): a new one, which takes
 * the slot. */
static PyObject *pooled_new(PyObject **slot, PyObject *type, Py_ssize_t n, PyObject **items) {
    PyObject *o = named(type, n, items);
    if (!o) return NULL;
    for (Py_ssize_t i = 0; i < n; i++) { /* a long text is not kept alive past its Result */
        PyObject *item = PyTuple_GET_ITEM(o, i);
        if (PyUnicode_Check(item) && PyUnicode_GET_LENGTH(item) > POOL_TEXT_MAX) return o;
    }
    Py_XSETREF(*slot, Py_NewRef(o));
    return o;
}

/* A type(*items) of n stolen items from pool, a ring of size slots; items[i] may be NULL (an
 * exception) only where bit i of nullable is set.  Inlined in its callers, with n, size and
 * nullable constants: its loops unrolled, and no test left of an item that cannot be NULL. */
static inline PyObject *pooled(Pool *pool, int size, PyObject *type, Py_ssize_t n,
                               unsigned nullable, PyObject **items) {
    PyObject **slot = &pool->slot[pool->next];
    pool->next = (pool->next + 1) & (size - 1); /* size: a power of 2 */
    PyObject *o = *slot;
    if (!o || Py_REFCNT(o) != 1 || Py_TYPE(o) != (PyTypeObject *)type)
        return pooled_new(slot, type, n, items);
    for (Py_ssize_t i = 0; i < n; i++) {
        if ((nullable >> i & 1) && !items[i]) {
            for (Py_ssize_t k = 0; k < n; k++) Py_XDECREF(items[k]);
            return NULL;
        }
    }
    for (Py_ssize_t i = 0; i < n; i++) { /* each old item let go after its place is taken */
        PyObject *old = PyTuple_GET_ITEM(o, i);
        PyTuple_SET_ITEM(o, i, items[i]);
        Py_DECREF(old);
    }
    return Py_NewRef(o); /* untracked when it was made */
}

/* Strings made once, for the texts most edits hold (hostile and dirty input alike): every
 * escape "%XX" as this twin writes it (pct_str), each character below 256 (char_str), an escape
 * as the input may spell it, hex digits in either case ("%7e": esc_str, made on first use), and
 * the UTF-8 escapes of U+0080..U+00FF ("é" -> "%C3%A9": utf8_str, made on first use). */
static PyObject *pct_str[256], *char_str[256], *esc_str[256][4], *utf8_str[128];

/* The offsets of most targets, made once: an edit holds two, a finding two. */
#define SMALL_INTS 1024
static PyObject *small_int[SMALL_INTS];

static inline PyObject *offset_int(Py_ssize_t v) {
    return v >= 0 && v < SMALL_INTS ? Py_NewRef(small_int[v]) : PyLong_FromSsize_t(v);
}

static PyObject *after_str(const char *s, Py_ssize_t n) {
    if (n == 1) return Py_NewRef(char_str[(unsigned char)s[0]]); /* most: a decoded escape */
    if (n == 3 && s[0] == '%') {
        int hi = hexval((unsigned char)s[1]), lo = hexval((unsigned char)s[2]);
        if (hi >= 0 && lo >= 0 && s[1] == HEX[hi] && s[2] == HEX[lo])
            return Py_NewRef(pct_str[hi << 4 | lo]);
    }
    if (n == 6 && s[0] == '%' && s[3] == '%' && (s[1] == 'C' || s[1] == 'D') && s[4] >= '8' &&
        s[4] <= 'B') { /* U+0080..U+07FF; cached for the latin-1 ones, "%C2%80".."%C3%BF" */
        int b0 = hexval((unsigned char)s[1]) << 4 | hexval((unsigned char)s[2]);
        int b1 = hexval((unsigned char)s[4]) << 4 | hexval((unsigned char)s[5]);
        int c = (b0 & 0x1F) << 6 | (b1 & 0x3F);
        if (b0 >= 0xC2 && b0 <= 0xC3 && (b1 & 0xC0) == 0x80 && s[2] == HEX[b0 & 15] &&
            s[5] == HEX[b1 & 15]) {
            PyObject **slot = &utf8_str[c - 0x80];
            if (!*slot) *slot = ascii_str(s, n);
            return Py_XNewRef(*slot);
        }
    }
    return ascii_str(s, n);
}

/* target[s:e], the text before of an edit or the detail of a finding: from the tables for one
 * character and for an escape "%xx", else a new string. */
static PyObject *any_input_str(PyObject *target, int kind, const void *data, Py_ssize_t s,
                               Py_ssize_t e) {
    if (e - s == 1) {
        Py_UCS4 c = PyUnicode_READ(kind, data, s);
        if (c < 256) return Py_NewRef(char_str[c]);
    } else if (e - s == 3 && PyUnicode_READ(kind, data, s) == '%') {
        Py_UCS4 h = PyUnicode_READ(kind, data, s + 1), l = PyUnicode_READ(kind, data, s + 2);
        int hi = hexval(h), lo = hexval(l);
        if (hi >= 0 && lo >= 0) {
            /* which digits are lowercase letters: the case variant of the escape */
            PyObject **slot = &esc_str[hi << 4 | lo][(h >= 'a') << 1 | (l >= 'a')];
            if (!*slot) {
                char text[3] = {'%', (char)h, (char)l};
                *slot = ascii_str(text, 3);
            }
            return Py_XNewRef(*slot);
        }
    }
    if (PyUnicode_IS_ASCII(target)) /* most targets: no widest character to look for */
        return ascii_str((const char *)data + s, e - s);
    return PyUnicode_Substring(target, s, e);
}

/* The same, its most common case (an escape of a 1-byte target, made before) inlined in its
 * callers: as a call of its own, its case analysis cost more than the lookup. */
static inline PyObject *input_str(PyObject *target, int kind, const void *data, Py_ssize_t s,
                                  Py_ssize_t e) {
    if (kind == PyUnicode_1BYTE_KIND && e - s == 3) {
        const Py_UCS1 *p = (const Py_UCS1 *)data + s;
        int hi = hexval(p[1]), lo = hexval(p[2]);
        if (p[0] == '%' && hi >= 0 && lo >= 0) {
            PyObject *o = esc_str[hi << 4 | lo][(p[1] >= 'a') << 1 | (p[2] >= 'a')];
            if (o) return Py_NewRef(o);
        }
    }
    return any_input_str(target, kind, data, s, e);
}

/* The index of the lowest bit set in bits (not 0): GCC's and Clang's builtin, MSVC's intrinsic
 * (Windows wheels are built with MSVC, which has no __builtin_ctz), else a loop. */
static inline int lowest_bit(unsigned bits) {
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_ctz(bits);
#elif defined(_MSC_VER)
    unsigned long k;
    _BitScanForward(&k, bits);
    return (int)k;
#else
    int k = 0;
    for (; !(bits & 1u); bits >>= 1) k++;
    return k;
#endif
}

/* The rule of an edit holding the rules of bits: one name, or the names in pipeline.RULES's
 * order joined by "+" (a folded edit). */
static PyObject *rules_name(unsigned bits) {
    if ((bits & (bits - 1)) == 0) {
        return Py_NewRef(rule_str[lowest_bit(bits)]);
    }
    PyObject *key = PyLong_FromUnsignedLong(bits), *name = NULL;
    if (!key) return NULL;
    name = PyDict_GetItemWithError(folded_str, key);
    if (name) {
        Py_INCREF(name);
    } else if (!PyErr_Occurred()) {
        char text[R_COUNT * 24] = "";
        for (int rank = 0; rank < R_COUNT; rank++) {
            for (int r = 0; r < R_COUNT; r++) {
                if (rule_rank[r] != rank || !(bits >> r & 1)) continue;
                if (text[0]) strcat(text, "+");
                strcat(text, RULE_NAMES[r]);
            }
        }
        name = PyUnicode_InternFromString(text);
        if (name && PyDict_SetItem(folded_str, key, name) < 0) Py_CLEAR(name);
    }
    Py_DECREF(key);
    return name;
}

/* Tuples of edits (spare[0]) and of findings (spare[1]) of Results let go of, one of each size
 * up to SPARE_MAX, their items let go of too (NULL), for the next Results to fill: a tuple's
 * making and its freeing were a tenth of a dirty target's cost.  set_aside() takes them from the
 * Result that make_result's pooled() is about to refill, when nobody else can see them: the
 * Result's only reference its pool's, the tuple's only one that Result's.  CPython 3.14 caches
 * a tuple's hash in it, which a refill would leave stale: there, none is set aside. */
#define SPARE_MAX 8
static PyObject *spare[2][SPARE_MAX + 1];

static void set_aside(void) {
#if PY_VERSION_HEX < 0x030E0000
    PyObject *r = result_pool.slot[result_pool.next];
    if (!r || Py_REFCNT(r) != 1 || Py_TYPE(r) != (PyTypeObject *)ResultType) return;
    for (int k = 0; k < 2; k++) {
        PyObject *t = PyTuple_GET_ITEM(r, k + 2);
        if (Py_REFCNT(t) != 1 || !PyTuple_CheckExact(t)) continue;
        Py_ssize_t n = PyTuple_GET_SIZE(t);
        if (n == 0 || n > SPARE_MAX || spare[k][n]) continue;
        PyTuple_SET_ITEM(r, k + 2, Py_NewRef(empty_tuple)); /* the Result's, until its refill */
        for (Py_ssize_t i = 0; i < n; i++) { /* a Result's tuple is full: no NULL in it */
            PyObject *item = PyTuple_GET_ITEM(t, i);
            PyTuple_SET_ITEM(t, i, NULL);
            Py_DECREF(item);
        }
        spare[k][n] = t; /* still untracked, as it was made */
    }
#endif
}

/* A tuple of n items (k: 0 edits, 1 findings) to fill, all NULL: one set aside, or a new one. */
static inline PyObject *tuple_for(int k, Py_ssize_t n) {
    if (n <= SPARE_MAX && spare[k][n]) {
        PyObject *t = spare[k][n];
        spare[k][n] = NULL;
        return t;
    }
    return PyTuple_New(n);
}

/* The items of an Edit that may be NULL: its rule (a folded name, made), its offsets (made above
 * SMALL_INTS) and its text before (made); its component and its text after never are.  A
 * Finding's: its offset, detail, count and offsets; a Result's: url, edits and findings. */
#define EDIT_NULLABLE (1u << 0 | 1u << 2 | 1u << 3 | 1u << 4)
#define FINDING_NULLABLE (1u << 2 | 1u << 3 | 1u << 4 | 1u << 5)
#define RESULT_NULLABLE (1u << 1 | 1u << 2 | 1u << 3)

static PyObject *freeze_edits(State *st) {
    if (st->nedits == 0) return Py_NewRef(empty_tuple); /* shared: nothing to untrack */
    PyObject *t = tuple_for(0, st->nedits);
    if (!t) return NULL;
    /* No collection while a million edits are made: each would walk the edits made so far, and
     * none of them can be garbage yet.  Collections resume after, as the allocator counts them. */
    int gc_was_on = st->nedits > 1000 ? PyGC_Disable() : 0;
    Py_ssize_t i;
    for (i = 0; i < st->nedits; i++) {
        EditRec *e = &st->edits[i];
        PyObject *items[6];
        items[0] = rules_name(e->rules);
        items[1] = Py_NewRef(component_str[e->component]);
        items[2] = offset_int(e->start);
        items[3] = offset_int(e->end);
        /* its texts taken from the record: no reference more */
        items[4] = e->before ? e->before
                             : input_str(st->target, st->kind, st->data, e->start, e->end);
        items[5] = e->after;
        PyObject *edit = pooled(&edit_pool, POOL_SIZE, EditType, 6, EDIT_NULLABLE, items);
        if (!edit) break;
        PyTuple_SET_ITEM(t, i, edit);
    }
    if (gc_was_on) PyGC_Enable();
    /* The records' texts are the edits' now (a failed pooled() let go of its items): none is
     * left for state_free, which then has no loop to run. */
    if (i == st->nedits) {
        st->nedits = 0;
        return untracked(t);
    }
    for (Py_ssize_t k = 0; k <= i; k++) st->edits[k].before = st->edits[k].after = NULL;
    Py_DECREF(t);
    return NULL;
}

/* Finding.offsets: () for one occurrence, else where the first MAX_OFFSETS are. */
static PyObject *offsets_tuple(const FindRec *f) {
    if (f->count < 2) return Py_NewRef(empty_tuple);
    Py_ssize_t n = f->count < MAX_OFFSETS ? f->count : MAX_OFFSETS;
    PyObject *t = PyTuple_New(n);
    if (!t) return NULL;
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *o = offset_int(f->offs[k]);
        if (!o) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, k, o);
    }
    return untracked(t);
}

static PyObject *freeze_findings(State *st) {
    if (st->nfindings == 0) return Py_NewRef(empty_tuple);
    PyObject *t = tuple_for(1, st->nfindings);
    if (!t) return NULL;
    int i;
    for (i = 0; i < st->nfindings; i++) {
        FindRec *f = &st->findings[i];
        PyObject *items[6];
        items[0] = Py_NewRef(finding_str[f->rule]);
        items[1] = Py_NewRef(component_str[f->component]);
        items[2] = offset_int(f->offset);
        /* its detail taken from the record: no reference more */
        items[3] = f->detail ? f->detail
                             : input_str(st->target, st->kind, st->data, f->dstart, f->dend);
        items[4] = offset_int(f->count);
        items[5] = offsets_tuple(f);
        PyObject *finding = pooled(&finding_pool, POOL_SIZE, FindingType, 6, FINDING_NULLABLE, items);
        if (!finding) break;
        PyTuple_SET_ITEM(t, i, finding);
    }
    if (i == st->nfindings) { /* as freeze_edits: nothing left for state_free */
        st->nfindings = 0;
        return untracked(t);
    }
    for (int k = 0; k <= i; k++) st->findings[k].detail = NULL;
    Py_DECREF(t);
    return NULL;
}

/* ---- characters */

/* The first ch in target[s:e], or -1. */
static Py_ssize_t find(State *st, Py_UCS4 ch, Py_ssize_t s, Py_ssize_t e) {
    if (s >= e) return -1;
    const Py_UCS1 *s1 = st->s1;
    if (s1) { /* the common case, without PyUnicode_FindChar's dispatch */
        if (e - s <= 32) { /* a short span (a segment, a host): cheaper than a call */
            for (Py_ssize_t i = s; i < e; i++)
                if (s1[i] == ch) return i;
            return -1;
        }
        const Py_UCS1 *at = memchr(s1 + s, (int)ch, (size_t)(e - s));
        return at ? at - s1 : -1;
    }
    Py_ssize_t at = PyUnicode_FindChar(st->target, ch, s, e, 1);
    if (at == -2) { /* cannot happen with indices inside the string; then as if absent */
        PyErr_Clear();
        return -1;
    }
    return at;
}

static inline int hex_at(State *st, Py_ssize_t i, Py_ssize_t e) {
    return i < e && hexval(CH(st, i)) >= 0;
}

static inline int char_at(State *st, Py_ssize_t i, Py_ssize_t e, Py_UCS4 c) {
    return i < e && CH(st, i) == c;
}

/* findings._ESCAPE_TRICKS at the "%" at i: the finding and the length of its match, 0 if none.
 *   double-encoding  "%25" HEXDIG HEXDIG   (RFC 3986 §2.4: a second decoder bites)
 *   percent-u        "%u" 4HEXDIG          (IIS's non-standard escape)
 *   nul-escape       "%00"
 *   crlf-escape      "%0D" / "%0A"         (header injection, response splitting)
 *                                                                          case-insensitive
 * (overlong UTF-8 is escaped_utf8's to find: it is no UTF-8) */
static int escape_trick(State *st, Py_ssize_t i, Py_ssize_t e, int *rule) {
    Py_UCS4 a = i + 1 < e ? CH(st, i + 1) : 0, b = i + 2 < e ? CH(st, i + 2) : 0;
    if (a == '2' && b == '5' && hex_at(st, i + 3, e) && hex_at(st, i + 4, e)) {
        *rule = F_DOUBLE;
        return 5;
    }
    if ((a == 'u' || a == 'U') && hex_at(st, i + 2, e) && hex_at(st, i + 3, e) &&
        hex_at(st, i + 4, e) && hex_at(st, i + 5, e)) {
        *rule = F_PERCENT_U;
        return 6;
    }
    if (a == '0' && (b == '0' || b == 'D' || b == 'd' || b == 'A' || b == 'a')) {
        *rule = b == '0' ? F_NUL : F_CRLF;
        return 3;
    }
    return 0;
}

enum { OK = 0, FAIL = -1, REFUSE = 1 };

/* rules.Edits.repair: a strict policy refuses what it would have to repair, with the very
 * InvalidTarget the reference raises (message stolen; NULL: an exception already). */
static int refuse_repair(int rule, int component, Py_ssize_t offset, PyObject *message) {
    if (!message) return FAIL;
    PyObject *exc = PyObject_CallFunction(InvalidTargetType, "OOnO", rule_str[rule],
                                          component_str[component], offset, message);
    Py_DECREF(message);
    if (exc) {
        PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
        Py_DECREF(exc);
    }
    return FAIL;
}

/* ---- what this twin declines: every reason, here and nowhere else (exported as the tuple
 * DECLINES; tests/core/test_speedups.py holds an example target for each, and finds no other
 * reason in this file).  Each is a class of target the Python driver serves instead. */

enum {
    D_FORM,
    D_ORIGIN,
    D_SCHEME,
    D_RELATIVE,
    D_OTHER_SCHEME,
    D_INT_PREFIX,
    D_HOST_FOLD,
    D_EMPTY_HOST,
    D_IDN,
    D_IPVFUTURE,
    D_SLASH_RULE_BACKSLASH,
    D_SLASH_RULE_ESCAPED,
    D_MERGE_SLASHES,
    D_COUNT
};

static const char *const DECLINES[D_COUNT] = {
    [D_FORM] = "form", /* a form code the twin does not know */
    [D_ORIGIN] = "origin-form not starting with '/'", /* "a/b": RFC 9112 §3.2.1 origin-form starts with "/" */
    [D_SCHEME] = "scheme", /* a scheme with no letter first (RFC 3986 §3.1), or one left uppercase */
    [D_RELATIVE] = "no scheme '://' (relative, or another shape)", /* a relative reference, "http:/h", "mailto:x" */
    [D_OTHER_SCHEME] = "scheme without a default port", /* a scheme other than http(s) and ws(s) */
    [D_INT_PREFIX] = "numeric host with int() prefixes", /* numeric-host on a host Python's int() reads otherwise */
    [D_HOST_FOLD] = "host with FOLD_AFTER edits in two passes", /* a host whose edits fold in two passes */
    [D_EMPTY_HOST] = "empty host",
    [D_IDN] = "non-ASCII host (IDN)", /* idna-host (UTS #46) is the idna package's */
    [D_IPVFUTURE] = "IPvFuture literal",
    [D_SLASH_RULE_BACKSLASH] = "backslash, with a rule on them", /* backslash-as-slash, reject-escaped-slash */
    [D_SLASH_RULE_ESCAPED] = "escaped slash, with a rule on them", /* decode-escaped-slash, reject-escaped-slash */
    [D_MERGE_SLASHES] = "merge-slashes on '//'",
};

static const char *declined_why; /* why the last call returned None; NULL: it did not */

static int decline(State *st, int why) {
    st->why = DECLINES[why];
    return REFUSE;
}

/* findings._FORMAT: the format characters that reorder or hide text (bidirectional controls,
 * invisible characters). */
static inline int format_char(Py_UCS4 c) {
    return c == 0x061C || c == 0x180E || (c >= 0x200B && c <= 0x200F) ||
           (c >= 0x202A && c <= 0x202E) || (c >= 0x2060 && c <= 0x2064) ||
           (c >= 0x2066 && c <= 0x206F) || c == 0xFEFF;
}

/* findings.NFKC_SEPARATORS, from setup(): what NFKC turns into dots, "/", "\\" or "%".  A path
 * holding one, raw or escaped as UTF-8, has the segment around it read by nfkc_separators(). */
#define MAX_NFKC 32
static Py_UCS4 nfkc_chars[MAX_NFKC];
static int n_nfkc;

static int nfkc_char(Py_UCS4 c) {
    for (int k = 0; k < n_nfkc; k++)
        if (nfkc_chars[k] == c) return 1;
    return 0;
}

/* The byte escaped at target[j] ("%" and two hex digits), or -1. */
static int escaped_byte(State *st, Py_ssize_t j, Py_ssize_t e) {
    if (!char_at(st, j, e, '%') || !hex_at(st, j + 1, e) || !hex_at(st, j + 2, e)) return -1;
    return hexval(CH(st, j + 1)) << 4 | hexval(CH(st, j + 2));
}

/* findings._utf8 on the escaped bytes from target[i] on, whose first, b0, is above 127: how many
 * bytes it reads (*found: 0 when they are valid UTF-8, RFC 3629 §3) or, as CPython's strict
 * decoder reports it, how many are the invalid sequence (*found F_INVALID_UTF8, or F_OVERLONG:
 * a C0/C1 lead, E0 80-9F, F0 80-8F, RFC 3629 §10, with the byte after it). A valid format
 * character is *found F_FORMAT. */
static int escaped_utf8(State *st, Py_ssize_t i, Py_ssize_t e, int b0, int *found) {
    int n, lo = 0x80, hi = 0xBF;
    Py_UCS4 cp;
    int second = escaped_byte(st, i + 3, e);
    if (b0 == 0xC0 || b0 == 0xC1 || (b0 == 0xE0 && second >= 0x80 && second <= 0x9F) ||
        (b0 == 0xF0 && second >= 0x80 && second <= 0x8F)) {
        *found = F_OVERLONG;
        return second >= 0 ? 2 : 1;
    }
    *found = F_INVALID_UTF8;
    if (b0 >= 0xC2 && b0 <= 0xDF) n = 2, cp = (Py_UCS4)(b0 & 0x1F);
    else if (b0 >= 0xE0 && b0 <= 0xEF) n = 3, cp = (Py_UCS4)(b0 & 0x0F);
    else if (b0 >= 0xF0 && b0 <= 0xF4) n = 4, cp = (Py_UCS4)(b0 & 0x07);
    else return 1;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
    for (int k = 1; k < n; k++) {
        int b = k == 1 ? second : escaped_byte(st, i + 3 * k, e);
        if (b < lo || b > hi) return k;
        lo = 0x80, hi = 0xBF;
        cp = cp << 6 | (Py_UCS4)(b & 0x3F);
    }
    *found = format_char(cp) ? F_FORMAT : nfkc_char(cp) ? -1 : 0; /* -1: the caller's to say */
    return n;
}

/* findings._escape_once_decoded at a "%" (stray, or "%25") whose decoded "%" is followed by
 * target[a:]: where the escape that one decode makes ends, its two hex digits raw or escaped,
 * at least one escaped ("%%32%65", "%25%32e" are "%2e" once decoded); 0 when it makes none. */
static Py_ssize_t once_escape_end(State *st, Py_ssize_t a, Py_ssize_t e, int *byte) {
    int escaped = 0;
    *byte = 0;
    for (int k = 0; k < 2; k++) {
        int digit = a < e ? hexval(CH(st, a)) : -1;
        if (digit >= 0) {
            a++;
        } else {
            if (!char_at(st, a, e, '%') || !hex_at(st, a + 1, e) || !hex_at(st, a + 2, e))
                return 0;
            digit = hexval((Py_UCS4)(hexval(CH(st, a + 1)) << 4 | hexval(CH(st, a + 2))));
            if (digit < 0) return 0;
            a += 3;
            escaped = 1;
        }
        *byte = *byte << 4 | digit;
    }
    return escaped ? a : 0;
}



/* What the character pass over a path finds on the way: where the path ends (RFC 3986 §3.3: at
 * the first "?" or "#"), and what findings.path reports that is not about dot segments. */
typedef struct {
    Py_ssize_t end;
    Py_ssize_t backslash;     /* the first "\\", or -1 */
    Py_ssize_t escaped_slash; /* the first "%2F" or "%5C" (either case), or -1 */
    Py_ssize_t slashes;       /* how many of those */
    Py_ssize_t slash_at[MAX_OFFSETS]; /* where the first of them are */
    Py_ssize_t escaped_dot;   /* the first "%2E" (either case), or -1 */
    int trick;                /* findings._DECODE_TRICK is in it: see decoded_climb() */
    int nfkc;                 /* a findings.NFKC_SEPARATORS character, raw or escaped */
} PathMarks;

/* findings._DECODE_TRICK at an escape of byte b (-1: a "%" that starts no escape, "%u" among
 * them): what a second decoder, IIS's %u or a lax UTF-8 decoder may make a separator of. */
static inline int decode_trick(int b) {
    return b < 0 || b == 0x25 || b == 0x2F || b == 0x5C || b == 0xC0 || b == 0xC1 ||
           b == 0xE0 || b == 0xE1 || b == 0xF0 || b == 0xF1;
}

/* rules.Scanner.scan: decode-unreserved, uppercase-escape, encode-stray-percent, encode-unsafe,
 * encode-non-ascii, in one pass over target[s:e], written to out.  With path (the path's
 * marks, C_PATH), the pass ends at the first "?" or "#" (neither is allowed in a path). */
static int scan_chars(State *st, int component, Py_ssize_t s, Py_ssize_t e, Buf *out,
                      PathMarks *path) {
    const unsigned char *allowed = allowed_in[component];
    const unsigned char *unres = (st->flags & FL_UNRESERVED_2396) ? unreserved_2396 : unreserved;
    int decode = st->flags & FL_DECODE, upper = st->flags & FL_UPPER;
    int slash_rules = st->flags & FL_SLASH_RULES;
    /* findings.escapes (a host has none: a zone ID's escapes are its own), found here as this
     * pass meets each "%", every one of them: left to right and not overlapping, as
     * re.finditer finds them, so that none starts before trick_end. */
    int tricks = component != C_HOST;
    Py_ssize_t trick_end = s, utf8_end = s; /* utf8_end: past the last valid escaped UTF-8 */
    Py_ssize_t raw_end = s;                 /* past the last raw overlong pair */
    if (buf_reserve(out, e - s) < 0) return FAIL;
    /* The target, read from locals: the stores through out->p may alias st's fields, which
     * would be read again after each one. */
    const Py_UCS1 *const s1 = st->s1;
    const int kind = st->kind;
    const void *const data = st->data;
#define SCH(i) (s1 ? (Py_UCS4)s1[i] : PyUnicode_READ(kind, data, (i)))
    Py_ssize_t i;
    for (i = s; i < e; i++) {
        Py_UCS4 c = SCH(i);
        if (c < 256 && allowed[c]) { /* a run of characters allowed here, copied as it is */
            Py_ssize_t j = i + 1;
            Py_ssize_t from = out->n;
            if (s1) { /* copied as it is read: room for all the rest of the input, at most */
                if (buf_reserve(out, e - i) < 0) return FAIL;
                char *o = out->p + out->n; /* where s1[i] goes, s1[j] at o[j - i] */
                o[0] = (char)c;
                while (j + 4 <= e && allowed[s1[j]] & allowed[s1[j + 1]] & allowed[s1[j + 2]] &
                                         allowed[s1[j + 3]]) {
                    memcpy(o + (j - i), s1 + j, 4); /* four at a time: fewer tests per character */
                    j += 4;
                }
                for (; j < e && allowed[s1[j]]; j++) o[j - i] = (char)s1[j];
                out->n += j - i;
            } else {
                while (j < e && (c = SCH(j)) < 256 && allowed[c]) j++;
                if (buf_reserve(out, j - i) < 0) return FAIL;
                for (Py_ssize_t k = i; k < j; k++) out->p[out->n++] = (char)SCH(k);
            }
            if (st->host_lower) /* the text lowercase-host left, which this pass reads */
                for (Py_ssize_t k = from; k < out->n; k++)
                    if (out->p[k] >= 'A' && out->p[k] <= 'Z') out->p[k] |= 0x20;
            i = j - 1;
            continue;
        }
        char enc[12];
        if (c == '%' && decode && i + 2 < e) {
            /* The escape most dirty targets hold: an unreserved letter or digit that
             * decode-unreserved decodes ("%7E", "%41").  None of findings._ESCAPE_TRICKS
             * ("%25" "%u" "%00" "%0D" "%0A"), no decode trick, no UTF-8 and no path mark is an
             * unreserved byte but "." ("%2E": escaped-dot), which takes the general way. */
            int hi = hexval(SCH(i + 1)), lo = hi >= 0 ? hexval(SCH(i + 2)) : -1;
            int byte = lo >= 0 ? hi << 4 | lo : -1; /* no shift of -1 (undefined in C) */
            if (byte >= 0 && byte < 128 && byte != '.' && unres[byte]) {
                enc[0] = (char)(st->host_lower && byte >= 'A' && byte <= 'Z' ? byte | 0x20 : byte);
                if (char_edit(st, R_DECODE, component, i, i + 3, out->n, 1) < 0 ||
                    buf_putc(out, enc[0]) < 0)
                    return FAIL;
                i += 2;
                continue;
            }
        }
        if (c == '%') {
            int rule, n = tricks && i >= trick_end ? escape_trick(st, i, e, &rule) : 0;
            if (n) {
                add_finding(st, rule, component, i, i, i + n);
                trick_end = i + n;
            }
            int hi = i + 2 < e ? hexval(SCH(i + 1)) : -1;
            int lo = hi >= 0 ? hexval(SCH(i + 2)) : -1;
            if (path && decode_trick(lo < 0 ? -1 : hi << 4 | lo)) path->trick = 1;
            if (lo < 0) {
                if (st->flags & FL_STRICT) /* RFC 3986 §2.4 */
                    return refuse_repair(R_STRAY, component, i,
                                         PyUnicode_FromString("'%' that starts no escape"));
                if (tricks && !(n && rule == F_PERCENT_U)) {
                    int twice;
                    Py_ssize_t dend = once_escape_end(st, i + 1, e, &twice);
                    add_finding(st, F_STRAY, component, i, i, i + 1);
                    if (dend) add_finding(st, F_DOUBLE, component, i, i, dend);
                }
                if (char_edit(st, R_STRAY, component, i, i + 1, out->n, 3) < 0 ||
                    buf_put(out, "%25", 3) < 0)
                    return FAIL;
                continue;
            }
            int byte = hi << 4 | lo;
            if (tricks && byte >= 0x80 && i >= utf8_end) {
                int found, n8 = escaped_utf8(st, i, e, byte, &found);
                utf8_end = i + 3 * n8;
                if (found < 0 && path) path->nfkc = 1;
                if (found > 0) add_finding(st, found, component, i, i, utf8_end);
            }
            if (tricks && byte == 0x25) {
                int twice;
                Py_ssize_t dend = once_escape_end(st, i + 3, e, &twice);
                if (dend) add_finding(st, F_DOUBLE, component, i, i, dend);
            }
            if (path && byte == 0x2E && path->escaped_dot < 0) path->escaped_dot = i;
            if (path && (byte == 0x2F || byte == 0x5C)) {
                if (slash_rules) return decline(st, D_SLASH_RULE_ESCAPED);
                if (path->escaped_slash < 0) path->escaped_slash = i;
                if (path->slashes < MAX_OFFSETS) path->slash_at[path->slashes] = i;
                path->slashes++;
            }
            if (decode && byte < 128 && unres[byte]) {
                /* a host's "%41" decodes straight to "a" (rules.Scanner's lower) */
                enc[0] = (char)(st->host_lower && byte >= 'A' && byte <= 'Z' ? byte | 0x20 : byte);
                if (char_edit(st, R_DECODE, component, i, i + 3, out->n, 1) < 0 ||
                    buf_putc(out, enc[0]) < 0)
                    return FAIL;
            } else {
                enc[0] = '%';
                enc[1] = HEX[hi];
                enc[2] = HEX[lo];
                Py_UCS4 h1 = SCH(i + 1), h2 = SCH(i + 2);
                if (upper && ((char)h1 != enc[1] || (char)h2 != enc[2])) {
                    if (char_edit(st, R_UPPER, component, i, i + 3, out->n, 3) < 0) return FAIL;
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
            if (path && (c == '?' || c == '#')) break; /* the path's end */
            if (c == '#' && component == C_QUERY) break; /* the query's (RFC 3986 §3.4) */
            if (path && c == '\\') {
                if (slash_rules) return decline(st, D_SLASH_RULE_BACKSLASH);
                if (path->backslash < 0) path->backslash = i;
                path->trick = 1;
            }
            if (tricks && (c <= 0x20 || c == 0x7F))
                add_finding(st, c == ' ' ? F_RAW_SPACE : F_CONTROL, component, i, i, i + 1);
            if (st->flags & FL_STRICT)
                return refuse_repair(R_UNSAFE, component, i,
                                     PyUnicode_FromFormat("character %R not allowed", char_str[c]));
            enc[0] = '%';
            enc[1] = HEX[c >> 4];
            enc[2] = HEX[c & 15];
            if (char_edit(st, R_UNSAFE, component, i, i + 1, out->n, 3) < 0 ||
                buf_put(out, enc, 3) < 0)
                return FAIL;
            continue;
        }
        /* RFC 3986 §2.5: a character as its UTF-8 octets (surrogatepass); a surrogateescape'd
         * byte (U+DC80..U+DCFF) as that byte. */
        if (st->flags & FL_STRICT)
            return refuse_repair(R_NON_ASCII, component, i,
                                 PyUnicode_FromString("non-ASCII character"));
        if (tricks && i >= raw_end) { /* findings._RAW_ODD */
            if (c >= 0xDC80 && c <= 0xDCFF) { /* a raw byte that was no UTF-8 */
                Py_UCS4 next = i + 1 < e ? SCH(i + 1) : 0;
                if ((c == 0xDCC0 || c == 0xDCC1) && next >= 0xDC80 && next <= 0xDCBF) {
                    add_finding(st, F_OVERLONG, component, i, i, i + 2); /* RFC 3629 §10 */
                    raw_end = i + 2;
                } else {
                    add_finding(st, F_INVALID_UTF8, component, i, i, i + 1);
                }
            } else if (c <= 0x9F) {
                add_finding(st, F_CONTROL, component, i, i, i + 1);
            } else if (format_char(c)) {
                add_finding(st, F_FORMAT, component, i, i, i + 1);
            } else if (path && nfkc_char(c)) {
                path->nfkc = 1;
            }
        }
        unsigned char bytes[4];
        int n;
        if (c >= 0xDC80 && c <= 0xDCFF) {
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
        if (char_edit(st, R_NON_ASCII, component, i, i + 1, out->n, 3 * n) < 0 ||
            buf_put(out, enc, 3 * n) < 0)
            return FAIL;
    }
#undef SCH
    st->scan_end = i;
    if (path) path->end = i;
    return OK;
}

/* scan_chars, then the texts after of its edits: the output's own bytes, made strings before
 * dot removal rewrites the path, so that no second buffer of them is kept. */
static int finish_afters_from(State *st, Py_ssize_t first, Buf *out) {
    for (Py_ssize_t i = first; i < st->nedits; i++) {
        EditRec *ed = &st->edits[i];
        if (ed->after) continue;
        ed->after = after_str(out->p + ed->a0, ed->alen);
        if (!ed->after) return FAIL;
    }
    return OK;
}

/* The same, inlined where no edit was made (most components): no call. */
static inline int finish_afters(State *st, Py_ssize_t first, Buf *out) {
    return first == st->nedits ? OK : finish_afters_from(st, first, out);
}

static int scan(State *st, int component, Py_ssize_t s, Py_ssize_t e, Buf *out) {
    Py_ssize_t first = st->nedits;
    int rc = scan_chars(st, component, s, e, out, NULL);
    return rc == OK ? finish_afters(st, first, out) : rc;
}

/* scan() on the path from target[s] on, to its end (marks->end). */
static int scan_path(State *st, Py_ssize_t s, PathMarks *marks) {
    Py_ssize_t first = st->nedits;
    marks->backslash = marks->escaped_slash = marks->escaped_dot = -1;
    marks->slashes = marks->trick = marks->nfkc = 0;
    int rc = scan_chars(st, C_PATH, s, st->len, &st->out, marks);
    return rc == OK ? finish_afters(st, first, &st->out) : rc;
}

/* ---- the path: findings.path's dot-segment walk, and RFC 3986 §5.2.4 */

/* How many dots target[s:e] is made of, when it is "." or ".." with each dot raw or escaped as
 * "%2E" (findings._DOT_ESCAPES); 0 when it is neither.  *escaped: some dot was "%2E". */
static int dots(State *st, Py_ssize_t s, Py_ssize_t e, int *escaped) {
    int n = 0;
    *escaped = 0;
    for (Py_ssize_t i = s; i < e; n++) {
        if (n == 2) return 0;
        Py_UCS4 c = CH(st, i);
        if (c == '.') {
            i++;
        } else if (c == '%' && e - i >= 3 && CH(st, i + 1) == '2' &&
                   (CH(st, i + 2) | 0x20) == 'e') {
            *escaped = 1;
            i += 3;
        } else {
            return 0;
        }
    }
    return n;
}

/* findings._escaped_dots on the path target[s:e], from the segment of its first "%2E" (first)
 * on: each segment (cut at "/" and at "\\", as IIS and WHATWG parsers cut) that holds a "%2E"
 * and is no dot segment once decoded, alone or before a ";" ("index%2Epdf", ".%68tac%2E"), with
 * its first "%2E": the escape hides an extension or a dot file from a filter on the raw target. */
static void escaped_dots(State *st, Py_ssize_t s, Py_ssize_t first, Py_ssize_t e) {
    Py_ssize_t seg = first;
    while (seg > s && CH(st, seg - 1) != '/' && CH(st, seg - 1) != '\\') seg--;
    while (seg < e) {
        Py_ssize_t end = seg, semi = -1, dot = -1;
        for (; end < e; end++) {
            Py_UCS4 c = CH(st, end);
            if (c == '/' || c == '\\') break;
            if (c == ';' && semi < 0) semi = end;
            if (c == '%' && dot < 0 && e - end >= 3 && CH(st, end + 1) == '2' &&
                (CH(st, end + 2) | 0x20) == 'e')
                dot = end;
        }
        int escaped;
        if (dot >= 0 && dots(st, seg, semi < 0 ? end : semi, &escaped) == 0)
            add_finding(st, F_ESCAPED_DOT, C_PATH, dot, dot, dot + 3);
        seg = end + 1;
    }
}

/* ---- findings._decoded_climb: what one or two lax decodes make of a path */

/* findings._climbs on u[0:n]: a ".." that RFC 3986 §5.2.4 takes above the root. */
static int climbs(const Py_UCS4 *u, Py_ssize_t n) {
    Py_ssize_t seg = 0, depth = 0;
    while (seg < n && u[seg] != '/') seg++; /* what comes before the first "/" is no segment */
    if (seg == n) return 0;
    for (seg++;; seg++) {
        Py_ssize_t end = seg;
        while (end < n && u[end] != '/') end++;
        Py_ssize_t len = end - seg;
        if (len == 2 && u[seg] == '.' && u[seg + 1] == '.') {
            if (depth == 0) return 1;
            depth--;
        } else if (!(len == 1 && u[seg] == '.') && end < n) {
            depth++;
        }
        if (end == n) return 0;
        seg = end;
    }
}

/* The "." at u[i], a segment's character before end, as findings.path reads it: 1 for ".", 3
 * for "%2E" (either case), 0 for none.  "%2E" holds no "/": it is one segment's, alone. */
static inline int dot_at(const Py_UCS4 *u, Py_ssize_t i, Py_ssize_t end) {
    if (u[i] == '.') return 1;
    return u[i] == '%' && end - i >= 3 && u[i + 1] == '2' && (u[i + 2] | 0x20) == 'e' ? 3 : 0;
}

/* climbs() on u[0:n] with each "%2E" read as "." (findings.path's text), without writing that
 * text out first: a segment is "." or ".." when it is one or two of dot_at()'s dots, end to end
 * (they tile it one way only: each starts with "." or "%"). */
static int climbs_escaped(const Py_UCS4 *u, Py_ssize_t n) {
    Py_ssize_t seg = 0, depth = 0;
    while (seg < n && u[seg] != '/') seg++; /* what comes before the first "/" is no segment */
    if (seg == n) return 0;
    for (seg++;; seg++) {
        Py_ssize_t end = seg, k = seg;
        while (end < n && u[end] != '/') end++;
        int dots = 0; /* the segment's dots while it is made of them; 3: it is not "." or ".." */
        while (k < end && dots < 3) {
            int d = dot_at(u, k, end);
            k += d;
            dots = d ? dots + 1 : 3;
        }
        if (dots == 2) {
            if (depth == 0) return 1;
            depth--;
        } else if (dots != 1 && end < n) {
            depth++;
        }
        if (end == n) return 0;
        seg = end;
    }
}

static inline int hex4(const Py_UCS4 *u) {
    int v = 0;
    for (int k = 0; k < 4; k++) {
        int h = hexval(u[k]);
        if (h < 0) return -1;
        v = v << 4 | h;
    }
    return v;
}

/* findings._decode, from in[0:n] to out (no longer): every escape (%XX above 127 as its
 * surrogateescape character), IIS's %uXXXX, then overlong UTF-8 read without its checks
 * (findings._LAX: "\xc0\xae" is "."), then "\\" as "/".  Returns out's length. */
static Py_ssize_t lax_decode(const Py_UCS4 *in, Py_ssize_t n, Py_UCS4 *out) {
    Py_ssize_t k = 0;
    int lax = 0; /* a character the second loop may change: "\\", or one from U+DCC0 on */
    for (Py_ssize_t i = 0; i < n;) {
        Py_UCS4 c = in[i];
        int v;
        if (c != '%') {
            i++;
        } else if (n - i >= 6 && (in[i + 1] | 0x20) == 'u' && (v = hex4(in + i + 2)) >= 0) {
            c = (Py_UCS4)v;
            i += 6;
        } else if (n - i >= 3 && hexval(in[i + 1]) >= 0 && hexval(in[i + 2]) >= 0) {
            v = hexval(in[i + 1]) << 4 | hexval(in[i + 2]);
            c = (Py_UCS4)(v < 0x80 ? v : 0xDC00 + v);
            i += 3;
        } else {
            i++;
        }
        lax |= c == '\\' || c >= 0xDCC0;
        out[k++] = c;
    }
    if (!lax) return k; /* the second loop would copy every character as it is */
    Py_ssize_t m = 0;
    for (Py_ssize_t i = 0; i < k;) { /* in place: the output never runs ahead of the input */
        Py_UCS4 c = out[i];
        int size = 0;
        if ((c == 0xDCC0 || c == 0xDCC1) && k - i >= 2)
            size = 2;
        else if (c == 0xDCE0 && k - i >= 3 && out[i + 1] >= 0xDC80 && out[i + 1] <= 0xDC9F)
            size = 3;
        else if (c == 0xDCF0 && k - i >= 4 && out[i + 1] >= 0xDC80 && out[i + 1] <= 0xDC8F)
            size = 4;
        if (size) { /* a character's low byte, as findings._decode's lax() reads it */
            Py_UCS4 v = c & (size == 2 ? 0x1F : size == 3 ? 0x0F : 0x07);
            for (int j = 1; j < size; j++) v = v << 6 | (out[i + j] & 0x3F);
            out[m++] = v;
            i += size;
        } else {
            out[m++] = c == '\\' ? '/' : c;
            i++;
        }
    }
    return m;
}

/* Whether lax_decode may change u[0:n]: only where it meets a "%", the lead of an overlong
 * sequence its second loop reads, or a "\\" (which an overlong sequence may have made).  Where
 * it does not, a decode leaves the path as findings.path reads it, which climbs no higher. */
static int decodes(const Py_UCS4 *u, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_UCS4 c = u[i];
        if (c == '%' || c == '\\' || c == 0xDCC0 || c == 0xDCC1 || c == 0xDCE0 || c == 0xDCF0)
            return 1;
    }
    return 0;
}

/* The characters a "." of a decoded path can come from: 2 for a dot source ("." itself, the "%"
 * of an escape, a surrogateescape'd raw byte U+DC80..U+DCFF, which an overlong sequence starts
 * with), 1 for the other characters of an escape ("%2e", "%u002e", "%c0%ae", "%252e": hex digits
 * and "u"), 0 for the rest.  Made once by make_pct_strings(). */
static unsigned char dot_stuff[256];

/* Whether two lax decodes (lax_decode, twice) of the path target[s:e] may hold a ".." segment:
 * each "." of a decode's output comes from its own run of the input that holds a dot source
 * ("%2e" -> ".", "%u002e" -> ".", "%c0" "%ae" -> ".", "%25" "2e" -> "%2e" -> "."), and made of
 * escape characters only; the two "." of a ".." are side by side, so their runs are one run of
 * escape characters with two dot sources in it.  No such run: no decode climbs, and
 * decoded_climb() needs no decode (most paths a trick marks: a raw "\", an escaped "/"). */
static int may_decode_dotdot(State *st, Py_ssize_t s, Py_ssize_t e) {
    int sources = 0;
    const Py_UCS1 *s1 = st->s1;
    for (Py_ssize_t i = s; i < e; i++) {
        Py_UCS4 c = s1 ? s1[i] : CH(st, i);
        int k = c < 256 ? dot_stuff[c] : c >= 0xDC80 && c <= 0xDCFF ? 2 : 0;
        sources = k ? sources + (k == 2) : 0;
        if (sources == 2) return 1;
    }
    return 0;
}

/* decoded-dot-segment-above-root: a ".." that one or two decodes make climb above the root of
 * the path target[s:e], where the raw path does not (the decodes a backend behind the proxy may
 * make: CWE-174).  0, or -1 with an exception set. */
static int decoded_climb(State *st, Py_ssize_t s, Py_ssize_t e) {
    for (int k = 0; k < st->nfindings; k++)
        if (st->findings[k].rule == F_ABOVE_ROOT && st->findings[k].component == C_PATH) return 0;
    if (!may_decode_dotdot(st, s, e)) return 0;
    Py_ssize_t n = e - s;
    Py_UCS4 *buf = PyMem_Malloc((size_t)(3 * n + 1) * sizeof(Py_UCS4));
    if (!buf) { PyErr_NoMemory(); return -1; }
    Py_UCS4 *raw = buf, *once = buf + n, *twice = buf + 2 * n;
    for (Py_ssize_t i = s; i < e; i++) { /* the path with "\\" as "/" */
        Py_UCS4 c = CH(st, i);
        raw[i - s] = c == '\\' ? '/' : c;
    }
    int rc = 0;
    if (!climbs_escaped(raw, n) && decodes(raw, n)) {
        Py_ssize_t n1 = lax_decode(raw, n, once), n2 = 0;
        const Py_UCS4 *view = climbs(once, n1) ? once : NULL;
        if (!view && decodes(once, n1)) {
            n2 = lax_decode(once, n1, twice);
            if (climbs(twice, n2)) view = twice;
        }
        if (view) {
            Py_ssize_t len = view == once ? n1 : n2;
            PyObject *detail =
                PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, view, len < 200 ? len : 200);
            rc = add_finding_obj(st, F_DECODED_CLIMB, C_PATH, s, detail);
        }
    }
    PyMem_Free(buf);
    return rc;
}

/* ---- findings._nfkc_separators: what Unicode compatibility normalization (NFKC, UAX #15)
 * makes of a segment, as IIS's "best fit" mappings and Python's and Java's NFKC on file names
 * read it.  The characters that may make a separator are few (findings.NFKC_SEPARATORS); the
 * normalization itself is unicodedata's, called for a segment that holds one of them. */

/* How long the findings._NFKC_CHAR match at target[j] is: 1 for a raw character, 9 for one
 * escaped as its three UTF-8 bytes (every one of them is in the BMP above U+07FF); 0: none. */
static int nfkc_match(State *st, Py_ssize_t j, Py_ssize_t e) {
    Py_UCS4 c = CH(st, j);
    if (c != '%') return nfkc_char(c);
    int b0 = escaped_byte(st, j, e), b1 = escaped_byte(st, j + 3, e), b2 = escaped_byte(st, j + 6, e);
    if (b0 < 0xE0 || b0 > 0xEF || b1 < 0x80 || b1 > 0xBF || b2 < 0x80 || b2 > 0xBF) return 0;
    return nfkc_char((Py_UCS4)((b0 & 0x0F) << 12 | (b1 & 0x3F) << 6 | (b2 & 0x3F))) ? 9 : 0;
}

static Py_ssize_t separators(PyObject *text) {
    Py_ssize_t n = 0;
    for (Py_ssize_t k = 0; k < PyUnicode_GET_LENGTH(text); k++) {
        Py_UCS4 c = PyUnicode_READ_CHAR(text, k);
        n += c == '/' || c == '\\' || c == '%';
    }
    return n;
}

/* Whether NFKC makes the segment a dot segment (before a ";": a servlet container's path
 * parameter goes) or gives it more separators; -1: an exception. */
static int nfkc_makes_separator(PyObject *segment) {
    static PyObject *unquote, *normalize;
    if (!unquote) {
        PyObject *parse = PyImport_ImportModule("urllib.parse");
        PyObject *ud = PyImport_ImportModule("unicodedata");
        unquote = parse ? PyObject_GetAttrString(parse, "unquote") : NULL;
        normalize = ud ? PyObject_GetAttrString(ud, "normalize") : NULL;
        Py_XDECREF(parse);
        Py_XDECREF(ud);
        if (!unquote || !normalize) { Py_CLEAR(unquote); Py_CLEAR(normalize); return -1; }
    }
    PyObject *decoded = PyObject_CallFunction(unquote, "Oss", segment, "utf-8", "surrogateescape");
    PyObject *folded = decoded ? PyObject_CallFunction(normalize, "sO", "NFKC", decoded) : NULL;
    int rc = -1;
    if (folded) {
        Py_ssize_t semi = PyUnicode_FindChar(folded, ';', 0, PyUnicode_GET_LENGTH(folded), 1);
        Py_ssize_t head = semi < 0 ? PyUnicode_GET_LENGTH(folded) : semi;
        int dots = head >= 1 && head <= 2 && PyUnicode_READ_CHAR(folded, 0) == '.' &&
                   PyUnicode_READ_CHAR(folded, head - 1) == '.';
        rc = dots || separators(folded) > separators(decoded);
    }
    Py_XDECREF(decoded);
    Py_XDECREF(folded);
    return rc;
}

/* nfkc-separator on the path target[s:e], segment by segment (cut at "/" and "\\"), at the
 * segment's first such character; 0, or -1 with an exception set. */
static int nfkc_separators(State *st, Py_ssize_t s, Py_ssize_t e) {
    for (Py_ssize_t seg = s; seg < e;) {
        Py_ssize_t end = seg, at = -1;
        int len = 0;
        for (; end < e && CH(st, end) != '/' && CH(st, end) != '\\'; end++)
            if (at < 0 && (len = nfkc_match(st, end, e)) > 0) at = end;
        if (at >= 0) {
            PyObject *segment = target_slice(st, seg, end);
            int found = segment ? nfkc_makes_separator(segment) : -1;
            Py_XDECREF(segment);
            if (found < 0) return -1;
            if (found && add_finding_obj(st, F_NFKC, C_PATH, at, target_slice(st, at, at + len)) < 0)
                return -1;
        }
        seg = end + 1;
    }
    return 0;
}

/* findings.path on an absolute path target[s:e] (findings.escapes come with the character
 * rules): escaped slashes, the first backslash, dot segments raw or escaped (counting how far
 * ".." climbs), "..;" parameters. */
static int path_findings(State *st, Py_ssize_t s, Py_ssize_t e, const PathMarks *m, int dotted) {
    if (m->escaped_slash >= 0) {
        Py_ssize_t at = m->escaped_slash;
        FindRec *f = add_finding(st, F_ESCAPED_SLASH, C_PATH, at, at, at + 3);
        if (f) { /* the path's first finding: always a new one */
            f->count = m->slashes;
            for (Py_ssize_t k = 0; k < m->slashes && k < MAX_OFFSETS; k++) f->offs[k] = m->slash_at[k];
        }
    }
    if (m->backslash >= 0)
        add_finding(st, F_BACKSLASH, C_PATH, m->backslash, m->backslash, m->backslash + 1);
    if (m->escaped_dot >= 0) escaped_dots(st, s, m->escaped_dot, e);
    if (m->nfkc && nfkc_separators(st, s, e) < 0) return -1;
    /* Every finding of the segment walk below is about a segment that starts with "." or "%2E"
     * (".", "..", "..;"): without one (dotted), the walk is skipped. */
    if (dotted) {
        Py_ssize_t depth = 0, seg = s;
        for (Py_ssize_t i = 0; seg <= e; i++) {
            Py_ssize_t end = seg, semi = -1;
            if (m->backslash < 0) {
                end = find(st, '/', seg, e);
                if (end < 0) end = e;
            } else { /* IIS and every WHATWG parser read "\\" as "/": so does findings.path */
                while (end < e && CH(st, end) != '/' && CH(st, end) != '\\') end++;
            }
            /* "." and ".." are at most 6 characters ("%2E%2E"); "..;" starts with "." or "%" */
            int escaped, n = end - seg <= 6 ? dots(st, seg, end, &escaped) : 0;
            if (n == 0 && seg < end && (CH(st, seg) == '.' || CH(st, seg) == '%'))
                semi = find(st, ';', seg, end);
            if (n > 0) {
                add_finding(st, escaped ? F_ENCODED_DOT : F_DOT, C_PATH, seg, seg, end);
                if (n == 2 && i > 0) {
                    if (depth == 0)
                        add_finding(st, F_ABOVE_ROOT, C_PATH, seg, seg, end);
                    else
                        depth--;
                }
            } else if (semi >= 0 && dots(st, seg, semi, &escaped) > 0) {
                add_finding(st, F_PARAM_DOTDOT, C_PATH, seg, seg, end); /* "/..;/": Tomcat climbs */
            } else if (i > 0) {
                depth++; /* RFC 3986 §5.2.4 counts empty segments too */
            }
            seg = end + 1;
        }
    }
    return m->trick ? decoded_climb(st, s, e) : 0;
}

static int buf_is_dots(const char *p, Py_ssize_t n) {
    return (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.');
}

/* rules.remove_dot_segments on path[0:n] (which starts with "/"), into out.  Linear: the kept
 * segments are a stack of offsets into path. */
static int remove_dot_segments(const char *path, Py_ssize_t n, Buf *out) {
    Py_ssize_t nseg = n, kept_here[2 * 128]; /* no more segments than characters */
    if (n > 128) {
        nseg = 1;
        for (Py_ssize_t i = 1; i < n; i++) nseg += path[i] == '/';
    }
    Py_ssize_t *kept = nseg <= 128 ? kept_here : PyMem_Malloc((size_t)nseg * 2 * sizeof(Py_ssize_t));
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
    if (kept != kept_here) PyMem_Free(kept);
    return rc;
}

static int has_dot_segments(const char *p, Py_ssize_t n) {
    /* a "." that starts a segment, then another "." or not, then the segment's end */
    for (const char *q = p, *end = p + n; (q = memchr(q, '.', (size_t)(end - q))); q++) {
        if (q > p && q[-1] != '/') continue;
        const char *r = q + 1;
        if (r < end && *r == '.') r++;
        if (r == end || *r == '/') return 1;
    }
    return 0;
}

/* ---- the driver: driver.py's steps for the handled targets, one function per component.
 *
 * Each step reads the input from st->pos, writes its component to st->out and returns OK, FAIL
 * (a Python exception is set) or REFUSE (the target is not one this twin handles: decline()
 * names why, for bench/core.py's table of declines). */

/* The form argument, as split.FORMS names them. */
enum { FORM_AUTO, FORM_ORIGIN, FORM_ABSOLUTE, FORM_AUTHORITY, FORM_ASTERISK, FORM_OTHER };
static const char *const FORM_NAMES[FORM_OTHER] = {
    "auto", "origin", "absolute", "authority", "asterisk",
};
static PyObject *form_str[FORM_OTHER], *form_key, *host_key, *twin_key;

static int form_code(PyObject *form) {
    for (int k = 0; k < FORM_OTHER; k++)
        if (form == form_str[k]) return k; /* the interned literals of the callers */
    for (int k = 0; k < FORM_OTHER; k++)
        if (PyUnicode_CompareWithASCIIString(form, FORM_NAMES[k]) == 0) return k;
    return FORM_OTHER;
}

/* split._AUTHORITY_FORM: "auto" reads a target as authority-form (RFC 9112 §3.2.3) when no
 * scheme can start it: an IP-literal or a name starting with a digit, then ":" and digits. */
static int authority_form(State *st) {
    Py_ssize_t len = st->len, k = 0;
    if (len == 0) return 0;
    Py_UCS4 c = CH(st, 0);
    if (c == '[') {
        for (k = 1; k < len && CH(st, k) != ']'; k++) {
            c = CH(st, k);
            if (c == '/' || c == '?' || c == '#' || c == '@') return 0;
        }
        if (k == len) return 0;
        k++;
    } else if (c >= '0' && c <= '9') {
        for (k = 1; k < len && CH(st, k) != ':'; k++) {
            c = CH(st, k);
            if (c == '/' || c == '?' || c == '#' || c == '@' || c == '[' || c == ']') return 0;
        }
    } else {
        return 0;
    }
    if (k + 1 >= len || CH(st, k) != ':') return 0;
    for (k++; k < len; k++)
        if (!(CH(st, k) >= '0' && CH(st, k) <= '9')) return 0;
    return 1;
}

/* origin-form (RFC 9112 §3.2.1), absolute-form (§3.2.2) or authority-form (§3.2.3); "auto"
 * tells them apart as split.py does for the shapes handled here.  asterisk-form is steps'. */
static int step_form(State *st, int form) {
    Py_ssize_t len = st->len;
    if (form == FORM_AUTO) {
        st->origin = len > 0 && CH(st, 0) == '/' && !(len > 1 && CH(st, 1) == '/');
        st->authority = !st->origin && authority_form(st);
    } else if (form == FORM_AUTHORITY) {
        st->authority = 1;
    } else if (form == FORM_ORIGIN)
        st->origin = 1;
    else if (form == FORM_ABSOLUTE)
        st->origin = 0;
    else
        return decline(st, D_FORM);
    /* RFC 9112 §3.2.1 origin-form = absolute-path: it starts with "/".  Given as origin-form,
     * "//a" is such a path, its first segment empty (as driver.py reads it): served, with the
     * dot-prefix guard only where dot removal ran (step_dots).  In "auto" form "//a" is a
     * network-path reference (RFC 3986 §4.2), left to step_scheme, which declines it. */
    if (st->origin && !(len > 0 && CH(st, 0) == '/')) return decline(st, D_ORIGIN);
    return OK;
}

/* Whether a scheme's name (shorter than SCHEME_MAX) is p[0:n]: a loop, cheaper than memcmp's
 * call. */
static inline int same_name(const char *name, const char *p, Py_ssize_t n) {
    for (Py_ssize_t k = 0; k < n; k++)
        if (name[k] != p[k]) return 0;
    return 1;
}

/* The target starts with schemes[k] "://", its letters capitals where cased has a bit (bit j:
 * letter j): lowercase-scheme (RFC 3986 §6.2.2.1) when any is, then the scheme written out. */
static int scheme_found(State *st, int k, unsigned cased) {
    Py_ssize_t n = schemes[k].n;
    st->scheme = k;
    if (cased) {
        if (!(st->flags & FL_LOWER_SCHEME)) return decline(st, D_SCHEME);
        PyObject **before = &schemes[k].spelled[cased];
        if (!*before) *before = target_slice(st, 0, n);
        if (!*before ||
            whole_edit(st, R_LOWER_SCHEME, C_SCHEME, 0, n, Py_NewRef(*before),
                       Py_NewRef(schemes[k].name_str)) < 0)
            return FAIL;
    }
    if (buf_put(&st->out, schemes[k].name, n + 3) < 0) return FAIL;
    st->pos = n + 3;
    return OK;
}

/* Which of the letters p[0:n] (n <= 8) are capitals, bit j for letter j, from upper: 0x20 in
 * each byte of the target's first word that is a capital, 0 elsewhere.  Little-endian, byte j
 * of the word is its bits 8j..8j+7: one multiplication gathers bit 5 of each byte into the top
 * byte (the partial products are distinct powers of 2: no carries), else a loop. */
static inline unsigned capitals(uint64_t upper, const Py_UCS1 *p, Py_ssize_t n) {
#if PY_LITTLE_ENDIAN
    (void)p;
    (void)n;
    return (unsigned)(((upper >> 5) * UINT64_C(0x0102040810204080)) >> 56);
#else
    (void)upper;
    unsigned cased = 0;
    for (Py_ssize_t j = 0; j < n; j++) cased |= (unsigned)!(p[j] & 0x20) << j;
    return cased;
#endif
}

/* RFC 3986 §3.1 scheme "://", the scheme one of policy.DEFAULT_PORTS (http, https, ws, wss);
 * lowercase-scheme (§6.2.2.1). */
static int step_scheme(State *st) {
    char sch[SCHEME_MAX];
    Py_ssize_t n = 0, i = 0, len = st->len;
    if (st->s1 && len >= 8) { /* most targets: their first 8 bytes against each scheme "://" */
        const Py_UCS1 *p = st->s1;
        uint64_t word;
        memcpy(&word, p, 8);
        for (int k = 0; k < nschemes; k++) {
            /* x | 0x20 is a lowercase letter only for a letter x; a capital lacks 0x20 */
            if (((word | schemes[k].fold) & schemes[k].mask) != schemes[k].word) continue;
            if ((word & schemes[k].mask) == schemes[k].word) { /* lowercase, as it stays */
                st->scheme = k;
                st->pos = schemes[k].n + 3;
                return buf_put(&st->out, (const char *)p, st->pos) < 0 ? FAIL : OK;
            }
            return scheme_found(st, k, capitals(~word & schemes[k].fold, p, schemes[k].n));
        }
    }
    unsigned cased = 0; /* anything else: the full reading, which says why it declines */
    while (i < len && n < SCHEME_MAX) {
        Py_UCS4 c = CH(st, i);
        if (c == ':') break;
        if (!((c | 0x20) >= 'a' && (c | 0x20) <= 'z')) return decline(st, D_SCHEME);
        cased |= (unsigned)!(c & 0x20) << n;
        sch[n++] = (char)(c | 0x20);
        i++;
    }
    if (n == 0 || i + 2 >= len || CH(st, i) != ':' || CH(st, i + 1) != '/' ||
        CH(st, i + 2) != '/')
        return decline(st, D_RELATIVE);
    for (int k = 0; k < nschemes; k++)
        if (schemes[k].n == n && same_name(schemes[k].name, sch, n)) return scheme_found(st, k, cased);
    return decline(st, D_OTHER_SCHEME);
}

/* lowercase-host (RFC 3986 §6.2.2.1) on target[hs:he], written to the output, as
 * rules.lowercase_host records it: a character rule's edits, made of the input's own letters:
 * one for a letters-digits-hyphens name (ldh), one per run of capitals otherwise (such a name
 * here has no escape: nothing between the runs changes, so that they fold as scan()'s do). */
static int lowercase_host(State *st, Py_ssize_t hs, Py_ssize_t he, int ldh, int cased) {
    Buf *out = &st->out;
    Py_ssize_t out_host = out->n, run = -1, first = st->nedits;
    if (buf_reserve(out, he - hs) < 0) return FAIL;
    char *o = out->p + out_host;
    out->n += he - hs;
    const int kind = st->kind; /* locals: the stores through o may alias st's fields */
    const void *const data = st->data;
    if (!(st->flags & FL_LOWER_HOST) || !cased) { /* nothing to lowercase: the name as it is */
        if (kind == PyUnicode_1BYTE_KIND) {
            memcpy(o, (const char *)data + hs, (size_t)(he - hs));
        } else {
            for (Py_ssize_t k = hs; k < he; k++) *o++ = (char)PyUnicode_READ(kind, data, k);
        }
        return OK;
    }
    if (ldh) { /* the common case: one edit for the whole name */
        if (kind == PyUnicode_1BYTE_KIND) {
            const Py_UCS1 *p = (const Py_UCS1 *)data + hs;
            Py_ssize_t n = he - hs, k = 0;
            for (; k + 8 <= n; k += 8) { /* eight letters at a time, in a word */
                uint64_t w, high = UINT64_C(0x8080808080808080);
                memcpy(&w, p + k, 8);
                /* The name is ASCII (letters, digits, "-", "."): no byte's sum below carries
                 * into the next.  Bit 7 of byte + 0x3F: byte >= 'A'; of byte + 0x25: > 'Z'. */
                uint64_t upper = (w + UINT64_C(0x3F3F3F3F3F3F3F3F)) &
                                 ~(w + UINT64_C(0x2525252525252525)) & high;
                w |= upper >> 2; /* 0x80 >> 2: 0x20, the bit a capital lacks */
                memcpy(o + k, &w, 8);
            }
            for (; k < n; k++) o[k] = (char)(p[k] | ((unsigned)(p[k] - 'A') < 26) << 5);
        } else {
            for (Py_ssize_t k = hs; k < he; k++) {
                Py_UCS4 c = PyUnicode_READ(kind, data, k);
                *o++ = (char)(c >= 'A' && c <= 'Z' ? c | 0x20 : c);
            }
        }
        /* the host's first edit: no other of its component to merge with, and its text after
         * made here rather than by finish_afters' loop */
        if (new_char_edit(st, R_LOWER_HOST, C_HOST, hs, he, out_host, he - hs) < 0) return FAIL;
        EditRec *e = &st->edits[st->nedits - 1];
        e->after = after_str(out->p + out_host, he - hs);
        return e->after ? OK : FAIL;
    }
    for (Py_ssize_t k = hs; k <= he; k++) {
        Py_UCS4 c = k < he ? CH(st, k) : 0;
        int upper = c >= 'A' && c <= 'Z';
        if (run >= 0 && !upper) {
            Py_ssize_t at = out_host + (run - hs);
            if (char_edit(st, R_LOWER_HOST, C_HOST, run, k, at, k - run) < 0) return FAIL;
            run = -1;
        }
        if (k == he) break;
        if (upper && run < 0) run = k;
        *o++ = (char)(upper ? c | 0x20 : c);
    }
    return finish_afters(st, first, out);
}

/* rules.parse_ipv4's number: "0x" hex (empty: 0), "0" octal, else decimal; -1: not a number;
 * -2: one of int()'s own prefixes inside ("0x0x1"), which Python's int() reads: not here.
 * Values saturate above 2**40: any of them is out of range alike. */
static long long ipv4_number(const char *p, Py_ssize_t n) {
    int base = 10;
    if (n >= 2 && p[0] == '0' && (p[1] | 0x20) == 'x') {
        base = 16;
        p += 2;
        n -= 2;
    } else if (n > 1 && p[0] == '0') {
        base = 8;
        p += 1;
        n -= 1;
    }
    if (n >= 2 && p[0] == '0' && ((p[1] | 0x20) == 'x' || (p[1] | 0x20) == 'o' ||
                                  (p[1] | 0x20) == 'b'))
        return -2;
    long long value = 0;
    for (Py_ssize_t k = 0; k < n; k++) {
        int d = hexval((unsigned char)p[k]);
        if (d < 0 || d >= base) return -1;
        value = value * base + d;
        if (value > (1LL << 40)) value = 1LL << 40;
    }
    return value;
}

/* rules.parse_ipv4 (the WHATWG IPv4 parser) on the host text p[0:n], ASCII: the dotted-decimal
 * form into dotted (16 bytes), its length; 0: not an IPv4 address; -2: Python's to judge. */
static int parse_ipv4(const char *p, Py_ssize_t n, char *dotted) {
    long long nums[4];
    int parts = 0;
    if (n > 1 && p[n - 1] == '.') n--; /* one trailing "." */
    for (Py_ssize_t k = 0; k <= n;) {
        Py_ssize_t end = k;
        while (end < n && p[end] != '.') end++;
        if (end == k || parts == 4) return 0;
        long long v = ipv4_number(p + k, end - k);
        if (v < 0) return (int)(v == -2 ? -2 : 0);
        nums[parts++] = v;
        k = end + 1;
    }
    for (int k = 0; k < parts - 1; k++)
        if (nums[k] > 255) return 0;
    if (nums[parts - 1] >= 1LL << (8 * (5 - parts))) return 0;
    unsigned long long value = (unsigned long long)nums[parts - 1];
    for (int k = 0; k < parts - 1; k++) value += (unsigned long long)nums[k] << (8 * (3 - k));
    int k = 0;
    for (int shift = 24; shift >= 0; shift -= 8) { /* "%u.%u.%u.%u", without sprintf's cost */
        unsigned octet = (unsigned)(value >> shift & 255);
        if (octet >= 100) dotted[k++] = (char)('0' + octet / 100);
        if (octet >= 10) dotted[k++] = (char)('0' + octet / 10 % 10);
        dotted[k++] = (char)('0' + octet % 10);
        if (shift) dotted[k++] = '.';
    }
    dotted[k] = 0;
    return k;
}

/* rules.ends_in_number on the host text p[0:n]: a last label (trailing dots aside) of digits,
 * or starting "0x". */
static int ends_in_number(const char *p, Py_ssize_t n) {
    while (n > 0 && p[n - 1] == '.') n--;
    Py_ssize_t label = n;
    while (label > 0 && p[label - 1] != '.') label--;
    if (label == n || !(p[label] >= '0' && p[label] <= '9')) return 0;
    if (p[label] == '0' && n - label >= 2 && (p[label + 1] | 0x20) == 'x') return 1;
    for (Py_ssize_t k = label; k < n; k++)
        if (!(p[k] >= '0' && p[k] <= '9')) return 0;
    return 1;
}

/* The host as the output has it now, from out_host on, replaced by text (a rewrite by rule,
 * from the host's text in the output), as driver.py's structural() records it. */
static int rewrite_host(State *st, int rule, Py_ssize_t hs, Py_ssize_t he, Py_ssize_t out_host,
                        const char *text, Py_ssize_t n) {
    Buf *out = &st->out;
    PyObject *before = ascii_str(out->p + out_host, out->n - out_host);
    if (whole_edit(st, rule, C_HOST, hs, he, before, ascii_str(text, n)) < 0) return FAIL;
    memmove(out->p + out_host, text, (size_t)n);
    out->n = out_host + n;
    return OK;
}

/* strip-host-dot (RFC 1034 §3.1) and numeric-host (WHATWG URL §4.4) on the host just written
 * from out_host on; numeric-host's finding whether or not the rule is on.  digits: the host may
 * hold a digit (0: it holds none, so that it ends in no number, most names). */
static int host_dot_and_number(State *st, Py_ssize_t hs, Py_ssize_t he, Py_ssize_t out_host,
                               int digits) {
    Buf *out = &st->out;
    const char *p = out->p + out_host;
    Py_ssize_t n = out->n - out_host, kept = n;
    while (kept > 0 && p[kept - 1] == '.') kept--;
    if ((st->flags & FL_STRIP_DOT) && kept < n && kept > 0) {
        if (rewrite_host(st, R_STRIP_DOT, hs, he, out_host, p, kept) < 0) return FAIL;
        n = kept;
    }
    if (!digits || !ends_in_number(p, n)) return OK;
    char dotted[16];
    int k = parse_ipv4(p, n, dotted);
    if (k == -2) return decline(st, D_INT_PREFIX);
    if (k == 0 || (k == n && memcmp(dotted, p, (size_t)n) == 0)) return OK;
    PyObject *text = ascii_str(p, n);
    if (!text || add_finding_obj(st, F_NUMERIC_HOST, C_HOST, hs, text) < 0) return FAIL;
    if (st->flags & FL_NUMERIC_HOST) return rewrite_host(st, R_NUMERIC_HOST, hs, he, out_host,
                                                         dotted, k);
    return OK;
}

/* The classes of the characters of a reg-name host (RFC 3986 §3.2.2), from setup(): each one a
 * host may have none of, so that one "or" over its characters tells them all.  (Bits 5 and 6
 * are authority_class's marks.) */
enum { H_DISALLOWED = 1, H_NON_LDH = 2, H_UPPER = 4, H_INVALID = 8, H_NON_ASCII = 16, H_DIGIT = 128 };
static unsigned char host_class[256];

/* lowercase-host (§6.2.2.1) on a name the character rules then rewrite (escapes, characters to
 * escape), as rules.lowercase_host records it: one edit per run of capitals outside the escapes'
 * hex digits, each of the input's own letters.  Their texts after come from the name as this
 * pass leaves it (low), which is what the character pass reads next. */
static int lowercase_runs(State *st, Py_ssize_t hs, Py_ssize_t he) {
    char here[128];
    Buf low = {here, 0, sizeof here, here};
    Py_ssize_t run = -1, first = st->nedits;
    int rc = buf_reserve(&low, he - hs) < 0 ? FAIL : OK;
    for (Py_ssize_t k = hs; rc == OK && k <= he; k++) {
        Py_UCS4 c = k < he ? CH(st, k) : 0;
        int upper = c >= 'A' && c <= 'Z';
        if (run >= 0 && !upper) {
            rc = char_edit(st, R_LOWER_HOST, C_HOST, run, k, run - hs, k - run);
            run = -1;
        }
        if (k == he) break;
        if (c == '%' && k + 2 < he && hex_at(st, k + 1, he) && hex_at(st, k + 2, he)) {
            low.p[low.n++] = '%'; /* an escape: its hex digits are uppercase-escape's (§2.1) */
            low.p[low.n++] = (char)CH(st, k + 1);
            low.p[low.n++] = (char)CH(st, k + 2);
            k += 2;
            continue;
        }
        if (upper && run < 0) run = k;
        low.p[low.n++] = (char)(upper ? c | 0x20 : c);
    }
    if (rc == OK) rc = finish_afters(st, first, &low);
    buf_free(&low);
    /* The reference keeps this pass's last edit open into the character pass, which folds into
     * it past FOLD_AFTER edits (rules.Edits): a host that hostile is the reference's. */
    if (rc == OK && st->nedits > first && st->in_component >= fold_after)
        return decline(st, D_HOST_FOLD);
    return rc;
}

/* findings.host on the host target[hs:he] that holds a ":" or a "[". */
static int host_finding(State *st, Py_ssize_t hs, Py_ssize_t he) {
    if (CH(st, hs) == '[')
        return add_finding_obj(st, F_INVALID_LITERAL, C_HOST, hs, target_slice(st, hs, he));
    Py_ssize_t colon = he;
    while (colon > hs && CH(st, colon - 1) != ':') colon--;
    if (colon == hs) return 0; /* a "[" inside: no finding */
    colon--;
    return add_finding_obj(st, F_INVALID_PORT, C_HOST, colon, target_slice(st, colon, he));
}

/* RFC 3986 §3.2.2 reg-name in ASCII (an IDN is Python's): lowercase-host, the character rules
 * (the host's own escapes decode to lowercase letters, §6.2.2.1), strip-host-dot, numeric-host,
 * as driver.py's host steps. */
static int step_host(State *st, Py_ssize_t hs, Py_ssize_t he) {
    if (he == hs) return decline(st, D_EMPTY_HOST);
    int any = st->host_any; /* authority_marks read them, for a 1-byte target */
    if (any >= 0) {
        if (any & H_NON_ASCII) return decline(st, D_IDN);
    } else if (st->s1) {
        any = 0;
        for (const Py_UCS1 *p = st->s1 + hs, *end = st->s1 + he; p < end; p++) any |= host_class[*p];
        if (any & H_NON_ASCII) return decline(st, D_IDN);
    } else {
        any = 0;
        for (Py_ssize_t k = hs; k < he; k++) {
            Py_UCS4 c = CH(st, k);
            if (c >= 128) return decline(st, D_IDN);
            any |= host_class[c];
        }
    }
    /* findings.host: a "[" that opens no valid IP-literal, or a ":" whose port is no number.
     * Both stay in the host, escaped there: the authority splits where it did in the input. */
    if ((any & H_INVALID) && host_finding(st, hs, he) < 0) return FAIL;
    Py_ssize_t out_host = st->out.n;
    int rc;
    if (!(any & H_DISALLOWED)) {
        rc = lowercase_host(st, hs, he, !(any & H_NON_LDH), any & H_UPPER);
    } else { /* two passes, as the reference makes them: lowercase-host, then the characters */
        int lower = st->flags & FL_LOWER_HOST;
        rc = lower && (any & H_UPPER) ? lowercase_runs(st, hs, he) : OK;
        st->host_lower = lower;
        if (rc == OK) rc = scan(st, C_HOST, hs, he, &st->out);
        st->host_lower = 0;
    }
    /* the name as written is the input's, lowercased, unless the character rules rewrote it
     * (a decoded "%31" is a digit) */
    int digits = (any & H_DIGIT) || (any & H_DISALLOWED);
    return rc == OK ? host_dot_and_number(st, hs, he, out_host, digits) : rc;
}

/* ipaddress.IPv4Address's grammar on target[s:e]: four decimal octets up to 255, without
 * leading zeros. */
static int ipv4_valid(State *st, Py_ssize_t s, Py_ssize_t e) {
    int octets = 0;
    for (Py_ssize_t k = s; k <= e; k++) {
        Py_ssize_t end = k;
        int v = 0;
        while (end < e && CH(st, end) >= '0' && CH(st, end) <= '9' && end - k < 4)
            v = v * 10 + (int)(CH(st, end++) - '0');
        if (end == k || end - k > 3 || v > 255 || (end - k > 1 && CH(st, k) == '0')) return 0;
        if (++octets > 4 || (end < e && CH(st, end) != '.')) return 0;
        k = end;
    }
    return octets == 4;
}

/* ipaddress.IPv6Address's grammar (_ip_int_from_string) on target[s:e], step by step: the parts
 * between ":", an IPv4 address as the last part (two groups), one "::" at most, eight groups of
 * up to four hex digits in all. */
static int ipv6_valid(State *st, Py_ssize_t s, Py_ssize_t e) {
    Py_ssize_t start[10], end[10];
    int parts = 0, groups;
    for (Py_ssize_t k = s, from = s; k <= e; k++) {
        if (k < e && CH(st, k) != ':') continue;
        if (parts == 9) return 0; /* more than nine parts: too many, even before the IPv4 */
        start[parts] = from;
        end[parts++] = k;
        from = k + 1;
    }
    if (parts < 3) return 0;
    groups = parts;
    if (find(st, '.', start[parts - 1], end[parts - 1]) >= 0) {
        if (!ipv4_valid(st, start[parts - 1], end[parts - 1])) return 0;
        groups++;
    }
    if (groups > 9) return 0;
    int skip = -1;
    for (int k = 1; k < parts - 1; k++) {
        if (start[k] != end[k]) continue;
        if (skip >= 0) return 0;
        skip = k;
    }
    int first_empty = start[0] == end[0], last_empty = start[parts - 1] == end[parts - 1];
    if (skip >= 0) {
        int hi = skip, lo = groups - skip - 1;
        if (first_empty && --hi) return 0;
        if (last_empty && --lo) return 0;
        if (8 - (hi + lo) < 1) return 0;
    } else if (groups != 8 || first_empty || last_empty) {
        return 0;
    }
    /* every part but the empty ones and the IPv4 address: 1 to 4 hex digits */
    int v4 = groups > parts;
    for (int k = 0; k < parts - v4; k++) {
        if (end[k] - start[k] > 4) return 0;
        for (Py_ssize_t j = start[k]; j < end[k]; j++)
            if (hexval(CH(st, j)) < 0) return 0;
    }
    return 1;
}

/* RFC 3986 §3.2.2 IP-literal in target[hs:he] ("[" ... "]"), as driver.ip_literal: the address
 * lowercased (§6.2.2.1), an RFC 6874 zone ID kept in its case, its bare "%" repaired to "%25"
 * and its escapes normalized; an IPvFuture lowercased whole. */
static int step_ip_literal(State *st, Py_ssize_t hs, Py_ssize_t he) {
    Buf *out = &st->out;
    if (he - hs < 3 || CH(st, he - 1) != ']') return step_host(st, hs, he); /* driver.host_part: a reg-name, with a finding */
    if ((CH(st, hs + 1) | 0x20) == 'v') return decline(st, D_IPVFUTURE);
    Py_ssize_t as = hs + 1, ae = as;
    while (ae < he - 1 && (hexval(CH(st, ae)) >= 0 || CH(st, ae) == ':' || CH(st, ae) == '.'))
        ae++;
    Py_ssize_t zs = ae, ze = he - 1;
    int bare = 0;
    if (ae < he - 1) { /* charsets.IP_LITERAL's percent and zone */
        if (CH(st, ae) != '%') return step_host(st, hs, he); /* driver.host_part: a reg-name, with a finding */
        if (char_at(st, ae + 1, ze, '2') && char_at(st, ae + 2, ze, '5') && ae + 3 < ze) {
            zs = ae + 3;
        } else if (!(hex_at(st, ae + 1, ze) && hex_at(st, ae + 2, ze))) {
            zs = ae + 1;
            bare = 1;
        } else {
            return step_host(st, hs, he); /* driver.host_part: a reg-name, with a finding */
        }
        if (zs == ze) return step_host(st, hs, he); /* driver.host_part: a reg-name, with a finding */
        for (Py_ssize_t k = zs; k < ze; k++) {
            Py_UCS4 c = CH(st, k);
            if (c == '%' && hex_at(st, k + 1, ze) && hex_at(st, k + 2, ze)) {
                k += 2;
            } else if (c >= 128 || !unreserved[c]) {
                return step_host(st, hs, he); /* driver.host_part: a reg-name, with a finding */
            }
        }
    }
    if (!ipv6_valid(st, as, ae)) return step_host(st, hs, he); /* driver.host_part: a reg-name, with a finding */
    int cased = 0; /* hex digits A-F */
    for (Py_ssize_t k = as; k < ae; k++) cased |= CH(st, k) >= 'A' && CH(st, k) <= 'Z';
    if (buf_putc(out, '[') < 0 || lowercase_host(st, as, ae, 0, cased) < 0) return FAIL; /* ":" is no LDH */
    if (ae < ze) {
        if (buf_put(out, "%25", 3) < 0) return FAIL;
        if (bare && (st->flags & FL_STRICT))
            return refuse_repair(R_STRAY, C_HOST, ae,
                                 PyUnicode_FromString("bare '%' before an IPv6 zone ID"));
        if (bare) {
            if (whole_edit(st, R_STRAY, C_HOST, ae, ae + 1, NULL, Py_NewRef(pct_str[0x25])) < 0)
                return FAIL;
            st->edits[st->nedits - 1].chars = 1;
        }
        /* the zone's escapes by RFC 3986's unreserved set (ZoneID has no room for RFC 2396's
         * marks), no lowercasing */
        int flags = st->flags;
        st->flags &= ~FL_UNRESERVED_2396;
        int rc = scan(st, C_HOST, zs, ze, out);
        st->flags = flags;
        if (rc != OK) return rc;
    }
    return buf_putc(out, ']') < 0 ? FAIL : OK;
}

/* RFC 3986 §3.2.3 port = *DIGIT, after the ":" at colon: drop-empty-port, strip-port-zeros,
 * drop-default-port (§6.2.3). */
static int step_port(State *st, Py_ssize_t colon, Py_ssize_t pe) {
    Py_ssize_t ps = colon + 1, zs = ps;
    Buf *out = &st->out;
    if (ps == pe) {
        if (!(st->flags & FL_DROP_EMPTY_PORT) || st->authority)
            return buf_putc(out, ':') < 0 ? FAIL : OK;
        return whole_edit(st, R_DROP_EMPTY_PORT, C_PORT, colon, ps, Py_NewRef(colon_str),
                          Py_NewRef(empty_str)) < 0
                   ? FAIL
                   : OK;
    }
    if ((st->flags & FL_STRIP_PORT_ZEROS) && pe - ps > 1 && CH(st, ps) == '0') {
        while (zs < pe - 1 && CH(st, zs) == '0') zs++;
        if (whole_edit(st, R_STRIP_PORT_ZEROS, C_PORT, ps, pe, NULL,
                       target_slice(st, zs, pe)) < 0)
            return FAIL;
    }
    if ((st->flags & FL_DROP_DEFAULT_PORT) && st->scheme >= 0) {
        PyObject *port = schemes[st->scheme].port; /* ASCII digits */
        Py_ssize_t n = PyUnicode_GET_LENGTH(port);
        int same = n == pe - zs;
        for (Py_ssize_t k = 0; same && k < n; k++)
            same = CH(st, zs + k) == PyUnicode_1BYTE_DATA(port)[k];
        if (same)
            return whole_edit(st, R_DROP_DEFAULT_PORT, C_PORT, colon, pe,
                              Py_NewRef(schemes[st->scheme].colon_port), Py_NewRef(empty_str)) < 0
                       ? FAIL
                       : OK;
    }
    if (buf_reserve(out, pe - zs + 1) < 0) return FAIL;
    out->p[out->n++] = ':';
    for (Py_ssize_t k = zs; k < pe; k++) out->p[out->n++] = (char)CH(st, k); /* digits */
    return OK;
}

/* The characters authority_marks stops at, as bits 5 and 6, which host_class leaves free
 * (AM_MARKS): all others are skipped in a tight loop, which gathers their host_class bits on
 * the way. */
enum { AM_END = 1 << 5, AM_AT = 2 << 5, AM_COLON = 3 << 5, AM_MARKS = 3 << 5 };
static unsigned char authority_class[256]; /* host_class, and the marks: from setup() */

/* One pass over the authority from target[as] on: where it ends (RFC 3986 §3.2: at the first
 * "/", "?" or "#"; an authority-form target is all authority), its last "@" (§3.2.1: the last
 * one ends the userinfo, as split_authority splits it) and its first and last ":" (or -1).
 * With them, for step_host, the host_class bits of what follows the last "@": up to the last
 * ":" (*before_colon) and in all (*all); -1 both for a target that is no 1-byte str. */
static Py_ssize_t authority_marks(State *st, Py_ssize_t as, Py_ssize_t *at, Py_ssize_t *colon1,
                                  Py_ssize_t *colon, int *before_colon, int *all) {
    const Py_UCS1 *s1 = st->s1;
    Py_ssize_t len = st->len, i = as;
    unsigned any = 0, before = 0;
    *at = *colon1 = *colon = -1;
    for (;; i++) {
        Py_UCS4 c;
        unsigned k = 0;
        if (s1) {
            while (i + 4 <= len) { /* four at a time: fewer tests per character */
                unsigned a = authority_class[s1[i]], b = authority_class[s1[i + 1]];
                unsigned d = authority_class[s1[i + 2]], e = authority_class[s1[i + 3]];
                if ((a | b | d | e) & AM_MARKS) break;
                any |= a | b | d | e;
                i += 4;
            }
            while (i < len && !((k = authority_class[s1[i]]) & AM_MARKS)) {
                any |= k;
                i++;
            }
        } else {
            while (i < len && ((c = CH(st, i)) >= 256 || !(authority_class[c] & AM_MARKS))) i++;
        }
        if (i >= len) break;
        c = CH(st, i);
        int mark = authority_class[c] & AM_MARKS;
        if (mark == AM_END) {
            if (!st->authority) break;
            any |= host_class[c];
        } else if (mark == AM_AT) {
            *at = i;
            any = 0; /* the host starts after the last "@" */
        } else {
            if (*colon1 < 0) *colon1 = i;
            *colon = i;
            before = any;
            any |= host_class[c];
        }
    }
    *before_colon = s1 ? (int)(before & ~AM_MARKS) : -1;
    *all = s1 ? (int)(any & ~AM_MARKS) : -1;
    return i;
}

/* RFC 3986 §3.2 authority = [ userinfo "@" ] host [ ":" port ], split as split_authority
 * splits it: userinfo to the last "@", a port of digits after the last ":" outside an
 * IP-literal.  An authority-form target (RFC 9112 §3.2.3) is all authority. */
static int step_authority(State *st) {
    Py_ssize_t as = st->pos, at, colon1, colon;
    int before_colon, all;
    Py_ssize_t ae = authority_marks(st, as, &at, &colon1, &colon, &before_colon, &all);
    Buf *out = &st->out;
    st->pos = ae;
    Py_ssize_t hs = as;
    if (at >= 0) { /* findings.userinfo, then the character rules (findings.escapes with them) */
        PyObject *kind = colon1 >= 0 && colon1 < at ? password_str : user_str;
        if (add_finding_obj(st, F_USERINFO, C_USERINFO, as, Py_NewRef(kind)) < 0) return FAIL;
        int rc = scan(st, C_USERINFO, as, at, out);
        if (rc != OK) return rc;
        if (buf_putc(out, '@') < 0) return FAIL;
        hs = at + 1;
    }
    int literal = hs < ae && CH(st, hs) == '[';
    Py_ssize_t he = ae;
    if (colon < hs) colon = -1; /* the last ":" was the userinfo's */
    if (literal && find(st, ']', hs, ae) < 0) { /* never closed: all of it is the host */
        literal = 0;
        colon = -1;
    }
    if (colon >= 0) { /* a port: digits, or nothing */
        he = colon;
        for (Py_ssize_t k = colon + 1; k < ae; k++)
            if (!(CH(st, k) >= '0' && CH(st, k) <= '9')) he = ae;
    }
    if (he == ae) colon = -1;
    st->host_any = colon >= 0 ? before_colon : all;
    st->host_at = out->n;
    int rc = literal ? step_ip_literal(st, hs, he) : step_host(st, hs, he);
    st->host_end = out->n;
    if (rc == OK && colon >= 0) rc = step_port(st, colon, ae);
    return rc;
}

/* Whether the path from target[s] on (to its first "?" or "#") holds a "\\". */
static int path_has_backslash(State *st, Py_ssize_t s) {
    for (Py_ssize_t i = s; i < st->len; i++) {
        Py_UCS4 c = CH(st, i);
        if (c == '?' || c == '#') return 0;
        if (c == '\\') return 1;
    }
    return 0;
}

/* Whether some segment of the written path p[0:n] starts with "." or "%2E" (either case): then a
 * segment of the input did so too, and only then.  The output's "/" are the input's own; a
 * segment's first "." is the input's "." or its decoded "%2E"; an undecoded "%2E" is kept as it
 * is spelled (no other character is written as "%2E": "." is never escaped).  Without decoding
 * (decode-unreserved off), "%2E" is looked for too. */
static int starts_dotted(const char *p, Py_ssize_t n, int decode) {
    for (const char *q = p, *end = p + n; (q = memchr(q, '.', (size_t)(end - q))); q++)
        if (q == p || q[-1] == '/') return 1;
    for (const char *q = p, *end = p + n; !decode && (q = memchr(q, '%', (size_t)(end - q))); q++)
        if ((q == p || q[-1] == '/') && end - q >= 3 && q[1] == '2' && (q[2] | 0x20) == 'e')
            return 1;
    return 0;
}

/* remove-dot-segments (RFC 3986 §5.2.4) on the path written to the output from base (the input's
 * target[ps:pe]), into resolved and then in its place, and dot-prefix as driver._dot_prefix and
 * _guard record it.  Without an authority (origin-form here: an absolute URL has one) a path
 * that dot removal leaves starting with "//" would read as a network-path reference to the
 * host "etc" ("/.//..//etc/passwd" resolves to "//etc/passwd"): it gets the guard "/." before
 * it (§4.2), one whole edit after remove-dot-segments', at the path's start, "" -> "/.".  A
 * path that is already the guard and its resolution ("/.//a") is left as it is, unedited, as
 * the reference leaves it.  Origin-form "//a" with no dot segment never gets here: it is a
 * path (RFC 9112 §3.2.1) and, as the reference reads it, needs no guard. */
static int step_dots(State *st, Py_ssize_t ps, Py_ssize_t pe, Py_ssize_t base, Buf *resolved) {
    Buf *out = &st->out;
    const char *path = out->p + base;
    Py_ssize_t n = out->n - base;
    if (remove_dot_segments(path, n, resolved) < 0) return FAIL;
    const char *r = resolved->p;
    Py_ssize_t rn = resolved->n;
    int guard = st->origin && rn > 1 && r[1] == '/';
    if (rn == n && memcmp(r, path, (size_t)n) == 0) return OK;
    if (guard && n == rn + 2 && path[0] == '/' && path[1] == '.' &&
        memcmp(path + 2, r, (size_t)rn) == 0)
        return OK; /* "/.//a": its dot segment is the guard */
    if (whole_edit(st, R_DOTS, C_PATH, ps, pe, ascii_str(path, n), ascii_str(r, rn)) < 0 ||
        (guard && whole_edit(st, R_DOT_PREFIX, C_PATH, ps, ps, Py_NewRef(empty_str),
                             Py_NewRef(dot_guard_str)) < 0))
        return FAIL;
    out->n = base;
    if ((guard && buf_put(out, "/.", 2) < 0) || buf_put(out, r, rn) < 0) return FAIL;
    return OK;
}

/* RFC 3986 §3.3 path: the character rules, merge-slashes (refused), remove-dot-segments
 * (§5.2.4) and dot-prefix (§4.2), empty-path (§6.2.3). */
static int step_path(State *st) {
    Py_ssize_t ps = st->pos, pe = ps;
    char resolved_here[256]; /* most paths: no allocation */
    Buf *out = &st->out, resolved = {resolved_here, 0, sizeof resolved_here, resolved_here};
    /* reject-escaped-slash refuses a raw "\\" before the character rules run (a strict
     * policy's repairs among them): the reference's to raise */
    if ((st->flags & FL_SLASH_RULES) && path_has_backslash(st, ps))
        return decline(st, D_SLASH_RULE_BACKSLASH);
    /* The character pass finds the path's end and the escape tricks (findings.escapes) on its
     * way; findings.path's findings, which the reference reports before those, are then put
     * before them. */
    Py_ssize_t base = out->n; /* the path is written straight to the output, from here */
    int first = st->nfindings;
    PathMarks marks;
    int rc = scan_path(st, ps, &marks);
    if (rc != OK) return rc;
    st->pos = pe = marks.end;
    const char *path = out->p + base;
    Py_ssize_t n = out->n - base;
    int dotted = starts_dotted(path, n, st->flags & FL_DECODE);
    FindRec tricks[F_COUNT];
    int ntricks = st->nfindings - first;
    if (ntricks) memcpy(tricks, &st->findings[first], (size_t)ntricks * sizeof *tricks);
    st->nfindings = first;
    /* A "\\" is one more separator for findings.path: a segment after it may start with a dot,
     * which the written path (where it is "%5C") does not show. */
    if (path_findings(st, ps, pe, &marks, dotted || marks.backslash >= 0) < 0) return FAIL;
    if (ntricks) memcpy(&st->findings[st->nfindings], tricks, (size_t)ntricks * sizeof *tricks);
    st->nfindings += ntricks;
    if ((st->flags & FL_MERGE_SLASHES) && n > 1) {
        for (Py_ssize_t k = 1; k < n; k++)
            if (path[k] == '/' && path[k - 1] == '/') return decline(st, D_MERGE_SLASHES);
    }
    if ((st->flags & FL_DOTS) && dotted && has_dot_segments(path, n)) {
        rc = step_dots(st, ps, pe, base, &resolved);
        if (rc != OK) goto done;
        n = out->n - base;
    }
    if (!st->origin && n == 0 && (st->flags & FL_EMPTY_PATH)) {
        rc = FAIL;
        if (whole_edit(st, R_EMPTY_PATH, C_PATH, ps, ps, Py_NewRef(empty_str),
                       Py_NewRef(slash_str)) < 0 ||
            buf_putc(out, '/') < 0)
            goto done;
        rc = OK;
    }
done:
    buf_free(&resolved);
    return rc;
}

/* RFC 3986 §3.4 query: the character rules (the query rules run in driver.py after this). */
static int step_query(State *st) {
    if (buf_putc(&st->out, '?') < 0) return FAIL;
    /* the character pass ends at the first "#" itself, and says where: no pass to find it */
    int rc = scan(st, C_QUERY, st->pos + 1, st->len, &st->out);
    if (rc == OK) st->pos = st->scan_end;
    return rc;
}

/* RFC 3986 §3.5 fragment: strip-fragment, or the character rules. */
static int step_fragment(State *st) {
    Py_ssize_t fs = st->pos + 1;
    st->pos = st->len;
    if (st->flags & FL_STRIP_FRAGMENT)
        return whole_edit(st, R_STRIP_FRAGMENT, C_FRAGMENT, fs - 1, st->len, NULL,
                          Py_NewRef(empty_str)) < 0
                   ? FAIL
                   : OK;
    if (buf_putc(&st->out, '#') < 0) return FAIL;
    return scan(st, C_FRAGMENT, fs, st->len, &st->out);
}

/* The components in output order, as driver.py runs them. */
static int steps(State *st, int form) {
    if ((form == FORM_ASTERISK || form == FORM_AUTO) && st->len == 1 && CH(st, 0) == '*') {
        st->pos = st->len; /* RFC 9112 §3.2.4 "*": nothing to canonicalize */
        return buf_putc(&st->out, '*') < 0 ? FAIL : OK;
    }
    int rc = step_form(st, form);
    if (rc == OK && st->authority) {
        rc = step_authority(st);
        st->pos = st->len; /* no path, query or fragment: all of it was the authority */
        return rc;
    }
    if (rc == OK && !st->origin) rc = step_scheme(st);
    if (rc == OK && !st->origin) rc = step_authority(st);
    if (rc == OK) rc = step_path(st);
    if (rc == OK && st->pos < st->len && CH(st, st->pos) == '?') rc = step_query(st);
    if (rc == OK && st->pos < st->len) rc = step_fragment(st); /* CH(pos) == '#' */
    return rc;
}

static PyObject *make_result(State *st) {
    PyObject *items[4];
    Py_ssize_t len = st->len;
    set_aside();
    items[0] = Py_NewRef(st->target);
    /* Nothing rewritten: the output is the input, which is then returned itself. */
    int same = st->nedits == 0 && PyUnicode_IS_ASCII(st->target) && st->out.n == len &&
               memcmp(st->out.p, st->data, (size_t)len) == 0;
    items[1] = same ? Py_NewRef(st->target) : ascii_str(st->out.p, st->out.n);
    items[2] = freeze_edits(st);
    items[3] = freeze_findings(st);
    return pooled(&result_pool, RESULT_POOL_SIZE, ResultType, 4, RESULT_NULLABLE, items);
}

/* A State for target (NULL: a target of ASCII bytes, data) of len characters of kind. */
static void state_init(State *st, PyObject *target, int kind, const void *data, Py_ssize_t len,
                       int flags) {
    st->target = target;
    st->kind = kind;
    st->data = data;
    st->s1 = kind == PyUnicode_1BYTE_KIND ? (const Py_UCS1 *)data : NULL;
    st->len = len;
    st->flags = flags;
    st->edits = st->edits_here;
    st->nedits = st->in_component = 0;
    st->capedits = sizeof st->edits_here / sizeof *st->edits_here;
    st->nfindings = 0;
    st->out.p = st->out.stack = st->out_here;
    st->out.n = 0;
    st->out.cap = sizeof st->out_here;
    st->pos = 0;
    st->origin = st->authority = 0;
    st->scheme = -1;
    st->why = NULL;
    st->host_lower = 0;
    st->host_at = st->host_end = -1;
    st->host_any = -1;
}

/* The twin on target (a ready str) with a policy's flags and a form code: a Result, None
 * (declined: declined_why says why) or NULL (an exception). */
static PyObject *twin_run(PyObject *target, int flags, int form) {
    State st;
    state_init(&st, target, PyUnicode_KIND(target), PyUnicode_DATA(target),
               PyUnicode_GET_LENGTH(target), flags);
    int rc = steps(&st, form);
    PyObject *result = rc == OK ? make_result(&st) : NULL;
    state_free(&st);
    declined_why = rc == REFUSE ? st.why : NULL;
    if (rc == REFUSE) Py_RETURN_NONE;
    return result;
}

/* The rules of st's edits into fired (core/_twin.h); -1: an exception. */
static int fired_rules(State *st, UrlsanFired *fired) {
    fired->n = fired->fragment = 0;
    int fragment = 0;
    for (Py_ssize_t i = 0; i < st->nedits; i++) {
        EditRec *e = &st->edits[i];
        if (e->component == C_FRAGMENT && !fragment) {
            fragment = 1;
            fired->fragment = fired->n;
        }
        PyObject *rule = rules_name(e->rules);
        if (!rule) return -1;
        Py_DECREF(rule); /* rule_str or folded_str keeps it: borrowed from here on */
        int seen = 0;
        for (int k = fragment ? fired->fragment : 0; k < fired->n && !seen; k++)
            seen = fired->rules[k] == rule;
        /* at most R_COUNT rules and a folded name per component: never URLSAN_MAX_RULES */
        if (!seen && fired->n < URLSAN_MAX_RULES) fired->rules[fired->n++] = rule;
    }
    if (!fragment) fired->fragment = fired->n;
    return 0;
}

/* ---- the Arrow column loop's way in (core/_columns.c, through the capsule ASCII_URL; the
 * signature is core/_twin.h's): the canonical URL of an ASCII target held as bytes, handed to
 * the caller's sink with where its host is, with no str of the target, no Result and no tuple
 * of edits made.  The policy's query rules are the sink's to run (they are Python's:
 * driver.query_rules_url); a target the twin declines, and under query rules one with a ";"
 * before its query (path parameters go before dot removal: driver.query_rules_after), is left
 * to the caller, which calls canonicalize. */
static int twin_ascii_url(const char *p, Py_ssize_t n, int flags, int query_rules,
                          urlsan_url_sink sink, void *ctx) {
    if (!ready || flags < 0) return 0;
    const char *semi = query_rules ? memchr(p, ';', (size_t)n) : NULL;
    if (semi && !memchr(p, '?', (size_t)(semi - p)) && !memchr(p, '#', (size_t)(semi - p)))
        return 0; /* a ";" before any "?" or "#": in the path */
    State st;
    state_init(&st, NULL, PyUnicode_1BYTE_KIND, p, n, flags);
    int rc = steps(&st, FORM_AUTO), done = rc == REFUSE ? 0 : -1;
    if (rc == OK) {
        UrlsanFired fired;
        UrlsanMade made = {st.out.p, st.out.n, st.host_at, st.host_end, &fired};
        done = fired_rules(&st, &fired) < 0 || sink(ctx, &made) < 0 ? -1 : 1;
    }
    state_free(&st);
    return done;
}

static const UrlsanTwinApi twin_api = {URLSAN_TWIN_API_VERSION, twin_ascii_url};

static PyObject *twin_canonicalize(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 3 || !PyUnicode_Check(args[0]) || !PyLong_Check(args[1]) ||
        !PyUnicode_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "canonicalize(target: str, flags: int, form: str)");
        return NULL;
    }
    PyObject *target = args[0];
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
    return twin_run(target, (int)flags, form_code(args[2]));
}

/* ---- the public canonicalize(target, policy=DEFAULT_POLICY, *, form="auto", host=None)
 *
 * canonical.canonicalize, made by entry() in canonical.py's hand-over (its _entered_in_c says
 * what each argument is): it serves a str target under a Policy whose flags the twin takes,
 * straight from here, and calls Python for all else.  A policy's flags come from
 * canonical.derived once and are then kept by the policy's identity (a Policy is an immutable
 * value; the cache holds a reference to it, so that no other policy can take its address). */

#define POLICY_CACHE 8
typedef struct {
    PyObject_HEAD
    PyObject *dict;          /* __doc__, __name__, __wrapped__ ...: the Python function's */
    vectorcallfunc vectorcall;
    PyObject *python;        /* canonical.canonicalize as written in Python: all else */
    PyObject *declined;      /* (target, policy, form, host): past a declining twin */
    PyObject *after_twin;    /* (result, policy, form, host): the query rules on a Result */
    PyObject *derive;        /* canonical.derived: (twin flags, query rules, ...) */
    PyObject *default_policy, *policy_type;
    PyObject *switch_dict;   /* compiled.py's globals: its "twin" set to None turns this off */
    uint64_t switch_seen;    /* switch_dict's version when switch_on was read (switch_version) */
    int switch_on;
    struct {
        PyObject *policy;
        int flags, query_rules;
    } cache[POLICY_CACHE];
    int next; /* the cache slot replaced next */
} Entry;

static PyObject *entry_python(Entry *self, PyObject *const *args, size_t nargsf,
                              PyObject *kwnames) {
    return PyObject_Vectorcall(self->python, args, nargsf, kwnames);
}

/* compiled.twin = None sets the twin aside (bench/core.py's pure-Python column does).  Looking
 * "twin" up in compiled.py's globals on every call cost a dict lookup per URL; it is looked up
 * again only when those globals changed, which their version says: up to Python 3.11 the dict's
 * own version tag (PEP 509, changed by every write), from 3.12 on (where that tag is deprecated)
 * a count of the writes that a dict watcher sees. */
#if PY_VERSION_HEX >= 0x030C0000
static int switch_watcher = -1;
static uint64_t switch_writes = 1; /* 0: an Entry that never read its switch */

static int switch_written(PyDict_WatchEvent event, PyObject *dict, PyObject *key,
                          PyObject *value) {
    (void)event, (void)dict, (void)key, (void)value;
    switch_writes++; /* called before the write: the next call reads the switch again */
    return 0;
}

static uint64_t switch_version(PyObject *dict) {
    (void)dict;
    return switch_writes;
}

static int switch_watch(PyObject *dict) {
    if (switch_watcher < 0 && (switch_watcher = PyDict_AddWatcher(switch_written)) < 0) return -1;
    return PyDict_Watch(switch_watcher, dict);
}
#else
static uint64_t switch_version(PyObject *dict) {
    return ((PyDictObject *)dict)->ma_version_tag; /* never 0: dicts start at a fresh tag */
}

static int switch_watch(PyObject *dict) {
    (void)dict;
    return 0;
}
#endif

/* Whether the twin is on; -1: an exception. */
static int entry_switch(Entry *self) {
    uint64_t version = switch_version(self->switch_dict);
    if (version != self->switch_seen) {
        PyObject *on = PyDict_GetItemWithError(self->switch_dict, twin_key);
        if (!on && PyErr_Occurred()) return -1;
        self->switch_on = on && on != Py_None;
        self->switch_seen = version;
    }
    return self->switch_on;
}

/* The cache slot of policy, derived on a miss; NULL: an exception. */
static int entry_flags(Entry *self, PyObject *policy, int *query_rules) {
    for (int k = 0; k < POLICY_CACHE; k++) {
        if (self->cache[k].policy == policy) {
            *query_rules = self->cache[k].query_rules;
            return self->cache[k].flags;
        }
    }
    PyObject *d = PyObject_CallOneArg(self->derive, policy);
    if (!d) return -2;
    long flags = -1;
    int rules = 1;
    if (PyTuple_Check(d) && PyTuple_GET_SIZE(d) >= 2) {
        flags = PyLong_AsLong(PyTuple_GET_ITEM(d, 0));
        rules = PyObject_IsTrue(PyTuple_GET_ITEM(d, 1));
    } else {
        PyErr_SetString(PyExc_TypeError, "derive() returns (flags, query_rules, ...)");
    }
    Py_DECREF(d);
    if ((flags == -1 || rules < 0) && PyErr_Occurred()) return -2;
    if (flags < -1 || flags > INT_MAX) flags = -1;
    int k = self->next;
    self->next = (k + 1) % POLICY_CACHE;
    Py_XSETREF(self->cache[k].policy, Py_NewRef(policy));
    self->cache[k].flags = (int)flags;
    self->cache[k].query_rules = rules;
    *query_rules = rules;
    return (int)flags;
}

static inline PyObject *entry_text(Entry *self, PyObject *target, PyObject *policy,
                                   PyObject *form, PyObject *host, int flags, int code,
                                   int query_rules);

static PyObject *entry_call(Entry *self, PyObject *const *args, size_t nargsf,
                            PyObject *kwnames) {
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf), nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    if (nargs < 1 || nargs > 2) return entry_python(self, args, nargsf, kwnames);
    PyObject *target = args[0], *policy = nargs > 1 ? args[1] : self->default_policy;
    PyObject *form = form_str[FORM_AUTO], *host = Py_None;
    for (Py_ssize_t k = 0; k < nkw; k++) {
        PyObject *key = PyTuple_GET_ITEM(kwnames, k);
        if (key == form_key) {
            form = args[nargs + k];
        } else if (key == host_key) {
            host = args[nargs + k];
        } else { /* a keyword spelled otherwise, or not ours: Python's own handling */
            return entry_python(self, args, nargsf, kwnames);
        }
    }
    int text = PyUnicode_CheckExact(target);
    if (!(text || PyBytes_CheckExact(target)) ||
        Py_TYPE(policy) != (PyTypeObject *)self->policy_type || !PyUnicode_Check(form) || !ready)
        return entry_python(self, args, nargsf, kwnames);
    int on = entry_switch(self); /* compiled.twin = None sets the twin aside */
    if (on <= 0) return on < 0 ? NULL : entry_python(self, args, nargsf, kwnames);
    int query_rules, flags = entry_flags(self, policy, &query_rules);
    if (flags == -2) return NULL;
    int code = form_code(form);
    if (flags < 0 || code == FORM_OTHER) return entry_python(self, args, nargsf, kwnames);
    if (text) {
#if PY_VERSION_HEX < 0x030C0000
        if (PyUnicode_READY(target) < 0) return NULL;
#endif
        return entry_text(self, target, policy, form, host, flags, code, query_rules);
    }
    /* driver.text_of: the bytes a proxy holds, as text whose offsets the edits count in */
    PyObject *decoded = PyUnicode_DecodeUTF8(PyBytes_AS_STRING(target),
                                             PyBytes_GET_SIZE(target), "surrogateescape");
    if (!decoded) return NULL;
    PyObject *result = entry_text(self, decoded, policy, form, host, flags, code, query_rules);
    Py_DECREF(decoded);
    return result;
}

/* entry_call for a str target the twin may serve, with the policy's switches (inlined: one
 * call less per target). */
static inline PyObject *entry_text(Entry *self, PyObject *target, PyObject *policy,
                                   PyObject *form, PyObject *host, int flags, int code,
                                   int query_rules) {
    PyObject *result = twin_run(target, flags, code);
    if (result == Py_None) {
        Py_DECREF(result);
        PyObject *call[4] = {target, policy, form, host};
        return PyObject_Vectorcall(self->declined, call, 4, NULL);
    }
    if (!result || !query_rules) return result;
    /* driver.query_rules_after's own first tests, without its frame: no query in the output and
     * no path parameter in the input leave nothing to the query rules. */
    PyObject *url = PyTuple_GET_ITEM(result, 1);
    if (PyUnicode_FindChar(url, '?', 0, PyUnicode_GET_LENGTH(url), 1) == -1 &&
        PyUnicode_FindChar(target, ';', 0, PyUnicode_GET_LENGTH(target), 1) == -1)
        return result;
    PyObject *call[4] = {result, policy, form, host};
    PyObject *done = PyObject_Vectorcall(self->after_twin, call, 4, NULL);
    Py_DECREF(result);
    return done;
}

static int entry_traverse(Entry *self, visitproc visit, void *arg) {
    Py_VISIT(self->dict);
    Py_VISIT(self->python);
    Py_VISIT(self->declined);
    Py_VISIT(self->after_twin);
    Py_VISIT(self->derive);
    Py_VISIT(self->default_policy);
    Py_VISIT(self->policy_type);
    Py_VISIT(self->switch_dict);
    for (int k = 0; k < POLICY_CACHE; k++) Py_VISIT(self->cache[k].policy);
    return 0;
}

static int entry_clear(Entry *self) {
    Py_CLEAR(self->dict);
    Py_CLEAR(self->python);
    Py_CLEAR(self->declined);
    Py_CLEAR(self->after_twin);
    Py_CLEAR(self->derive);
    Py_CLEAR(self->default_policy);
    Py_CLEAR(self->policy_type);
    Py_CLEAR(self->switch_dict);
    for (int k = 0; k < POLICY_CACHE; k++) Py_CLEAR(self->cache[k].policy);
    return 0;
}

static void entry_dealloc(Entry *self) {
    PyObject_GC_UnTrack(self);
    entry_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *entry_vectorcall_slot(PyObject *self, PyObject *args, PyObject *kwargs) {
    return PyVectorcall_Call(self, args, kwargs);
}

static PyTypeObject EntryType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "urlsan.core._speedups.compiled_function",
    .tp_doc = "canonicalize with the compiled twin in front: see its __wrapped__.",
    .tp_basicsize = sizeof(Entry),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_dictoffset = offsetof(Entry, dict),
    .tp_vectorcall_offset = offsetof(Entry, vectorcall),
    .tp_call = entry_vectorcall_slot,
    .tp_descr_get = urlsan_entry_get,
    .tp_traverse = (traverseproc)entry_traverse,
    .tp_clear = (inquiry)entry_clear,
    .tp_dealloc = (destructor)entry_dealloc,
    .tp_getset = urlsan_entry_getset,
    .tp_methods = urlsan_entry_methods,
};

/* entry(python, declined, after_twin, derive, default_policy, policy_type, switch): the public
 * canonicalize; the caller copies the Python function's __doc__, __name__ ... onto it.  switch:
 * the dict whose "twin" None turns the twin off (compiled.py's globals). */
static PyObject *twin_entry(PyObject *self, PyObject *args) {
    PyObject *python, *declined, *after, *derive, *policy, *type, *switch_dict;
    (void)self;
    if (!PyArg_ParseTuple(args, "OOOOOO!O!", &python, &declined, &after, &derive, &policy,
                          &PyType_Type, &type, &PyDict_Type, &switch_dict))
        return NULL;
    if (switch_watch(switch_dict) < 0) return NULL;
    Entry *e = PyObject_GC_New(Entry, &EntryType);
    if (!e) return NULL;
    e->dict = NULL;
    e->vectorcall = (vectorcallfunc)entry_call;
    e->python = Py_NewRef(python);
    e->declined = Py_NewRef(declined);
    e->after_twin = Py_NewRef(after);
    e->derive = Py_NewRef(derive);
    e->default_policy = Py_NewRef(policy);
    e->policy_type = Py_NewRef(type);
    e->switch_dict = Py_NewRef(switch_dict);
    e->switch_seen = 0; /* read on the first call */
    e->switch_on = 0;
    for (int k = 0; k < POLICY_CACHE; k++) e->cache[k].policy = NULL;
    e->next = 0;
    PyObject_GC_Track(e);
    return (PyObject *)e;
}

/* ---- many targets at once: the loops of the batch CLI (`urls`) and of the data-frame
 * integrations (`columns`) without a Python frame per URL.  core/many.py holds their Python
 * reference, which tests/core/test_many.py holds these to.  Each URL goes through entry_call,
 * as canonicalize(text, policy, form=form) from Python does. */

static PyObject *form_kwnames; /* ("form",) */

/* A Result's field k (1: url, 2: edits), new reference: straight from the tuple when it is one. */
static PyObject *result_field(PyObject *r, Py_ssize_t k, const char *name) {
    if (Py_TYPE(r) == (PyTypeObject *)ResultType && PyTuple_GET_SIZE(r) > k)
        return Py_NewRef(PyTuple_GET_ITEM(r, k));
    return PyObject_GetAttrString(r, name);
}

static PyObject *entry_one(Entry *e, PyObject *text, PyObject *policy, PyObject *form) {
    PyObject *args[3] = {text, policy, form};
    return entry_call(e, args, 2, form_kwnames);
}

static int in_blanks(PyObject *blanks, Py_UCS4 c) {
    return PyUnicode_FindChar(blanks, c, 0, PyUnicode_GET_LENGTH(blanks), 1) >= 0;
}

/* text.strip(blanks) for an exact str: itself when nothing is stripped. */
static PyObject *strip_blanks(PyObject *text, PyObject *blanks) {
    Py_ssize_t s = 0, e = PyUnicode_GET_LENGTH(text);
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    while (s < e && in_blanks(blanks, PyUnicode_READ(kind, data, s))) s++;
    while (e > s && in_blanks(blanks, PyUnicode_READ(kind, data, e - 1))) e--;
    if (s == 0 && e == PyUnicode_GET_LENGTH(text)) return Py_NewRef(text);
    return PyUnicode_Substring(text, s, e);
}

static int many_check(PyObject *const *args, Py_ssize_t nargs, Py_ssize_t want, const char *use) {
    if (nargs != want || Py_TYPE(args[0]) != &EntryType || !PyList_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, use);
        return -1;
    }
    return 0;
}

/* urls(entry, texts, policy, form, blanks, longest) -> [entry(t.strip(blanks), policy,
 * form=form).url for t in texts], ending before the first text that is no str, is longer than
 * longest characters, is blank, or raises an Exception: the caller takes that one and the rest
 * on the slow path, which says why. */
static PyObject *many_urls(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    const char *use = "urls(entry, texts: list, policy, form, blanks: str, longest: int)";
    if (many_check(args, nargs, 6, use) < 0) return NULL;
    if (!PyUnicode_Check(args[4])) return PyErr_Format(PyExc_TypeError, "blanks must be a str");
    Py_ssize_t longest = PyLong_AsSsize_t(args[5]);
    if (longest == -1 && PyErr_Occurred()) return NULL;
    Entry *e = (Entry *)args[0];
    PyObject *texts = args[1], *policy = args[2], *form = args[3], *blanks = args[4];
    PyObject *out = PyList_New(0);
    for (Py_ssize_t i = 0; out && i < PyList_GET_SIZE(texts); i++) {
        PyObject *item = PyList_GET_ITEM(texts, i);
        if (!PyUnicode_CheckExact(item) || PyUnicode_GET_LENGTH(item) > longest) break;
        PyObject *text = strip_blanks(item, blanks);
        if (!text) return Py_DECREF(out), NULL;
        if (PyUnicode_GET_LENGTH(text) == 0) {
            Py_DECREF(text);
            break;
        }
        PyObject *r = entry_one(e, text, policy, form);
        Py_DECREF(text);
        if (!r) {
            if (!PyErr_ExceptionMatches(PyExc_Exception)) return Py_DECREF(out), NULL;
            PyErr_Clear();
            break;
        }
        PyObject *url = result_field(r, 1, "url");
        Py_DECREF(r);
        if (!url || PyList_Append(out, url) < 0) Py_CLEAR(out);
        Py_XDECREF(url);
    }
    return out;
}

/* The rules of a Result's edits, each once, in the order they ran. */
static PyObject *edit_rules(PyObject *result) {
    PyObject *edits = result_field(result, 2, "edits");
    if (!edits) return NULL; /* result_field's exception, and no list beside it */
    PyObject *rules = PyList_New(0);
    Py_ssize_t n = PyTuple_Check(edits) ? PyTuple_GET_SIZE(edits) : 0;
    for (Py_ssize_t k = 0; rules && k < n; k++) {
        PyObject *edit = PyTuple_GET_ITEM(edits, k);
        PyObject *rule = PyTuple_Check(edit) && PyTuple_GET_SIZE(edit) > 0
                             ? Py_NewRef(PyTuple_GET_ITEM(edit, 0))
                             : PyObject_GetAttrString(edit, "rule");
        int seen = rule ? PySequence_Contains(rules, rule) : -1;
        if (seen < 0 || (!seen && PyList_Append(rules, rule) < 0)) Py_CLEAR(rules);
        Py_XDECREF(rule);
    }
    if (!PyTuple_Check(edits)) Py_CLEAR(rules); /* not a Result: refuse, loudly */
    if (!rules && !PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "edits: not a tuple");
    Py_DECREF(edits);
    return rules;
}

/* value.strip(blanks) for a str; "" for anything else. */
static PyObject *stripped_value(PyObject *value, PyObject *blanks) {
    if (!PyUnicode_Check(value)) return Py_NewRef(empty_str);
    if (PyUnicode_CheckExact(value)) return strip_blanks(value, blanks);
    return PyObject_CallMethod(value, "strip", "O", blanks);
}

static int append3(PyObject *a, PyObject *x, PyObject *b, PyObject *y, PyObject *c,
                   PyObject *z) {
    return PyList_Append(a, x) < 0 || PyList_Append(b, y) < 0 || PyList_Append(c, z) < 0 ? -1
                                                                                           : 0;
}

/* One value's row: its url, changed and rules appended; -1: an exception. */
static int column_row(Entry *e, PyObject *value, PyObject *policy, PyObject *blanks,
                      PyObject **cols) {
    PyObject *text = stripped_value(value, blanks);
    if (!text) return -1;
    if (PyUnicode_GET_LENGTH(text) == 0) {
        Py_DECREF(text);
        return append3(cols[0], Py_None, cols[1], Py_None, cols[2], Py_None);
    }
    PyObject *r = entry_one(e, text, policy, form_str[FORM_AUTO]);
    if (!r) {
        Py_DECREF(text);
        if (!PyErr_ExceptionMatches(InvalidTargetType)) return -1;
        PyObject *type, *exc, *tb;
        PyErr_Fetch(&type, &exc, &tb);
        PyErr_NormalizeException(&type, &exc, &tb);
        PyObject *rule = exc ? PyObject_GetAttrString(exc, "rule") : NULL;
        PyObject *rules = rule ? PyList_New(1) : NULL;
        int rc = rules ? 0 : -1;
        if (rules) PyList_SET_ITEM(rules, 0, Py_NewRef(rule));
        if (!rc) rc = append3(cols[0], Py_None, cols[1], Py_False, cols[2], rules);
        Py_XDECREF(rule);
        Py_XDECREF(rules);
        Py_XDECREF(type);
        Py_XDECREF(exc);
        Py_XDECREF(tb);
        return rc;
    }
    PyObject *url = result_field(r, 1, "url");
    PyObject *rules = url ? edit_rules(r) : NULL;
    int changed = rules ? PyObject_RichCompareBool(url, text, Py_NE) : -1;
    int rc = changed < 0 ? -1
                         : append3(cols[0], url, cols[1], changed ? Py_True : Py_False, cols[2],
                                   rules);
    Py_XDECREF(url);
    Py_XDECREF(rules);
    Py_DECREF(r);
    Py_DECREF(text);
    return rc;
}

/* columns(entry, values, policy) -> (urls, changed, rules): core/many.py's columns(). */
static PyObject *many_columns(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (many_check(args, nargs, 4, "columns(entry, values: list, policy, blanks: str)") < 0)
        return NULL;
    if (!PyUnicode_Check(args[3])) return PyErr_Format(PyExc_TypeError, "blanks must be a str");
    if (!ready) {
        PyErr_SetString(PyExc_RuntimeError, "urlsan.core._speedups.setup() was not called");
        return NULL;
    }
    PyObject *cols[3] = {PyList_New(0), PyList_New(0), PyList_New(0)};
    PyObject *values = args[1], *out = NULL;
    int ok = cols[0] && cols[1] && cols[2];
    for (Py_ssize_t i = 0; ok && i < PyList_GET_SIZE(values); i++) {
        PyObject *value = Py_NewRef(PyList_GET_ITEM(values, i));
        ok = column_row((Entry *)args[0], value, args[2], args[3], cols) == 0;
        Py_DECREF(value);
    }
    if (ok) out = PyTuple_Pack(3, cols[0], cols[1], cols[2]);
    for (int k = 0; k < 3; k++) Py_XDECREF(cols[k]);
    return out;
}

/* declined(): why the last canonicalize() call returned None (bench/core.py counts them). */
static PyObject *twin_declined(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    if (!declined_why) Py_RETURN_NONE;
    return PyUnicode_FromString(declined_why);
}

/* ---- setup: the tables and types from the Python side */

static int fill(unsigned char *table, PyObject *chars) {
    memset(table, 0, 256);
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

/* pipeline.RULES's order (their names): each rule of this twin must be among them. */
static int set_rule_order(PyObject *order) {
    for (int r = 0; r < R_COUNT; r++) {
        rule_rank[r] = -1;
        for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(order); k++) {
            PyObject *name = PyTuple_GET_ITEM(order, k);
            if (PyUnicode_Check(name) && PyUnicode_CompareWithASCIIString(name, RULE_NAMES[r]) == 0)
                rule_rank[r] = (int)k;
        }
        if (rule_rank[r] < 0) {
            PyErr_Format(PyExc_ValueError, "rule %s is not in the rule order", RULE_NAMES[r]);
            return -1;
        }
    }
    Py_XSETREF(folded_str, PyDict_New());
    return folded_str ? 0 : -1;
}

static PyObject *twin_setup(PyObject *self, PyObject *args) {
    PyObject *result, *edit, *finding, *path, *query, *fragment, *unres, *unres2396, *ports;
    PyObject *order, *userinfo, *host, *invalid, *nfkc;
    Py_ssize_t fold;
    (void)self;
    if (!PyArg_ParseTuple(args, "OOOUUUUUO!nO!UUOU", &result, &edit, &finding, &path, &query,
                          &fragment, &unres, &unres2396, &PyDict_Type, &ports, &fold,
                          &PyTuple_Type, &order, &userinfo, &host, &invalid, &nfkc))
        return NULL;
    ready = 0; /* until every table is filled: a failed setup() leaves the twin unusable */
    if (fold < 1 || set_rule_order(order) < 0) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "FOLD_AFTER must be positive");
        return NULL;
    }
    fold_after = fold;
    PyObject *types[3] = {result, edit, finding};
    for (int k = 0; k < 3; k++) {
        if (!PyType_Check(types[k]) ||
            !PyType_IsSubtype((PyTypeObject *)types[k], &PyTuple_Type)) {
            PyErr_SetString(PyExc_TypeError, "Result, Edit and Finding must be tuple types");
            return NULL;
        }
    }
    if (!PyExceptionClass_Check(invalid)) {
        PyErr_SetString(PyExc_TypeError, "InvalidTarget must be an exception type");
        return NULL;
    }
    if (PyUnicode_GET_LENGTH(nfkc) > MAX_NFKC) {
        PyErr_SetString(PyExc_ValueError, "more NFKC separators than the twin holds");
        return NULL;
    }
    n_nfkc = (int)PyUnicode_GET_LENGTH(nfkc);
    for (int k = 0; k < n_nfkc; k++) nfkc_chars[k] = PyUnicode_READ_CHAR(nfkc, k);
    if (fill(allowed_path, path) < 0 || fill(allowed_query, query) < 0 ||
        fill(allowed_fragment, fragment) < 0 || fill(unreserved, unres) < 0 ||
        fill(unreserved_2396, unres2396) < 0 || fill(allowed_userinfo, userinfo) < 0 ||
        fill(allowed_host, host) < 0)
        return NULL;
    for (int c = 0; c < 256; c++) {
        int ldh = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '-' || c == '.';
        host_class[c] = (unsigned char)((allowed_host[c] && c != '%' && c != '\\' ? 0 : H_DISALLOWED) |
                                        (ldh ? 0 : H_NON_LDH) | (c >= 'A' && c <= 'Z' ? H_UPPER : 0) |
                                        (c == ':' || c == '[' ? H_INVALID : 0) |
                                        (c >= 128 ? H_NON_ASCII : 0) |
                                        (c >= '0' && c <= '9' ? H_DIGIT : 0));
        authority_class[c] = (unsigned char)(host_class[c] | (c == '/' || c == '?' || c == '#' ? AM_END
                                                              : c == '@'                       ? AM_AT
                                                              : c == ':'                       ? AM_COLON
                                                                                               : 0));
    }
    /* "%" and "\\" are never allowed raw, nor "?" and "#" in a path (RFC 3986 §3.3: they end
     * it), nor "#" in a query (§3.4): the scanner's branches rely on it. */
    allowed_path['%'] = allowed_query['%'] = allowed_fragment['%'] = 0;
    allowed_path['?'] = allowed_path['#'] = allowed_query['#'] = 0;
    allowed_path['\\'] = allowed_query['\\'] = allowed_fragment['\\'] = 0;
    allowed_userinfo['%'] = allowed_host['%'] = allowed_userinfo['\\'] = allowed_host['\\'] = 0;
    Py_XSETREF(ResultType, Py_NewRef(result));
    Py_XSETREF(EditType, Py_NewRef(edit));
    Py_XSETREF(FindingType, Py_NewRef(finding));
    Py_XSETREF(InvalidTargetType, Py_NewRef(invalid));
    for (int k = 0; k < nschemes; k++) {
        Py_CLEAR(schemes[k].port);
        Py_CLEAR(schemes[k].name_str);
        Py_CLEAR(schemes[k].colon_port);
        for (int b = 0; b < 1 << SCHEME_MAX; b++) Py_CLEAR(schemes[k].spelled[b]);
    }
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
        PyObject *name_str = PyUnicode_InternFromString(name);
        PyObject *colon_port = name_str ? PyUnicode_Concat(colon_str, value) : NULL;
        if (!colon_port) {
            Py_XDECREF(name_str);
            return NULL;
        }
        memcpy(schemes[nschemes].name, name, (size_t)n);
        memcpy(schemes[nschemes].name + n, "://", 3);
        schemes[nschemes].n = n;
        schemes[nschemes].port = Py_NewRef(value);
        schemes[nschemes].name_str = name_str;
        schemes[nschemes].colon_port = colon_port;
        unsigned char word[8] = {0}, mask[8] = {0}, fold[8] = {0};
        if (n + 3 <= 8) { /* else mask and word differ in every byte: no target matches */
            memcpy(word, name, (size_t)n);
            memcpy(word + n, "://", 3);
            memset(mask, 0xFF, (size_t)n + 3);
            memset(fold, 0x20, (size_t)n);
        } else {
            word[0] = 1;
        }
        memcpy(&schemes[nschemes].word, word, 8);
        memcpy(&schemes[nschemes].mask, mask, 8);
        memcpy(&schemes[nschemes].fold, fold, 8);
        nschemes++;
    }
    ready = 1;
    Py_RETURN_NONE;
}

/* A NamedTuple's fields read as member descriptors at their items' offsets, as CPython's own
 * struct sequences (os.stat_result) read theirs.  CPython specializes reading such a member
 * (LOAD_ATTR_SLOT) to a load from the object, where collections' _tuplegetter goes through the
 * generic attribute lookup, a descriptor call and an index check: about ten times the
 * instructions, and the proxy reads some fifty fields per request.  An instance holds every
 * field, as the class's __new__, _make, _replace, copy and pickling build it; only
 * tuple.__new__ with fewer items than fields could build one that does not, which no code of
 * urlsan does.  A tuple subclass keeps its items where a tuple's are (tuple's own methods read
 * them there), whatever else it adds. */
static PyObject *fields_as_slots(PyObject *Py_UNUSED(self), PyObject *cls) {
    PyTypeObject *type = (PyTypeObject *)cls;
    if (!PyType_Check(cls) || !PyType_IsSubtype(type, &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "fields_as_slots() takes a NamedTuple class");
        return NULL;
    }
    PyObject *fields = PyObject_GetAttrString(cls, "_fields");
    if (!fields) return NULL;
    if (!PyTuple_CheckExact(fields)) {
        Py_DECREF(fields);
        PyErr_SetString(PyExc_TypeError, "fields_as_slots() takes a NamedTuple class");
        return NULL;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(fields);
    /* Kept as long as the process: each descriptor points at its entry and its name. */
    PyMemberDef *defs = PyMem_Calloc((size_t)n + 1, sizeof *defs);
    if (!defs) {
        Py_DECREF(fields);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *field = PyTuple_GET_ITEM(fields, i);
        Py_ssize_t size;
        const char *name = PyUnicode_Check(field) ? PyUnicode_AsUTF8AndSize(field, &size) : NULL;
        char *kept = name ? PyMem_Malloc((size_t)size + 1) : NULL;
        PyObject *descr = NULL;
        if (kept) {
            memcpy(kept, name, (size_t)size + 1);
            defs[i] = (PyMemberDef){kept, T_OBJECT_EX,
                                    offsetof(PyTupleObject, ob_item) + i * sizeof(PyObject *),
                                    READONLY, NULL};
            descr = PyDescr_NewMember(type, &defs[i]);
        } else if (name) {
            PyErr_NoMemory();
        } else if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_TypeError, "a NamedTuple's _fields are str");
        }
        if (!descr || PyObject_SetAttr(cls, field, descr) < 0) {
            Py_XDECREF(descr);
            Py_DECREF(fields);
            return NULL; /* defs stay: descriptors set before this one point into them */
        }
        Py_DECREF(descr);
    }
    Py_DECREF(fields);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"canonicalize", (PyCFunction)(void (*)(void))twin_canonicalize, METH_FASTCALL,
     "canonicalize(target, flags, form) -> Result | None: the Python driver's Result, or None "
     "when the target is not one this twin handles."},
    {"entry", twin_entry, METH_VARARGS,
     "entry(python, declined, after_twin, derive, default_policy, policy_type, switch) -> the "
     "public "
     "canonicalize: the twin in front of the Python function python (core/canonical.py)."},
    {"urls", (PyCFunction)(void (*)(void))many_urls, METH_FASTCALL,
     "urls(entry, texts, policy, form, blanks, longest) -> list[str]: core/many.py's urls(), "
     "compiled."},
    {"columns", (PyCFunction)(void (*)(void))many_columns, METH_FASTCALL,
     "columns(entry, values, policy, blanks) -> (urls, changed, rules): core/many.py's "
     "columns(), compiled."},
    {"declined", twin_declined, METH_NOARGS,
     "declined() -> str | None: why the last canonicalize() call returned None."},
    {"fields_as_slots", fields_as_slots, METH_O,
     "fields_as_slots(cls): a NamedTuple class's fields read as slots, at a tenth of the cost."},
    {"setup", twin_setup, METH_VARARGS,
     "setup(Result, Edit, Finding, path, query, fragment, unreserved, unreserved_2396, "
     "default_ports, fold_after, rule_order, userinfo, host, InvalidTarget, nfkc): the types and "
     "tables, from "
     "urlsan.core."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "urlsan.core._speedups",
    .m_doc = "The compiled twin of urlsan.core.canonical for common targets.",
    .m_size = -1,
    .m_methods = methods,
};

static int make_pct_strings(void) {
    for (int c = 0; c < 256; c++) dot_stuff[c] = hexval((Py_UCS4)c) >= 0 || c == 'u' || c == 'U';
    dot_stuff['.'] = dot_stuff['%'] = 2;
    for (int b = 0; b < 256; b++) {
        char s[4] = {'%', HEX[b >> 4], HEX[b & 15], 0};
        pct_str[b] = PyUnicode_InternFromString(s);
        char_str[b] = PyUnicode_FromOrdinal(b);
        if (!pct_str[b] || !char_str[b]) return -1;
    }
    for (Py_ssize_t v = 0; v < SMALL_INTS; v++) {
        small_int[v] = PyLong_FromSsize_t(v);
        if (!small_int[v]) return -1;
    }
    return 0;
}

static int intern_all(PyObject **out, const char *const *names, int n) {
    for (int k = 0; k < n; k++) {
        out[k] = PyUnicode_InternFromString(names[k]);
        if (!out[k]) return -1;
    }
    return 0;
}

/* A table of names as a tuple of str in the order of its enum, the module's attribute ``attr``:
 * DECLINES, and FINDINGS, which core/compiled.py checks against urlsan.core.taxonomy.KINDS at
 * load (a finding kind is declared once, there). */
static int add_names(PyObject *m, const char *attr, const char *const *names, int n) {
    PyObject *t = PyTuple_New(n);
    if (!t) return -1;
    for (int k = 0; k < n; k++) {
        PyObject *name = PyUnicode_FromString(names[k]);
        if (!name) { Py_DECREF(t); return -1; }
        PyTuple_SET_ITEM(t, k, name);
    }
    int rc = PyModule_AddObjectRef(m, attr, t);
    Py_DECREF(t);
    return rc;
}

PyMODINIT_FUNC PyInit__speedups(void) {
    if (intern_all(rule_str, RULE_NAMES, R_COUNT) < 0 ||
        intern_all(component_str, COMPONENT_NAMES, C_COUNT) < 0 ||
        intern_all(finding_str, FINDING_NAMES, F_COUNT) < 0 || make_pct_strings() < 0)
        return NULL;
    if (intern_all(form_str, FORM_NAMES, FORM_OTHER) < 0) return NULL;
    form_key = PyUnicode_InternFromString("form");
    host_key = PyUnicode_InternFromString("host");
    twin_key = PyUnicode_InternFromString("twin");
    form_kwnames = form_key ? PyTuple_Pack(1, form_key) : NULL;
    if (!form_kwnames) return NULL;
    if (!form_key || !host_key || !twin_key || PyType_Ready(&EntryType) < 0) return NULL;
    empty_str = PyUnicode_InternFromString("");
    colon_str = PyUnicode_InternFromString(":");
    slash_str = PyUnicode_InternFromString("/");
    user_str = PyUnicode_InternFromString("user");
    password_str = PyUnicode_InternFromString("password");
    dot_guard_str = PyUnicode_InternFromString("/.");
    empty_tuple = PyTuple_New(0);
    if (!empty_str || !colon_str || !slash_str || !user_str || !password_str || !dot_guard_str ||
        !empty_tuple)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    PyObject *flags = PyDict_New();
    for (size_t k = 0; flags && k < sizeof POLICY_FLAGS / sizeof *POLICY_FLAGS; k++) {
        PyObject *bit = PyLong_FromLong(POLICY_FLAGS[k].bit);
        if (!bit || PyDict_SetItemString(flags, POLICY_FLAGS[k].rule, bit) < 0) Py_CLEAR(flags);
        Py_XDECREF(bit);
    }
    /* the column loop's way in (core/_twin.h) */
    PyObject *api = PyCapsule_New((void *)&twin_api, URLSAN_TWIN_API_NAME, NULL);
    int failed = !flags || !api || PyModule_AddObjectRef(m, "FLAGS", flags) < 0 ||
                 PyModule_AddObjectRef(m, "ASCII_URL", api) < 0 ||
                 PyModule_AddIntConstant(m, "UNRESERVED_2396", FL_UNRESERVED_2396) < 0 ||
                 PyModule_AddIntConstant(m, "STRICT", FL_STRICT) < 0 ||
                 add_names(m, "DECLINES", DECLINES, D_COUNT) < 0 ||
                 add_names(m, "FINDINGS", FINDING_NAMES, F_COUNT) < 0;
    Py_XDECREF(flags);
    Py_XDECREF(api);
    if (failed) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
