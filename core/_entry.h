/* What a compiled function standing in for a Python one is besides its call: canonicalize's
 * entry (core/_speedups.c) and surt's (core/_columns.c).  Each keeps the Python function's
 * __doc__, __name__, __qualname__, __module__ and __wrapped__ in a __dict__ of its own (copied
 * by functools.update_wrapper), so that help(), inspect and pickle see the function. */
#ifndef URLSAN_ENTRY_H
#define URLSAN_ENTRY_H

#include <Python.h>

/* A descriptor as a function is, so that pydoc and inspect take it for a routine; on a class
 * it stays itself, as a staticmethod would. */
static PyObject *urlsan_entry_get(PyObject *self, PyObject *obj, PyObject *type) {
    (void)obj;
    (void)type;
    return Py_NewRef(self);
}

/* pickle (--jobs, Dask, Spark ship functions so): by reference, as a Python function is; a str
 * from __reduce__ names the global in the module __module__ names. */
static PyObject *urlsan_entry_reduce(PyObject *self, PyObject *unused) {
    (void)unused;
    return PyObject_GetAttrString(self, "__qualname__");
}

static PyMethodDef urlsan_entry_methods[] = {
    {"__reduce__", urlsan_entry_reduce, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef urlsan_entry_getset[] = {
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

#endif
