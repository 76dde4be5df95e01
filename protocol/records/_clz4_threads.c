/*
 * The threads of the C batch down-conversion (_clz4.c converts one job), and its Python entry points.
 *
 * A call's jobs form a round, and their entries go into one buffer, in job order, that becomes the
 * call's output as it is (sized for the most each job can write; no entry is copied there from
 * elsewhere unless a second thread wrote it). One thread works from the front of a round: it takes
 * the first job nobody has taken and writes its entry right after the ones before. There is one
 * helper thread, started on first use (on a machine with at least two CPUs; after a fork the child
 * starts its own). Rounds queue for it and it works on them from the front, in turn. The thread that
 * made a round works on it too once it needs the result: if the helper never came to it, it takes
 * the round off the queue and works from the front itself; otherwise it takes the back half of the
 * jobs left, converts them into a piece of its own, and again while jobs are left, then waits for the
 * helper's job in hand and appends its pieces (the only copy, of the part it did itself).
 *
 * - convert_chunk(chunk, magic, frame_header, fetch_offset, max_size[, lz4]) -> (joined, lengths,
 *   written, consumed): the jobs of the chunk's entries (_clz4.c) form a round that is queued, and
 *   the caller starts on its back half at once; the call returns when all jobs are done. A single
 *   job stays on the caller (waking the helper costs more than it saves).
 * - convert_chunk_start(...) -> Pending: the round is queued and the call returns, so the caller
 *   can do other work (send the previous chunk of a Fetch answer, read the next) while the helper
 *   converts. Pending.result() gives convert_chunk's answer: the caller runs the jobs still left,
 *   waits for the helper, and hands the buffer over. A Pending dropped without its result stops its
 *   round (no job is started after that) and waits in the same way before it frees the buffer. The
 *   Pending holds the chunk's buffer, which the jobs read, until then.
 */
#include "_clz4.h"
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_PIECES 64  /* pieces the caller can take: each takes at least half of what is left */

typedef struct Round {
    Job *list;
    Py_ssize_t n;
    Py_ssize_t front, back;  /* the jobs nobody has taken: [front, back) (under `lock`) */
    struct Round *link;  /* the next round waiting for the helper */
    int offered, queued, helper_in;  /* given to the helper; waiting for it; it is on it (under `lock`) */
    uint8_t *buf;  /* the entries of the jobs taken from the front, then the caller's pieces (malloc) */
    Py_ssize_t filled;  /* how much of `buf` they take */
} Round;

typedef struct {
    Py_ssize_t from;  /* its first job */
    uint8_t *buf;
    Py_ssize_t len;
} Piece;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;  /* guards what follows, and the rounds' fields */
static pthread_cond_t work = PTHREAD_COND_INITIALIZER, idle = PTHREAD_COND_INITIALIZER;
static Round *head, *tail;  /* the rounds waiting for the helper, oldest first */
static int helper_started;

/* Run job `i` of `r` into `dst`; the bytes it wrote there. */
static Py_ssize_t run_job(Round *r, Py_ssize_t i, uint8_t *dst) {
    Job *j = &r->list[i];
    if (j->planned && dst != NULL)
        clz4_run_job(j, dst);
    return j->out ? j->out_len : 0;
}

/* Take the first job nobody has taken, until none is left, each written after the last in r->buf. */
static void run_front(Round *r) {
    for (;;) {
        pthread_mutex_lock(&lock);
        Py_ssize_t i = r->front < r->back ? r->front++ : -1;
        pthread_mutex_unlock(&lock);
        if (i < 0)
            return;
        r->filled += run_job(r, i, r->buf + r->filled);
    }
}

static void *helper(void *unused) {
    for (;;) {
        pthread_mutex_lock(&lock);
        while (head == NULL)
            pthread_cond_wait(&work, &lock);
        Round *r = head;
        head = r->link, tail = head ? tail : NULL;
        r->queued = 0, r->helper_in = 1;
        pthread_mutex_unlock(&lock);
        run_front(r);
        pthread_mutex_lock(&lock);
        r->helper_in = 0;
        pthread_cond_broadcast(&idle);
        pthread_mutex_unlock(&lock);
    }
    return unused;
}

