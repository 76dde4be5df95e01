/*
 * The threads of the C batch down-conversion (_clz4.c converts one job), and its Python entry points.
 *
 * A call's jobs form a round; each thread that works on a round takes its first job nobody has
 * taken, until none is left. There is one helper thread, started on first use (on a machine with
 * at least two CPUs; after a fork the child starts its own). Rounds queue for it and it takes them
 * in turn, while the thread that made a round works on it too once it needs the result: it takes
 * the round off the queue if the helper never came to it, or waits for the helper's job in hand.
 *
 * - convert_chunk(chunk, magic, frame_header, fetch_offset, max_size[, lz4]) -> (joined, lengths,
 *   written, consumed): the jobs of the chunk's entries (_clz4.c) form a round that is queued, and
 *   the caller starts on it at once; the call returns when all jobs are done. A single job stays
 *   on the caller (waking the helper costs more than it saves).
 * - convert_chunk_start(...) -> Pending: the round is queued and the call returns, so the caller
 *   can do other work (send the previous chunk of a Fetch answer, read the next) while the helper
 *   converts. Pending.result() gives convert_chunk's answer: the caller runs the jobs still left,
 *   waits for the helper, and joins the entries. A Pending dropped without its result stops its
 *   round (no job is started after that) and waits in the same way before it frees the jobs'
 *   buffers. The Pending holds the chunk's buffer, which the jobs read, until then.
 */
#include "_clz4.h"
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct Round {
    Job *list;
    Py_ssize_t n;
    atomic_long next;  /* the first job nobody has taken */
    atomic_long finished;  /* jobs done */
    struct Round *link;  /* the next round waiting for the helper */
    int queued, helper_in;  /* waiting for the helper; the helper is on it (both under `lock`) */
    uint8_t *joined;  /* the entries joined by the thread that finished the last job (malloc), or NULL */
    Py_ssize_t joined_len;
} Round;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;  /* guards what follows, and the rounds' flags */
static pthread_cond_t work = PTHREAD_COND_INITIALIZER, idle = PTHREAD_COND_INITIALIZER;
static Round *head, *tail;  /* the rounds waiting for the helper, oldest first */
static int helper_started;

/* The jobs' entries in job order in one buffer: the copy is made by whichever thread finished the
 * last job, so when that is the helper the event loop's thread does not make it. */
static void join(Round *r) {
    Py_ssize_t total = 0;
    for (Py_ssize_t i = 0; i < r->n; i++)
        total += r->list[i].out ? r->list[i].out_len : 0;
    uint8_t *dst = r->joined = malloc((size_t)total + 1);
    for (Py_ssize_t i = 0; i < r->n && dst != NULL; i++)
        if (r->list[i].out)
            memcpy(dst, r->list[i].out + r->list[i].out_start, (size_t)r->list[i].out_len), dst += r->list[i].out_len;
    r->joined_len = total;
}

static void run_jobs(Round *r) {
    for (long i; (i = atomic_fetch_add(&r->next, 1)) < r->n;) {
        if (r->list[i].planned)
            clz4_run_job(&r->list[i]);
        if (atomic_fetch_add(&r->finished, 1) + 1 == r->n)
            join(r);
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
        run_jobs(r);
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
        r->link = NULL, r->queued = 1;
        if (tail)
            tail->link = r;
        else
            head = r;
        tail = r;
        pthread_cond_signal(&work);
    }
    pthread_mutex_unlock(&lock);
}

/* Run what is left of round `r` on this thread; then take it off the queue if the helper never
 * came to it, or wait until the helper is done with it. */
static void finish(Round *r) {
    run_jobs(r);
    pthread_mutex_lock(&lock);
    if (r->queued) {
        Round **at = &head, *before = NULL;
        for (; *at != r; at = &(*at)->link)
            before = *at;
        *at = r->link;
        tail = tail == r ? before : tail;
        r->queued = 0;
    }
    while (r->helper_in)
        pthread_cond_wait(&idle, &lock);
    pthread_mutex_unlock(&lock);
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

/* A read-only memoryview of round `r`'s joined buffer, which it then owns; NULL (no error set) when
 * there is none, or when wrapping it failed (the caller copies the entries instead). */
static PyObject *joined_view(Round *r) {
    if (r->joined == NULL)
        return NULL;
    Output *o = PyObject_New(Output, &OutputType);
    PyObject *view = NULL;
    if (o != NULL) {
        o->buf = r->joined, o->len = r->joined_len, r->joined = NULL;
        view = PyMemoryView_FromObject((PyObject *)o);
        Py_DECREF(o);
    }
    PyErr_Clear();
    return view;
}

static void release_jobs(Pending *p) {
    for (Py_ssize_t i = 0; i < p->round.n && p->list != NULL; i++) {
        if (p->list[i].src.obj != NULL)
            PyBuffer_Release(&p->list[i].src);
        free(p->list[i].out);
    }
    free(p->list);
    p->list = NULL;
    free(p->round.joined);
    p->round.joined = NULL;
    if (p->header.obj != NULL)
        PyBuffer_Release(&p->header);
    if (p->chunk.obj != NULL)
        PyBuffer_Release(&p->chunk);
}

static void pending_dealloc(Pending *p) {
    if (!p->done) {
        atomic_store(&p->round.next, (long)p->round.n);  /* no job is started after this */
        Py_BEGIN_ALLOW_THREADS
        finish(&p->round);
        Py_END_ALLOW_THREADS
    }
    release_jobs(p);
    Py_TYPE(p)->tp_free((PyObject *)p);
}

static PyObject *pending_result(Pending *p, PyObject *unused) {
    if (p->done) {
        PyErr_SetString(PyExc_RuntimeError, "the result of this conversion was already taken");
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    finish(&p->round);
    Py_END_ALLOW_THREADS
    p->done = 1;
    PyObject *out = clz4_results(p->list, p->round.n, p->consumed, joined_view(&p->round));
    release_jobs(p);
    return out;
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
    p->list = NULL, p->round.n = 0, p->round.queued = p->round.helper_in = 0, p->done = 1;
    p->header.obj = p->chunk.obj = NULL, p->consumed = 0, p->round.joined = NULL;
    atomic_init(&p->round.next, 0);
    atomic_init(&p->round.finished, 0);
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

/* Offer the round to the helper when at least `helper_from` of its jobs are planned for C. */
static Pending *begin(Pending *p, Py_ssize_t planned, Py_ssize_t helper_from) {
    p->round.list = p->list, p->done = 0;
    if (planned >= helper_from)
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
    PyObject *out = p ? pending_result(p, NULL) : NULL;
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
