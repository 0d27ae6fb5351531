/*
 * spark_samza_source.kafka.executor._native_reader: the per-record part of the samza-kafka executor read in C.
 *
 * Why C: the Python reader pays ~1.3 us of Python object per record (confluent-kafka's Message) before any work;
 * here librdkafka's messages are routed, range-checked and copied into Arrow buffers without a Python object per
 * record, and the GIL is released while librdkafka waits and while buffers are filled.
 *
 * Split of work (native_reader.py holds the rest): this module owns the consumer handle, the per-partition read
 * state (next offset, buffered messages, done / paused / seen) and the per-record loops; the Python side owns the
 * decisions taken per fetch or per batch (turn order, pausing, data loss, the stall timeout, error messages), in
 * read_control.py, which serves both read paths, so they follow one rule set.
 *
 * librdkafka is loaded at run time (load_library) from a path the Python side finds; rdkafka_subset.h declares
 * the part of its API used.
 */
#define PY_SSIZE_T_CLEAN
/* Python's stable ABI (the limited API of 3.11): one compiled reader serves every CPython from 3.11 on, so a
 * release needs one wheel per platform, not one per Python version. setup.py defines Py_LIMITED_API; it is also
 * set here so a build that forgets it fails to compile rather than producing a version-bound module. Nothing the
 * limited API lacks sits in the per-record loops: the calls it changes (sequence items, the type's slots) run
 * once per call from Python, and measured CPU per record is the same both ways (docs/performance.md). */
#ifndef Py_LIMITED_API
#define Py_LIMITED_API 0x030B0000
#endif
#include <Python.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dlfcn.h>
#include <pthread.h>

#include "arrow_export.h"
#include "rdkafka_subset.h"

/* PySequence_Fast's result is a list or a tuple; the limited API has no PySequence_Fast_GET_* macros, so the
 * items are read through the list or tuple functions (borrowed references, as the macros gave). */
static Py_ssize_t fast_size(PyObject *seq) { return PyList_Check(seq) ? PyList_Size(seq) : PyTuple_Size(seq); }
static PyObject *fast_item(PyObject *seq, Py_ssize_t i) {
    return PyList_Check(seq) ? PyList_GetItem(seq, i) : PyTuple_GetItem(seq, i);
}

/* ---- librdkafka, resolved at run time ------------------------------------------------------------------- */
#define DECLARE_POINTER(ret, name, params) static ret(*p_##name) params;
SAMZA_RDKAFKA_FUNCTIONS(DECLARE_POINTER)
#undef DECLARE_POINTER
static void *rdkafka_handle = NULL;
#define MIN_RDKAFKA_VERSION 0x010600ff /* incremental assign / unassign */

static PyObject *load_library(PyObject *mod, PyObject *arg) {
    const char *path = PyUnicode_AsUTF8AndSize(arg, NULL);
    if (path == NULL) return NULL;
    if (rdkafka_handle != NULL) Py_RETURN_NONE;
    void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) return PyErr_Format(PyExc_OSError, "dlopen(%s) failed: %s", path, dlerror());
#define RESOLVE(ret, name, params)                                                                         \
    p_##name = (ret(*) params)dlsym(handle, #name);                                                        \
    if (p_##name == NULL) {                                                                                \
        dlclose(handle);                                                                                   \
        return PyErr_Format(PyExc_OSError, "%s has no symbol %s (librdkafka too old?)", path, #name);      \
    }
    SAMZA_RDKAFKA_FUNCTIONS(RESOLVE)
#undef RESOLVE
    int version = p_rd_kafka_version();
    if (version < MIN_RDKAFKA_VERSION) {
        dlclose(handle);
        return PyErr_Format(PyExc_OSError, "%s is librdkafka 0x%08x; the native reader needs 1.6 or newer", path,
                            version);
    }
    rdkafka_handle = handle;
    return PyLong_FromLong(version);
}

/* ---- read state ------------------------------------------------------------------------------------------ */
typedef struct {
    char *topic;
    int32_t partition;
    int64_t start, end, next;
    int done, paused, seen;
    rd_kafka_message_t **buf; /* buffered records: buf[head .. len) in offset order */
    size_t head, len, cap;
    int64_t vbytes; /* value bytes buffered (the pause heuristic; batch cuts use key+value bytes) */
} slot_t;

/* Something the Python side decides on, in consumption order: an error message or a first record past the start. */
typedef struct {
    int kind; /* 0 error, 1 start gap */
    int slot;
    int code;
    int64_t first, next; /* start gap: first offset received, next offset expected */
    char *text;
} event_t;

/* librdkafka's log lines, kept until the Python side hands them to Python logging (its threads cannot take the
 * GIL safely at any time): a bounded ring, the oldest line dropped when full. */
#define LOG_LINES 64
typedef struct {
    int level;
    char text[384];
} log_line_t;

typedef struct {
    PyObject_HEAD rd_kafka_t *rk;
    pthread_mutex_t log_lock;
    log_line_t log[LOG_LINES];
    size_t log_start, log_count, log_dropped;
    rd_kafka_queue_t *queue;
    slot_t *slots;
    int n_slots;
    int include_headers;
    char *task;
    size_t task_len;
    rd_kafka_message_t **batch;
    size_t batch_cap;
    event_t *events;
    size_t n_events, events_cap;
    struct ArrowArray out; /* the last exported batch's struct, moved out by pyarrow's import */
    int initialised;       /* __init__ ran once: a second one would leak the handle and its queue */
    int busy;              /* a method is running (see claim) */
} consumer_t;

/* One borrower at a time, enforced: every method but logs() claims the object for its duration. The flag is
 * tested and set with the GIL held, so the test is atomic; a call from a second thread (or close() during a fetch
 * waiting without the GIL) is refused instead of sharing the slot buffers and the queue. */
static int claim(consumer_t *self) {
    if (self->busy) {
        PyErr_SetString(PyExc_RuntimeError, "the native Kafka consumer is in use by another call: it serves one "
                                            "borrower at a time (the consumer cache lends it to one reader)");
        return -1;
    }
    self->busy = 1;
    return 0;
}

/* The public method ``name``: ``name##_impl`` run while the object is claimed. */
#define CLAIMED(name)                                                                                      \
    static PyObject *name(consumer_t *self, PyObject *arg) {                                               \
        if (claim(self) != 0) return NULL;                                                                 \
        PyObject *result = name##_impl(self, arg);                                                         \
        self->busy = 0;                                                                                    \
        return result;                                                                                     \
    }

static void clear_slots(consumer_t *self) {
    for (int i = 0; i < self->n_slots; i++) {
        slot_t *s = &self->slots[i];
        for (size_t j = s->head; j < s->len; j++) p_rd_kafka_message_destroy(s->buf[j]);
        free(s->buf);
        free(s->topic);
    }
    free(self->slots);
    self->slots = NULL;
    self->n_slots = 0;
}

static rd_kafka_topic_partition_list_t *slot_list(consumer_t *self, int i, int64_t offset) {
    rd_kafka_topic_partition_list_t *list = p_rd_kafka_topic_partition_list_new(1);
    p_rd_kafka_topic_partition_list_add(list, self->slots[i].topic, self->slots[i].partition)->offset = offset;
    return list;
}

