/*
 * What the C files of the accelerator share (_cdownconvert.c: the record reader and the message
 * writer; _ccrc32.c: the CRC-32 of those messages; _clz4.c and _clz4_threads.c: whole LZ4 batches
 * to wrappers on two threads; _ccrc32c.c: the CRC-32C those jobs check; _cscan.c: the Produce
 * check of a batch's records; _clegacy.c: reading plain legacy messages for up-conversion).
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
int read_zigzag(const uint8_t *d, Py_ssize_t *pos, Py_ssize_t end, int max_bytes, int bits, int64_t *out);
int walk_headers(const uint8_t *d, Py_ssize_t p, Py_ssize_t stop, const uint8_t *key, Py_ssize_t klen, int *found);
int read_record(const uint8_t *d, Py_ssize_t *pos, Py_ssize_t end, int64_t base_offset, Record *r);
uint8_t *convert(const Args *a, uint8_t *o, Totals *t);
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

#endif
