/*
 * The threads of the C batch down-conversion (_clz4.c converts one job), and its Python entry points.
 *
 * A call's jobs form a round; each thread that works on a round takes its first job nobody has
 * taken, until none is left. There is one helper thread, started on first use (on a machine with
 * at least two CPUs; after a fork the child starts its own). Rounds queue for it and it takes them
 * in turn, while the thread that made a round works on it too once it needs the result: it takes
 * the round off the queue if the helper never came to it, or waits for the helper's job in hand.
 *
 * - convert_batches(jobs, magic, frame_header) -> (joined, lengths, written): the round is
 *   queued and the caller starts on it at once; the call returns when all jobs are done. A single
 *   job stays on the caller (waking the helper costs more than it saves).
 * - convert_batches_start(jobs, magic, frame_header) -> Pending: the round is queued and the call
 *   returns, so the caller can do other work (send the previous chunk of a Fetch answer, read the
 *   next) while the helper converts. Pending.result() gives convert_batches's answer: the caller
 *   runs the jobs still left, waits for the helper, and joins the entries. A Pending dropped
 *   without its result stops its round (no job is started after that) and waits in the same way
 *   before it frees the jobs' buffers.
 */
#include "_clz4.h"
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

typedef struct Round {
    Job *list;
    Py_ssize_t n;
    atomic_long next;  /* the first job nobody has taken */
    struct Round *link;  /* the next round waiting for the helper */
    int queued, helper_in;  /* waiting for the helper; the helper is on it (both under `lock`) */
} Round;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;  /* guards what follows, and the rounds' flags */
static pthread_cond_t work = PTHREAD_COND_INITIALIZER, idle = PTHREAD_COND_INITIALIZER;
static Round *head, *tail;  /* the rounds waiting for the helper, oldest first */
static int helper_started;

static void run_jobs(Round *r) {
    for (long i; (i = atomic_fetch_add(&r->next, 1)) < r->n;)
        if (r->list[i].planned)
            clz4_run_job(&r->list[i]);
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
    int done;
} Pending;

static void release_jobs(Pending *p) {
    for (Py_ssize_t i = 0; i < p->round.n && p->list != NULL; i++) {
        if (p->list[i].src.obj != NULL)
            PyBuffer_Release(&p->list[i].src);
        free(p->list[i].out);
    }
    free(p->list);
    p->list = NULL;
    if (p->header.obj != NULL)
        PyBuffer_Release(&p->header);
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
    PyObject *out = clz4_results(p->list, p->round.n);
    release_jobs(p);
    return out;
}

static PyMethodDef pending_methods[] = {
    {"result", (PyCFunction)pending_result, METH_NOARGS,
     "(joined, lengths, written) once every job is done; runs the jobs left on the calling thread."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject PendingType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "protocol.records._cdownconvert.Pending",
    .tp_basicsize = sizeof(Pending),
    .tp_dealloc = (destructor)pending_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "LZ4 batches being converted by convert_batches_start; result() gives convert_batches's answer.",
    .tp_methods = pending_methods,
};

/* The parsed jobs of `args`, offered to the helper when at least `helper_from` are planned for C. */
static Pending *start(PyObject *args, Py_ssize_t helper_from) {
    PyObject *seq;
    int magic;
    Pending *p = PyObject_New(Pending, &PendingType);
    if (p == NULL)
        return NULL;
    p->list = NULL, p->round.n = 0, p->round.queued = p->round.helper_in = 0, p->header.obj = NULL, p->done = 1;
    atomic_init(&p->round.next, 0);
    if (!PyArg_ParseTuple(args, "O!iy*", &PyList_Type, &seq, &magic, &p->header))
        goto fail;
    if (p->header.len != FRAME_HEADER || (magic != 0 && magic != 1)) {
        PyErr_SetString(PyExc_ValueError, "convert_batches takes magic 0 or 1 and a 7-byte frame header");
        goto fail;
    }
    Py_ssize_t n = PyList_GET_SIZE(seq), planned = 0;
    if ((p->list = calloc((size_t)n + 1, sizeof(Job))) == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    for (int ok; p->round.n < n; p->round.n++) {
        if ((ok = clz4_parse_job(PyList_GET_ITEM(seq, p->round.n), &p->list[p->round.n], magic, p->header.buf)) < 0)
            goto fail;
        planned += p->list[p->round.n].planned = ok;
    }
    p->round.list = p->list, p->done = 0;
    if (planned >= helper_from)
        offer(&p->round);
    return p;
fail:
    p->round.n += p->list != NULL && p->round.n < PyList_GET_SIZE(seq);  /* the job that failed holds a buffer */
    Py_DECREF(p);
    return NULL;
}

PyObject *clz4_convert(PyObject *self, PyObject *args) {
    Pending *p = start(args, 2);
    PyObject *out = p ? pending_result(p, NULL) : NULL;
    Py_XDECREF(p);
    return out;
}

PyObject *clz4_convert_start(PyObject *self, PyObject *args) {
    return (PyObject *)start(args, 1);
}

PyObject *clz4_available(PyObject *self, PyObject *unused) {
    return PyBool_FromLong(clz4_loaded());
}

int clz4_threads_init(void) {
    return PyType_Ready(&PendingType);
}
