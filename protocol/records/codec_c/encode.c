/* Python lists, rows or Arrow columns to records (encode_records): a run of records appended in one call. */
#include "codec.h"

/* Where a column's Python objects are: item i of a list, or item `index` of the tuple rows[i]. */
typedef struct {
    PyObject *list;
    Py_ssize_t index; /* -1: the list holds the items themselves */
} Objects;

/* obj is a list, or (rows: list of tuples, index) */
static int objects_open(PyObject *obj, Objects *o, Py_ssize_t stop, const char *what) {
    o->index = -1;
    if (PyTuple_Check(obj) && PyTuple_GET_SIZE(obj) == 2) {
        o->index = PyLong_AsSsize_t(PyTuple_GET_ITEM(obj, 1));
        if (o->index == -1 && PyErr_Occurred())
            return -1;
        obj = PyTuple_GET_ITEM(obj, 0);
        if (o->index < 0) {
            PyErr_Format(PyExc_ValueError, "%s: negative row index", what);
            return -1;
        }
    }
    if (!PyList_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "%s must be None, a list, (rows, index) or an Arrow column description", what);
        return -1;
    }
    if (PyList_GET_SIZE(obj) < stop) {
        PyErr_Format(PyExc_ValueError, "%s has fewer items than the records", what);
        return -1;
    }
    o->list = obj;
    return 0;
}

static inline PyObject *objects_get(const Objects *o, Py_ssize_t i, const char *what) {
    PyObject *item = PyList_GET_ITEM(o->list, i);
    if (o->index < 0)
        return item;
    if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) <= o->index) {
        PyErr_Format(PyExc_TypeError, "%s: rows must be tuples of more than %zd items", what, o->index);
        return NULL;
    }
    return PyTuple_GET_ITEM(item, o->index);
}

/* -- keys and values ----------------------------------------------------------------------------------- */

/* None (all null), Python objects (bytes-likes or None), or an Arrow binary column given as (validity
 * buffer or None, offsets buffer, data buffer, array offset, large offsets). */