static void forget_helper(void) {  /* a forked child has the locks' memory but not the thread */
    pthread_mutex_init(&lock, NULL);
    pthread_cond_init(&work, NULL);
    pthread_cond_init(&idle, NULL);
    head = tail = NULL;
    helper_started = 0;
}

static int start_helper(void) {
    pthread_t t;
    if (helper_started)
        return helper_started > 0;
    helper_started = -1;
    if (sysconf(_SC_NPROCESSORS_ONLN) < 2 || pthread_create(&t, NULL, helper, NULL) != 0)
        return 0;
    pthread_detach(t);
    pthread_atfork(NULL, NULL, forget_helper);
    helper_started = 1;
    return 1;
}

/* Queue round `r` for the helper (which takes rounds in turn; there is none on a 1-CPU machine). */
static void offer(Round *r) {
    pthread_mutex_lock(&lock);
    if (start_helper()) {
        r->link = NULL, r->queued = r->offered = 1;
        if (tail)
            tail->link = r;
        else
            head = r;
        tail = r;
        pthread_cond_signal(&work);
    }
    pthread_mutex_unlock(&lock);
}

static void unqueue(Round *r) {  /* with `lock` */
    Round **at = &head, *before = NULL;
    for (; *at != r; at = &(*at)->link)
        before = *at;
    *at = r->link;
    tail = tail == r ? before : tail;
    r->queued = 0;
}

/* The back half of the jobs nobody has taken (at least one) as a piece; 0 when none is left. With
 * `lock`, which it releases while it converts them. */
static int take_piece(Round *r, Piece *p) {
    Py_ssize_t left = r->back - r->front, bound = 0;
    if (left <= 0)
        return 0;
    Py_ssize_t from = r->back - (left + 1) / 2, to = r->back;
    r->back = from;
    pthread_mutex_unlock(&lock);
    for (Py_ssize_t i = from; i < to; i++)
        bound += r->list[i].planned ? r->list[i].out_bound : 0;
    p->from = from, p->len = 0, p->buf = malloc((size_t)bound + 1);  /* NULL: these jobs go the Python way */
    for (Py_ssize_t i = from; i < to; i++)
        p->len += run_job(r, i, p->buf == NULL ? NULL : p->buf + p->len);
    pthread_mutex_lock(&lock);
    return 1;
}

/* Run what is left of round `r` on this thread (see the module; `back_first`: take a piece even if
 * the helper has not come yet), wait until the helper is done with it, and append the pieces. */
static void finish(Round *r, int back_first) {
    Piece pieces[MAX_PIECES];
    int n = 0;
    pthread_mutex_lock(&lock);
    for (;; back_first = 0) {
        if (!r->offered || (r->queued && !back_first)) {  /* the helper never came to it: work from the front */
            if (r->queued)
                unqueue(r);
            pthread_mutex_unlock(&lock);
            run_front(r);
            pthread_mutex_lock(&lock);
            break;
        }
        if (n == MAX_PIECES || !take_piece(r, &pieces[n]))
            break;
        n++;
    }
    while (r->helper_in)
        pthread_cond_wait(&idle, &lock);
    pthread_mutex_unlock(&lock);
    for (int k = n - 1; k >= 0; k--) {  /* taken from the back: the last one comes first */
        memcpy(r->buf + r->filled, pieces[k].buf, (size_t)pieces[k].len);
        r->filled += pieces[k].len;
        free(pieces[k].buf);
    }
}

/* -- Pending: a call's jobs and their round ------------------------------------------------------ */

typedef struct {
    PyObject_HEAD
    Job *list;
    Round round;
    Py_buffer header;  /* the output frame header the jobs point to */
    Py_buffer chunk;   /* convert_chunk: the entries the jobs point into */
    Py_ssize_t consumed;  /* how far the chunk's well-framed entries reach */
    int done;
} Pending;

