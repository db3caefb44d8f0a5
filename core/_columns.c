/* The loop of the data-frame integrations over an Arrow string column (urlsan/_columns.py).
 *
 * map_strings reads the column's own buffers (validity bitmap, offsets, UTF-8 data, as
 * pyarrow's Array.buffers() gives them) and writes the result column's buffers directly: no
 * list of the inputs, no list of the outputs, no pa.array() over them.  Each row is one call
 * of a Python callable (urlsan.core.canonicalize, whose compiled entry runs in C, or a SURT
 * key function) on the row as a str; the one Python object per row beyond that str is what
 * the callable returns.
 *
 * Optional like the twin (core/_speedups.c): without it, urlsan/_columns.py builds the lists.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

typedef struct {
    char *data;
    Py_ssize_t size, cap;
} Bytes;

static int bytes_put(Bytes *b, const char *s, Py_ssize_t n) {
    if (b->size + n > b->cap) {
        Py_ssize_t cap = b->cap ? b->cap : 4096;
        while (cap < b->size + n) {
            if (cap > PY_SSIZE_T_MAX / 2) {
                PyErr_NoMemory();
                return -1;
            }
            cap *= 2;
        }
        char *grown = PyMem_Realloc(b->data, (size_t)cap);
        if (!grown) {
            PyErr_NoMemory();
            return -1;
        }
        b->data = grown;
        b->cap = cap;
    }
    if (n) memcpy(b->data + b->size, s, (size_t)n);
    b->size += n;
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

/* map_strings(call, tail, field, fallback, validity, offsets, data, offset, length, large)
 *   -> (null_count, validity: bytes | None, offsets: bytes (int64), data: bytes)
 *
 * For each of the length rows from offset of an Arrow string column (large: int64 offsets,
 * else int32): null stays null; the text stripped of ASCII white space is null when blank,
 * else call(text, *tail) (its item field when field >= 0), or fallback(text) when the call
 * raises an Exception and fallback is not None.  A value of None is null, a str is the row. */
static PyObject *map_strings(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 10 || !PyTuple_Check(args[1]) || PyTuple_GET_SIZE(args[1]) > 6) {
        PyErr_SetString(PyExc_TypeError,
                        "map_strings(call, tail: tuple (at most 6), field: int, fallback, "
                        "validity, offsets, data, offset: int, length: int, large: bool)");
        return NULL;
    }
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
    Bytes out = {0};
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
        if (first >= 0 && last >= first && last <= data_size) {
            Py_ssize_t want = (Py_ssize_t)(last - first) + (Py_ssize_t)(last - first) / 8 + 64;
            if (!(out.data = PyMem_Malloc((size_t)want))) {
                PyErr_NoMemory();
                goto done;
            }
            out.cap = want;
        }
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
    data_out = PyBytes_FromStringAndSize(out.data ? out.data : "", out.size);
    if (!data_out) goto done;
    result = Py_BuildValue("(nOOO)", nulls, nulls ? validity_out : Py_None, offsets_out, data_out);
done:
    PyMem_Free(out.data);
    Py_XDECREF(offsets_out);
    Py_XDECREF(validity_out);
    Py_XDECREF(data_out);
    column_release(&col);
    return result;
}

static PyMethodDef methods[] = {
    {"map_strings", (PyCFunction)(void (*)(void))map_strings, METH_FASTCALL,
     "map_strings(call, tail, field, fallback, validity, offsets, data, offset, length, large)"
     " -> (null_count, validity, offsets, data): one call per row of an Arrow string column,"
     " the result column's buffers written directly (int64 offsets)."},
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

PyMODINIT_FUNC PyInit__columns(void) { return PyModuleDef_Init(&module); }