static int check_slot(consumer_t *self, int i) {
    if (self->rk == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "the native Kafka consumer is closed");
        return -1;
    }
    if (i < 0 || i >= self->n_slots) {
        PyErr_SetString(PyExc_IndexError, "no such range");
        return -1;
    }
    return 0;
}

static PyObject *err_result(rd_kafka_resp_err_t err, const char *what) {
    if (err == RD_KAFKA_RESP_ERR_NO_ERROR) Py_RETURN_NONE;
    return PyErr_Format(PyExc_RuntimeError, "%s: %s", what, p_rd_kafka_err2str(err));
}

/* ---- creation and lifecycle ----------------------------------------------------------------------------- */
/* A line cut to its buffer ends on a whole UTF-8 character: the bytes of a character cut in two are dropped. */
static void cut_at_character(char *text) {
    size_t len = strlen(text), k = len;
    while (k > 0 && ((unsigned char)text[k - 1] & 0xC0) == 0x80 && len - k < 3) k--; /* continuation bytes */
    if (k == 0) return;
    unsigned char lead = (unsigned char)text[k - 1];
    size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
    if (lead >= 0xC0 && len - (k - 1) < need) text[k - 1] = 0;
}

static void keep_log_line(const rd_kafka_t *rk, int level, const char *facility, const char *text) {
    consumer_t *self = (consumer_t *)p_rd_kafka_opaque(rk);
    if (self == NULL) return;
    pthread_mutex_lock(&self->log_lock);
    if (self->log_count == LOG_LINES) {
        self->log_start = (self->log_start + 1) % LOG_LINES;
        self->log_count--;
        self->log_dropped++;
    }
    log_line_t *line = &self->log[(self->log_start + self->log_count++) % LOG_LINES];
    line->level = level;
    int full = snprintf(line->text, sizeof line->text, "%s: %s", facility, text);
    if (full >= (int)sizeof line->text) cut_at_character(line->text);
    pthread_mutex_unlock(&self->log_lock);
}

/* logs() -> [(syslog level, text), ...] kept since the last call, and how many were dropped */
static PyObject *consumer_logs(consumer_t *self, PyObject *unused) {
    log_line_t lines[LOG_LINES];
    size_t count, dropped;
    pthread_mutex_lock(&self->log_lock);
    count = self->log_count;
    dropped = self->log_dropped;
    for (size_t k = 0; k < count; k++) lines[k] = self->log[(self->log_start + k) % LOG_LINES];
    self->log_start = self->log_count = self->log_dropped = 0;
    pthread_mutex_unlock(&self->log_lock);
    PyObject *out = PyList_New((Py_ssize_t)count);
    for (size_t k = 0; out != NULL && k < count; k++) {
        /* never strict: a line is text from librdkafka and the user's configuration (a client.id), whatever its
         * bytes; a bad byte becomes U+FFFD rather than losing the lines */
        PyObject *text = PyUnicode_DecodeUTF8(lines[k].text, (Py_ssize_t)strlen(lines[k].text), "replace");
        PyObject *item = text == NULL ? NULL : Py_BuildValue("(iN)", lines[k].level, text);
        if (item == NULL) Py_CLEAR(out);
        else PyList_SetItem(out, (Py_ssize_t)k, item);
    }
    return out == NULL ? NULL : Py_BuildValue("(Nn)", out, (Py_ssize_t)dropped);
}

static PyObject *consumer_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    consumer_t *self = (consumer_t *)((allocfunc)PyType_GetSlot(type, Py_tp_alloc))(type, 0);
    if (self != NULL) pthread_mutex_init(&self->log_lock, NULL);
    return (PyObject *)self;
}

static int consumer_init(consumer_t *self, PyObject *args, PyObject *kw) {
    PyObject *items;
    char errstr[512];
    if (!PyArg_ParseTuple(args, "O", &items)) return -1;
    if (self->initialised) {
        PyErr_SetString(PyExc_RuntimeError, "the native Kafka consumer is already initialised: create a new one");
        return -1;
    }
    if (rdkafka_handle == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "librdkafka is not loaded (call load_library first)");
        return -1;
    }
    PyObject *seq = PySequence_Fast(items, "configuration must be a sequence of (name, value) pairs");
    if (seq == NULL) return -1;
    rd_kafka_conf_t *conf = p_rd_kafka_conf_new();
    for (Py_ssize_t i = 0; i < fast_size(seq); i++) {
        const char *name, *value;
        if (!PyArg_ParseTuple(fast_item(seq, i), "ss", &name, &value)) goto fail;
        if (p_rd_kafka_conf_set(conf, name, value, errstr, sizeof errstr) != RD_KAFKA_CONF_OK) {
            /* librdkafka's reason may quote the value (a password): only the property is named */
            PyErr_Format(PyExc_ValueError, "librdkafka refused the configuration property '%s'", name);
            goto fail;
        }
    }
    Py_DECREF(seq);
    self->initialised = 1;
    p_rd_kafka_conf_set_opaque(conf, self);
    p_rd_kafka_conf_set_log_cb(conf, keep_log_line);
    Py_BEGIN_ALLOW_THREADS self->rk = p_rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof errstr);
    Py_END_ALLOW_THREADS if (self->rk == NULL) {
        p_rd_kafka_conf_destroy(conf);
        PyErr_Format(PyExc_RuntimeError, "cannot create a librdkafka consumer: %s", errstr);
        return -1;
    }
    p_rd_kafka_poll_set_consumer(self->rk);
    self->queue = p_rd_kafka_queue_get_consumer(self->rk);
    return 0;
fail:
    Py_DECREF(seq);
    p_rd_kafka_conf_destroy(conf);
    return -1;
}

static void free_events(consumer_t *self) {
    for (size_t i = 0; i < self->n_events; i++) free(self->events[i].text);
    self->n_events = 0;
}

static void close_handle(consumer_t *self) {
    clear_slots(self);
    free_events(self);
    if (self->rk == NULL) return;
    rd_kafka_t *rk = self->rk;
    rd_kafka_queue_t *queue = self->queue;
    self->rk = NULL;
    self->queue = NULL;
    Py_BEGIN_ALLOW_THREADS p_rd_kafka_queue_destroy(queue);
    p_rd_kafka_consumer_close(rk);
    p_rd_kafka_destroy(rk);
    Py_END_ALLOW_THREADS
}

static PyObject *consumer_close_impl(consumer_t *self, PyObject *unused) {
    close_handle(self);
    Py_RETURN_NONE;
}

static void consumer_dealloc(consumer_t *self) {
    close_handle(self);
    if (self->out.release != NULL) self->out.release(&self->out);
    free(self->batch);
    free(self->events);
    free(self->task);
    pthread_mutex_destroy(&self->log_lock);
    PyTypeObject *type = Py_TYPE((PyObject *)self);
    ((freefunc)PyType_GetSlot(type, Py_tp_free))(self);
    Py_DECREF(type); /* an instance of a heap type holds a reference to it */
}