/* -- Output: a joined buffer handed to Python as it is ----------------------------------------- */

typedef struct {
    PyObject_HEAD
    uint8_t *buf;
    Py_ssize_t len;
} Output;

static int output_getbuffer(Output *o, Py_buffer *view, int flags) {
    return PyBuffer_FillInfo(view, (PyObject *)o, o->buf, o->len, 1, flags);
}

static void output_dealloc(Output *o) {
    free(o->buf);
    Py_TYPE(o)->tp_free((PyObject *)o);
}

static PyBufferProcs output_buffer = {(getbufferproc)output_getbuffer, NULL};

static PyTypeObject OutputType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "protocol.records._cdownconvert.Output",
    .tp_basicsize = sizeof(Output),
    .tp_dealloc = (destructor)output_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_as_buffer = &output_buffer,
    .tp_doc = "A chunk's converted entries, read through a memoryview.",
};

/* A read-only memoryview of round `r`'s entries, whose buffer it then owns (shrunk to them); a bytes
 * copy when that fails. */
static PyObject *joined_view(Round *r) {
    Output *o = PyObject_New(Output, &OutputType);
    PyObject *view = NULL;
    if (o != NULL) {
        uint8_t *shrunk = realloc(r->buf, (size_t)r->filled + 1);
        o->buf = shrunk ? shrunk : r->buf, o->len = r->filled, r->buf = NULL;
        view = PyMemoryView_FromObject((PyObject *)o);
        Py_DECREF(o);
    }
    if (view == NULL && r->buf != NULL) {
        PyErr_Clear();
        view = PyBytes_FromStringAndSize((const char *)r->buf, r->filled);
    }
    return view;
}

static void release_jobs(Pending *p) {
    for (Py_ssize_t i = 0; i < p->round.n && p->list != NULL; i++)
        if (p->list[i].src.obj != NULL)
            PyBuffer_Release(&p->list[i].src);
    free(p->list);
    p->list = NULL;
    free(p->round.buf);
    p->round.buf = NULL;
    if (p->header.obj != NULL)
        PyBuffer_Release(&p->header);
    if (p->chunk.obj != NULL)
        PyBuffer_Release(&p->chunk);
}

static void pending_dealloc(Pending *p) {
    if (!p->done) {
        Py_BEGIN_ALLOW_THREADS
        pthread_mutex_lock(&lock);
        p->round.back = p->round.front;  /* no job is started after this */
        pthread_mutex_unlock(&lock);
        finish(&p->round, 0);
        Py_END_ALLOW_THREADS
    }
    release_jobs(p);
    Py_TYPE(p)->tp_free((PyObject *)p);
}

