/* Python lists or Arrow columns to records (encode_records): a run of records appended in one call. */
#include "codec.h"

/* A column of keys or values: None (all null), a list (bytes-likes or None), or an Arrow binary column
 * given as (validity buffer or None, offsets buffer, data buffer, array offset, large offsets). */
typedef struct {
    int kind; /* 0 all null, 1 list, 2 arrow */
    PyObject *list;
    Py_buffer validity, offsets, data;
    int has_validity, large;
    Py_ssize_t offset;
} Source;

static void source_release(Source *s) {
    if (s->kind == 2) {
        if (s->has_validity)
            PyBuffer_Release(&s->validity);
        PyBuffer_Release(&s->offsets);
        PyBuffer_Release(&s->data);
    }
    s->kind = 0;
}

static int source_open(PyObject *obj, Source *s, Py_ssize_t stop, const char *what) {
    memset(s, 0, sizeof *s);
    if (obj == Py_None)
        return 0;
    if (PyList_Check(obj)) {
        if (PyList_GET_SIZE(obj) < stop) {
            PyErr_Format(PyExc_ValueError, "%s has fewer items than the records", what);
            return -1;
        }
        s->kind = 1;
        s->list = obj;
        return 0;
    }
    if (!PyTuple_Check(obj) || PyTuple_GET_SIZE(obj) != 5) {
        PyErr_Format(PyExc_TypeError, "%s must be None, a list or an Arrow column description", what);
        return -1;
    }
    PyObject *validity = PyTuple_GET_ITEM(obj, 0);
    s->offset = PyLong_AsSsize_t(PyTuple_GET_ITEM(obj, 3));
    s->large = PyObject_IsTrue(PyTuple_GET_ITEM(obj, 4));
    if ((s->offset == -1 && PyErr_Occurred()) || s->large < 0)
        return -1;
    if (s->offset < 0) {
        PyErr_Format(PyExc_ValueError, "%s: negative array offset", what);
        return -1;
    }
    if (PyObject_GetBuffer(PyTuple_GET_ITEM(obj, 1), &s->offsets, PyBUF_SIMPLE) < 0)
        return -1;
    if (PyObject_GetBuffer(PyTuple_GET_ITEM(obj, 2), &s->data, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&s->offsets);
        return -1;
    }
    if (validity != Py_None) {
        if (PyObject_GetBuffer(validity, &s->validity, PyBUF_SIMPLE) < 0) {
            PyBuffer_Release(&s->offsets);
            PyBuffer_Release(&s->data);
            return -1;
        }
        s->has_validity = 1;
    }
    s->kind = 2;
    Py_ssize_t width = s->large ? 8 : 4;
    if (s->offsets.len / width < s->offset + stop + 1 ||
        (s->has_validity && s->validity.len * 8 < s->offset + stop)) {
        PyErr_Format(PyExc_ValueError, "%s: the Arrow buffers are shorter than the records", what);
        source_release(s);
        return -1;
    }
    return 0;
}

/* The i-th item: *len -1 for null. *held is set when a buffer view must be released after use. */
static int source_get(Source *s, Py_ssize_t i, const char **ptr, Py_ssize_t *len, Py_buffer *held, int *holding,
                      const char *what) {
    *holding = 0;
    if (s->kind == 0) {
        *len = -1;
        return 0;
    }
    if (s->kind == 1) {
        PyObject *item = PyList_GET_ITEM(s->list, i);
        if (item == Py_None) {
            *len = -1;
            return 0;
        }
        if (PyBytes_CheckExact(item)) {
            *ptr = PyBytes_AS_STRING(item);
            *len = PyBytes_GET_SIZE(item);
            return 0;
        }
        if (PyUnicode_Check(item) || PyObject_GetBuffer(item, held, PyBUF_SIMPLE) < 0) {
            if (!PyErr_Occurred() || PyErr_ExceptionMatches(PyExc_TypeError)) {
                PyErr_Clear();
                PyErr_Format(PyExc_TypeError, "%s must be bytes-like or None, not %.100s", what,
                             Py_TYPE(item)->tp_name);
            }
            return -1;
        }
        *holding = 1;
        *ptr = (const char *)held->buf;
        *len = held->len;
        return 0;
    }
    Py_ssize_t j = s->offset + i;
    if (s->has_validity && !(((const uint8_t *)s->validity.buf)[j >> 3] & (1 << (j & 7)))) {
        *len = -1;
        return 0;
    }
    int64_t start, stop;
    if (s->large) {
        memcpy(&start, (const char *)s->offsets.buf + 8 * j, 8);
        memcpy(&stop, (const char *)s->offsets.buf + 8 * (j + 1), 8);
    } else {
        int32_t a, b;
        memcpy(&a, (const char *)s->offsets.buf + 4 * j, 4);
        memcpy(&b, (const char *)s->offsets.buf + 4 * (j + 1), 4);
        start = a;
        stop = b;
    }
    if (start < 0 || stop < start || stop > s->data.len) {
        PyErr_Format(PyExc_ValueError, "%s: invalid Arrow offsets", what);
        return -1;
    }
    *ptr = (const char *)s->data.buf + start;
    *len = (Py_ssize_t)(stop - start);
    return 0;
}

