/*
 * Reading plain legacy messages (magic 0 and 1) in C, the input of Produce v0-v2 up-conversion.
 *
 * plain_rows(buffer, max_entry_size, lat_ok, magic) does what protocol/records/legacy.py's
 * `plain_rows` and the fast path of `_parse_inner_set` do with `_plain_row`: it walks the complete
 * messages of a message set (a partial trailing one ends it) and returns one row
 * (offset, timestamp, key, value, (), 0) per message, or None as soon as one is not a well-formed
 * plain message: a size below the v0 overhead, a magic other than `magic` (or, with -1, other than
 * the first message's), compressed, LogAppendTime unless `lat_ok`, larger than `max_entry_size`
 * (-1: no limit), a CRC-32 that does not match, a key or value that does not end the message. The
 * caller then takes the Python path, which either converts the set in its general way or raises
 * the error that describes what is wrong, so this code never has to. v0 messages get timestamp -1.
 */
#include "_cdownconvert.h"

#define LOG_OVERHEAD 12
#define CODEC_MASK 0x07
#define TIMESTAMP_TYPE_FLAG 0x08

static int64_t be_int(const uint8_t *p, int n) {
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v = v << 8 | p[i];
    return n == 4 ? (int64_t)(int32_t)v : (int64_t)v;
}

typedef struct {
    Py_ssize_t max_entry_size;
    int lat_ok, magic;
} Rules;

/* The message d[pos..end) as a row, NULL with no error set when it is not a plain one. */
static PyObject *plain_row(const uint8_t *d, Py_ssize_t pos, Py_ssize_t end, const Rules *rules) {
    int magic = d[pos + 16], attributes = d[pos + 17];
    Py_ssize_t head = magic ? 30 : 22;  /* through the key length */
    if (magic > 1 || (rules->magic >= 0 && magic != rules->magic) || end - pos < head + 4 ||
        (rules->max_entry_size >= 0 && end - pos > rules->max_entry_size))
        return NULL;
    if ((attributes & CODEC_MASK) || (magic && !rules->lat_ok && (attributes & TIMESTAMP_TYPE_FLAG)))
        return NULL;
    if ((uint32_t)be_int(d + pos + 12, 4) != crc32_update(0, d + pos + 16, (size_t)(end - pos - 16)))
        return NULL;
    int64_t klen = be_int(d + pos + head - 4, 4), ts = magic ? be_int(d + pos + 18, 8) : -1;
    Py_ssize_t kpos = pos + head, vpos = kpos + (klen > 0 ? klen : 0);
    if (vpos + 4 > end)
        return NULL;
    int64_t vlen = be_int(d + vpos, 4);
    if (vpos + 4 + (vlen > 0 ? vlen : 0) != end)
        return NULL;
    PyObject *key = klen < 0 ? Py_NewRef(Py_None) : PyBytes_FromStringAndSize((const char *)d + kpos, klen);
    PyObject *value = vlen < 0 ? Py_NewRef(Py_None) : PyBytes_FromStringAndSize((const char *)d + vpos + 4, vlen);
    if (key == NULL || value == NULL) {
        Py_XDECREF(key);
        Py_XDECREF(value);
        return NULL;
    }
    return Py_BuildValue("(LLNN()i)", (long long)be_int(d + pos, 8), (long long)ts, key, value, 0);
}

/* Every row of the set, or NULL (an error set only when Python failed: memory). */
static PyObject *walk(const uint8_t *d, Py_ssize_t end, Rules *rules) {
    PyObject *rows = PyList_New(0);
    for (Py_ssize_t pos = 0; rows != NULL && end - pos >= LOG_OVERHEAD;) {
        int64_t size = be_int(d + pos + 8, 4);
        if (size < 14)
            Py_CLEAR(rows);
        else if (end - pos < 17 || end - pos < size + LOG_OVERHEAD)
            break;  /* a partial trailing message ends the set */
        else {
            PyObject *row = plain_row(d, pos, pos + LOG_OVERHEAD + size, rules);
            if (row == NULL || PyList_Append(rows, row) < 0)
                Py_CLEAR(rows);
            Py_XDECREF(row);
            rules->magic = d[pos + 16];  /* the rest must have the first one's magic */
            pos += LOG_OVERHEAD + size;
        }
    }
    if (rows != NULL && PyList_GET_SIZE(rows) == 0)
        Py_CLEAR(rows);
    return rows;
}

PyObject *clegacy_plain_rows(PyObject *self, PyObject *args) {
    Py_buffer buf;
    Rules rules;
    if (!PyArg_ParseTuple(args, "y*npi", &buf, &rules.max_entry_size, &rules.lat_ok, &rules.magic))
        return NULL;
    PyObject *rows = walk(buf.buf, buf.len, &rules);
    PyBuffer_Release(&buf);
    if (rows == NULL && !PyErr_Occurred())
        Py_RETURN_NONE;
    return rows;
}