/* set_ranges(task, include_headers, [(topic, partition, start, end), ...]): the read state of a new read. */
static PyObject *consumer_set_ranges_impl(consumer_t *self, PyObject *args) {
    const char *task;
    Py_ssize_t task_len;
    int headers;
    PyObject *ranges;
    if (!PyArg_ParseTuple(args, "s#pO", &task, &task_len, &headers, &ranges)) return NULL;
    PyObject *seq = PySequence_Fast(ranges, "ranges must be a sequence");
    if (seq == NULL) return NULL;
    clear_slots(self);
    Py_ssize_t n = fast_size(seq);
    if (n > INT32_MAX) {
        Py_DECREF(seq);
        return PyErr_Format(PyExc_ValueError, "too many ranges (%zd)", n);
    }
    self->slots = (slot_t *)calloc((size_t)(n > 0 ? n : 1), sizeof(slot_t));
    if (self->slots == NULL) {
        Py_DECREF(seq);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        slot_t *s = &self->slots[i];
        const char *topic;
        if (!PyArg_ParseTuple(fast_item(seq, i), "siLL", &topic, &s->partition, &s->start, &s->end)) {
            Py_DECREF(seq);
            return NULL;
        }
        self->n_slots = (int)i + 1; /* counted before the copy: clear_slots frees what was set */
        s->topic = strdup(topic);
        if (s->topic == NULL) {
            Py_DECREF(seq);
            return PyErr_NoMemory();
        }
        s->next = s->start;
    }
    Py_DECREF(seq);
    char *copy = (char *)malloc((size_t)task_len + 1);
    if (copy == NULL) return PyErr_NoMemory();
    free(self->task);
    self->task = copy;
    memcpy(self->task, task, (size_t)task_len + 1);
    self->task_len = (size_t)task_len;
    self->include_headers = headers;
    Py_RETURN_NONE;
}

/* assign(): every range at its start, none paused (a reused handle may carry a stale pause flag). */
static PyObject *consumer_assign_impl(consumer_t *self, PyObject *unused) {
    if (check_slot(self, 0) != 0) return NULL;
    rd_kafka_topic_partition_list_t *list = p_rd_kafka_topic_partition_list_new(self->n_slots);
    for (int i = 0; i < self->n_slots; i++)
        p_rd_kafka_topic_partition_list_add(list, self->slots[i].topic, self->slots[i].partition)->offset =
            self->slots[i].start;
    rd_kafka_resp_err_t err;
    Py_BEGIN_ALLOW_THREADS err = p_rd_kafka_assign(self->rk, list);
    if (err == RD_KAFKA_RESP_ERR_NO_ERROR) err = p_rd_kafka_resume_partitions(self->rk, list);
    Py_END_ALLOW_THREADS p_rd_kafka_topic_partition_list_destroy(list);
    return err_result(err, "assign");
}

/* ---- the cache's interface (same names as confluent-kafka's Consumer) ------------------------------------ */
static PyObject *consumer_assignment_impl(consumer_t *self, PyObject *unused) {
    if (self->rk == NULL) return PyErr_Format(PyExc_RuntimeError, "the native Kafka consumer is closed");
    rd_kafka_topic_partition_list_t *list = NULL;
    rd_kafka_resp_err_t err;
    Py_BEGIN_ALLOW_THREADS err = p_rd_kafka_assignment(self->rk, &list);
    Py_END_ALLOW_THREADS
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR) return err_result(err, "assignment");
    PyObject *out = PyList_New(0);
    for (int i = 0; out != NULL && i < list->cnt; i++) {
        PyObject *tp = Py_BuildValue("(si)", list->elems[i].topic, list->elems[i].partition);
        if (tp == NULL || PyList_Append(out, tp) != 0) Py_CLEAR(out);
        Py_XDECREF(tp);
    }
    p_rd_kafka_topic_partition_list_destroy(list);
    return out;
}

static PyObject *consumer_resume_impl(consumer_t *self, PyObject *arg) {
    if (self->rk == NULL) return PyErr_Format(PyExc_RuntimeError, "the native Kafka consumer is closed");
    PyObject *seq = PySequence_Fast(arg, "partitions must be a sequence of (topic, partition)");
    if (seq == NULL) return NULL;
    rd_kafka_topic_partition_list_t *list = p_rd_kafka_topic_partition_list_new((int)fast_size(seq));
    for (Py_ssize_t i = 0; i < fast_size(seq); i++) {
        const char *topic;
        int partition;
        if (!PyArg_ParseTuple(fast_item(seq, i), "si", &topic, &partition)) {
            p_rd_kafka_topic_partition_list_destroy(list);
            Py_DECREF(seq);
            return NULL;
        }
        p_rd_kafka_topic_partition_list_add(list, topic, partition);
    }
    Py_DECREF(seq);
    rd_kafka_resp_err_t err;
    Py_BEGIN_ALLOW_THREADS err = p_rd_kafka_resume_partitions(self->rk, list);
    Py_END_ALLOW_THREADS p_rd_kafka_topic_partition_list_destroy(list);
    return err_result(err, "resume");
}

/* unassign(): no partition assigned and no record buffered: ready for the next borrower. */
static PyObject *consumer_unassign_impl(consumer_t *self, PyObject *unused) {
    if (self->rk == NULL) return PyErr_Format(PyExc_RuntimeError, "the native Kafka consumer is closed");
    clear_slots(self);
    free_events(self);
    rd_kafka_resp_err_t err;
    Py_BEGIN_ALLOW_THREADS err = p_rd_kafka_assign(self->rk, NULL);
    Py_END_ALLOW_THREADS return err_result(err, "unassign");
}

/* ---- per-partition control ------------------------------------------------------------------------------ */
static rd_kafka_resp_err_t pause_slot(consumer_t *self, int i, int pause) {
    rd_kafka_topic_partition_list_t *list = slot_list(self, i, RD_KAFKA_OFFSET_INVALID);
    rd_kafka_resp_err_t err = pause ? p_rd_kafka_pause_partitions(self->rk, list)
                                    : p_rd_kafka_resume_partitions(self->rk, list);
    p_rd_kafka_topic_partition_list_destroy(list);
    self->slots[i].paused = pause;
    return err;
}

static PyObject *consumer_pause_range_impl(consumer_t *self, PyObject *args) {
    int i, pause;
    if (!PyArg_ParseTuple(args, "ip", &i, &pause) || check_slot(self, i) != 0) return NULL;
    rd_kafka_resp_err_t err;
    Py_BEGIN_ALLOW_THREADS err = pause_slot(self, i, pause);
    Py_END_ALLOW_THREADS return err_result(err, pause ? "pause" : "resume");
}

static void finish_slot(consumer_t *self, int i) {
    self->slots[i].done = 1;
    if (!self->slots[i].paused) pause_slot(self, i, 1);
}

static PyObject *consumer_finish_impl(consumer_t *self, PyObject *args) {
    int i;
    if (!PyArg_ParseTuple(args, "i", &i) || check_slot(self, i) != 0) return NULL;
    Py_BEGIN_ALLOW_THREADS finish_slot(self, i);
    Py_END_ALLOW_THREADS Py_RETURN_NONE;
}

