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

/* Read every record; 0 when the Python scan must take over. Flagged indexes go to `flags`. */
static int scan_records(const uint8_t *d, Py_ssize_t end, Py_ssize_t count, const uint8_t *key,
                        Py_ssize_t klen, Found *f, Py_ssize_t *flags, Py_ssize_t *nflags) {
    Py_ssize_t pos = 0;
    Record r;
    *f = (Found){INT64_MAX, INT64_MIN, 0, 1};
    for (Py_ssize_t i = 0; i < count; i++) {
        if (!read_record(d, &pos, end, 0, &r))
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