typedef struct {
    int kind; /* 0 all null, 1 objects, 2 arrow */
    Objects objects;
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
    if (!PyTuple_Check(obj) || PyTuple_GET_SIZE(obj) != 5) {
        s->kind = 1;
        return objects_open(obj, &s->objects, stop, what);
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

static inline int valid_bit(const Py_buffer *bitmap, Py_ssize_t j) {
    return (((const uint8_t *)bitmap->buf)[j >> 3] >> (j & 7)) & 1;
}

/* The i-th item: *len -1 for null. *holding is set when `held` must be released after use. */
static int source_get(Source *s, Py_ssize_t i, const char **ptr, Py_ssize_t *len, Py_buffer *held, int *holding,
                      const char *what) {
    *holding = 0;
    if (s->kind == 0) {
        *len = -1;
        return 0;
    }
    if (s->kind == 1) {
        PyObject *item = objects_get(&s->objects, i, what);
        if (item == NULL)
            return -1;
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
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError, "%s must be bytes-like or None, not %.100s", what, Py_TYPE(item)->tp_name);
            return -1;
        }
        *holding = 1;
        *ptr = (const char *)held->buf;
        *len = held->len;
        return 0;
    }
    Py_ssize_t j = s->offset + i;
    if (s->has_validity && !valid_bit(&s->validity, j)) {
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

/* -- timestamps ---------------------------------------------------------------------------------------- */

/* An int (every record), Python objects (ints; None = now), or an Arrow int64 column (validity or None,
 * values buffer, array offset; null = now). */
typedef struct {
    int kind; /* 0 constant, 1 objects, 2 arrow */
    int64_t constant;
    Objects objects;
    Py_buffer validity, values;
    int has_validity;
    Py_ssize_t offset;
} Timestamps;

static int timestamp_value(PyObject *obj, int64_t *out) {
    if (!PyLong_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "timestamps must be ints or None, not %.100s", Py_TYPE(obj)->tp_name);
        return -1;
    }
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(obj, &overflow);
    if (overflow) {
        PyErr_Format(PyExc_ValueError, "timestamp %S is not an int64", obj);
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
    if (!PyTuple_Check(obj) || PyTuple_GET_SIZE(obj) != 3) {
        t->kind = 1;
        return objects_open(obj, &t->objects, stop, "timestamps");
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
        PyObject *item = objects_get(&t->objects, i, "timestamps");
        if (item == NULL)
            return -1;
        if (item == Py_None) {
            *out = now;
            return 0;
        }
        return timestamp_value(item, out);
    }
    Py_ssize_t j = t->offset + i;
    if (t->has_validity && !valid_bit(&t->validity, j)) {
        *out = now;
        return 0;
    }
    memcpy(out, (const char *)t->values.buf + 8 * j, 8);
    return 0;
}

/* -- headers ------------------------------------------------------------------------------------------- */

/* One header pair: its encoded size added to *total and its key and value bytes to *payload; when
 * out != NULL, its bytes written there. */
static int encode_header(PyObject *key, PyObject *value, char **out, Py_ssize_t *total, Py_ssize_t *payload) {
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
    *payload += klen;
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
    *payload += vview.len;
    if (out) {
        *out = write_varint(*out, vview.len);
        memcpy(*out, vview.buf, (size_t)vview.len);
        *out += vview.len;
    }
    PyBuffer_Release(&vview);
    return 0;
}

/* One record's headers (None or a sequence of (str or bytes, bytes-like or None) pairs): their encoded size
 * and key and value bytes (Kafka's serialized header size), and when out != NULL the bytes. The sequence
 * is walked twice (size, then bytes) without keeping views between the walks. */
static int encode_headers(PyObject *headers, char **out, Py_ssize_t *size, Py_ssize_t *payload) {
    *payload = 0;
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
        int pair_rc = encode_header(key, value, out, &total, payload);
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

/* -- encode_records ------------------------------------------------------------------------------------ */

/* What encode_records appends to `meta` for each record: its timestamp and Kafka's serialized sizes
 * (key and value -1 when null; headers: their keys' and values' bytes). */
typedef struct {
    int64_t timestamp;
    int32_t key_size, value_size, header_size;
} __attribute__((packed)) RecordMeta;

/* One record's fields, while it is encoded (the views are released after each record). */
typedef struct {
    const char *key, *value;
    Py_ssize_t key_len, value_len;
    Py_buffer key_view, value_view;
    int key_held, value_held;
} Fields;

static void fields_release(Fields *f) {
    if (f->key_held)
        PyBuffer_Release(&f->key_view);
    if (f->value_held)
        PyBuffer_Release(&f->value_view);
    f->key_held = f->value_held = 0;
}

typedef struct {
    Timestamps timestamps;
    Source keys, values;
    Objects headers;
    int has_headers;
} Inputs;

static void inputs_release(Inputs *in) {
    timestamps_release(&in->timestamps);
    source_release(&in->keys);
    source_release(&in->values);
}

static int inputs_open(Inputs *in, PyObject *const *args, Py_ssize_t stop) {
    memset(in, 0, sizeof *in);
    in->has_headers = args[3] != Py_None;
    if (timestamps_open(args[0], &in->timestamps, stop) < 0)
        return -1;
    if (source_open(args[1], &in->keys, stop, "keys") < 0 || source_open(args[2], &in->values, stop, "values") < 0 ||
        (in->has_headers && objects_open(args[3], &in->headers, stop, "headers") < 0)) {
        inputs_release(in);
        return -1;
    }
    return 0;
}

/* Appends one record to `out` unless it would take out past max_bytes in a batch that holds some already:
 * 1 appended, 0 stopped, -1 error. */
static int encode_one(PyObject *out, Inputs *in, PyObject *meta, Py_ssize_t i, int64_t now, int64_t *base_timestamp,
                      int64_t offset_delta, Py_ssize_t max_bytes, int64_t *timestamp) {
    int64_t delta;
    if (timestamps_get(&in->timestamps, i, now, timestamp) < 0)
        return -1;
    if (offset_delta == 0)
        *base_timestamp = *timestamp;
    if (__builtin_sub_overflow(*timestamp, *base_timestamp, &delta)) {
        PyErr_Format(PyExc_ValueError, "timestamp %lld is too far from the batch's first, %lld", (long long)*timestamp,
                     (long long)*base_timestamp);
        return -1;
    }
    Fields f;
    memset(&f, 0, sizeof f);
    int rc = -1;
    if (source_get(&in->keys, i, &f.key, &f.key_len, &f.key_view, &f.key_held, "keys") < 0 ||
        source_get(&in->values, i, &f.value, &f.value_len, &f.value_view, &f.value_held, "values") < 0)
        goto done;
    PyObject *headers = Py_None;
    if (in->has_headers && (headers = objects_get(&in->headers, i, "headers")) == NULL)
        goto done;
    if (PyList_Check(headers) && PyList_GET_SIZE(headers) == 0)
        headers = Py_None;
    Py_ssize_t header_bytes, header_payload;
    if (encode_headers(headers, NULL, &header_bytes, &header_payload) < 0)
        goto done;
    Py_ssize_t body = 1 + varint_size(delta) + varint_size(offset_delta) +
                      (f.key_len < 0 ? 1 : varint_size(f.key_len) + f.key_len) +
                      (f.value_len < 0 ? 1 : varint_size(f.value_len) + f.value_len) + header_bytes;
    Py_ssize_t total = varint_size(body) + body, used = PyByteArray_GET_SIZE(out);
    if (offset_delta > 0 && used + total > max_bytes) {
        rc = 0;
        goto done;
    }
    if (offset_delta >= INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "a record batch holds at most 2**31 - 1 records");
        goto done;
    }
    if (PyByteArray_Resize(out, used + total) < 0)
        goto done;
    char *w = PyByteArray_AS_STRING(out) + used;
    w = write_varint(w, body);
    *w++ = 0;
    w = write_varint(w, delta);
    w = write_varint(w, offset_delta);
    w = write_varint(w, f.key_len);
    if (f.key_len > 0) {
        memcpy(w, f.key, (size_t)f.key_len);
        w += f.key_len;
    }
    w = write_varint(w, f.value_len);
    if (f.value_len > 0) {
        memcpy(w, f.value, (size_t)f.value_len);
        w += f.value_len;
    }
    if (encode_headers(headers, &w, &header_bytes, &header_payload) < 0) {
        PyByteArray_Resize(out, used);
        goto done;
    }
    if (meta != Py_None) {
        RecordMeta m = {*timestamp, (int32_t)f.key_len, (int32_t)f.value_len, (int32_t)header_payload};
        Py_ssize_t size = PyByteArray_GET_SIZE(meta);
        if (PyByteArray_Resize(meta, size + (Py_ssize_t)sizeof m) < 0) {
            PyByteArray_Resize(out, used);
            goto done;
        }
        memcpy(PyByteArray_AS_STRING(meta) + size, &m, sizeof m);
    }
    rc = 1;
done:
    fields_release(&f);
    return rc;
}

/* encode_records(out, base_timestamp, offset_delta, max_timestamp, now, timestamps, keys, values, headers,
 *                start, stop, max_bytes, meta) -> (appended, base_timestamp, max_timestamp)
 * Appends records start..stop-1 to the bytearray `out` (a batch's records so far: `offset_delta` of them,
 * the first one's timestamp `base_timestamp`), stopping before the first record that would take `out` past
 * max_bytes, unless the batch is still empty; `meta` (a bytearray or None) gets a RecordMeta per record.
 * Columns: see pure_codec.encode_records. */
PyObject *codec_encode_records(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 13) {
        PyErr_SetString(PyExc_TypeError, "encode_records takes 13 arguments");
        return NULL;
    }
    PyObject *out = args[0], *meta = args[12];
    if (!PyByteArray_Check(out) || (meta != Py_None && !PyByteArray_Check(meta))) {
        PyErr_SetString(PyExc_TypeError, "out (and meta unless None) must be bytearrays");
        return NULL;
    }
    int64_t base_timestamp, offset_delta, max_timestamp, now;
    if (as_int64(args[1], &base_timestamp) < 0 || as_int64(args[2], &offset_delta) < 0 ||
        as_int64(args[3], &max_timestamp) < 0 || as_int64(args[4], &now) < 0)
        return NULL;
    Py_ssize_t start = PyLong_AsSsize_t(args[9]), stop = PyLong_AsSsize_t(args[10]);
    Py_ssize_t max_bytes = PyLong_AsSsize_t(args[11]);
    if (PyErr_Occurred())
        return NULL;
    if (start < 0 || stop < start) {
        PyErr_SetString(PyExc_ValueError, "invalid start/stop");
        return NULL;
    }
    Inputs in;
    if (inputs_open(&in, args + 5, stop) < 0)
        return NULL;
    Py_ssize_t out_before = PyByteArray_GET_SIZE(out), meta_before = meta == Py_None ? 0 : PyByteArray_GET_SIZE(meta);
    Py_ssize_t i = start;
    for (; i < stop; i++) {
        int64_t timestamp;
        int rc = encode_one(out, &in, meta, i, now, &base_timestamp, offset_delta, max_bytes, &timestamp);
        if (rc < 0) { /* nothing of this call stays: the caller's counts stay right */
            inputs_release(&in);
            PyByteArray_Resize(out, out_before);
            if (meta != Py_None)
                PyByteArray_Resize(meta, meta_before);
            return NULL;
        }
        if (rc == 0)
            break;
        if (timestamp > max_timestamp)
            max_timestamp = timestamp;
        offset_delta++;
    }
    inputs_release(&in);
    return Py_BuildValue("(nLL)", i - start, (long long)base_timestamp, (long long)max_timestamp);
}