/* state(i) -> (next, buffered records, buffered value bytes, done, paused) */
static PyObject *consumer_state_impl(consumer_t *self, PyObject *args) {
    int i;
    if (!PyArg_ParseTuple(args, "i", &i) || check_slot(self, i) != 0) return NULL;
    slot_t *s = &self->slots[i];
    return Py_BuildValue("(LnLii)", (long long)s->next, (Py_ssize_t)(s->len - s->head), (long long)s->vbytes, s->done,
                         s->paused);
}

static PyObject *consumer_set_next_impl(consumer_t *self, PyObject *args) {
    int i;
    long long next;
    if (!PyArg_ParseTuple(args, "iL", &i, &next) || check_slot(self, i) != 0) return NULL;
    self->slots[i].next = next;
    Py_RETURN_NONE;
}

/* reposition(i, offset): restart fetching a range at offset (seek is refused once librdkafka reported
 * out-of-range, so unassign and assign it again), keeping its pause state. */
static PyObject *consumer_reposition_impl(consumer_t *self, PyObject *args) {
    int i;
    long long offset;
    if (!PyArg_ParseTuple(args, "iL", &i, &offset) || check_slot(self, i) != 0) return NULL;
    rd_kafka_topic_partition_list_t *list = slot_list(self, i, offset);
    rd_kafka_error_t *error;
    rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR_NO_ERROR;
    Py_BEGIN_ALLOW_THREADS error = p_rd_kafka_incremental_unassign(self->rk, list);
    if (error == NULL) error = p_rd_kafka_incremental_assign(self->rk, list);
    if (error == NULL && self->slots[i].paused) err = pause_slot(self, i, 1);
    Py_END_ALLOW_THREADS p_rd_kafka_topic_partition_list_destroy(list);
    if (error != NULL) {
        PyErr_Format(PyExc_RuntimeError, "reassign: %s", p_rd_kafka_error_string(error));
        p_rd_kafka_error_destroy(error);
        return NULL;
    }
    return err_result(err, "pause");
}

/* positions([i, ...]) -> consumer positions (RD_KAFKA_OFFSET_INVALID when none yet) */
static PyObject *consumer_positions_impl(consumer_t *self, PyObject *arg) {
    PyObject *seq = PySequence_Fast(arg, "positions takes a sequence of range indexes");
    if (seq == NULL || check_slot(self, 0) != 0) {
        Py_XDECREF(seq);
        return NULL;
    }
    Py_ssize_t n = fast_size(seq);
    rd_kafka_topic_partition_list_t *list = p_rd_kafka_topic_partition_list_new((int)n);
    for (Py_ssize_t k = 0; k < n; k++) {
        int i = (int)PyLong_AsLong(fast_item(seq, k));
        if (check_slot(self, i) != 0) {
            Py_DECREF(seq);
            p_rd_kafka_topic_partition_list_destroy(list);
            return NULL;
        }
        p_rd_kafka_topic_partition_list_add(list, self->slots[i].topic, self->slots[i].partition);
    }
    Py_DECREF(seq);
    rd_kafka_resp_err_t err;
    Py_BEGIN_ALLOW_THREADS err = p_rd_kafka_position(self->rk, list);
    Py_END_ALLOW_THREADS
    PyObject *out = err ? err_result(err, "position") : PyList_New(n);
    for (Py_ssize_t k = 0; out != NULL && !err && k < n; k++)
        if (PyList_SetItem(out, k, PyLong_FromLongLong(list->elems[k].offset)) < 0) Py_CLEAR(out);
    p_rd_kafka_topic_partition_list_destroy(list);
    return out;
}

/* watermarks(i, timeout_ms) -> (low, high), asked from the broker */
static PyObject *consumer_watermarks_impl(consumer_t *self, PyObject *args) {
    int i, timeout_ms;
    int64_t low = -1, high = -1;
    if (!PyArg_ParseTuple(args, "ii", &i, &timeout_ms) || check_slot(self, i) != 0) return NULL;
    rd_kafka_resp_err_t err;
    Py_BEGIN_ALLOW_THREADS err = p_rd_kafka_query_watermark_offsets(self->rk, self->slots[i].topic,
                                                                     self->slots[i].partition, &low, &high,
                                                                     timeout_ms);
    Py_END_ALLOW_THREADS if (err) return err_result(err, "query watermark offsets");
    return Py_BuildValue("(LL)", (long long)low, (long long)high);
}

/* partition_exists(i, timeout_ms) -> whether the broker's metadata has the range's topic and partition */
static PyObject *consumer_partition_exists_impl(consumer_t *self, PyObject *args) {
    int i, timeout_ms, exists = 0;
    if (!PyArg_ParseTuple(args, "ii", &i, &timeout_ms) || check_slot(self, i) != 0) return NULL;
    const rd_kafka_metadata_t *md = NULL;
    rd_kafka_resp_err_t err;
    Py_BEGIN_ALLOW_THREADS rd_kafka_topic_t *rkt = p_rd_kafka_topic_new(self->rk, self->slots[i].topic, NULL);
    err = rkt ? p_rd_kafka_metadata(self->rk, 0, rkt, &md, timeout_ms) : -1;
    if (rkt) p_rd_kafka_topic_destroy(rkt);
    Py_END_ALLOW_THREADS if (err) return err_result(err, "metadata");
    for (int t = 0; t < md->topic_cnt; t++) {
        rd_kafka_metadata_topic_t *tm = &md->topics[t];
        if (strcmp(tm->topic, self->slots[i].topic) != 0 || tm->err) continue;
        for (int p = 0; p < tm->partition_cnt; p++)
            if (tm->partitions[p].id == self->slots[i].partition) exists = 1;
    }
    p_rd_kafka_metadata_destroy(md);
    return PyBool_FromLong(exists);
}

/* ---- fetch: consume, route by partition, keep records inside [next, end) --------------------------------- */
static int add_event(consumer_t *self, int kind, int slot, int code, int64_t first, int64_t next, const char *text,
                     size_t text_len) {
    if (self->n_events == self->events_cap) {
        size_t cap = self->events_cap ? 2 * self->events_cap : 16;
        event_t *grown = (event_t *)realloc(self->events, cap * sizeof(event_t));
        if (grown == NULL) return -1;
        self->events = grown;
        self->events_cap = cap;
    }
    event_t *e = &self->events[self->n_events++];
    e->kind = kind;
    e->slot = slot;
    e->code = code;
    e->first = first;
    e->next = next;
    e->text = NULL;
    if (text != NULL) {
        e->text = (char *)malloc(text_len + 1);
        if (e->text != NULL) {
            memcpy(e->text, text, text_len);
            e->text[text_len] = 0;
        }
    }
    return 0;
}

