/*
 * Down-conversion of whole v2 batches (LZ4 or uncompressed) to legacy messages, on two threads.
 *
 * convert_chunk(chunk, magic, frame_header, fetch_offset, max_size[, lz4]) takes one chunk of a
 * Fetch v0-v3 answer's log slice (whole entries) and makes a job of every entry that is a v2
 * batch, LZ4 (unless `lz4` is false) or uncompressed, not a control batch, with records: its
 * fields are read from the batch header here, with the GIL. It returns `(joined, lengths,
 * written, consumed)`: the entries written, one after another in one buffer (a read-only
 * memoryview); per entry the length of its output there and the records written, or None where
 * that entry must go the Python way; and how far the well-framed entries reach (the rest is Python's too). An LZ4 job's
 * entry is the legacy wrapper that protocol/records/convert.py would write for it (same fields,
 * same CRC, the frame in Kafka's framing: `frame_header` then independent 64 KiB blocks, a block
 * stored raw when LZ4 does not shrink it, an end mark); an uncompressed job's entries are its
 * messages from the fetch offset on, as the accelerator's `emit` writes them.
 *
 * Per job, without the GIL: the batch's CRC-32C is checked, the records section is decompressed (an LZ4 frame of version 1 without
 * checksums or a dictionary, independent blocks, with or without a content size), the records are
 * written as messages by the same `convert` as the accelerator's `emit` (every record read and
 * checked, headers too), and the messages are compressed straight into the place the job's
 * entry takes in that buffer (planning bounds what each job can write). Anything else, and
 * anything unusual on the way (a corrupt block, a size past the limit, a record the reader gives up on), makes that
 * job None: the Python path then raises the exact error, so this code never has to.
 *
 * The jobs of a call are run by _clz4_threads.c, on the calling thread and a helper thread
 * (convert_chunk), or on the helper while the caller goes on (convert_chunk_start).
 * The codec is the system's liblz4, loaded with dlopen; where it is missing, every job is
 * None and python-lz4 does the work.
 */
#include "_clz4.h"
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#define BLOCK 65536
#define WRAPPER_HEAD_MAX 34  /* offset, size, crc, magic, attributes, timestamp, key length, value length */

typedef int (*compress_fn)(const char *, char *, int, int);
typedef int (*bound_fn)(int);
typedef int (*decompress_fn)(const char *, char *, int, int);
static compress_fn lz4_compress;
static bound_fn lz4_bound;
static decompress_fn lz4_decompress;

