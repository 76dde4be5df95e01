/*
 * What the two files of the C batch down-conversion share: _clz4.c converts one job (one LZ4 batch
 * to one legacy wrapper, or one uncompressed batch to its messages) and moves jobs and results
 * across the Python boundary; _clz4_threads.c runs a call's jobs on the calling thread and a
 * helper thread, now or in the background.
 */
#ifndef MINIBROKER_CLZ4_H
#define MINIBROKER_CLZ4_H
#include "_cdownconvert.h"

#define FRAME_HEADER 7  /* magic, FLG, BD, header checksum: no content size */
#define CODEC_NONE 0
#define CODEC_LZ4 3

typedef struct {
    Py_buffer src;            /* the batch's records section (one LZ4 frame, or the records): a view, no owner */
    Args a;                   /* data/end are filled in once decompressed */
    int codec;                /* CODEC_LZ4: one wrapper entry; CODEC_NONE: messages from fetch_offset on */
    Py_ssize_t written;       /* records written */
    int64_t content_size;     /* from the frame, or -1 */
    Py_ssize_t body, max_size, bound;  /* where the blocks start; decompression limit; its upper bound */
    int planned, wrapper_magic, ts_flag;
    const uint8_t *header;    /* the 7-byte frame header of the output */
    const uint8_t *crc_from;  /* with check_crc: the bytes the batch's CRC-32C covers, ... */
    Py_ssize_t crc_len;
    uint32_t crc_want;        /* ... and the CRC stored in the batch; a mismatch leaves the job to Python */
    int check_crc;
    Py_ssize_t out_bound;     /* the most its output can take (planned jobs) */
    uint8_t *out;             /* where its output was written (not owned), NULL: go the Python way */
    Py_ssize_t out_len;
} Job;

/* Fill `j` from the v2 batch at `e` (`size` bytes, the whole entry), with the GIL; 1: planned for C,
 * 0: the Python way (not v2, a control batch, another codec or LZ4 without `lz4`, no records). The
 * CRC is checked when the job runs. */
int clz4_plan_entry(Job *j, const uint8_t *e, Py_ssize_t size, int magic, const uint8_t *header,
                    int64_t fetch_offset, Py_ssize_t max_size, int lz4);
/* Convert planned job `j` (no GIL) into `dst` (j->out_bound bytes free): decompress, write the
 * messages, compress and wrap (LZ4), or write the messages (uncompressed); j->out stays NULL when it
 * cannot. */
void clz4_run_job(Job *j, uint8_t *dst);
/* Whether the system's liblz4 was loaded (clz4_init). */
int clz4_loaded(void);
/* `(joined, lengths, written, consumed)` of `n` jobs that have run (with the GIL); `joined` is their
 * entries one after another (a reference taken over; NULL: an error is set). */
PyObject *clz4_results(Job *list, Py_ssize_t n, Py_ssize_t consumed, PyObject *joined);

#endif