static int find_slot(consumer_t *self, const rd_kafka_message_t *m) {
    if (m->rkt == NULL) return -1;
    const char *topic = NULL;
    for (int i = 0; i < self->n_slots; i++) {
        if (self->slots[i].partition != m->partition) continue;
        if (topic == NULL) topic = p_rd_kafka_topic_name(m->rkt);
        if (strcmp(self->slots[i].topic, topic) == 0) return i;
    }
    return -1;
}

static int slot_append(slot_t *s, rd_kafka_message_t *m) {
    if (s->len == s->cap) {
        if (s->head > 0 && s->head >= s->len / 2) { /* drop the emitted prefix before growing */
            memmove(s->buf, s->buf + s->head, (s->len - s->head) * sizeof(*s->buf));
            s->len -= s->head;
            s->head = 0;
        } else {
            size_t cap = s->cap ? 2 * s->cap : 1024;
            rd_kafka_message_t **grown = (rd_kafka_message_t **)realloc(s->buf, cap * sizeof(*s->buf));
            if (grown == NULL) return -1;
            s->buf = grown;
            s->cap = cap;
        }
    }
    s->buf[s->len++] = m;
    s->vbytes += m->payload ? (int64_t)m->len : 0;
    return 0;
}

/* One run of consecutive records of range ``i`` (offsets ascending), the rule of reader.py's _take: records in
 * [next, end) are kept; the range is finished once a record at or past end - 1 arrived. Returns value bytes kept,
 * or -1 when out of memory. */
static int64_t take_run(consumer_t *self, int i, rd_kafka_message_t **run, size_t n) {
    slot_t *s = &self->slots[i];
    int64_t first = run[0]->offset, last = run[n - 1]->offset, kept = 0, next = s->next;
    int failed = 0;
    if (last < next) {
        for (size_t k = 0; k < n; k++) p_rd_kafka_message_destroy(run[k]);
        return 0;
    }
    if (first > next && !s->seen && add_event(self, 1, i, 0, first, next, NULL, 0) != 0) failed = 1;
    s->seen = 1;
    int64_t last_kept = -1;
    for (size_t k = 0; k < n; k++) {
        rd_kafka_message_t *m = run[k];
        if (!failed && m->offset >= next && m->offset < s->end) {
            if (slot_append(s, m) == 0) {
                kept += m->payload ? (int64_t)m->len : 0;
                last_kept = m->offset;
                continue;
            }
            failed = 1;
        }
        p_rd_kafka_message_destroy(m);
    }
    if (last_kept >= 0) s->next = last_kept + 1;
    if (last >= s->end - 1) {
        int64_t bound = last + 1 < s->end ? last + 1 : s->end;
        if (bound > s->next) s->next = bound;
        finish_slot(self, i);
    }
    return failed ? -1 : kept;
}

/* Route ``n`` consumed messages: runs of one range to take_run, errors to the event list, the rest dropped. */
static int route(consumer_t *self, rd_kafka_message_t **msgs, size_t n, int64_t *kept, int *progressed) {
    size_t i = 0;
    int failed = 0;
    while (i < n) {
        rd_kafka_message_t *m = msgs[i];
        if (m->err) {
            if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) {
                const char *text = m->payload ? (const char *)m->payload : p_rd_kafka_err2str(m->err);
                size_t len = m->payload ? m->len : strlen(text);
                if (add_event(self, 0, find_slot(self, m), m->err, m->offset, 0, text, len) != 0) failed = 1;
            }
            p_rd_kafka_message_destroy(m);
            i++;
            continue;
        }
        size_t j = i + 1;
        while (j < n && !msgs[j]->err && msgs[j]->partition == m->partition && msgs[j]->rkt == m->rkt) j++;
        int slot = find_slot(self, m);
        if (slot >= 0 && !self->slots[slot].done && !failed) {
            int64_t got = take_run(self, slot, msgs + i, j - i);
            if (got < 0) failed = 1;
            else *kept += got;
            *progressed = 1;
        } else {
            for (size_t k = i; k < j; k++) p_rd_kafka_message_destroy(msgs[k]);
        }
        i = j;
    }
    return failed ? -1 : 0;
}

static PyObject *events_to_python(consumer_t *self) {
    PyObject *out = PyList_New((Py_ssize_t)self->n_events);
    for (size_t k = 0; out != NULL && k < self->n_events; k++) {
        event_t *e = &self->events[k];
        PyObject *item = e->kind == 0 ? Py_BuildValue("(siis)", "error", e->slot, e->code, e->text ? e->text : "")
                                      : Py_BuildValue("(siLL)", "gap", e->slot, (long long)e->first,
                                                      (long long)e->next);
        if (item == NULL) {
            Py_CLEAR(out);
            break;
        }
        PyList_SetItem(out, (Py_ssize_t)k, item);
    }
    free_events(self);
    return out;
}

/* fetch(want, timeout_ms) -> (messages consumed, value bytes kept, progressed, events) */
static PyObject *consumer_fetch_impl(consumer_t *self, PyObject *args) {
    int want, timeout_ms;
    if (!PyArg_ParseTuple(args, "ii", &want, &timeout_ms) || check_slot(self, 0) != 0) return NULL;
    if (want < 1) want = 1;
    if ((size_t)want > self->batch_cap) {
        rd_kafka_message_t **grown = (rd_kafka_message_t **)realloc(self->batch, (size_t)want * sizeof(*grown));
        if (grown == NULL) return PyErr_NoMemory();
        self->batch = grown;
        self->batch_cap = (size_t)want;
    }
    ssize_t n;
    int64_t kept = 0;
    int progressed = 0, failed = 0;
    free_events(self);
    Py_BEGIN_ALLOW_THREADS n = p_rd_kafka_consume_batch_queue(self->queue, timeout_ms, self->batch, (size_t)want);
    if (n > 0) failed = route(self, self->batch, (size_t)n, &kept, &progressed);
    Py_END_ALLOW_THREADS if (n < 0) return PyErr_Format(PyExc_RuntimeError, "consume failed");
    if (failed) {
        free_events(self);
        return PyErr_NoMemory();
    }
    PyObject *events = events_to_python(self);
    if (events == NULL) return NULL;
    return Py_BuildValue("(nLiN)", (Py_ssize_t)n, (long long)kept, progressed, events);
}

/* ---- emit: the next batch of a range as an Arrow struct array --------------------------------------------- */
static int fill_binary(struct ArrowArray *a, rd_kafka_message_t **msgs, int64_t n, int key) {
    size_t total = 0;
    int64_t nulls = 0;
    for (int64_t i = 0; i < n; i++) {
        const void *p = key ? msgs[i]->key : msgs[i]->payload;
        if (p == NULL) nulls++;
        else total += key ? msgs[i]->key_len : msgs[i]->len;
    }
    if (total > INT32_MAX || arrow_init(a, n, 3, 0) != 0) return -1;
    a->null_count = nulls;
    uint8_t *valid = nulls ? (uint8_t *)arrow_buffer(a, 0, (size_t)(n + 7) / 8) : NULL;
    int32_t *offsets = (int32_t *)arrow_buffer(a, 1, (size_t)(n + 1) * sizeof(int32_t));
    char *data = (char *)arrow_buffer(a, 2, total);
    if ((nulls && valid == NULL) || offsets == NULL || data == NULL) return -1;
    size_t pos = 0;
    for (int64_t i = 0; i < n; i++) {
        const void *p = key ? msgs[i]->key : msgs[i]->payload;
        offsets[i] = (int32_t)pos;
        if (p == NULL) continue;
        size_t len = key ? msgs[i]->key_len : msgs[i]->len;
        memcpy(data + pos, p, len);
        pos += len;
        if (valid) arrow_set_valid(valid, i);
    }
    offsets[n] = (int32_t)pos;
    return 0;
}

