/*
 * What the C files of the accelerator share (_cdownconvert.c: the record reader and the message
 * writer; _ccrc32.c: the CRC-32 of those messages; _clz4.c and _clz4_threads.c: whole LZ4 batches
 * to wrappers on two threads; _ccrc32c.c: the CRC-32C those jobs check; _cscan.c: the Produce
 * check of a batch's records; _clegacy.c: reading plain legacy messages for up-conversion; _cencode.c:
 * writing rows as v2 records, and the summary of rows the Produce checks use).
 */
#ifndef MINIBROKER_CDOWNCONVERT_H
#define MINIBROKER_CDOWNCONVERT_H
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define MIN_RECORD_BYTES 7  /* length varint, attributes, two deltas, key and value lengths, header count */
#define TOMBSTONE_FLAG 0x01  /* record attributes bit 0 (KIP-87) */
#define MAX_GROWTH 28       /* message overhead (12 + 22) minus the 6 of those bytes a record always has */

typedef struct {
    Py_ssize_t stop;    /* end of the record */
    Py_ssize_t key_at;  /* key bytes (when key_len > 0) */
    Py_ssize_t value_at;
    Py_ssize_t headers_at;  /* the header count */
    int64_t key_len, value_len, offset, ts_delta;
    int flags, plain;  /* plain: no headers (walk_headers checks the others' from headers_at) */
} Record;

typedef struct {
    const uint8_t *data;
    Py_ssize_t end;
    Py_ssize_t count;
    int64_t base_offset, base_ts, append_time, fetch_offset, shift;
    int magic, attributes, has_append_time;
} Args;

typedef struct {
    Py_ssize_t written;
    int64_t last, max_ts;
    int plain, valid;
} Totals;

uint32_t crc32_update(uint32_t crc, const uint8_t *p, size_t n);
void crc32_init(void);
PyObject *ccrc32_py(PyObject *self, PyObject *args);
PyObject *ccrc32_set_fold(PyObject *self, PyObject *arg);
uint32_t crc32c_update(uint32_t crc, const uint8_t *p, size_t n);
void crc32c_init(void);
PyObject *ccrc32c_py(PyObject *self, PyObject *args);
int walk_headers(const uint8_t *d, Py_ssize_t p, Py_ssize_t stop, const uint8_t *key, Py_ssize_t klen, int *found);
uint8_t *convert(const Args *a, uint8_t *o, Totals *t);

/* The record readers, inline in every file that uses them: a call per varint was most of a scan's time. */
/* A zigzag varint of at most `max_bytes` bytes, bits past `bits` dropped (Java's int/long arithmetic).
 * Returns 0 when it runs past `end` or is too long. */
static inline int read_zigzag(const uint8_t *d, Py_ssize_t *pos, Py_ssize_t end, int max_bytes, int bits, int64_t *out) {
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

/* A key or value of `len` bytes (none when len <= 0) at *p: note where, step over. 0: past `stop`. */
static inline int skip_bytes(Py_ssize_t *p, Py_ssize_t stop, int64_t len, Py_ssize_t *at) {
    *at = *p;
    if (len > 0) {
        if (len > stop - *p)
            return 0;
        *p += len;
    }
    return 1;
}

/* Read the record at *pos (its length varint first) and move *pos to its end. 0: unusual, give up. */
static inline int read_record(const uint8_t *d, Py_ssize_t *pos, Py_ssize_t end, int64_t base_offset, Record *r) {
    int64_t length, offset_delta;
    if (!read_zigzag(d, pos, end, 5, 32, &length) || length < 1 || length > end - *pos)
        return 0;
    r->stop = *pos + length;
    Py_ssize_t p = *pos;
    r->flags = d[p++];
    if (!read_zigzag(d, &p, r->stop, 10, 64, &r->ts_delta) || !read_zigzag(d, &p, r->stop, 5, 32, &offset_delta) ||
        !read_zigzag(d, &p, r->stop, 5, 32, &r->key_len))
        return 0;
    if (!skip_bytes(&p, r->stop, r->key_len, &r->key_at) || !read_zigzag(d, &p, r->stop, 5, 32, &r->value_len) ||
        !skip_bytes(&p, r->stop, r->value_len, &r->value_at))
        return 0;
    if (p >= r->stop)  /* no room for the header count */
        return 0;
    r->headers_at = p;
    r->plain = p + 1 == r->stop && d[p] == 0;
    r->offset = base_offset + offset_delta;  /* int32 delta: cannot overflow unless base is near the edge */
    if ((offset_delta > 0 && base_offset > INT64_MAX - offset_delta) ||
        (offset_delta < 0 && base_offset < INT64_MIN - offset_delta))
        return 0;
    *pos = r->stop;
    return 1;
}

/* The low `n` bytes (1 to 8) of `v` at `o`, big-endian; returns the end. A byte-swapped store on a
 * little-endian machine (every message field goes through it). */
static inline uint8_t *put_be(uint8_t *o, uint64_t v, int n) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint64_t be = __builtin_bswap64(v << (8 * (8 - n)));
    memcpy(o, &be, (size_t)n);
#else
    for (int i = n - 1; i >= 0; i--, v >>= 8)
        o[i] = (uint8_t)v;
#endif
    return o + n;
}

int clz4_init(void);
PyObject *clz4_chunk(PyObject *self, PyObject *args);
PyObject *clz4_chunk_start(PyObject *self, PyObject *args);
PyObject *clz4_available(PyObject *self, PyObject *unused);
int clz4_threads_init(void);
PyObject *cscan_scan(PyObject *self, PyObject *args);
PyObject *clegacy_plain_rows(PyObject *self, PyObject *args);
PyObject *cencode_rows(PyObject *self, PyObject *args);
PyObject *cencode_scan_rows(PyObject *self, PyObject *rows);

#endif
