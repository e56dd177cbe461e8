/* odradek.clients.producer._producer: the blocking Producer's per-record work in C (pure fallbacks beside each use).
 *
 * FutureBase: the storage of its per-record futures (record_futures.py).
 * FutureRecordMetadata is made once per send(); as a Python class with __slots__ each one is tracked by
 * the cyclic garbage collector, whose full collections then walk every future an application keeps (about
 * 1 us per send with 200,000 futures alive). This base type holds the same three attributes but is not
 * tracked; record_futures.py subclasses it with __slots__ = () and keeps all the behaviour. A cycle through
 * a future (a callback that refers to it) lasts until its callbacks run, which every outcome does.
 *
 * A future carries its record's row (topic, value, key, partition, timestamp, headers) to the loop, so the
 * row tuple holds only atoms and CPython untracks it at once; a row holding the future (a GC type) stayed
 * tracked and was promoted while it waited, which set off full collections.
 *
 * rows_of, run_end and bind: the loop's passes over a burst of hand-off futures (record_futures.py's
 * rows_of and bind, producer.py's _run_end), which cost as much as the rest of a send in Python.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

typedef struct {
    PyObject_HEAD
    PyObject *batch;     /* None until bound: a batch, or a Settled outcome */
    PyObject *index;     /* the record's index in its batch */
    PyObject *callbacks; /* None, or the callbacks to run once settled */
    PyObject *row;       /* the record on its way to a batch (a tuple of atoms), None once bound */
} FutureBase;

static PyObject *future_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    PyObject *row = Py_None;
    if (!PyArg_ParseTuple(args, "|O:FutureBase", &row))
        return NULL;
    FutureBase *self = (FutureBase *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    /* A Python subclass is a GC type whatever its base: its instances are taken out of the collector's
     * lists at once (as CPython does for tuples of atoms), so collections never walk them. */
    if (PyType_IS_GC(type))
        PyObject_GC_UnTrack(self);
    Py_INCREF(Py_None);
    self->batch = Py_None;
    Py_INCREF(Py_None);
    self->index = Py_None;
    Py_INCREF(Py_None);
    self->callbacks = Py_None;
    Py_INCREF(row);
    self->row = row;
    return (PyObject *)self;
}

static void future_dealloc(FutureBase *self) {
    Py_XDECREF(self->batch);
    Py_XDECREF(self->index);
    Py_XDECREF(self->callbacks);
    Py_XDECREF(self->row);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMemberDef future_members[] = {
    {"_batch", T_OBJECT_EX, offsetof(FutureBase, batch), 0, "the batch (or Settled outcome) it is bound to"},
    {"_index", T_OBJECT_EX, offsetof(FutureBase, index), 0, "its record's index in the batch"},
    {"_callbacks", T_OBJECT_EX, offsetof(FutureBase, callbacks), 0, "callbacks waiting for the outcome"},
    {"_row", T_OBJECT_EX, offsetof(FutureBase, row), 0, "the record on its way to a batch, None once bound"},
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject FutureBaseType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "odradek.clients.producer._producer.FutureBase",
    .tp_basicsize = sizeof(FutureBase),
    .tp_dealloc = (destructor)future_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE, /* no Py_TPFLAGS_HAVE_GC: the point of it */
    .tp_doc = "Untracked storage for FutureRecordMetadata: _batch, _index, _callbacks, _row (None when unset).",
    .tp_members = future_members,
    .tp_new = future_new,
};

/* run_end(rows, start, end) -> index: where the run of rows starting at `start` that go into batches together
 * ends (rows: (topic, value, key, partition, ...)). A keyless row without a partition runs on with the rows
 * after it of the same topic that are keyless and without a partition too; any other row stands alone. */
static PyObject *run_end(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3 || !PyList_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "run_end(rows: list, start, end)");
        return NULL;
    }
    PyObject *rows = args[0];
    Py_ssize_t start = PyLong_AsSsize_t(args[1]), end = PyLong_AsSsize_t(args[2]);
    if (PyErr_Occurred())
        return NULL;
    if (start < 0 || end > PyList_GET_SIZE(rows) || start >= end) {
        PyErr_SetString(PyExc_IndexError, "run_end: start and end must be inside the rows, start < end");
        return NULL;
    }
    PyObject *first = PyList_GET_ITEM(rows, start);
    if (!PyTuple_Check(first) || PyTuple_GET_SIZE(first) < 4) {
        PyErr_SetString(PyExc_TypeError, "run_end: rows are tuples (topic, value, key, partition, ...)");
        return NULL;
    }
    PyObject *topic = PyTuple_GET_ITEM(first, 0);
    Py_ssize_t i = start + 1;
    if (PyTuple_GET_ITEM(first, 2) == Py_None && PyTuple_GET_ITEM(first, 3) == Py_None) {
        for (; i < end; i++) {
            PyObject *row = PyList_GET_ITEM(rows, i);
            if (!PyTuple_Check(row) || PyTuple_GET_SIZE(row) < 4 || PyTuple_GET_ITEM(row, 2) != Py_None ||
                PyTuple_GET_ITEM(row, 3) != Py_None)
                break;
            PyObject *other = PyTuple_GET_ITEM(row, 0);
            if (other != topic) {
                int same = PyObject_RichCompareBool(other, topic, Py_EQ);
                if (same < 0)
                    return NULL;
                if (!same)
                    break;
            }
        }
    }
    return PyLong_FromSsize_t(i);
}

