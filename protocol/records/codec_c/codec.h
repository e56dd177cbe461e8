/* The compiled record codec: v2 records (inside a batch, after decompression) to and from Python.
 *
 * Same functions, arguments, results and errors as pure_codec.py, which is the reference: codec.py picks
 * one of the two, and the tests check that both give identical bytes and values. Nothing here knows about
 * batch headers, CRCs or compression (batch.py, builder.py, compression.py keep those).
 *
 *     Record: length varint | attributes int8 | timestampDelta varlong | offsetDelta varint
 *             | keyLength varint (-1 = null) | key | valueLength varint (-1 = null) | value
 *             | headerCount varint | [headerKeyLength varint | key (UTF-8) | headerValueLength varint | value]
 *
 * Varints are zigzag; a varint must fit an int32 and a varlong an int64 (else CorruptRecordBatchError).
 *
 * records.c: parsing and checking records, growing buffers; decode.c: records to Python tuples;
 * arrow.c: records to Arrow column buffers; encode.c: Python or Arrow columns to records; module.c.
 */
#ifndef ODRADEK_CODEC_H
#define ODRADEK_CODEC_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* codec.py refuses a built module of another ABI (a stale build after the source changed). */
#define CODEC_ABI 2
#define MIN_RECORD_SIZE 7 /* seven one-byte fields */

extern PyObject *codec_corrupt_error; /* CorruptRecordBatchError, given by codec.py through _init */

/* Raises CorruptRecordBatchError; returns -1. */
int corrupt(const char *format, ...);

/* A zigzag varint (max_shift 28, must fit int32) or varlong (max_shift 63, must fit int64) at *pos. */
static inline int read_zigzag(const uint8_t *buf, Py_ssize_t end, Py_ssize_t *pos, int max_shift, int64_t *out) {
    Py_ssize_t p = *pos;
    if (p < end && buf[p] < 0x80) { /* the one-byte form: nearly every length and delta */
        uint8_t b = buf[p];
        *out = (int64_t)(b >> 1) ^ -(int64_t)(b & 1);
        *pos = p + 1;
        return 0;
    }
    uint64_t result = 0;
    int shift = 0;
    for (;;) {
        if (p >= end)
            return corrupt("%s runs past the end of the data", max_shift == 28 ? "varint" : "varlong");
        uint8_t b = buf[p++];
        result |= (uint64_t)(b & 0x7F) << shift;
        if (b < 0x80) {
            if (shift == max_shift && b >> (max_shift == 28 ? 4 : 1))
                return corrupt("%s does not fit in its type", max_shift == 28 ? "varint" : "varlong");
            break;
        }
        shift += 7;
        if (shift > max_shift)
            return corrupt("%s is too long", max_shift == 28 ? "varint" : "varlong");
    }
    *out = (int64_t)(result >> 1) ^ -(int64_t)(result & 1);
    *pos = p;
    return 0;
}

#define READ_VARINT(buf, end, pos, out) read_zigzag(buf, end, pos, 28, out)
#define READ_VARLONG(buf, end, pos, out) read_zigzag(buf, end, pos, 63, out)

static inline int varint_size(int64_t value) {
    uint64_t z = ((uint64_t)value << 1) ^ (uint64_t)(value >> 63);
    int size = 1;
    while (z >= 0x80) {
        z >>= 7;
        size++;
    }
    return size;
}

static inline char *write_varint(char *out, int64_t value) {
    uint64_t z = ((uint64_t)value << 1) ^ (uint64_t)(value >> 63);
    while (z >= 0x80) {
        *out++ = (char)((z & 0x7F) | 0x80);
        z >>= 7;
    }
    *out++ = (char)z;
    return out;
}

/* One record, checked: where its fields are. */
typedef struct {
    int64_t timestamp_delta;
    int64_t offset_delta;
    Py_ssize_t key_pos, key_len;     /* key_len -1: null */
    Py_ssize_t value_pos, value_len; /* value_len -1: null */
    Py_ssize_t headers_pos;          /* where the header entries start (after the count) */
    int64_t header_count;
} Parsed;

/* What to do with each record: 0 to go on, -1 on error. */
typedef int (*RecordSink)(void *ctx, const uint8_t *buf, Py_ssize_t end, const Parsed *r);

/* The count records of the blob `records` (any buffer) to sink, checked as pure_codec does: every length
 * inside its record, each record ending where its length says, the last one at the blob's end. */
int walk_records(PyObject *records, int64_t count, RecordSink sink, void *ctx);

/* The next header of a record walk_records has checked (nothing can fail). */
void next_header(const uint8_t *buf, Py_ssize_t end, Py_ssize_t *pos, Py_ssize_t *key_pos, Py_ssize_t *key_len,
                 Py_ssize_t *value_pos, Py_ssize_t *value_len);

/* Exactly the strings Python's strict UTF-8 decoder accepts. */
int valid_utf8(const uint8_t *s, Py_ssize_t n);

int as_int64(PyObject *obj, int64_t *out);

/* A growing buffer that is a bytes object all along, so finishing it copies nothing (the object is ours
 * alone until then, as _PyBytes_Resize requires). */
typedef struct {
    PyObject *obj;
    Py_ssize_t len, cap;
} Buf;

#define BUF_DATA(b) PyBytes_AS_STRING((b)->obj)

int buf_reserve(Buf *b, Py_ssize_t extra);
PyObject *buf_to_bytes(Buf *b); /* the bytes (the buffer is empty afterwards) */
void buf_free(Buf *b);

static inline int buf_put(Buf *b, const void *src, Py_ssize_t n) {
    if (b->len + n > b->cap && buf_reserve(b, n) < 0)
        return -1;
    if (n)
        memcpy(BUF_DATA(b) + b->len, src, (size_t)n);
    b->len += n;
    return 0;
}

/* The module's functions (decode.c, arrow.c, encode.c). */
PyObject *codec_decode_records(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *codec_decode_consumer_records(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *codec_decode_arrow(PyObject *self, PyObject *batches);
PyObject *codec_encode_records(PyObject *self, PyObject *const *args, Py_ssize_t nargs);

#endif