/* Timestamps: an int (every record), a list (ints; None = now), or an Arrow int64 column
 * (validity or None, values buffer, array offset); null = now. */
typedef struct {
    int kind; /* 0 constant, 1 list, 2 arrow */
    int64_t constant;
    PyObject *list;
    Py_buffer validity, values;
    int has_validity;
    Py_ssize_t offset;
} Timestamps;

static int timestamp_value(PyObject *obj, int64_t *out) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(obj, &overflow);
    if (overflow) {
        PyObject *repr = PyObject_Str(obj);
        if (repr) {
            PyErr_Format(PyExc_ValueError, "timestamp %U is not an int64", repr);
            Py_DECREF(repr);
        }
        return -1;
    }
    if (v == -1 && PyErr_Occurred())
        return -1;
    *out = v;
    return 0;
}

static void timestamps_release(Timestamps *t) {
    if (t->kind == 2) {
        if (t->has_validity)
            PyBuffer_Release(&t->validity);
        PyBuffer_Release(&t->values);
    }
    t->kind = 0;
}

static int timestamps_open(PyObject *obj, Timestamps *t, Py_ssize_t stop) {
    memset(t, 0, sizeof *t);
    if (PyLong_Check(obj))
        return timestamp_value(obj, &t->constant);
    if (PyList_Check(obj)) {
        if (PyList_GET_SIZE(obj) < stop) {
            PyErr_SetString(PyExc_ValueError, "timestamps has fewer items than the records");
            return -1;
        }
        t->kind = 1;
        t->list = obj;
        return 0;
    }
    if (!PyTuple_Check(obj) || PyTuple_GET_SIZE(obj) != 3) {
        PyErr_SetString(PyExc_TypeError, "timestamps must be an int, a list or an Arrow int64 column description");
        return -1;
    }
    t->offset = PyLong_AsSsize_t(PyTuple_GET_ITEM(obj, 2));
    if (t->offset == -1 && PyErr_Occurred())
        return -1;
    if (PyObject_GetBuffer(PyTuple_GET_ITEM(obj, 1), &t->values, PyBUF_SIMPLE) < 0)
        return -1;
    if (PyTuple_GET_ITEM(obj, 0) != Py_None) {
        if (PyObject_GetBuffer(PyTuple_GET_ITEM(obj, 0), &t->validity, PyBUF_SIMPLE) < 0) {
            PyBuffer_Release(&t->values);
            return -1;
        }
        t->has_validity = 1;
    }
    t->kind = 2;
    if (t->offset < 0 || t->values.len / 8 < t->offset + stop ||
        (t->has_validity && t->validity.len * 8 < t->offset + stop)) {
        PyErr_SetString(PyExc_ValueError, "timestamps: the Arrow buffers are shorter than the records");
        timestamps_release(t);
        return -1;
    }
    return 0;
}

static int timestamps_get(Timestamps *t, Py_ssize_t i, int64_t now, int64_t *out) {
    if (t->kind == 0) {
        *out = t->constant;
        return 0;
    }
    if (t->kind == 1) {
        PyObject *item = PyList_GET_ITEM(t->list, i);
        if (item == Py_None) {
            *out = now;
            return 0;
        }
        if (!PyLong_Check(item)) {
            PyErr_Format(PyExc_TypeError, "timestamps must be ints or None, not %.100s", Py_TYPE(item)->tp_name);
            return -1;
        }
        return timestamp_value(item, out);
    }
    Py_ssize_t j = t->offset + i;
    if (t->has_validity && !(((const uint8_t *)t->validity.buf)[j >> 3] & (1 << (j & 7)))) {
        *out = now;
        return 0;
    }
    memcpy(out, (const char *)t->values.buf + 8 * j, 8);
    return 0;
}