int clz4_init(void) {
    void *lib = dlopen("liblz4.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL)
        return 0;
    lz4_compress = (compress_fn)dlsym(lib, "LZ4_compress_default");
    lz4_bound = (bound_fn)dlsym(lib, "LZ4_compressBound");
    lz4_decompress = (decompress_fn)dlsym(lib, "LZ4_decompress_safe");
    if (!lz4_compress || !lz4_bound || !lz4_decompress)
        lz4_compress = NULL;
    return lz4_compress != NULL;
}


/* xxHash32 (seed 0) of the few bytes of a frame descriptor: LZ4's header checksum is its 2nd byte. */
static uint32_t xxh32_short(const uint8_t *p, size_t n) {
    const uint32_t p1 = 2654435761u, p2 = 2246822519u, p3 = 3266489917u, p4 = 668265263u, p5 = 374761393u;
    uint32_t h = p5 + (uint32_t)n;
    for (; n >= 4; n -= 4, p += 4) {
        uint32_t lane = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
        h += lane * p3;
        h = ((h << 17) | (h >> 15)) * p4;
    }
    for (; n; n--, p++) {
        h += *p * p5;
        h = ((h << 11) | (h >> 21)) * p1;
    }
    h ^= h >> 15, h *= p2, h ^= h >> 13, h *= p3;
    return h ^ (h >> 16);
}

static uint32_t le32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Check the frame of job `j` and bound what it decompresses to (with the GIL: headers only). */
static int plan_frame(Job *j) {
    const uint8_t *f = j->src.buf;
    Py_ssize_t n = j->src.len, pos, max_block;
    if (n < FRAME_HEADER || le32(f) != 0x184D2204u)
        return 0;
    uint8_t flg = f[4], bd = f[5];
    if ((flg & 0xF7) != 0x60 || (bd & 0x8F) || ((bd >> 4) & 7) < 4)  /* v1, independent blocks; no checksums, dictionary */
        return 0;
    max_block = (Py_ssize_t)1 << (8 + 2 * ((bd >> 4) & 7));
    pos = 6 + ((flg & 0x08) ? 8 : 0);
    if (n < pos + 1 || ((xxh32_short(f + 4, (size_t)(pos - 4)) >> 8) & 0xFF) != f[pos])
        return 0;
    j->content_size = -1;
    if (flg & 0x08) {
        uint64_t cs = (uint64_t)le32(f + 6) | (uint64_t)le32(f + 10) << 32;
        j->content_size = cs > (uint64_t)j->max_size ? (int64_t)j->max_size + 1 : (int64_t)cs;
    }
    j->body = ++pos, j->bound = 0;
    for (;;) {
        if (n - pos < 4)
            return 0;
        uint32_t size = le32(f + pos), raw = size & 0x7FFFFFFFu;
        pos += 4;
        if (size == 0)
            break;
        if (raw > (uint32_t)max_block || raw > (uint64_t)(n - pos))
            return 0;
        j->bound += (size & 0x80000000u) ? (Py_ssize_t)raw : max_block;
        pos += raw;
    }
    return pos == n && j->bound <= j->max_size + max_block;
}

/* Decompress job `j`'s blocks into `dst` (j->bound bytes); its length, or -1. */
static Py_ssize_t decompress_frame(const Job *j, uint8_t *dst) {
    const uint8_t *f = j->src.buf;
    Py_ssize_t pos = j->body, len = 0;
    for (uint32_t size; (size = le32(f + pos)) != 0;) {
        int raw = (int)(size & 0x7FFFFFFFu), got;
        pos += 4;
        if (size & 0x80000000u) {
            memcpy(dst + len, f + pos, (size_t)raw);
            got = raw;
        } else {
            got = lz4_decompress((const char *)f + pos, (char *)dst + len, raw, (int)(j->bound - len));
        }
        if (got < 0 || (len += got) > j->max_size)
            return -1;
        pos += raw;
    }
    return (j->content_size < 0 || j->content_size == len) ? len : -1;
}

static uint8_t *put_le32(uint8_t *o, uint32_t v) {
    o[0] = (uint8_t)v, o[1] = (uint8_t)(v >> 8), o[2] = (uint8_t)(v >> 16), o[3] = (uint8_t)(v >> 24);
    return o + 4;
}

/* The messages as one frame at `o`: header, blocks, end mark; returns the end. */
static uint8_t *compress_frame(const Job *j, const uint8_t *msgs, Py_ssize_t n, uint8_t *o) {
    memcpy(o, j->header, FRAME_HEADER);
    o += FRAME_HEADER;
    for (Py_ssize_t at = 0; at < n; at += BLOCK) {
        int len = n - at < BLOCK ? (int)(n - at) : BLOCK;
        int got = lz4_compress((const char *)msgs + at, (char *)o + 4, len, len - 1);
        if (got > 0) {
            o = put_le32(o, (uint32_t)got) + got;
        } else {  /* LZ4 did not shrink it: the block goes raw */
            memcpy(o + 4, msgs + at, (size_t)len);
            o = put_le32(o, (uint32_t)len | 0x80000000u) + len;
        }
    }
    return put_le32(o, 0);
}

/* The wrapper entry around the frame at `value` (`vlen` bytes), written just before it; its start. */
static uint8_t *wrap(const Job *j, const Totals *t, uint8_t *value, Py_ssize_t vlen) {
    int magic = j->wrapper_magic;
    Py_ssize_t head = magic ? 34 : 26;
    uint8_t *o = value - head, *body = o + 16;
    put_be(o, (uint64_t)t->last, 8);
    put_be(o + 8, (uint64_t)(head - 12 + vlen), 4);
    uint8_t *w = body;
    *w++ = (uint8_t)magic;
    *w++ = (uint8_t)(3 | j->ts_flag);  /* LZ4 */
    if (magic)
        w = put_be(w, (uint64_t)(j->a.has_append_time ? j->a.append_time : t->max_ts), 8);
    w = put_be(w, (uint64_t)-1, 4);
    put_be(w, (uint64_t)vlen, 4);
    put_be(o + 12, crc32_update(0, body, (size_t)(value + vlen - body)), 4);
    return o;
}

/* First record's offset: what magic-1 inner offsets are relative to. */
static int first_offset(const Args *a, int64_t *first) {
    Py_ssize_t pos = 0;
    Record r;
    if (!read_record(a->data, &pos, a->end, a->base_offset, &r))
        return 0;
    *first = r.offset;
    return 1;
}

/* The records one output can hold at most: each takes at least MIN_RECORD_BYTES of `len`. */
static Py_ssize_t records_in(const Job *j, Py_ssize_t len) {
    return j->a.count < len / MIN_RECORD_BYTES + 1 ? j->a.count : len / MIN_RECORD_BYTES + 1;
}

static void run_plain(Job *j, uint8_t *dst) {
    Totals t = {0, -1, 0, 1, 1};
    uint8_t *end = convert(&j->a, dst, &t);
    if (end == NULL || !t.valid)
        return;
    j->out = dst, j->out_len = end - dst, j->written = t.written;
}

void clz4_run_job(Job *j, uint8_t *dst) {
    if (j->check_crc && crc32c_update(0, j->crc_from, (size_t)j->crc_len) != j->crc_want)
        return;  /* a corrupt batch: the Python way raises CorruptRecordError in its turn */
    if (j->codec == CODEC_NONE) {
        run_plain(j, dst);
        return;
    }
    uint8_t *dec = malloc((size_t)j->bound + 1), *msgs = NULL;
    Py_ssize_t len = dec ? decompress_frame(j, dec) : -1;
    Totals t = {0, -1, 0, 1, 1};
    j->a.data = dec, j->a.end = len;
    if (len < 0 || (j->a.magic && !first_offset(&j->a, &j->a.shift)))
        goto done;
    msgs = malloc((size_t)(len + MAX_GROWTH * records_in(j, len)) + 1);
    uint8_t *end = msgs ? convert(&j->a, msgs, &t) : NULL;
    if (end == NULL || !t.valid || t.written != j->a.count)
        goto done;
    uint8_t *value = dst + (j->wrapper_magic ? WRAPPER_HEAD_MAX : WRAPPER_HEAD_MAX - 8);  /* v0: no timestamp */
    uint8_t *stop = compress_frame(j, msgs, end - msgs, value);
    j->out = wrap(j, &t, value, stop - value), j->out_len = stop - j->out, j->written = j->a.count;
done:
    free(dec);
    free(msgs);
}

/* The most a planned job's output takes: the messages of `bound` record bytes; for LZ4 a wrapper
 * head, the frame header, per 64 KiB block its length (a block never grows: one LZ4 does not shrink
 * goes raw) and the end mark. */
static Py_ssize_t out_bound(const Job *j, Py_ssize_t bound) {
    Py_ssize_t msgs = bound + MAX_GROWTH * records_in(j, bound) + 1;
    if (j->codec == CODEC_NONE)
        return msgs;
    return WRAPPER_HEAD_MAX + FRAME_HEADER + 4 + msgs + 4 * (msgs / BLOCK + 1);
}

/* -- jobs from and results to Python (with the GIL) -------------------------------------------- */

/* Planning that the job's fields decide; 1: planned for C, 0: the Python way. */
static int plan(Job *j, int magic, const uint8_t *header, int64_t fetch_offset) {
    j->a.magic = magic, j->a.attributes = j->ts_flag, j->a.fetch_offset = INT64_MIN;
    j->wrapper_magic = magic, j->header = header;
    if (j->codec == CODEC_NONE) {  /* messages for the records from the fetch offset on, no wrapper */
        j->a.fetch_offset = fetch_offset, j->a.data = j->src.buf, j->a.end = j->src.len;
        j->out_bound = out_bound(j, j->src.len);
        return j->a.count > 0;
    }
    if (j->codec != CODEC_LZ4 || lz4_compress == NULL || j->a.count <= 0 || j->max_size <= 0 || !plan_frame(j))
        return 0;
    j->out_bound = out_bound(j, j->bound);
    return 1;
}

static uint64_t get_be(const uint8_t *p, int n) {
    uint64_t v = 0;
    while (n--)
        v = v << 8 | *p++;
    return v;
}

/* v2 batch header: base offset 0, length 8, magic 16, CRC 17, attributes 21, base timestamp 27,
 * max timestamp 35, record count 57, records from 61. */
int clz4_plan_entry(Job *j, const uint8_t *e, Py_ssize_t size, int magic, const uint8_t *header,
                    int64_t fetch_offset, Py_ssize_t max_size, int lz4) {
    if (size < 61 || e[16] != 2)
        return 0;
    int attributes = (int)get_be(e + 21, 2);
    j->codec = attributes & 7;
    if ((attributes & 0x20) || (j->codec != CODEC_NONE && !(j->codec == CODEC_LZ4 && lz4)))  /* control; codecs */
        return 0;
    j->src.buf = (void *)(e + 61), j->src.len = size - 61, j->src.obj = NULL;
    j->a.count = (int32_t)get_be(e + 57, 4);
    j->a.base_offset = (int64_t)get_be(e, 8), j->a.base_ts = (int64_t)get_be(e + 27, 8);
    j->a.has_append_time = (attributes & 0x08) != 0;  /* LogAppendTime: every record gets the max timestamp */
    j->a.append_time = j->a.has_append_time ? (int64_t)get_be(e + 35, 8) : 0;
    j->ts_flag = j->a.has_append_time && magic == 1 ? 0x08 : 0;
    j->max_size = max_size;
    j->check_crc = 1, j->crc_from = e + 21, j->crc_len = size - 21, j->crc_want = (uint32_t)get_be(e + 17, 4);
    return plan(j, magic, header, fetch_offset);
}

/* Per job the length of its entries and its records written, None when it goes the Python way. */
PyObject *clz4_results(Job *list, Py_ssize_t n, Py_ssize_t consumed, PyObject *joined) {
    PyObject *lengths = joined ? PyList_New(n) : NULL, *written = lengths ? PyList_New(n) : NULL;
    for (Py_ssize_t i = 0; i < n && written != NULL; i++) {
        const Job *j = &list[i];
        PyObject *length = j->out ? PyLong_FromSsize_t(j->out_len) : Py_NewRef(Py_None);
        PyObject *count = j->out ? PyLong_FromSsize_t(j->written) : Py_NewRef(Py_None);
        if (length == NULL || count == NULL) {
            Py_XDECREF(length);
            Py_XDECREF(count);
            Py_CLEAR(written);
            break;
        }
        PyList_SET_ITEM(lengths, i, length);
        PyList_SET_ITEM(written, i, count);
    }
    if (written == NULL) {
        Py_XDECREF(joined);
        Py_XDECREF(lengths);
        return NULL;
    }
    return Py_BuildValue("(NNNn)", joined, lengths, written, consumed);
}

int clz4_loaded(void) {
    return lz4_compress != NULL;
}
