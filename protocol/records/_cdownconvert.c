/*
 * The hot loop of down-conversion in C: one v2 records payload -> legacy messages.
 *
 * emit(payload, count, base_offset, base_timestamp, append_time, magic, attributes,
 *      fetch_offset, shift) does what protocol/records/_downconvert_runs.emit_records
 * does (that module is the reference and the fallback when this one is not built):
 * for each of the `count` records at or past `fetch_offset` it writes one legacy
 * message (magic 0 or 1) at `offset - shift`, headers dropped, a tombstone
 * (null value or attributes bit 0, KIP-87) with a null value, the CRC-32 over
 * magic..value. It returns (messages as bytes, written, last offset written,
 * max timestamp written, every record plain) where "plain" means no record has
 * headers (the caller then checks the structure with the full decoder).
 *
 * It reads each record once and writes its message straight into one bytes
 * object sized for the worst case (every record takes at least 7 bytes of
 * input and at most 28 bytes more as a message, so the output is at most
 * len(payload) + 28 per record), then shrinks it to what was written. The
 * reading is defensive: whenever anything is unusual (a field past the data or
 * past its record, a varint longer than Kafka allows, bytes left after the last
 * record, an offset that overflows 64 bits) it drops what it wrote
 * and returns None, and the caller runs the Python loop, which raises the
 * decoder's exact error. So this module never has to reproduce an error. A timestamp (base +
 * delta) wraps to 64 bits, as in Kafka's long arithmetic and the Python loops.
 */
#include "_cdownconvert.h"
#include <string.h>

/* Whether headers from `p` (their count first) end exactly at `stop`, as the full decoder checks them:
 * a count in 0..bytes left, keys not null, any value length (negative ones are null). With `key`,
 * *found says whether a header has that key (`klen` bytes). */
int walk_headers(const uint8_t *d, Py_ssize_t p, Py_ssize_t stop, const uint8_t *key, Py_ssize_t klen, int *found) {
    int64_t n, hk, hv;
    Py_ssize_t at;
    if (!read_zigzag(d, &p, stop, 5, 32, &n) || n < 0 || n > stop - p)
        return 0;
    for (int64_t i = 0; i < n; i++) {
        if (!read_zigzag(d, &p, stop, 5, 32, &hk) || hk < 0 || !skip_bytes(&p, stop, hk, &at))
            return 0;
        if (key != NULL && hk == klen && memcmp(d + at, key, (size_t)klen) == 0)
            *found = 1;
        if (!read_zigzag(d, &p, stop, 5, 32, &hv) || !skip_bytes(&p, stop, hv, &at))
            return 0;
    }
    return p == stop;
}

/* The timestamp a legacy message gets: base + delta wrapping to 64 bits as Java's long does (the sum is
 * taken unsigned, where wrapping is defined, and converted back, which GCC and Clang define as modulo). */
static int64_t message_timestamp(const Args *a, const Record *r) {
    if (a->has_append_time)
        return a->append_time;
    return (int64_t)((uint64_t)a->base_ts + (uint64_t)r->ts_delta);
}

static Py_ssize_t message_size(const Args *a, const Record *r) {
    Py_ssize_t size = (a->magic ? 22 : 14) + (r->key_len > 0 ? r->key_len : 0);
    int null_value = r->value_len < 0 || (r->flags & TOMBSTONE_FLAG);
    return size + (null_value ? 0 : r->value_len);
}

/* One message at `o`; returns the position after it. */
static uint8_t *write_message(const Args *a, const Record *r, int64_t ts, uint8_t *o) {
    Py_ssize_t size = message_size(a, r);
    uint8_t *body = put_be(o, (uint64_t)(r->offset - a->shift), 8);
    body = put_be(body, (uint64_t)size, 4) + 4;  /* the CRC goes in afterwards */
    uint8_t *w = body;
    *w++ = (uint8_t)a->magic;
    *w++ = (uint8_t)a->attributes;
    if (a->magic)
        w = put_be(w, (uint64_t)ts, 8);
    w = put_be(w, (uint64_t)(r->key_len > 0 ? r->key_len : (r->key_len == 0 ? 0 : -1)), 4);
    if (r->key_len > 0) {
        memcpy(w, a->data + r->key_at, (size_t)r->key_len);
        w += r->key_len;
    }
    if (r->value_len < 0 || (r->flags & TOMBSTONE_FLAG)) {
        w = put_be(w, (uint64_t)-1, 4);
    } else {
        w = put_be(w, (uint64_t)r->value_len, 4);
        memcpy(w, a->data + r->value_at, (size_t)r->value_len);
        w += r->value_len;
    }
    put_be(body - 4, crc32_update(0, body, (size_t)(w - body)), 4);
    return w;
}

/* Read every record and write its message from `o`; returns the end of the output, or NULL when
 * the Python loop must take over. */
uint8_t *convert(const Args *a, uint8_t *o, Totals *t) {
    Py_ssize_t pos = 0;
    Record r;
    int64_t ts, shifted;
    for (Py_ssize_t i = 0; i < a->count; i++) {
        if (!read_record(a->data, &pos, a->end, a->base_offset, &r))
            return NULL;
        t->plain &= r.plain;
        t->valid &= r.plain || walk_headers(a->data, r.headers_at, r.stop, NULL, 0, NULL);
        if (r.offset < a->fetch_offset)
            continue;
        if (__builtin_sub_overflow(r.offset, a->shift, &shifted))
            return NULL;
        ts = message_timestamp(a, &r);
        o = write_message(a, &r, ts, o);
        t->last = r.offset;
        if (t->written++ == 0 || ts > t->max_ts)
            t->max_ts = ts;
    }
    return pos == a->end ? o : NULL;
}

