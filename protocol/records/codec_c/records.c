/* Parsing and checking records; growing buffers. */
#include "codec.h"

PyObject *codec_corrupt_error = NULL;

int corrupt(const char *format, ...) {
    va_list args;
    va_start(args, format);
    PyErr_FormatV(codec_corrupt_error ? codec_corrupt_error : PyExc_ValueError, format, args);
    va_end(args);
    return -1;
}

int as_int64(PyObject *obj, int64_t *out) {
    long long v = PyLong_AsLongLong(obj);
    if (v == -1 && PyErr_Occurred())
        return -1;
    *out = v;
    return 0;
}

/* RFC 3629, as Python's strict decoder: no overlong forms, no surrogates, nothing above U+10FFFF. */
int valid_utf8(const uint8_t *s, Py_ssize_t n) {
    Py_ssize_t i = 0;
    while (i < n) {
        uint8_t c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        int extra;
        uint8_t lo = 0x80, hi = 0xBF;
        if (c >= 0xC2 && c <= 0xDF) extra = 1;
        else if (c == 0xE0) { extra = 2; lo = 0xA0; }
        else if (c >= 0xE1 && c <= 0xEC) extra = 2;
        else if (c == 0xED) { extra = 2; hi = 0x9F; }
        else if (c >= 0xEE && c <= 0xEF) extra = 2;
        else if (c == 0xF0) { extra = 3; lo = 0x90; }
        else if (c >= 0xF1 && c <= 0xF3) extra = 3;
        else if (c == 0xF4) { extra = 3; hi = 0x8F; }
        else return 0;
        if (n - i <= extra || s[i + 1] < lo || s[i + 1] > hi)
            return 0;
        for (int k = 2; k <= extra; k++)
            if (s[i + k] < 0x80 || s[i + k] > 0xBF)
                return 0;
        i += extra + 1;
    }
    return 1;
}

static int bad_length(const char *what, int64_t size, Py_ssize_t pos, Py_ssize_t limit) {
    if (size < 0)
        return corrupt("invalid %s length %lld", what, (long long)size);
    return corrupt("%s length %lld runs past the end of its record (%zd bytes left)", what, (long long)size,
                   limit - pos);
}

/* A length-prefixed field (nullable when allow_null) inside [*pos, rec_end). */
static inline int read_field(const uint8_t *buf, Py_ssize_t end, Py_ssize_t *pos, Py_ssize_t rec_end,
                             const char *what, int allow_null, Py_ssize_t *field_pos, Py_ssize_t *field_len) {
    int64_t size;
    if (READ_VARINT(buf, end, pos, &size) < 0)
        return -1;
    *field_pos = *pos;
    if (size == -1 && allow_null) {
        *field_len = -1;
        return 0;
    }
    if (size < 0 || size > rec_end - *pos)
        return bad_length(what, size, *pos, rec_end);
    *field_len = (Py_ssize_t)size;
    *pos += (Py_ssize_t)size;
    return 0;
}

/* One record at *pos. Fields may be read past the record's end (never past `end`), but every length is
 * checked against it and the record must end exactly there. Header keys are checked for UTF-8 by whoever
 * makes strings of them. */
