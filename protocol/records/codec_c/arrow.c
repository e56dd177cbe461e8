/* Records to Arrow column buffers (decode_arrow): many batches in one call, no Python object per record. */
#include "codec.h"

/* A binary/string column being built: validity bits (one per item), int32 offsets, data. */
typedef struct {
    Buf validity, offsets, data;
    Py_ssize_t count, nulls;
} Column;

static int column_add(Column *c, const uint8_t *src, Py_ssize_t len) {
    if ((c->count & 7) == 0) {
        uint8_t zero = 0;
        if (buf_put(&c->validity, &zero, 1) < 0)
            return -1;
    }
    if (len < 0) {
        c->nulls++;
        len = 0;
    } else {
        BUF_DATA(&c->validity)[c->count >> 3] |= (char)(1 << (c->count & 7));
        if (buf_put(&c->data, src, len) < 0)
            return -1;
    }
    if (c->data.len > INT32_MAX) {
        PyErr_SetString(PyExc_OverflowError, "more than 2 GiB of keys, values or headers in one Arrow column");
        return -1;
    }
    int32_t end = (int32_t)c->data.len;
    c->count++;
    return buf_put(&c->offsets, &end, 4);
}

static void column_free(Column *c) {
    buf_free(&c->validity);
    buf_free(&c->offsets);
    buf_free(&c->data);
}

/* (null count, validity or None, offsets, data) */
static PyObject *column_result(Column *c) {
    PyObject *validity = c->nulls ? buf_to_bytes(&c->validity) : (Py_INCREF(Py_None), Py_None);
    PyObject *offsets = buf_to_bytes(&c->offsets), *data = buf_to_bytes(&c->data), *result = NULL;
    if (validity && offsets && data)
        result = Py_BuildValue("(nOOO)", c->nulls, validity, offsets, data);
    Py_XDECREF(validity);
    Py_XDECREF(offsets);
    Py_XDECREF(data);
    return result;
}

typedef struct {
    Column keys, values, header_keys, header_values;
    Buf offsets, timestamps, timestamp_types, header_offsets;
    Py_ssize_t count, header_total;
    /* the batch being walked */
    int64_t base_offset, base_timestamp, fixed, min_offset;
    int has_fixed;
    int32_t timestamp_type;
} ArrowOut;

static void arrow_free(ArrowOut *a) {
    Column *columns[] = {&a->keys, &a->values, &a->header_keys, &a->header_values};
    for (int i = 0; i < 4; i++)
        column_free(columns[i]);
    Buf *bufs[] = {&a->offsets, &a->timestamps, &a->timestamp_types, &a->header_offsets};
    for (int i = 0; i < 4; i++)
        buf_free(bufs[i]);
}

static int arrow_sink(void *ctx, const uint8_t *buf, Py_ssize_t end, const Parsed *r) {
    ArrowOut *a = ctx;
    int64_t offset, timestamp, micros;
    if (__builtin_add_overflow(a->base_offset, r->offset_delta, &offset))
        return corrupt("record offset overflows int64");
    if (a->has_fixed)
        timestamp = a->fixed;
    else if (__builtin_add_overflow(a->base_timestamp, r->timestamp_delta, &timestamp))
        return corrupt("record timestamp overflows int64");
    if (offset < a->min_offset)
        return 0;
    if (__builtin_mul_overflow(timestamp, (int64_t)1000, &micros))
        return corrupt("record timestamp %lld ms does not fit in microseconds", (long long)timestamp);
    if (column_add(&a->keys, buf + r->key_pos, r->key_len) < 0 ||
        column_add(&a->values, buf + r->value_pos, r->value_len) < 0 || buf_put(&a->offsets, &offset, 8) < 0 ||
        buf_put(&a->timestamps, &micros, 8) < 0 || buf_put(&a->timestamp_types, &a->timestamp_type, 4) < 0)
        return -1;
    Py_ssize_t p = r->headers_pos;
    for (int64_t h = 0; h < r->header_count; h++) {
        Py_ssize_t kpos, klen, vpos, vlen;
        next_header(buf, end, &p, &kpos, &klen, &vpos, &vlen);
        if (!valid_utf8(buf + kpos, klen))
            return corrupt("header key is not UTF-8");
        if (column_add(&a->header_keys, buf + kpos, klen) < 0 || column_add(&a->header_values, buf + vpos, vlen) < 0)
            return -1;
    }
    a->header_total += r->header_count;
    if (a->header_total > INT32_MAX) {
        PyErr_SetString(PyExc_OverflowError, "too many headers for one Arrow column");
        return -1;
    }
    int32_t header_end = (int32_t)a->header_total;
    a->count++;
    return buf_put(&a->header_offsets, &header_end, 4);
}

/* One batch (records, count, base_offset, base_timestamp, timestamp_type, fixed_timestamp, min_offset):
 * its records at or after min_offset into the columns. */