/* Spark's timestamp range (0001-01-01 to 9999-12-31 UTC) in milliseconds: a record's timestamp is clamped to it
 * before the conversion to microseconds, which would overflow int64 past ~292,000 years (read_control warns,
 * naming the records). */
#define SPARK_MIN_MS (-62135596800000LL)
#define SPARK_MAX_MS 253402300799999LL

/* offset, timestamp (us) and timestampType (Spark's ids: -1 none, 0 CreateTime, 1 LogAppendTime) */
static int fill_positions(struct ArrowArray *cols, rd_kafka_message_t **msgs, int64_t n) {
    if (arrow_init(&cols[0], n, 2, 0) || arrow_init(&cols[1], n, 2, 0) || arrow_init(&cols[2], n, 2, 0)) return -1;
    int64_t *offsets = (int64_t *)arrow_buffer(&cols[0], 1, (size_t)n * 8);
    int64_t *stamps = (int64_t *)arrow_buffer(&cols[1], 1, (size_t)n * 8);
    int32_t *types = (int32_t *)arrow_buffer(&cols[2], 1, (size_t)n * 4);
    if (offsets == NULL || stamps == NULL || types == NULL) return -1;
    for (int64_t i = 0; i < n; i++) {
        int type = 0;
        offsets[i] = msgs[i]->offset;
        int64_t ms = p_rd_kafka_message_timestamp(msgs[i], &type);
        stamps[i] = (ms < SPARK_MIN_MS ? SPARK_MIN_MS : ms > SPARK_MAX_MS ? SPARK_MAX_MS : ms) * 1000;
        types[i] = type - 1;
    }
    return 0;
}

/* librdkafka's header (rdkafka_header.h, unchanged since 0.11.4): rd_kafka_header_get_all hands out the name as a
 * NUL-terminated string, but a Kafka header key may hold NUL bytes; its full size is stored beside it. The size is
 * used only where the fields around it confirm the layout (the value pointer and size get_all returned, a
 * serialised size that adds up), else the name is read up to its first NUL. */
typedef struct {
    size_t ser_size, value_size, name_size;
    char *value;
    char name[1];
} rdk_header_t;

static size_t header_name_len(const char *name, const void *value, size_t size) {
    size_t shown = strlen(name);
    const rdk_header_t *h = (const rdk_header_t *)(name - offsetof(rdk_header_t, name));
    if (h->value != (const char *)value || h->value_size != (value ? size : 0) || h->name_size <= shown) return shown;
    if (value != NULL ? (const char *)value != name + h->name_size + 1
                      : h->ser_size < h->name_size || h->ser_size - h->name_size > 10)
        return shown;
    return h->name[h->name_size] == 0 ? h->name_size : shown;
}

/* The length of the valid UTF-8 sequence at ``s`` (``len`` bytes left), or 0 when it is not one; then ``*bad``
 * is how many bytes the invalid sequence spans (its maximal valid prefix, or 1: one U+FFFD each, as Python's
 * errors='replace'). */
static size_t utf8_step(const unsigned char *s, size_t len, size_t *bad) {
    unsigned char c = s[0], lo = 0x80, hi = 0xBF;
    size_t need;
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) need = 2;
    else if (c == 0xE0) need = 3, lo = 0xA0;
    else if (c == 0xED) need = 3, hi = 0x9F;
    else if (c >= 0xE1 && c <= 0xEF) need = 3;
    else if (c == 0xF0) need = 4, lo = 0x90;
    else if (c == 0xF4) need = 4, hi = 0x8F;
    else if (c >= 0xF1 && c <= 0xF3) need = 4;
    else {
        *bad = 1;
        return 0;
    }
    for (size_t k = 1; k < need; k++) {
        unsigned char b = k < len ? s[k] : 0;
        if (k >= len || b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xBF)) {
            *bad = k;
            return 0;
        }
    }
    return need;
}

/* A header key's bytes in the string column: invalid UTF-8 replaced by U+FFFD (3 bytes); copied to ``out`` when
 * given. Returns the column bytes. */
static size_t utf8_fixed(const char *text, size_t len, char *out) {
    const unsigned char *s = (const unsigned char *)text;
    size_t pos = 0, i = 0;
    while (i < len) {
        size_t bad = 0, step = utf8_step(s + i, len - i, &bad);
        if (step) {
            if (out) memcpy(out + pos, s + i, step);
            pos += step;
            i += step;
        } else {
            if (out) memcpy(out + pos, "\xEF\xBF\xBD", 3);
            pos += 3;
            i += bad;
        }
    }
    return pos;
}

/* A header's key as the string column holds it: whole (embedded NULs kept), valid UTF-8. */
static size_t header_key_bytes(const char *name, const void *value, size_t size, char *out) {
    return utf8_fixed(name, header_name_len(name, value, size), out);
}

/* One record's headers added up (key bytes as the string column holds them, value bytes, null values); their count. */
static size_t add_header_bytes(rd_kafka_headers_t *hdrs, size_t *key_bytes, size_t *value_bytes,
                               int64_t *null_values) {
    size_t cnt = p_rd_kafka_header_cnt(hdrs);
    for (size_t h = 0; h < cnt; h++) {
        const char *name;
        const void *value;
        size_t size;
        p_rd_kafka_header_get_all(hdrs, h, &name, &value, &size);
        *key_bytes += header_key_bytes(name, value, size, NULL);
        if (value == NULL) (*null_values)++;
        else *value_bytes += size;
    }
    return cnt;
}

typedef struct {
    size_t count, key_bytes, value_bytes;
    int64_t nulls, null_values;
} header_sizes_t;

/* The sizes of the headers column's buffers: header count, key and value bytes, nulls at both levels. */
static header_sizes_t header_sizes(rd_kafka_message_t **msgs, int64_t n) {
    header_sizes_t z = {0, 0, 0, 0, 0};
    for (int64_t i = 0; i < n; i++) {
        rd_kafka_headers_t *hdrs = NULL;
        if (p_rd_kafka_message_headers(msgs[i], &hdrs) != RD_KAFKA_RESP_ERR_NO_ERROR) {
            z.nulls++;
            continue;
        }
        z.count += add_header_bytes(hdrs, &z.key_bytes, &z.value_bytes, &z.null_values);
    }
    return z;
}