/* One header pair: its encoded size added to *total, and when out != NULL its bytes. */
static int encode_header(PyObject *key, PyObject *value, char **out, Py_ssize_t *total) {
    const char *kptr;
    Py_ssize_t klen;
    Py_buffer kview, vview;
    int kheld = 0;
    if (PyUnicode_Check(key)) {
        kptr = PyUnicode_AsUTF8AndSize(key, &klen);
        if (kptr == NULL)
            return -1;
    } else {
        if (PyObject_GetBuffer(key, &kview, PyBUF_SIMPLE) < 0)
            return -1;
        kheld = 1;
        kptr = kview.buf;
        klen = kview.len;
    }
    *total += varint_size(klen) + klen;
    if (out) {
        *out = write_varint(*out, klen);
        memcpy(*out, kptr, (size_t)klen);
        *out += klen;
    }
    if (kheld)
        PyBuffer_Release(&kview);
    if (value == Py_None) {
        *total += 1;
        if (out)
            *out = write_varint(*out, -1);
        return 0;
    }
    if (PyUnicode_Check(value) || PyObject_GetBuffer(value, &vview, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "header values must be bytes-like or None, not %.100s", Py_TYPE(value)->tp_name);
        return -1;
    }
    *total += varint_size(vview.len) + vview.len;
    if (out) {
        *out = write_varint(*out, vview.len);
        memcpy(*out, vview.buf, (size_t)vview.len);
        *out += vview.len;
    }
    PyBuffer_Release(&vview);
    return 0;
}

/* One record's headers (None or a sequence of (str or bytes, bytes-like or None)): their encoded size,
 * and when out != NULL the bytes. The sequence is walked twice (size, then bytes) without keeping views. */
static int encode_headers(PyObject *headers, char **out, Py_ssize_t *size) {
    if (headers == Py_None) {
        *size = 1;
        if (out)
            *(*out)++ = 0;
        return 0;
    }
    PyObject *seq = PySequence_Fast(headers, "headers must be a sequence of (key, value) pairs");
    if (seq == NULL)
        return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq), total = varint_size(n);
    if (out)
        *out = write_varint(*out, n);
    int rc = -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *pair = PySequence_Fast(PySequence_Fast_GET_ITEM(seq, i), "a header must be a (key, value) pair");
        if (pair == NULL)
            goto done;
        if (PySequence_Fast_GET_SIZE(pair) != 2) {
            Py_DECREF(pair);
            PyErr_SetString(PyExc_ValueError, "a header must be a (key, value) pair");
            goto done;
        }
        PyObject *key = PySequence_Fast_GET_ITEM(pair, 0), *value = PySequence_Fast_GET_ITEM(pair, 1);
        Py_INCREF(key);
        Py_INCREF(value);
        Py_DECREF(pair);
        int pair_rc = encode_header(key, value, out, &total);
        Py_DECREF(key);
        Py_DECREF(value);
        if (pair_rc < 0)
            goto done;
    }
    *size = total;
    rc = 0;
done:
    Py_DECREF(seq);
    return rc;
}

/* encode_records(out, base_timestamp, offset_delta, max_timestamp, now, timestamps, keys, values, headers,
 *                start, stop, max_bytes) -> (appended, base_timestamp, max_timestamp)
 * Appends records start..stop-1 to the bytearray `out` (a batch's records so far: `offset_delta` of them,
 * the first one's timestamp `base_timestamp`), stopping before the first record that would take `out`
 * past max_bytes, unless the batch is still empty. headers: None or a list of per-record None or pairs. */