static PyObject *finish_pending(Pending *p, int back_first) {
    if (p->done) {
        PyErr_SetString(PyExc_RuntimeError, "the result of this conversion was already taken");
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    finish(&p->round, back_first);
    Py_END_ALLOW_THREADS
    p->done = 1;
    PyObject *out = clz4_results(p->list, p->round.n, p->consumed, joined_view(&p->round));
    release_jobs(p);
    return out;
}

static PyObject *pending_result(Pending *p, PyObject *unused) {
    return finish_pending(p, 0);
}

static PyMethodDef pending_methods[] = {
    {"result", (PyCFunction)pending_result, METH_NOARGS,
     "(joined, lengths, written, consumed) once every job is done; runs the jobs left on the calling thread."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject PendingType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "protocol.records._cdownconvert.Pending",
    .tp_basicsize = sizeof(Pending),
    .tp_dealloc = (destructor)pending_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A chunk being converted by convert_chunk_start; result() gives convert_chunk's answer.",
    .tp_methods = pending_methods,
};

static Pending *new_pending(void) {
    Pending *p = PyObject_New(Pending, &PendingType);
    if (p == NULL)
        return NULL;
    p->list = NULL, p->round.n = p->round.front = p->round.back = 0, p->done = 1;
    p->round.offered = p->round.queued = p->round.helper_in = 0, p->round.buf = NULL, p->round.filled = 0;
    p->header.obj = p->chunk.obj = NULL, p->consumed = 0;
    return p;
}

static int check_magic(int magic, const Py_buffer *header) {
    if (header->len == FRAME_HEADER && (magic == 0 || magic == 1))
        return 1;
    PyErr_SetString(PyExc_ValueError, "convert_chunk takes magic 0 or 1 and a 7-byte frame header");
    return 0;
}

static int alloc_jobs(Pending *p, Py_ssize_t n) {
    if ((p->list = calloc((size_t)n + 1, sizeof(Job))) == NULL)
        PyErr_NoMemory();
    return p->list != NULL;
}

/* The round's buffer, sized for the most its planned jobs write (none: every job goes the Python
 * way), offered to the helper when at least `helper_from` of them are planned for C. */
static Pending *begin(Pending *p, Py_ssize_t planned, Py_ssize_t helper_from) {
    Py_ssize_t bound = 0;
    for (Py_ssize_t i = 0; i < p->round.n; i++)
        bound += p->list[i].planned ? p->list[i].out_bound : 0;
    p->round.list = p->list, p->round.back = p->round.n, p->done = 0;
    if ((p->round.buf = malloc((size_t)bound + 1)) == NULL)
        for (Py_ssize_t i = 0; i < p->round.n; i++)
            p->list[i].planned = 0;
    if (planned >= helper_from && p->round.buf != NULL)
        offer(&p->round);
    return p;
}

/* The size of the well-framed entry at `pos` (offset, length, and at least up to the magic byte),
 * or 0 where there is none: the rest goes the Python way, whose framing checks say why. */
static Py_ssize_t entry_size(const uint8_t *d, Py_ssize_t pos, Py_ssize_t len) {
    if (len - pos < 17)
        return 0;
    int32_t length = (int32_t)((uint32_t)d[pos + 8] << 24 | (uint32_t)d[pos + 9] << 16 |
                               (uint32_t)d[pos + 10] << 8 | d[pos + 11]);
    return length >= 5 && length <= len - pos - 12 ? 12 + (Py_ssize_t)length : 0;
}

/* convert_chunk's jobs: one per entry of the chunk, read from its bytes (see the module). */
static Pending *start_chunk(PyObject *args, Py_ssize_t helper_from) {
    int magic, lz4 = 1;
    long long fetch_offset;
    Py_ssize_t max_size, n = 0, planned = 0, pos = 0, size;
    Pending *p = new_pending();
    if (p == NULL ||
        !PyArg_ParseTuple(args, "y*iy*Ln|p", &p->chunk, &magic, &p->header, &fetch_offset, &max_size, &lz4) ||
        !check_magic(magic, &p->header))
        goto fail;
    const uint8_t *d = p->chunk.buf;
    for (; (size = entry_size(d, pos, p->chunk.len)) > 0; pos += size)
        n++;
    if (!alloc_jobs(p, n))
        goto fail;
    for (pos = 0; p->round.n < n; p->round.n++, pos += size) {
        size = entry_size(d, pos, p->chunk.len);
        Job *j = &p->list[p->round.n];
        planned += j->planned = clz4_plan_entry(j, d + pos, size, magic, p->header.buf, fetch_offset, max_size, lz4);
    }
    p->consumed = pos;
    return begin(p, planned, helper_from);
fail:
    Py_XDECREF(p);
    return NULL;
}

PyObject *clz4_chunk(PyObject *self, PyObject *args) {
    Pending *p = start_chunk(args, 2);
    PyObject *out = p ? finish_pending(p, 1) : NULL;
    Py_XDECREF(p);
    return out;
}

PyObject *clz4_chunk_start(PyObject *self, PyObject *args) {
    return (PyObject *)start_chunk(args, 1);
}

PyObject *clz4_available(PyObject *self, PyObject *unused) {
    return PyBool_FromLong(clz4_loaded());
}

int clz4_threads_init(void) {
    return PyType_Ready(&OutputType) < 0 ? -1 : PyType_Ready(&PendingType);
}
