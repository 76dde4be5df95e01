/*
 * The Produce check of a v2 batch's records in C: what protocol/records/scan.py's scan_v2_records
 * finds, for the records it accepts.
 *
 * scan(records, count, header_key) reads every record with the accelerator's record reader (every
 * field checked against its record's bounds, headers walked to their end) and returns
 * (smallest timestamp delta, largest, null keys, whether offset deltas run 0..count-1, indexes of
 * the records that carry a header named `header_key` but not attributes bit 0), or None when
 * anything is unusual: a record the reader gives up on, bytes left after the last record, no
 * records at all. The Python scan then runs and raises the decoder's exact error, so this code
 * never has to. The GIL is released for payloads of 64 KiB and more.
 */
#include "_cdownconvert.h"
#include <string.h>

typedef struct {
    int64_t low, high, null_keys;
    int in_order;
} Found;

/* read_zigzag, here again so that the compiler inlines it into the loop below with its width fixed (the
 * call per varint was most of the scan's time). */
static inline int varint_here(const uint8_t *d, Py_ssize_t *pos, Py_ssize_t end, int max_bytes, int bits,
                              int64_t *out) {
    uint64_t u = 0;
    for (int i = 0; i < max_bytes; i++) {
        if (*pos >= end)
            return 0;
        uint8_t b = d[(*pos)++];
        if (i * 7 < 64)
            u |= (uint64_t)(b & 0x7F) << (i * 7);
        if (b < 0x80) {
            if (bits == 32) {
                uint32_t v = (uint32_t)u;
                *out = (int64_t)(int32_t)((v >> 1) ^ (0u - (v & 1)));
            } else {
                *out = (int64_t)((u >> 1) ^ (0ull - (u & 1)));
            }
            return 1;
        }
    }
    return 0;
}

/* Step over a key or value of `len` bytes (none when len <= 0); 0 when it runs past `stop`. */
static inline int skip_here(Py_ssize_t *p, Py_ssize_t stop, int64_t len) {
    if (len > 0) {
        if (len > stop - *p)
            return 0;
        *p += len;
    }
    return 1;
}

/* read_record for a client's batch (base offset 0, so an offset is its delta), inlined the same way; it
 * accepts and refuses exactly what read_record does. */
static inline int scan_record(const uint8_t *d, Py_ssize_t *pos, Py_ssize_t end, Record *r) {
    int64_t length, offset_delta;
    if (!varint_here(d, pos, end, 5, 32, &length) || length < 1 || length > end - *pos)
        return 0;
    r->stop = *pos + length;
    Py_ssize_t p = *pos;
    r->flags = d[p++];
    if (!varint_here(d, &p, r->stop, 10, 64, &r->ts_delta) || !varint_here(d, &p, r->stop, 5, 32, &offset_delta) ||
        !varint_here(d, &p, r->stop, 5, 32, &r->key_len) || !skip_here(&p, r->stop, r->key_len) ||
        !varint_here(d, &p, r->stop, 5, 32, &r->value_len) || !skip_here(&p, r->stop, r->value_len))
        return 0;
    if (p >= r->stop)  /* no room for the header count */
        return 0;
    r->headers_at = p;
    r->plain = p + 1 == r->stop && d[p] == 0;
    r->offset = offset_delta;
    *pos = r->stop;
    return 1;
}

/* Read every record; 0 when the Python scan must take over. Flagged indexes go to `flags`. */
static int scan_records(const uint8_t *d, Py_ssize_t end, Py_ssize_t count, const uint8_t *key,
                        Py_ssize_t klen, Found *f, Py_ssize_t *flags, Py_ssize_t *nflags) {
    Py_ssize_t pos = 0;
    Record r;
    *f = (Found){INT64_MAX, INT64_MIN, 0, 1};
    for (Py_ssize_t i = 0; i < count; i++) {
        if (!scan_record(d, &pos, end, &r))
            return 0;
        int found = 0;  /* one walk checks the headers and looks for the key (a flagged record needs no flag) */
        const uint8_t *k = (r.flags & TOMBSTONE_FLAG) ? NULL : key;
        if (!r.plain && !walk_headers(d, r.headers_at, r.stop, k, klen, &found))
            return 0;
        if (found)
            flags[(*nflags)++] = i;
        f->low = r.ts_delta < f->low ? r.ts_delta : f->low;
        f->high = r.ts_delta > f->high ? r.ts_delta : f->high;
        f->null_keys += r.key_len < 0;
        f->in_order &= r.offset == i;
    }
    return pos == end;
}

static PyObject *found_tuple(const Found *f, const Py_ssize_t *flags, Py_ssize_t nflags) {
    PyObject *list = PyList_New(nflags);
    for (Py_ssize_t i = 0; list != NULL && i < nflags; i++) {
        PyObject *index = PyLong_FromSsize_t(flags[i]);
        if (index == NULL)
            Py_CLEAR(list);
        else
            PyList_SET_ITEM(list, i, index);
    }
    if (list == NULL)
        return NULL;
    return Py_BuildValue("(LLLON)", (long long)f->low, (long long)f->high, (long long)f->null_keys,
                         f->in_order ? Py_True : Py_False, list);
}

PyObject *cscan_scan(PyObject *self, PyObject *args) {
    Py_buffer data, key = {0};
    Py_ssize_t count, nflags = 0;
    PyObject *key_obj, *result = NULL;
    if (!PyArg_ParseTuple(args, "y*nO", &data, &count, &key_obj))
        return NULL;
    if (key_obj != Py_None && PyObject_GetBuffer(key_obj, &key, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&data);
        return NULL;
    }
    Py_ssize_t most = count > 0 && count <= data.len ? count : 0;  /* each record takes a byte at least */
    Py_ssize_t *flags = PyMem_Malloc((size_t)most * sizeof(Py_ssize_t) + 1);
    Found f;
    int ok = 0;
    if (flags == NULL) {
        PyErr_NoMemory();
    } else if (most > 0) {
        const uint8_t *k = key_obj == Py_None ? NULL : key.buf;
        if (data.len >= (1 << 16)) {
            Py_BEGIN_ALLOW_THREADS
            ok = scan_records(data.buf, data.len, count, k, key.len, &f, flags, &nflags);
            Py_END_ALLOW_THREADS
        } else {
            ok = scan_records(data.buf, data.len, count, k, key.len, &f, flags, &nflags);
        }
    }
    if (flags != NULL)
        result = ok ? found_tuple(&f, flags, nflags) : Py_NewRef(Py_None);
    PyMem_Free(flags);
    PyBuffer_Release(&data);
    if (key_obj != Py_None)
        PyBuffer_Release(&key);
    return result;
}
