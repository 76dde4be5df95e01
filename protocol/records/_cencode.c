/*
 * Writing decoded rows as v2 records in C, the output side of Produce v0-v2 up-conversion (and of any
 * rebuilt batch), and the summary the Produce checks need of those rows.
 *
 * encode_rows(out, rows, base_offset, base_timestamp, previous, first, timestamp) appends the records
 * of `rows`, each an (offset, timestamp, key, value, headers, attributes) tuple, to the bytearray `out`,
 * byte for byte as protocol/records/_v2_records.py's `encode_rows` does: length varint, attributes
 * byte, timestamp delta as a zigzag varlong wrapped to 64 bits (Java's long subtraction), offset
 * delta, key and value with their varint lengths (-1 for null), a header count of 0. Each row has its
 * own offset, which must be above the one before (the first above `previous`), or, when `first` is
 * not None, the rows get offsets first, first + 1, ...; `timestamp`, when not None, replaces every
 * row's (LogAppendTime). It returns (last offset, largest timestamp written), or None and writes
 * nothing when a row is not one it handles (not a 6-tuple, headers, a key or value that is not bytes
 * or None, an offset or timestamp outside a signed 64-bit value, an offset delta outside 32 bits, an
 * offset out of order), so the caller takes the Python path, which handles or refuses it.
 *
 * scan_rows(rows) returns (smallest timestamp, largest timestamp, whether offsets run 0, 1, 2 ...,
 * number of null keys) for rows without headers, or None for anything else; an empty list gives
 * (-1, -1, True, 0). broker/record_checks.py uses it to pass rows that cannot fail any check
 * without looking at each in Python.
 */
#include "_cdownconvert.h"

/* Where a row's fields are, once checked. */
typedef struct {
    int64_t offset, timestamp;
    PyObject *key, *value;
    int attributes;
} Row;

/* Row `item` into `r`; 0 when it is not a plain row (an error may be set: the caller clears it). */
static int read_row(PyObject *item, Row *r) {
    if (!PyTuple_CheckExact(item) || PyTuple_GET_SIZE(item) != 6)
        return 0;
    PyObject *headers = PyTuple_GET_ITEM(item, 4);
    if (!(PyTuple_CheckExact(headers) && PyTuple_GET_SIZE(headers) == 0) &&
        !(PyList_CheckExact(headers) && PyList_GET_SIZE(headers) == 0))
        return 0;
    r->key = PyTuple_GET_ITEM(item, 2);
    r->value = PyTuple_GET_ITEM(item, 3);
    if ((r->key != Py_None && !PyBytes_CheckExact(r->key)) || (r->value != Py_None && !PyBytes_CheckExact(r->value)))
        return 0;
    PyObject *attributes = PyTuple_GET_ITEM(item, 5);
    /* exact ints only: an object's __index__ would run Python code between the two passes of encode_rows */
    if (!PyLong_CheckExact(attributes) || !PyLong_CheckExact(PyTuple_GET_ITEM(item, 0)) ||
        !PyLong_CheckExact(PyTuple_GET_ITEM(item, 1)))
        return 0;
    int overflow = 0;
    long long a = PyLong_AsLongLongAndOverflow(attributes, &overflow);
    if (overflow || PyErr_Occurred())
        return 0;
    r->attributes = (int)(a & 0xFF);
    r->offset = PyLong_AsLongLongAndOverflow(PyTuple_GET_ITEM(item, 0), &overflow);
    if (overflow || PyErr_Occurred())
        return 0;
    r->timestamp = PyLong_AsLongLongAndOverflow(PyTuple_GET_ITEM(item, 1), &overflow);
    return !overflow && !PyErr_Occurred();
}

static int varint_size(uint64_t zigzag) {
    int n = 1;
    while (zigzag >= 0x80) {
        zigzag >>= 7;
        n++;
    }
    return n;
}

static uint64_t zigzag64(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }

static uint8_t *put_varint(uint8_t *o, uint64_t zigzag) {
    while (zigzag >= 0x80) {
        *o++ = (uint8_t)(zigzag | 0x80);
        zigzag >>= 7;
    }
    *o++ = (uint8_t)zigzag;
    return o;
}

/* One record's fields, sized: the deltas and the key and value lengths as written. */
typedef struct {
    uint64_t ts_delta, offset_delta, key_len, value_len;
    Py_ssize_t body;  /* bytes after the length varint */
} Sized;

static int size_row(const Row *r, int64_t base_offset, int64_t base_ts, Sized *s) {
    int64_t delta = (int64_t)((uint64_t)r->offset - (uint64_t)base_offset);
    if ((r->offset < base_offset) != (delta < 0) || delta < INT32_MIN || delta > INT32_MAX)
        return 0;  /* the subtraction overflowed, or a delta Kafka's int field cannot hold */
    s->offset_delta = zigzag64(delta);
    s->ts_delta = zigzag64((int64_t)((uint64_t)r->timestamp - (uint64_t)base_ts));  /* wraps as Java's does */
    Py_ssize_t klen = r->key == Py_None ? -1 : PyBytes_GET_SIZE(r->key);
    Py_ssize_t vlen = r->value == Py_None ? -1 : PyBytes_GET_SIZE(r->value);
    if (klen > INT32_MAX || vlen > INT32_MAX)
        return 0;
    s->key_len = zigzag64(klen);
    s->value_len = zigzag64(vlen);
    s->body = 1 + varint_size(s->ts_delta) + varint_size(s->offset_delta) + varint_size(s->key_len) +
              (klen > 0 ? klen : 0) + varint_size(s->value_len) + (vlen > 0 ? vlen : 0) + 1;
    return s->body <= INT32_MAX;
}