static inline int parse_record(const uint8_t *buf, Py_ssize_t end, Py_ssize_t *pos, Parsed *r) {
    int64_t length;
    Py_ssize_t p = *pos;
    if (READ_VARINT(buf, end, &p, &length) < 0)
        return -1;
    if (length < MIN_RECORD_SIZE - 1 || length > end - p)
        return corrupt("record length %lld at byte %zd is invalid", (long long)length, p);
    Py_ssize_t rec_end = p + (Py_ssize_t)length;
    p += 1; /* attributes: unused in v2 */
    if (READ_VARLONG(buf, end, &p, &r->timestamp_delta) < 0 || READ_VARINT(buf, end, &p, &r->offset_delta) < 0 ||
        read_field(buf, end, &p, rec_end, "key", 1, &r->key_pos, &r->key_len) < 0 ||
        read_field(buf, end, &p, rec_end, "value", 1, &r->value_pos, &r->value_len) < 0 ||
        READ_VARINT(buf, end, &p, &r->header_count) < 0)
        return -1;
    if (r->header_count < 0 || r->header_count * 2 > rec_end - p) /* a header takes two bytes at least */
        return corrupt("invalid header count %lld", (long long)r->header_count);
    r->headers_pos = p;
    for (int64_t i = 0; i < r->header_count; i++) {
        Py_ssize_t fpos, flen;
        if (read_field(buf, end, &p, rec_end, "header key", 0, &fpos, &flen) < 0 ||
            read_field(buf, end, &p, rec_end, "header value", 1, &fpos, &flen) < 0)
            return -1;
    }
    if (p != rec_end)
        return corrupt("record fields end at byte %zd, its length says %zd", p, rec_end);
    *pos = p;
    return 0;
}

int walk_records(PyObject *records, int64_t count, RecordSink sink, void *ctx) {
    Py_buffer view;
    if (PyObject_GetBuffer(records, &view, PyBUF_SIMPLE) < 0)
        return -1;
    const uint8_t *buf = (const uint8_t *)view.buf;
    Py_ssize_t end = view.len, pos = 0;
    int rc = -1;
    if (count < 0 || count * MIN_RECORD_SIZE > (int64_t)end) {
        corrupt("record count %lld cannot fit in %zd bytes of records", (long long)count, end);
        goto done;
    }
    for (int64_t i = 0; i < count; i++) {
        Parsed r;
        if (parse_record(buf, end, &pos, &r) < 0 || sink(ctx, buf, end, &r) < 0)
            goto done;
    }
    if (pos != end) {
        corrupt("%zd bytes remain after the batch's %lld records", end - pos, (long long)count);
        goto done;
    }
    rc = 0;
done:
    PyBuffer_Release(&view);
    return rc;
}

void next_header(const uint8_t *buf, Py_ssize_t end, Py_ssize_t *pos, Py_ssize_t *key_pos, Py_ssize_t *key_len,
                 Py_ssize_t *value_pos, Py_ssize_t *value_len) {
    int64_t size;
    READ_VARINT(buf, end, pos, &size);
    *key_pos = *pos;
    *key_len = (Py_ssize_t)size;
    *pos += (Py_ssize_t)size;
    READ_VARINT(buf, end, pos, &size);
    *value_pos = *pos;
    *value_len = (Py_ssize_t)size;
    if (size > 0)
        *pos += (Py_ssize_t)size;
}

/* -- buffers ---------------------------------------------------------------------------------------- */

int buf_reserve(Buf *b, Py_ssize_t extra) {
    if (b->len + extra <= b->cap)
        return 0;
    Py_ssize_t cap = b->cap < 128 ? 256 : b->cap;
    while (cap < b->len + extra) {
        if (cap > PY_SSIZE_T_MAX / 2) {
            PyErr_NoMemory();
            return -1;
        }
        cap *= 2;
    }
    if (b->obj == NULL)
        b->obj = PyBytes_FromStringAndSize(NULL, cap);
    else
        _PyBytes_Resize(&b->obj, cap); /* on failure it frees the object and sets it to NULL */
    if (b->obj == NULL) {
        b->len = b->cap = 0;
        return -1;
    }
    b->cap = cap;
    return 0;
}

PyObject *buf_to_bytes(Buf *b) {
    PyObject *obj = b->obj;
    if (obj == NULL)
        return PyBytes_FromStringAndSize("", 0);
    b->obj = NULL;
    if (b->len != b->cap && _PyBytes_Resize(&obj, b->len) < 0) {
        b->len = b->cap = 0;
        return NULL;
    }
    b->len = b->cap = 0;
    return obj;
}

void buf_free(Buf *b) {
    Py_CLEAR(b->obj);
    b->len = b->cap = 0;
}