/* headers: list<struct<key: string, value: binary>>, null where a record has no headers */
static int fill_headers(struct ArrowArray *a, rd_kafka_message_t **msgs, int64_t n) {
    header_sizes_t z = header_sizes(msgs, n);
    size_t count = z.count, key_bytes = z.key_bytes, value_bytes = z.value_bytes;
    int64_t nulls = z.nulls, null_values = z.null_values;
    if (key_bytes > INT32_MAX || value_bytes > INT32_MAX || count > INT32_MAX) return -1;
    if (arrow_init(a, n, 2, 1) != 0) return -1;
    a->null_count = nulls;
    uint8_t *valid = nulls ? (uint8_t *)arrow_buffer(a, 0, (size_t)(n + 7) / 8) : NULL;
    int32_t *list_offsets = (int32_t *)arrow_buffer(a, 1, (size_t)(n + 1) * sizeof(int32_t));
    struct ArrowArray *entries = arrow_child(a, 0);
    if (arrow_init(entries, (int64_t)count, 1, 2) != 0) return -1;
    struct ArrowArray *keys = arrow_child(entries, 0), *values = arrow_child(entries, 1);
    if (arrow_init(keys, (int64_t)count, 3, 0) != 0 || arrow_init(values, (int64_t)count, 3, 0) != 0) return -1;
    values->null_count = null_values;
    int32_t *key_offsets = (int32_t *)arrow_buffer(keys, 1, (count + 1) * sizeof(int32_t));
    char *key_data = (char *)arrow_buffer(keys, 2, key_bytes);
    uint8_t *value_valid = null_values ? (uint8_t *)arrow_buffer(values, 0, (count + 7) / 8) : NULL;
    int32_t *value_offsets = (int32_t *)arrow_buffer(values, 1, (count + 1) * sizeof(int32_t));
    char *value_data = (char *)arrow_buffer(values, 2, value_bytes);
    if ((nulls && !valid) || !list_offsets || !key_offsets || !key_data || (null_values && !value_valid) ||
        !value_offsets || !value_data)
        return -1;
    size_t e = 0, kpos = 0, vpos = 0;
    for (int64_t i = 0; i < n; i++) {
        list_offsets[i] = (int32_t)e;
        rd_kafka_headers_t *hdrs = NULL;
        if (p_rd_kafka_message_headers(msgs[i], &hdrs) != RD_KAFKA_RESP_ERR_NO_ERROR) continue;
        if (valid) arrow_set_valid(valid, i);
        size_t cnt = p_rd_kafka_header_cnt(hdrs);
        for (size_t h = 0; h < cnt; h++, e++) {
            const char *name;
            const void *value;
            size_t size;
            p_rd_kafka_header_get_all(hdrs, h, &name, &value, &size);
            key_offsets[e] = (int32_t)kpos;
            kpos += header_key_bytes(name, value, size, key_data + kpos);
            value_offsets[e] = (int32_t)vpos;
            if (value == NULL) continue;
            memcpy(value_data + vpos, value, size);
            vpos += size;
            if (value_valid) arrow_set_valid(value_valid, (int64_t)e);
        }
    }
    list_offsets[n] = (int32_t)e;
    key_offsets[count] = (int32_t)kpos;
    value_offsets[count] = (int32_t)vpos;
    return 0;
}

/* The bytes one record adds to each variable-width column of a batch: key, value, header keys, header values. */
#define N_COLUMNS 4
static const char *const column_names[N_COLUMNS] = {"key", "value", "header keys", "header values"};

static void record_bytes(const rd_kafka_message_t *m, int headers, int64_t *bytes) {
    bytes[0] = m->key ? (int64_t)m->key_len : 0;
    bytes[1] = m->payload ? (int64_t)m->len : 0;
    bytes[2] = bytes[3] = 0;
    rd_kafka_headers_t *hdrs = NULL;
    if (!headers || p_rd_kafka_message_headers(m, &hdrs) != RD_KAFKA_RESP_ERR_NO_ERROR) return;
    size_t keys = 0, values = 0;
    int64_t null_values = 0;
    add_header_bytes(hdrs, &keys, &values, &null_values);
    bytes[2] = (int64_t)keys;
    bytes[3] = (int64_t)values;
}

/* How many buffered records the next batch of range ``s`` takes, the rule of reader_rules.batch_cut: up to
 * max_rows; cut where the bytes of all its columns reach max_bytes (the record reaching it included); never a
 * record that would take a column past ``limit`` bytes (Arrow's 32-bit offsets: read_settings). 0 when the first
 * record alone does not fit: ``*column`` and ``*column_bytes`` then say where. */
static int64_t batch_rows(const consumer_t *self, const slot_t *s, int64_t max_rows, int64_t max_bytes,
                          int64_t limit, const char **column, int64_t *column_bytes) {
    int64_t n = (int64_t)(s->len - s->head), all = 0, total[N_COLUMNS] = {0, 0, 0, 0}, bytes[N_COLUMNS];
    int64_t topic_len = (int64_t)strlen(s->topic), task_len = (int64_t)self->task_len;
    if (n > max_rows) n = max_rows;
    for (int64_t i = 0; i < n; i++) {
        record_bytes(s->buf[s->head + (size_t)i], self->include_headers, bytes);
        const char *over = NULL;
        int64_t over_bytes = 0;
        for (int c = 0; c < N_COLUMNS && over == NULL; c++)
            if (total[c] + bytes[c] > limit) over = column_names[c], over_bytes = bytes[c];
        if (over == NULL && (i + 1) * topic_len > limit) over = "topic", over_bytes = topic_len;
        if (over == NULL && (i + 1) * task_len > limit) over = "task", over_bytes = task_len;
        if (over != NULL) {
            if (i == 0) *column = over, *column_bytes = over_bytes;
            return i;
        }
        for (int c = 0; c < N_COLUMNS; c++) total[c] += bytes[c], all += bytes[c];
        if (all >= max_bytes) return i + 1;
    }
    return n;
}

/* cut(i, max_rows, max_bytes, limit) -> (rows, offset of the first buffered record, column, bytes): the rows the
 * next batch of range i takes (batch_rows); 0 rows when its first record does not fit in one batch, ``column``
 * and ``bytes`` then naming the column and the record's bytes in it. */
static PyObject *consumer_cut_impl(consumer_t *self, PyObject *args) {
    int i;
    long long max_rows, max_bytes, limit;
    if (!PyArg_ParseTuple(args, "iLLL", &i, &max_rows, &max_bytes, &limit) || check_slot(self, i) != 0) return NULL;
    slot_t *s = &self->slots[i];
    if (s->len == s->head) return PyErr_Format(PyExc_RuntimeError, "no buffered record to emit");
    const char *column = "";
    int64_t rows, column_bytes = 0;
    Py_BEGIN_ALLOW_THREADS rows = batch_rows(self, s, max_rows, max_bytes, limit, &column, &column_bytes);
    Py_END_ALLOW_THREADS return Py_BuildValue("(LLsL)", (long long)rows, (long long)s->buf[s->head]->offset, column,
                                              (long long)column_bytes);
}