static uint8_t *put_bytes(uint8_t *o, PyObject *b) {
    if (b != Py_None && PyBytes_GET_SIZE(b) > 0) {
        memcpy(o, PyBytes_AS_STRING(b), (size_t)PyBytes_GET_SIZE(b));
        o += PyBytes_GET_SIZE(b);
    }
    return o;
}

static uint8_t *put_record(uint8_t *o, const Row *r, const Sized *s) {
    o = put_varint(o, zigzag64(s->body));
    *o++ = (uint8_t)r->attributes;
    o = put_varint(o, s->ts_delta);
    o = put_varint(o, s->offset_delta);
    o = put_varint(o, s->key_len);
    o = put_bytes(o, r->key);
    o = put_varint(o, s->value_len);
    o = put_bytes(o, r->value);
    *o++ = 0;  /* no headers */
    return o;
}

/* How encode_rows places the rows: their own offsets, each above the one before (starting above
 * `previous`), or `first`, first + 1, ... when `renumber`; their own timestamps or `timestamp`. */
typedef struct {
    int64_t base_offset, base_ts, previous, first, timestamp;
    int renumber, override;
} Plan;

/* Row i of `rows` as it is written; 0 when it is not plain or out of order. */
static int planned_row(PyObject *rows, Py_ssize_t i, const Plan *p, int64_t *previous, Row *r, Sized *s) {
    if (!read_row(PyList_GET_ITEM(rows, i), r))
        return 0;
    if (p->renumber)
        r->offset = p->first + i;  /* first + count stays far below the edge: the caller checks */
    else if (r->offset <= *previous)
        return 0;
    *previous = r->offset;
    if (p->override)
        r->timestamp = p->timestamp;
    return size_row(r, p->base_offset, p->base_ts, s);
}

/* The bytes the records of `rows` take, their largest timestamp in *max_ts; -1 when one is not plain. */
static Py_ssize_t rows_size(PyObject *rows, const Plan *p, int64_t *max_ts) {
    Py_ssize_t total = 0;
    int64_t previous = p->previous;
    *max_ts = INT64_MIN;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(rows); i++) {
        Row r;
        Sized s;
        if (!planned_row(rows, i, p, &previous, &r, &s))
            return -1;
        *max_ts = r.timestamp > *max_ts ? r.timestamp : *max_ts;
        total += varint_size(zigzag64(s.body)) + s.body;
        if (total > PY_SSIZE_T_MAX / 2)
            return -1;
    }
    return total;
}

/* An int64 argument that may be None (then *set is 0); 0 on anything else. */
static int optional_int64(PyObject *o, int64_t *out, int *set) {
    *set = o != Py_None;
    if (!*set)
        return 1;
    int overflow = 0;
    *out = PyLong_Check(o) ? PyLong_AsLongLongAndOverflow(o, &overflow) : 0;
    return PyLong_Check(o) && !overflow && !PyErr_Occurred();
}

PyObject *cencode_rows(PyObject *self, PyObject *args) {
    PyObject *out, *rows, *first, *timestamp;
    long long base_offset, base_ts, previous;
    Plan p;
    if (!PyArg_ParseTuple(args, "O!O!LLLOO", &PyByteArray_Type, &out, &PyList_Type, &rows, &base_offset,
                          &base_ts, &previous, &first, &timestamp))
        return NULL;
    p = (Plan){base_offset, base_ts, previous, 0, 0, 0, 0};
    int64_t max_ts;
    Py_ssize_t total = -1, n = PyList_GET_SIZE(rows);
    if (n > 0 && optional_int64(first, &p.first, &p.renumber) && optional_int64(timestamp, &p.timestamp, &p.override) &&
        (!p.renumber || (p.first >= 0 && p.first <= INT64_MAX - n)))
        total = rows_size(rows, &p, &max_ts);
    if (total < 0) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    Py_ssize_t start = PyByteArray_GET_SIZE(out);
    if (PyByteArray_Resize(out, start + total) < 0)
        return NULL;
    uint8_t *o = (uint8_t *)PyByteArray_AS_STRING(out) + start;
    uint8_t *end = o + total;
    int64_t last = p.previous;
    for (Py_ssize_t i = 0; i < n; i++) {
        Row r;
        Sized s;
        /* each row passed rows_size, and no Python code ran since: the same sizes come out */
        if (PyList_GET_SIZE(rows) != n || !planned_row(rows, i, &p, &last, &r, &s) ||
            end - o < varint_size(zigzag64(s.body)) + s.body)
            break;
        o = put_record(o, &r, &s);
    }
    if (o != end) {
        PyErr_Clear();
        PyErr_SetString(PyExc_SystemError, "encode_rows: the rows changed while they were written");
        return NULL;
    }
    return Py_BuildValue("(LL)", (long long)last, (long long)max_ts);
}

PyObject *cencode_scan_rows(PyObject *self, PyObject *rows) {
    if (!PyList_Check(rows)) {
        PyErr_SetString(PyExc_TypeError, "scan_rows takes a list");
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(rows), null_keys = 0;
    int64_t low = -1, high = -1;
    int in_order = 1;
    for (Py_ssize_t i = 0; i < n; i++) {
        Row r;
        if (!read_row(PyList_GET_ITEM(rows, i), &r)) {
            PyErr_Clear();
            Py_RETURN_NONE;
        }
        low = (i == 0 || r.timestamp < low) ? r.timestamp : low;
        high = r.timestamp > high ? r.timestamp : high;
        null_keys += r.key == Py_None;
        in_order &= r.offset == i;
    }
    return Py_BuildValue("(LLNn)", (long long)low, (long long)high, PyBool_FromLong(in_order), null_keys);
}