/* rows_of(futures) -> [future._row for future in futures] */
static PyObject *rows_of(PyObject *self, PyObject *futures) {
    if (!PyList_Check(futures)) {
        PyErr_SetString(PyExc_TypeError, "rows_of(futures: list)");
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(futures);
    PyObject *rows = PyList_New(n);
    if (rows == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *future = PyList_GET_ITEM(futures, i), *row;
        if (PyObject_TypeCheck(future, &FutureBaseType)) {
            row = ((FutureBase *)future)->row;
            Py_INCREF(row);
        } else if ((row = PyObject_GetAttrString(future, "_row")) == NULL) {
            Py_DECREF(rows);
            return NULL;
        }
        PyList_SET_ITEM(rows, i, row);
    }
    return rows;
}

static int set_field(PyObject **field, PyObject *value) {
    Py_INCREF(value);
    Py_XSETREF(*field, value);
    return 0;
}

/* bind(rows, start, count, batch, first_index, position): item `position` of rows[start:start + count] (the
 * items themselves when position is -1) are record futures, which become the batch's records first_index,
 * first_index + 1, ... (their _batch and _index; their _row is let go); the futures are returned in a list. */
static PyObject *bind(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 6 || !PyList_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "bind(rows: list, start, count, batch, first_index, position)");
        return NULL;
    }
    PyObject *rows = args[0], *batch = args[3];
    Py_ssize_t start = PyLong_AsSsize_t(args[1]), count = PyLong_AsSsize_t(args[2]);
    Py_ssize_t first = PyLong_AsSsize_t(args[4]), position = PyLong_AsSsize_t(args[5]);
    if (PyErr_Occurred())
        return NULL;
    if (start < 0 || count < 0 || start + count > PyList_GET_SIZE(rows) || position < -1) {
        PyErr_SetString(PyExc_IndexError, "bind: the rows are out of range");
        return NULL;
    }
    PyObject *bound = PyList_New(count);
    if (bound == NULL)
        return NULL;
    for (Py_ssize_t k = 0; k < count; k++) {
        PyObject *row = PyList_GET_ITEM(rows, start + k), *future = row;
        if (position >= 0) {
            if (!PyTuple_Check(row) || PyTuple_GET_SIZE(row) <= position) {
                Py_DECREF(bound);
                PyErr_SetString(PyExc_TypeError, "bind: rows must be tuples holding the future at `position`");
                return NULL;
            }
            future = PyTuple_GET_ITEM(row, position);
        }
        PyObject *index = PyLong_FromSsize_t(first + k);
        if (index == NULL) {
            Py_DECREF(bound);
            return NULL;
        }
        int rc;
        if (PyObject_TypeCheck(future, &FutureBaseType)) {
            FutureBase *f = (FutureBase *)future;
            set_field(&f->batch, batch);
            Py_XSETREF(f->index, index);
            set_field(&f->row, Py_None);
            rc = 0;
        } else {
            rc = PyObject_SetAttrString(future, "_batch", batch);
            if (rc == 0)
                rc = PyObject_SetAttrString(future, "_index", index);
            if (rc == 0)
                rc = PyObject_SetAttrString(future, "_row", Py_None);
            Py_DECREF(index);
        }
        if (rc < 0) {
            Py_DECREF(bound);
            return NULL;
        }
        Py_INCREF(future);
        PyList_SET_ITEM(bound, k, future);
    }
    return bound;
}

static PyMethodDef methods[] = {
    {"run_end", (PyCFunction)(void (*)(void))run_end, METH_FASTCALL, "run_end(rows, start, end) -> index"},
    {"bind", (PyCFunction)(void (*)(void))bind, METH_FASTCALL,
     "bind(rows, start, count, batch, first_index, position) -> the futures bound"},
    {"rows_of", rows_of, METH_O, "rows_of(futures) -> their rows"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_producer", "The blocking Producer's per-record work in C.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__producer(void) {
    if (PyType_Ready(&FutureBaseType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    Py_INCREF(&FutureBaseType);
    if (PyModule_AddObject(m, "FutureBase", (PyObject *)&FutureBaseType) < 0) {
        Py_DECREF(&FutureBaseType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
