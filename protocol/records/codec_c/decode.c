/* Records to Python: Record tuples (decode_records) or ConsumerRecords (decode_consumer_records). */
#include "codec.h"

static PyObject *bytes_or_none(const uint8_t *buf, Py_ssize_t pos, Py_ssize_t len) {
    if (len < 0)
        Py_RETURN_NONE;
    return PyBytes_FromStringAndSize((const char *)buf + pos, len);
}

/* base + delta as a Python int, exact even when it leaves int64 (garbage batches; pure_codec's ints grow). */
static PyObject *sum_to_long(int64_t base, int64_t delta) {
    int64_t sum;
    if (!__builtin_add_overflow(base, delta, &sum))
        return PyLong_FromLongLong(sum);
    PyObject *a = PyLong_FromLongLong(base), *b = PyLong_FromLongLong(delta), *result = NULL;
    if (a && b)
        result = PyNumber_Add(a, b);
    Py_XDECREF(a);
    Py_XDECREF(b);
    return result;
}

static PyObject *headers_list(const uint8_t *buf, Py_ssize_t end, const Parsed *r) {
    PyObject *list = PyList_New((Py_ssize_t)r->header_count);
    if (list == NULL)
        return NULL;
    Py_ssize_t p = r->headers_pos;
    for (Py_ssize_t i = 0; i < (Py_ssize_t)r->header_count; i++) {
        Py_ssize_t kpos, klen, vpos, vlen;
        next_header(buf, end, &p, &kpos, &klen, &vpos, &vlen);
        PyObject *key = PyUnicode_DecodeUTF8((const char *)buf + kpos, klen, "strict");
        if (key == NULL) {
            Py_DECREF(list);
            if (PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {
                PyErr_Clear();
                corrupt("header key is not UTF-8");
            }
            return NULL;
        }
        PyObject *value = bytes_or_none(buf, vpos, vlen);
        PyObject *pair = value ? PyTuple_Pack(2, key, value) : NULL;
        Py_DECREF(key);
        Py_XDECREF(value);
        if (pair == NULL) {
            Py_DECREF(list);
            return NULL;
        }
        PyObject_GC_UnTrack(pair); /* (str, bytes or None): CPython untracks such a tuple at its first collection */
        PyList_SET_ITEM(list, i, pair);
    }
    return list;
}

/* A record is taken off the garbage collector's lists when all it holds are atoms (str, bytes, ints, None)
 * and its headers list, which holds only (str, bytes) pairs: the collector would otherwise walk every record
 * an application holds (more than half of a consumer's CPU per record). A cycle made later through the
 * headers list (appending the record to its own headers) would not be collected, as for any untracked
 * container; deserialized keys and values that are containers keep the record tracked. */
static void untrack_record(PyObject *record) {
    Py_ssize_t n = PyTuple_GET_SIZE(record);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PyTuple_GET_ITEM(record, i);
        if (PyList_CheckExact(item))
            continue; /* the headers: untracked below with the record */
        if (PyObject_IS_GC(item) && !(PyTuple_CheckExact(item) && PyTuple_GET_SIZE(item) == 0))
            return;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PyTuple_GET_ITEM(record, i);
        if (PyList_CheckExact(item) && PyObject_GC_IsTracked(item))
            PyObject_GC_UnTrack(item);
    }
    if (PyObject_GC_IsTracked(record))
        PyObject_GC_UnTrack(record);
}

/* A tuple of `type` (a tuple subclass without instance fields) of n items, for the caller to fill: what
 * tuple.__new__(type, items) makes, without the intermediate tuple. */
static PyObject *new_record(PyTypeObject *type, Py_ssize_t n) {
    if (type == &PyTuple_Type)
        return PyTuple_New(n);
    return type->tp_alloc(type, n);
}

static int check_record_type(PyObject *type) {
    if (!PyType_Check(type) || !PyType_IsSubtype((PyTypeObject *)type, &PyTuple_Type) ||
        ((PyTypeObject *)type)->tp_basicsize != PyTuple_Type.tp_basicsize ||
        ((PyTypeObject *)type)->tp_itemsize != PyTuple_Type.tp_itemsize) {
        PyErr_SetString(PyExc_TypeError, "record_type must be a tuple subclass without instance fields");
        return -1;
    }
    return 0;
}

/* Sets item i of a new record; steals `item`, fails on NULL (the record is already in the list). */
static inline int set_item(PyObject *record, Py_ssize_t i, PyObject *item) {
    if (item == NULL)
        return -1;
    PyTuple_SET_ITEM(record, i, item);
    return 0;
}

static inline PyObject *new_ref(PyObject *obj) {
    Py_INCREF(obj);
    return obj;
}

typedef struct {
    PyObject *list;
    PyTypeObject *type;
    int64_t base_offset, base_timestamp, fixed, min_offset;
    int has_fixed;
    PyObject *topic, *partition, *timestamp_type, *key_deserializer, *value_deserializer;
} Decoding;

static PyObject *timestamp_of(const Decoding *d, const Parsed *r) {
    return d->has_fixed ? PyLong_FromLongLong(d->fixed) : sum_to_long(d->base_timestamp, r->timestamp_delta);
}

