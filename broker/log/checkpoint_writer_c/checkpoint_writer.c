/* Writes a batch of small files atomically (temporary file, fsync, rename) on a few pthreads with the GIL
 * released once for the whole batch: the leader-epoch checkpoints of a LeaderAndIsr of thousands of
 * partitions. A Python thread per file would take the GIL back after each system call and slow the event
 * loop's thread meanwhile. The pure-Python twin is broker/log/checkpoint_writer.py. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ABI 1
#define MAX_THREADS 256
#define STACK_SIZE (64 * 1024)

typedef struct {
    char *path;     /* NUL-terminated, file system encoding */
    char *tmp;      /* path + ".tmp" */
    char *data;
    size_t size;
    int error;      /* errno of the first failing step, 0 when written */
} item_t;

typedef struct {
    item_t *items;
    size_t count;
    atomic_size_t next;  /* the next item a thread takes */
} batch_t;

static int write_whole(int fd, const char *data, size_t size) {
    while (size > 0) {
        ssize_t n = write(fd, data, size);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return errno;
        }
        data += n;  /* a short write: go on with the rest */
        size -= (size_t)n;
    }
    return 0;
}

/* errno of the first step that failed, or 0. A failed file leaves its .tmp only when the rename failed. */
static int write_one(const item_t *item) {
    int fd;
    do {
        fd = open(item->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0)
        return errno;
    int error = write_whole(fd, item->data, item->size);
    if (error == 0) {
        while (fsync(fd) != 0) {
            if (errno != EINTR) {
                error = errno;
                break;
            }
        }
    }
    /* close is not retried on EINTR (Linux has closed the descriptor already) */
    if (close(fd) != 0 && error == 0 && errno != EINTR)
        error = errno;
    if (error == 0 && rename(item->tmp, item->path) != 0)
        error = errno;
    return error;
}

static void *worker(void *arg) {
    batch_t *batch = arg;
    for (;;) {
        size_t i = atomic_fetch_add(&batch->next, 1);
        if (i >= batch->count)
            return NULL;
        batch->items[i].error = write_one(&batch->items[i]);
    }
}

static void free_items(item_t *items, size_t count) {
    for (size_t i = 0; i < count; i++) {
        free(items[i].path);
        free(items[i].tmp);
        free(items[i].data);
    }
    free(items);
}

/* Copies item ``index`` (a (path, bytes) tuple) into ``item``; 0, or -1 with an exception set. */
static int copy_item(PyObject *entry, Py_ssize_t index, item_t *item) {
    PyObject *path_obj, *data_obj, *encoded = NULL;
    if (!PyTuple_Check(entry) || PyTuple_GET_SIZE(entry) != 2) {
        PyErr_Format(PyExc_TypeError, "item %zd: expected a (path, bytes) tuple", index);
        return -1;
    }
    path_obj = PyTuple_GET_ITEM(entry, 0);
    data_obj = PyTuple_GET_ITEM(entry, 1);
    if (!PyBytes_Check(data_obj)) {
        PyErr_Format(PyExc_TypeError, "item %zd: the data must be bytes", index);
        return -1;
    }
    if (!PyUnicode_FSConverter(path_obj, &encoded))  /* also refuses embedded NULs */
        return -1;
    const char *path = PyBytes_AS_STRING(encoded);
    size_t path_len = (size_t)PyBytes_GET_SIZE(encoded);
    size_t size = (size_t)PyBytes_GET_SIZE(data_obj);
    item->path = malloc(path_len + 1);
    item->tmp = malloc(path_len + 5);
    item->data = malloc(size > 0 ? size : 1);
    item->size = size;
    item->error = 0;
    if (item->path == NULL || item->tmp == NULL || item->data == NULL) {
        Py_DECREF(encoded);
        PyErr_NoMemory();
        return -1;
    }
    memcpy(item->path, path, path_len + 1);
    memcpy(item->tmp, path, path_len);
    memcpy(item->tmp + path_len, ".tmp", 5);
    memcpy(item->data, PyBytes_AS_STRING(data_obj), size);
    Py_DECREF(encoded);
    return 0;
}

static PyObject *write_files(PyObject *self, PyObject *args) {
    PyObject *list;
    int threads;
    if (!PyArg_ParseTuple(args, "O!i:write_files", &PyList_Type, &list, &threads))
        return NULL;
    if (threads < 1) {
        PyErr_SetString(PyExc_ValueError, "threads must be at least 1");
        return NULL;
    }
    Py_ssize_t count = PyList_GET_SIZE(list);
    if (count == 0)
        return PyList_New(0);
    item_t *items = calloc((size_t)count, sizeof(item_t));
    if (items == NULL)
        return PyErr_NoMemory();
    for (Py_ssize_t i = 0; i < count; i++) {
        if (copy_item(PyList_GET_ITEM(list, i), i, &items[i]) != 0) {
            free_items(items, (size_t)count);
            return NULL;
        }
    }
    if (threads > MAX_THREADS)
        threads = MAX_THREADS;
    if (threads > count)
        threads = (int)count;

    batch_t batch = {.items = items, .count = (size_t)count};
    atomic_init(&batch.next, 0);
    pthread_t ids[MAX_THREADS];
    pthread_attr_t attr;
    int started = 0;
    Py_BEGIN_ALLOW_THREADS
    /* a worker needs little stack: a small one makes 64 of them cheap to start for every batch */
    int have_attr = pthread_attr_init(&attr) == 0;
    if (have_attr)
        pthread_attr_setstacksize(&attr, STACK_SIZE > PTHREAD_STACK_MIN ? STACK_SIZE : PTHREAD_STACK_MIN);
    for (; started < threads; started++) {
        if (pthread_create(&ids[started], have_attr ? &attr : NULL, worker, &batch) != 0)
            break;  /* fewer threads than asked: the ones running (or this one) take every item */
    }
    if (have_attr)
        pthread_attr_destroy(&attr);
    if (started == 0)
        worker(&batch);
    for (int t = 0; t < started; t++)
        pthread_join(ids[t], NULL);
    Py_END_ALLOW_THREADS

    PyObject *failures = PyList_New(0);
    for (Py_ssize_t i = 0; failures != NULL && i < count; i++) {
        if (items[i].error == 0)
            continue;
        PyObject *pair = Py_BuildValue("(ni)", i, items[i].error);
        if (pair == NULL || PyList_Append(failures, pair) != 0)
            Py_CLEAR(failures);
        Py_XDECREF(pair);
    }
    free_items(items, (size_t)count);
    return failures;
}

static PyMethodDef methods[] = {
    {"write_files", write_files, METH_VARARGS,
     "write_files(items: list[tuple[str, bytes]], threads: int) -> list[tuple[int, int]]\n"
     "For each (path, data): write path + '.tmp', fsync it, close it, rename it over path; on up to\n"
     "``threads`` threads without the GIL. Returns the failures as (index, errno) pairs."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_checkpoint_writer",
    "Batches of atomically written, fsynced small files without the GIL (the leader epoch checkpoints).",
    -1, methods,
};

PyMODINIT_FUNC PyInit__checkpoint_writer(void) {
    PyObject *m = PyModule_Create(&module);
    if (m != NULL && PyModule_AddIntConstant(m, "ABI", ABI) != 0)
        Py_CLEAR(m);
    return m;
}