static int arrow_add_batch(ArrowOut *a, PyObject *spec) {
    if (!PyTuple_Check(spec) || PyTuple_GET_SIZE(spec) != 7) {
        PyErr_SetString(PyExc_TypeError, "each batch is (records, count, base_offset, base_timestamp, "
                                         "timestamp_type, fixed_timestamp, min_offset)");
        return -1;
    }
    int64_t count, timestamp_type;
    PyObject *fixed = PyTuple_GET_ITEM(spec, 5);
    a->has_fixed = fixed != Py_None;
    if (as_int64(PyTuple_GET_ITEM(spec, 1), &count) < 0 || as_int64(PyTuple_GET_ITEM(spec, 2), &a->base_offset) < 0 ||
        as_int64(PyTuple_GET_ITEM(spec, 3), &a->base_timestamp) < 0 ||
        as_int64(PyTuple_GET_ITEM(spec, 4), &timestamp_type) < 0 || (a->has_fixed && as_int64(fixed, &a->fixed) < 0) ||
        as_int64(PyTuple_GET_ITEM(spec, 6), &a->min_offset) < 0)
        return -1;
    a->timestamp_type = (int32_t)timestamp_type;
    return walk_records(PyTuple_GET_ITEM(spec, 0), count, arrow_sink, a);
}

/* Room for every record of the batches up front: keys and values take at most the records' bytes each
 * (untouched pages of the spare room cost nothing), the fixed-width columns 4 or 8 bytes per record. */
static int arrow_reserve(ArrowOut *a, PyObject *seq, Py_ssize_t n) {
    int32_t zero = 0; /* every offsets buffer starts with 0 */
    Buf *starts[] = {&a->keys.offsets, &a->values.offsets, &a->header_keys.offsets, &a->header_values.offsets,
                     &a->header_offsets};
    for (int i = 0; i < 5; i++)
        if (buf_put(starts[i], &zero, 4) < 0)
            return -1;
    Py_ssize_t bytes = 0, records = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *spec = PySequence_Fast_GET_ITEM(seq, i);
        if (!PyTuple_Check(spec) || PyTuple_GET_SIZE(spec) != 7)
            return 0; /* arrow_add_batch reports it */
        Py_ssize_t size = PyObject_Length(PyTuple_GET_ITEM(spec, 0));
        Py_ssize_t count = PyLong_AsSsize_t(PyTuple_GET_ITEM(spec, 1));
        if (size < 0 || count < 0 || count > size) {
            PyErr_Clear(); /* arrow_add_batch reports it, or the columns grow as they go */
            return 0;
        }
        bytes += size;
        records += count;
    }
    Buf *by_count[] = {&a->keys.offsets, &a->values.offsets, &a->timestamp_types, &a->header_offsets};
    for (int i = 0; i < 4; i++)
        if (buf_reserve(by_count[i], 4 * records) < 0)
            return -1;
    if (buf_reserve(&a->keys.data, bytes) < 0 || buf_reserve(&a->values.data, bytes) < 0 ||
        buf_reserve(&a->keys.validity, records / 8 + 1) < 0 || buf_reserve(&a->values.validity, records / 8 + 1) < 0 ||
        buf_reserve(&a->offsets, 8 * records) < 0 || buf_reserve(&a->timestamps, 8 * records) < 0)
        return -1;
    return 0;
}

/* decode_arrow(batches) -> (count, keys, values, offsets, timestamps, timestamp_types, header_offsets,
 *                           header_keys, header_values)
 * batches: [(records, count, base_offset, base_timestamp, timestamp_type, fixed_timestamp, min_offset)];
 * a column is (null count, validity bitmap or None, int32 offsets, data); offsets and timestamps (µs) are
 * int64, timestamp types int32, header_offsets int32 (count + 1), all in native byte order. */
PyObject *codec_decode_arrow(PyObject *self, PyObject *batches) {
    PyObject *seq = PySequence_Fast(batches, "batches must be a sequence");
    if (seq == NULL)
        return NULL;
    ArrowOut a;
    memset(&a, 0, sizeof a);
    PyObject *result = NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (arrow_reserve(&a, seq, n) < 0)
        goto done;
    for (Py_ssize_t i = 0; i < n; i++)
        if (arrow_add_batch(&a, PySequence_Fast_GET_ITEM(seq, i)) < 0)
            goto done;
    PyObject *parts[8] = {
        column_result(&a.keys), column_result(&a.values), buf_to_bytes(&a.offsets), buf_to_bytes(&a.timestamps),
        buf_to_bytes(&a.timestamp_types), buf_to_bytes(&a.header_offsets), column_result(&a.header_keys),
        column_result(&a.header_values),
    };
    int ok = 1;
    for (int i = 0; i < 8; i++)
        ok = ok && parts[i] != NULL;
    if (ok)
        result = Py_BuildValue("(nOOOOOOOO)", a.count, parts[0], parts[1], parts[2], parts[3], parts[4], parts[5],
                               parts[6], parts[7]);
    for (int i = 0; i < 8; i++)
        Py_XDECREF(parts[i]);
done:
    arrow_free(&a);
    Py_DECREF(seq);
    return result;
}