static int fill_batch(consumer_t *self, const slot_t *s, rd_kafka_message_t **msgs, int64_t n) {
    struct ArrowArray *out = &self->out;
    int64_t n_cols = self->include_headers ? 9 : 8;
    if (arrow_init(out, n, 1, n_cols) != 0) return -1;
    struct ArrowArray *c = out->children[0]; /* the children are contiguous */
    int32_t partition = s->partition;
    if (fill_binary(&c[0], msgs, n, 1) || fill_binary(&c[1], msgs, n, 0) ||
        arrow_fill_repeated_string(&c[2], n, s->topic, strlen(s->topic)) ||
        arrow_fill_fixed(&c[3], n, &partition, sizeof partition) || fill_positions(&c[4], msgs, n))
        return -1;
    if (self->include_headers && fill_headers(&c[7], msgs, n)) return -1;
    return arrow_fill_repeated_string(&c[n_cols - 1], n, self->task, self->task_len);
}

/* emit(i, rows) -> address of an ArrowArray (a struct array of the schema's columns) for RecordBatch._import_from_c,
 * valid until the next call of this object: the next ``rows`` records of range i (as cut() counted them), which
 * leave the buffer. */
static PyObject *consumer_emit_impl(consumer_t *self, PyObject *args) {
    int i;
    long long rows;
    if (!PyArg_ParseTuple(args, "iL", &i, &rows) || check_slot(self, i) != 0) return NULL;
    slot_t *s = &self->slots[i];
    if (rows < 1 || (size_t)rows > s->len - s->head)
        return PyErr_Format(PyExc_ValueError, "emit: %lld rows asked, %zu buffered", rows, s->len - s->head);
    if (self->out.release != NULL) self->out.release(&self->out); /* a batch never imported */
    int failed;
    int64_t n = rows;
    Py_BEGIN_ALLOW_THREADS rd_kafka_message_t **msgs = s->buf + s->head;
    failed = fill_batch(self, s, msgs, n);
    if (!failed) {
        for (int64_t k = 0; k < n; k++) {
            s->vbytes -= msgs[k]->payload ? (int64_t)msgs[k]->len : 0;
            p_rd_kafka_message_destroy(msgs[k]);
        }
        s->head += (size_t)n;
        if (s->head == s->len) s->head = s->len = 0;
        if (s->len == 0 || s->vbytes < 0) s->vbytes = 0;
    }
    Py_END_ALLOW_THREADS if (failed) {
        if (self->out.release != NULL) self->out.release(&self->out);
        return PyErr_Format(PyExc_MemoryError, "cannot build an Arrow batch of %lld records", (long long)n);
    }
    return PyLong_FromVoidPtr(&self->out);
}

/* ---- the methods, each claiming the object while it runs ----------------------------------------------- */
CLAIMED(consumer_close)
CLAIMED(consumer_set_ranges)
CLAIMED(consumer_assign)
CLAIMED(consumer_assignment)
CLAIMED(consumer_resume)
CLAIMED(consumer_unassign)
CLAIMED(consumer_pause_range)
CLAIMED(consumer_finish)
CLAIMED(consumer_state)
CLAIMED(consumer_set_next)
CLAIMED(consumer_reposition)
CLAIMED(consumer_positions)
CLAIMED(consumer_watermarks)
CLAIMED(consumer_partition_exists)
CLAIMED(consumer_fetch)
CLAIMED(consumer_emit)
CLAIMED(consumer_cut)

/* ---- module ------------------------------------------------------------------------------------------------ */
static PyMethodDef consumer_methods[] = {
    {"set_ranges", (PyCFunction)consumer_set_ranges, METH_VARARGS, "set_ranges(task, include_headers, ranges)"},
    {"assign", (PyCFunction)consumer_assign, METH_NOARGS, "assign every range at its start, none paused"},
    {"assignment", (PyCFunction)consumer_assignment, METH_NOARGS, "assigned (topic, partition) pairs"},
    {"resume", (PyCFunction)consumer_resume, METH_O, "resume([(topic, partition), ...])"},
    {"unassign", (PyCFunction)consumer_unassign, METH_NOARGS, "unassign all and drop buffered records"},
    {"close", (PyCFunction)consumer_close, METH_NOARGS, "close the consumer"},
    {"pause_range", (PyCFunction)consumer_pause_range, METH_VARARGS, "pause_range(i, pause)"},
    {"finish", (PyCFunction)consumer_finish, METH_VARARGS, "finish(i): nothing more to fetch"},
    {"state", (PyCFunction)consumer_state, METH_VARARGS, "state(i) -> (next, rows, value bytes, done, paused)"},
    {"set_next", (PyCFunction)consumer_set_next, METH_VARARGS, "set_next(i, offset)"},
    {"reposition", (PyCFunction)consumer_reposition, METH_VARARGS, "reposition(i, offset)"},
    {"positions", (PyCFunction)consumer_positions, METH_O, "positions([i, ...]) -> offsets"},
    {"watermarks", (PyCFunction)consumer_watermarks, METH_VARARGS, "watermarks(i, timeout_ms) -> (low, high)"},
    {"partition_exists", (PyCFunction)consumer_partition_exists, METH_VARARGS, "partition_exists(i, timeout_ms)"},
    {"fetch", (PyCFunction)consumer_fetch, METH_VARARGS, "fetch(want, timeout_ms) -> (n, bytes, progressed, events)"},
    {"cut", (PyCFunction)consumer_cut, METH_VARARGS, "cut(i, max_rows, max_bytes, limit) -> (rows, offset, column, bytes)"},
    {"emit", (PyCFunction)consumer_emit, METH_VARARGS, "emit(i, rows) -> ArrowArray address"},
    {"logs", (PyCFunction)consumer_logs, METH_NOARGS, "logs() -> ([(syslog level, text), ...], lines dropped)"},
    {NULL, NULL, 0, NULL}};

/* A heap type (PyType_FromSpec): the limited API has no static type objects */
static PyType_Slot consumer_slots[] = {
    {Py_tp_doc, (void *)"A librdkafka consumer reading offset ranges into Arrow batches (one borrower at a time)."},
    {Py_tp_new, (void *)consumer_new},
    {Py_tp_init, (void *)consumer_init},
    {Py_tp_dealloc, (void *)consumer_dealloc},
    {Py_tp_methods, (void *)consumer_methods},
    {0, NULL}};

static PyType_Spec consumer_spec = {
    .name = "spark_samza_source.kafka.executor._native_reader.NativeConsumer",
    .basicsize = sizeof(consumer_t),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE, /* tests subclass it to count calls */
    .slots = consumer_slots,
};

static PyMethodDef module_methods[] = {
    {"load_library", load_library, METH_O, "load_library(path) -> librdkafka version (dlopen + dlsym)"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "_native_reader",
                                        "The native samza-kafka range reader (see native_reader.py).", -1,
                                        module_methods};

PyMODINIT_FUNC PyInit__native_reader(void) {
    PyObject *mod = PyModule_Create(&module_def);
    if (mod == NULL) return NULL;
    PyObject *type = PyType_FromSpec(&consumer_spec);
    if (type == NULL || PyModule_AddObject(mod, "NativeConsumer", type) < 0) {
        Py_XDECREF(type);
        Py_DECREF(mod);
        return NULL;
    }
    return mod;
}