PyObject *codec_encode_records(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 12) {
        PyErr_SetString(PyExc_TypeError, "encode_records takes 12 arguments");
        return NULL;
    }
    PyObject *out = args[0];
    if (!PyByteArray_Check(out)) {
        PyErr_SetString(PyExc_TypeError, "out must be a bytearray");
        return NULL;
    }
    int64_t base_timestamp, offset_delta, max_timestamp, now;
    Py_ssize_t start, stop, max_bytes;
    if (as_int64(args[1], &base_timestamp) < 0 || as_int64(args[2], &offset_delta) < 0 ||
        as_int64(args[3], &max_timestamp) < 0 || as_int64(args[4], &now) < 0)
        return NULL;
    start = PyLong_AsSsize_t(args[9]);
    stop = PyLong_AsSsize_t(args[10]);
    max_bytes = PyLong_AsSsize_t(args[11]);
    if (PyErr_Occurred())
        return NULL;
    PyObject *headers = args[8];
    if (headers != Py_None && (!PyList_Check(headers) || PyList_GET_SIZE(headers) < stop)) {
        PyErr_SetString(PyExc_TypeError, "headers must be None or a list with one item per record");
        return NULL;
    }
    if (start < 0 || stop < start) {
        PyErr_SetString(PyExc_ValueError, "invalid start/stop");
        return NULL;
    }
    Timestamps ts;
    Source keys, values;
    if (timestamps_open(args[5], &ts, stop) < 0)
        return NULL;
    if (source_open(args[6], &keys, stop, "keys") < 0) {
        timestamps_release(&ts);
        return NULL;
    }
    if (source_open(args[7], &values, stop, "values") < 0) {
        timestamps_release(&ts);
        source_release(&keys);
        return NULL;
    }
    PyObject *result = NULL;
    Py_ssize_t i = start;
    for (; i < stop; i++) {
        int64_t timestamp, delta;
        if (timestamps_get(&ts, i, now, &timestamp) < 0)
            goto done;
        if (offset_delta == 0)
            base_timestamp = timestamp;
        if (__builtin_sub_overflow(timestamp, base_timestamp, &delta)) {
            PyErr_Format(PyExc_ValueError, "timestamp %lld is too far from the batch's first, %lld",
                         (long long)timestamp, (long long)base_timestamp);
            goto done;
        }
        const char *kptr = NULL, *vptr = NULL;
        Py_ssize_t klen, vlen, hsize;
        Py_buffer kheld, vheld;
        int kholding, vholding;
        if (source_get(&keys, i, &kptr, &klen, &kheld, &kholding, "keys") < 0)
            goto done;
        if (source_get(&values, i, &vptr, &vlen, &vheld, &vholding, "values") < 0) {
            if (kholding)
                PyBuffer_Release(&kheld);
            goto done;
        }
        PyObject *record_headers = headers == Py_None ? Py_None : PyList_GET_ITEM(headers, i);
        int failed = 0;
        if (record_headers != Py_None && PyList_Check(record_headers) && PyList_GET_SIZE(record_headers) == 0)
            record_headers = Py_None;
        if (encode_headers(record_headers, NULL, &hsize) < 0) {
            failed = 1;
        } else {
            Py_ssize_t body = 1 + varint_size(delta) + varint_size(offset_delta) +
                              (klen < 0 ? 1 : varint_size(klen) + klen) + (vlen < 0 ? 1 : varint_size(vlen) + vlen) +
                              hsize;
            Py_ssize_t total = varint_size(body) + body, used = PyByteArray_GET_SIZE(out);
            if (offset_delta > 0 && used + total > max_bytes) {
                if (kholding)
                    PyBuffer_Release(&kheld);
                if (vholding)
                    PyBuffer_Release(&vheld);
                break;
            }
            if (offset_delta >= INT32_MAX) {
                PyErr_SetString(PyExc_ValueError, "a record batch holds at most 2**31 - 1 records");
                failed = 1;
            } else if (PyByteArray_Resize(out, used + total) < 0) {
                failed = 1;
            } else {
                char *w = PyByteArray_AS_STRING(out) + used;
                w = write_varint(w, body);
                *w++ = 0;
                w = write_varint(w, delta);
                w = write_varint(w, offset_delta);
                w = write_varint(w, klen);
                if (klen > 0) {
                    memcpy(w, kptr, (size_t)klen);
                    w += klen;
                }
                w = write_varint(w, vlen);
                if (vlen > 0) {
                    memcpy(w, vptr, (size_t)vlen);
                    w += vlen;
                }
                if (encode_headers(record_headers, &w, &hsize) < 0)
                    failed = 1;
            }
        }
        if (kholding)
            PyBuffer_Release(&kheld);
        if (vholding)
            PyBuffer_Release(&vheld);
        if (failed)
            goto done;
        if (timestamp > max_timestamp)
            max_timestamp = timestamp;
        offset_delta++;
    }
    result = Py_BuildValue("(nLL)", i - start, (long long)base_timestamp, (long long)max_timestamp);
done:
    timestamps_release(&ts);
    source_release(&keys);
    source_release(&values);
    return result;
}
