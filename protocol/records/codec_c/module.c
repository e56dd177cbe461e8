/* The module: odradek.protocol.records._codec (see codec.h). */
#include "codec.h"

static PyObject *init(PyObject *self, PyObject *error) {
    Py_XINCREF(error);
    Py_XSETREF(codec_corrupt_error, error);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"_init", init, METH_O, "_init(CorruptRecordBatchError): the exception raised for undecodable records"},
    {"decode_records", (PyCFunction)(void (*)(void))codec_decode_records, METH_FASTCALL,
     "decode_records(buf, count, base_offset, base_timestamp, fixed_timestamp, record_type) -> list"},
    {"decode_consumer_records", (PyCFunction)(void (*)(void))codec_decode_consumer_records, METH_FASTCALL,
     "decode_consumer_records(buf, count, base_offset, base_timestamp, fixed_timestamp, min_offset, topic, "
     "partition, timestamp_type, record_type, key_deserializer, value_deserializer) -> list"},
    {"decode_arrow", codec_decode_arrow, METH_O, "decode_arrow(batches) -> column buffers (see pure_codec.decode_arrow)"},
    {"encode_records", (PyCFunction)(void (*)(void))codec_encode_records, METH_FASTCALL,
     "encode_records(out, base_timestamp, offset_delta, max_timestamp, now, timestamps, keys, values, headers, "
     "start, stop, max_bytes, meta) -> (appended, base_timestamp, max_timestamp)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_codec", "The compiled record codec (see pure_codec.py for the reference).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__codec(void) {
    PyObject *m = PyModule_Create(&module);
    if (m != NULL && PyModule_AddIntConstant(m, "ABI", CODEC_ABI) < 0)
        Py_CLEAR(m);
    return m;
}