static PyObject *result(PyObject *out, Py_ssize_t written, int64_t last, int64_t max_ts, int plain) {
    /* with nothing written the max timestamp is the Python loop's starting value, -(1 << 64) */
    PyObject *max_obj = written ? PyLong_FromLongLong(max_ts) : PyLong_FromString("-18446744073709551616", NULL, 10);
    if (max_obj == NULL) {
        Py_DECREF(out);
        return NULL;
    }
    return Py_BuildValue("(NnLNO)", out, written, (long long)last, max_obj, plain ? Py_True : Py_False);
}

static PyObject *emit(PyObject *self, PyObject *args) {
    Py_buffer buf;
    Args a;
    PyObject *append_time;
    long long base_offset, base_ts, fetch_offset, shift;
    if (!PyArg_ParseTuple(args, "y*nLLOiiLL", &buf, &a.count, &base_offset, &base_ts, &append_time, &a.magic,
                          &a.attributes, &fetch_offset, &shift))
        return NULL;
    a.data = buf.buf, a.end = buf.len, a.base_offset = base_offset, a.base_ts = base_ts;
    a.fetch_offset = fetch_offset, a.shift = shift, a.has_append_time = append_time != Py_None;
    a.append_time = a.has_append_time ? PyLong_AsLongLong(append_time) : 0;
    if ((a.has_append_time && PyErr_Occurred()) || a.count < 0 || (a.magic != 0 && a.magic != 1)) {
        PyBuffer_Release(&buf);
        return NULL == PyErr_Occurred() ? Py_NewRef(Py_None) : NULL;
    }
    Py_ssize_t records = a.count < a.end / MIN_RECORD_BYTES + 1 ? a.count : a.end / MIN_RECORD_BYTES + 1;
    PyObject *out = PyBytes_FromStringAndSize(NULL, a.end + MAX_GROWTH * records);
    if (out == NULL) {
        PyBuffer_Release(&buf);
        return NULL;
    }
    Totals t = {0, -1, 0, 1, 1};
    uint8_t *start = (uint8_t *)PyBytes_AS_STRING(out), *stop;
    if (a.end >= (1 << 16)) {  /* a big payload lets other threads (the cleaner) run */
        Py_BEGIN_ALLOW_THREADS
        stop = convert(&a, start, &t);
        Py_END_ALLOW_THREADS
    } else {
        stop = convert(&a, start, &t);
    }
    PyBuffer_Release(&buf);
    if (stop == NULL) {
        Py_DECREF(out);
        Py_RETURN_NONE;
    }
    if (_PyBytes_Resize(&out, stop - start) < 0)
        return NULL;
    return result(out, t.written, t.last, t.max_ts, t.plain);
}

/* A bytearray of `n` bytes left as malloc gives them: for a frame the caller fills whole before reading it
 * (bytearray(n) would first write n zeros, a pass over a megabyte the receive then overwrites). */
static PyObject *uninitialized_bytearray(PyObject *self, PyObject *arg) {
    Py_ssize_t n = PyLong_AsSsize_t(arg);
    if (n == -1 && PyErr_Occurred())
        return NULL;
    if (n < 0) {
        PyErr_SetString(PyExc_ValueError, "negative size");
        return NULL;
    }
    return PyByteArray_FromStringAndSize(NULL, n);
}


static PyMethodDef methods[] = {
    {"emit", emit, METH_VARARGS, "Down-convert one v2 records payload to legacy messages (None: use Python)."},
    {"crc32", ccrc32_py, METH_VARARGS, "CRC-32 (IEEE, as zlib.crc32) of a buffer, optionally continuing from a value."},
    {"set_fold", ccrc32_set_fold, METH_O,
     "CRC path (tests): 0 tables, 1 PCLMULQDQ, 2 AVX2+VPCLMULQDQ, 3 AVX-512; capped by the CPU; returns the old."},
    {"scan", cscan_scan, METH_VARARGS, "Check v2 records for Produce as scan_v2_records does (None: use Python)."},
    {"plain_rows", clegacy_plain_rows, METH_VARARGS, "Rows of a set of plain legacy messages (None: use Python)."},
    {"encode_rows", cencode_rows, METH_VARARGS, "Append plain rows to a bytearray as v2 records: (last offset, max timestamp), or None: use Python."},
    {"scan_rows", cencode_scan_rows, METH_O, "Timestamps, order and null keys of rows without headers (None: other)."},
    {"convert_chunk", clz4_chunk, METH_VARARGS,
     "The LZ4 and uncompressed v2 batches of a chunk to legacy entries, on two threads (None: use Python)."},
    {"convert_chunk_start", clz4_chunk_start, METH_VARARGS,
     "convert_chunk on the helper thread while the caller goes on: a Pending whose result() is its answer."},
    {"crc32c", ccrc32c_py, METH_VARARGS, "CRC-32C of a buffer, optionally continuing from a value (tests)."},
    {"uninitialized_bytearray", uninitialized_bytearray, METH_O,
     "A bytearray of n bytes whose contents are whatever the allocator left (the caller overwrites them all)."},
    {"lz4_available", clz4_available, METH_NOARGS, "Whether the system's liblz4 was loaded for convert_chunk."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_cdownconvert", NULL, -1, methods};

PyMODINIT_FUNC PyInit__cdownconvert(void) {
    crc32_init();
    crc32c_init();
    clz4_init();
    if (clz4_threads_init() < 0)
        return NULL;
    return PyModule_Create(&module);
}