/* Appends a new record of d->type; NULL on error. */
static PyObject *append_record(const Decoding *d, Py_ssize_t n) {
    PyObject *record = new_record(d->type, n);
    if (record == NULL)
        return NULL;
    int rc = PyList_Append(d->list, record);
    Py_DECREF(record); /* the list holds it while its items are filled */
    return rc < 0 ? NULL : record;
}

static int record_sink(void *ctx, const uint8_t *buf, Py_ssize_t end, const Parsed *r) {
    Decoding *d = ctx;
    PyObject *record = append_record(d, 5);
    if (record == NULL || set_item(record, 0, sum_to_long(d->base_offset, r->offset_delta)) < 0 ||
        set_item(record, 1, timestamp_of(d, r)) < 0 || set_item(record, 2, bytes_or_none(buf, r->key_pos, r->key_len)) < 0 ||
        set_item(record, 3, bytes_or_none(buf, r->value_pos, r->value_len)) < 0 ||
        set_item(record, 4, headers_list(buf, end, r)) < 0)
        return -1;
    untrack_record(record);
    return 0;
}

static PyObject *deserialized(PyObject *deserializer, const uint8_t *buf, Py_ssize_t pos, Py_ssize_t len) {
    PyObject *raw = bytes_or_none(buf, pos, len);
    if (raw == NULL || deserializer == Py_None || raw == Py_None)
        return raw;
    PyObject *value = PyObject_CallOneArg(deserializer, raw);
    Py_DECREF(raw);
    return value;
}

static int consumer_record_sink(void *ctx, const uint8_t *buf, Py_ssize_t end, const Parsed *r) {
    Decoding *d = ctx;
    int64_t offset;
    if (__builtin_add_overflow(d->base_offset, r->offset_delta, &offset))
        return corrupt("record offset overflows int64");
    if (offset < d->min_offset)
        return 0;
    PyObject *record = append_record(d, 11);
    if (record == NULL || set_item(record, 0, new_ref(d->topic)) < 0 || set_item(record, 1, new_ref(d->partition)) < 0 ||
        set_item(record, 2, PyLong_FromLongLong(offset)) < 0 || set_item(record, 3, timestamp_of(d, r)) < 0 ||
        set_item(record, 4, new_ref(d->timestamp_type)) < 0 ||
        set_item(record, 5, deserialized(d->key_deserializer, buf, r->key_pos, r->key_len)) < 0 ||
        set_item(record, 6, deserialized(d->value_deserializer, buf, r->value_pos, r->value_len)) < 0 ||
        set_item(record, 7, headers_list(buf, end, r)) < 0 || set_item(record, 8, PyLong_FromSsize_t(r->key_len)) < 0 ||
        set_item(record, 9, PyLong_FromSsize_t(r->value_len)) < 0 || set_item(record, 10, new_ref(Py_None)) < 0)
        return -1;
    untrack_record(record);
    return 0;
}

/* buf, count, base_offset, base_timestamp, fixed_timestamp: the arguments both functions start with. */
static int start_decoding(Decoding *d, PyObject *const *args, PyObject *type, int64_t *count) {
    memset(d, 0, sizeof *d);
    d->has_fixed = args[4] != Py_None;
    if (as_int64(args[1], count) < 0 || as_int64(args[2], &d->base_offset) < 0 ||
        as_int64(args[3], &d->base_timestamp) < 0 || (d->has_fixed && as_int64(args[4], &d->fixed) < 0) ||
        check_record_type(type) < 0)
        return -1;
    d->type = (PyTypeObject *)type;
    d->list = PyList_New(0);
    return d->list == NULL ? -1 : 0;
}

static PyObject *finish_decoding(Decoding *d, int rc) {
    if (rc < 0)
        Py_CLEAR(d->list);
    return d->list;
}

/* decode_records(buf, count, base_offset, base_timestamp, fixed_timestamp, record_type) -> list
 * record_type(offset, timestamp, key, value, headers) for each record; fixed_timestamp (None, or the
 * LogAppendTime) replaces every record's timestamp. */
PyObject *codec_decode_records(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "decode_records takes 6 arguments");
        return NULL;
    }
    Decoding d;
    int64_t count;
    if (start_decoding(&d, args, args[5], &count) < 0)
        return finish_decoding(&d, -1);
    return finish_decoding(&d, walk_records(args[0], count, record_sink, &d));
}

/* decode_consumer_records(buf, count, base_offset, base_timestamp, fixed_timestamp, min_offset, topic,
 *                         partition, timestamp_type, record_type, key_deserializer, value_deserializer) -> list
 * record_type(topic, partition, offset, timestamp, timestamp_type, key, value, headers, key size, value size,
 * None) for each record at or after min_offset; sizes are -1 for null. */
PyObject *codec_decode_consumer_records(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 12) {
        PyErr_SetString(PyExc_TypeError, "decode_consumer_records takes 12 arguments");
        return NULL;
    }
    Decoding d;
    int64_t count;
    if (start_decoding(&d, args, args[9], &count) < 0 || as_int64(args[5], &d.min_offset) < 0)
        return finish_decoding(&d, -1);
    d.topic = args[6];
    d.partition = args[7];
    d.timestamp_type = args[8];
    d.key_deserializer = args[10];
    d.value_deserializer = args[11];
    return finish_decoding(&d, walk_records(args[0], count, consumer_record_sink, &d));
}
