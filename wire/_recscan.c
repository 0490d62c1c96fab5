/* Walks the records of one (uncompressed or decompressed) magic-v2 batch without creating a
 * Python object per record, checking what Kafka's DefaultRecord reader and LogValidator check:
 *
 *   length varint | attributes int8 | timestampDelta varlong | offsetDelta varint |
 *   keyLength varint, key | valueLength varint, value | headerCount varint,
 *   headers (keyLength varint >= 0, key, valueLength varint, value)
 *
 * scan(data, count, need_key, min_ts_delta, max_ts_delta) -> (max timestamp delta or None,
 * [(record_index, message, is_timestamp_error)], structural). A record that cannot be read,
 * or data that does not hold exactly `count` records with offset deltas 0..count-1, stops the
 * walk: one error, structural True. Records without a key (when need_key) or with a timestamp
 * delta outside [min_ts_delta, max_ts_delta] are each reported and the walk goes on, as
 * Kafka's LogValidator collects record errors (KIP-467). The max timestamp delta is over every
 * record (None for no records).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

typedef struct {
    const uint8_t *p;
    const uint8_t *end;
} cursor;

/* Zigzag varint of at most max_bytes bytes; returns 0 on truncation or an overlong encoding. */
static inline int read_varint(cursor *c, int max_bytes, int64_t *out)
{
    if (c->p < c->end && *c->p < 0x80) { /* one byte: most lengths and deltas */
        uint8_t b = *c->p++;
        *out = (int64_t)(b >> 1) ^ -(int64_t)(b & 1);
        return 1;
    }
    uint64_t v = 0;
    int shift = 0;
    for (int i = 0; i < max_bytes; i++) {
        if (c->p >= c->end)
            return 0;
        uint8_t b = *c->p++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
            return 1;
        }
        shift += 7;
    }
    return 0;
}

/* A length-prefixed field: -1 (null) allowed when nullable; the bytes must fit in the record. */
static inline int skip_sized(cursor *c, int nullable, int64_t *len)
{
    if (!read_varint(c, 5, len))
        return 0;
    if (*len == -1 && nullable)
        return 1;
    if (*len < 0 || *len > c->end - c->p)
        return 0;
    c->p += *len;
    return 1;
}

/* Appends (index, message, timestamp) to the list `errors`; 0 when out of memory. */
static int add_error(PyObject *errors, Py_ssize_t index, int timestamp, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    PyObject *msg = PyUnicode_FromFormatV(fmt, ap);
    va_end(ap);
    if (msg == NULL)
        return 0;
    PyObject *item = Py_BuildValue("(nNO)", index, msg, timestamp ? Py_True : Py_False);
    if (item == NULL)
        return 0;
    int ok = PyList_Append(errors, item) == 0;
    Py_DECREF(item);
    return ok;
}

/* A record that cannot be read: it alone is reported (the record errors before it are not). */
#define STRUCTURAL(...) do { \
        structural = 1; \
        if (PyList_SetSlice(errors, 0, PY_SSIZE_T_MAX, NULL) < 0 \
            || !add_error(errors, __VA_ARGS__)) goto fail; \
        goto done; \
    } while (0)

static PyObject *scan(PyObject *self, PyObject *args)
{
    Py_buffer view;
    Py_ssize_t count;
    int need_key;
    long long min_ts, max_ts;
    if (!PyArg_ParseTuple(args, "y*npLL", &view, &count, &need_key, &min_ts, &max_ts))
        return NULL;
    PyObject *errors = PyList_New(0);
    if (errors == NULL) {
        PyBuffer_Release(&view);
        return NULL;
    }
    cursor all = {(const uint8_t *)view.buf, (const uint8_t *)view.buf + view.len};
    int structural = 0;
    int64_t max_delta = INT64_MIN;
    for (Py_ssize_t i = 0; i < count; i++) {
        int64_t length, ts_delta, offset_delta, klen, vlen, hcount, hlen;
        if (!read_varint(&all, 5, &length) || length < 0 || length > all.end - all.p)
            STRUCTURAL(i, 0, "Found invalid record structure: record %zd of %zd does not fit "
                             "in the batch", i, count);
        cursor rec = {all.p, all.p + length};
        all.p += length;
        if (rec.p >= rec.end)
            STRUCTURAL(i, 0, "Found invalid record structure: empty record");
        rec.p++; /* attributes: unused in v2 */
        if (!read_varint(&rec, 10, &ts_delta) || !read_varint(&rec, 5, &offset_delta))
            STRUCTURAL(i, 0, "Found invalid record structure");
        if (offset_delta != i)
            STRUCTURAL(i, 0, "Invalid offset delta %lld of record %zd (expected %zd)",
                       (long long)offset_delta, i, i);
        if (!skip_sized(&rec, 1, &klen) || !skip_sized(&rec, 1, &vlen)
            || !read_varint(&rec, 5, &hcount) || hcount < 0)
            STRUCTURAL(i, 0, "Found invalid record structure: bad key, value or header count");
        for (int64_t h = 0; h < hcount; h++) {
            if (!skip_sized(&rec, 0, &hlen) || !skip_sized(&rec, 1, &hlen))
                STRUCTURAL(i, 0, "Found invalid record structure: bad header %lld",
                           (long long)h);
        }
        if (rec.p != rec.end)
            STRUCTURAL(i, 0, "Invalid record size: expected to read %lld bytes in record "
                             "payload, but instead read %lld", (long long)length,
                       (long long)(rec.p - (rec.end - length)));
        if (need_key && klen < 0
            && !add_error(errors, i, 0, "Compacted topic cannot accept message without key"))
            goto fail;
        if ((ts_delta < min_ts || ts_delta > max_ts)
            && !add_error(errors, i, 1, "Timestamp delta %lld of record %zd is out of the range "
                                        "[%lld, %lld] the topic accepts", (long long)ts_delta, i,
                          min_ts, max_ts))
            goto fail;
        if (ts_delta > max_delta)
            max_delta = ts_delta;
    }
    if (all.p != all.end)
        STRUCTURAL(count, 0, "Incorrect declared batch size, records still remaining in file");
done:
    PyBuffer_Release(&view);
    PyObject *delta = (structural || count == 0) ? Py_NewRef(Py_None)
                                                 : PyLong_FromLongLong(max_delta);
    if (delta == NULL) {
        Py_DECREF(errors);
        return NULL;
    }
    return Py_BuildValue("(NNO)", delta, errors, structural ? Py_True : Py_False);
fail:
    PyBuffer_Release(&view);
    Py_DECREF(errors);
    return NULL;
}

/* latest(data, count, into, tag): for each of the `count` records of `data` that has a key,
 * `into[key] = (value or None, tag)`, the key moved to the end of the dict's order: `into`
 * ends up holding each key's last write, in the order of those writes (what compaction keeps),
 * without a Python object per superseded record. ValueError for malformed records. */
static PyObject *latest(PyObject *self, PyObject *args)
{
    Py_buffer view;
    Py_ssize_t count;
    PyObject *into, *tag;
    if (!PyArg_ParseTuple(args, "y*nO!O", &view, &count, &PyDict_Type, &into, &tag))
        return NULL;
    cursor all = {(const uint8_t *)view.buf, (const uint8_t *)view.buf + view.len};
    PyObject *result = NULL;
    for (Py_ssize_t i = 0; i < count; i++) {
        int64_t length, skip, klen, vlen;
        if (!read_varint(&all, 5, &length) || length < 1 || length > all.end - all.p)
            goto malformed;
        cursor rec = {all.p + 1, all.p + length}; /* past the attributes */
        all.p += length;
        if (!read_varint(&rec, 10, &skip) || !read_varint(&rec, 5, &skip))
            goto malformed;
        if (!skip_sized(&rec, 1, &klen))
            goto malformed;
        if (klen == -1)
            continue; /* keyless: nothing a replay keeps */
        const uint8_t *key_end = rec.p;
        if (!skip_sized(&rec, 1, &vlen))
            goto malformed;
        PyObject *key = PyBytes_FromStringAndSize((const char *)key_end - klen, klen);
        PyObject *value = vlen >= 0
            ? PyBytes_FromStringAndSize((const char *)rec.p - vlen, vlen) : Py_NewRef(Py_None);
        PyObject *entry = key && value ? PyTuple_Pack(2, value, tag) : NULL;
        Py_XDECREF(value);
        int ok = entry != NULL;
        if (ok && PyDict_DelItem(into, key) < 0) { /* absent is fine: KeyError */
            ok = PyErr_ExceptionMatches(PyExc_KeyError);
            if (ok)
                PyErr_Clear();
        }
        ok = ok && PyDict_SetItem(into, key, entry) == 0;
        Py_XDECREF(key);
        Py_XDECREF(entry);
        if (!ok)
            goto done;
    }
    result = Py_NewRef(Py_None);
    goto done;
malformed:
    PyErr_SetString(PyExc_ValueError, "malformed record");
done:
    PyBuffer_Release(&view);
    return result;
}

/* buffer(n): a bytearray of n bytes whose contents are left as malloc gave them, for a request
 * frame that the socket reads fill whole before it is handed out (wire.framing). bytearray(n)
 * zeroes its bytes first: a memset of every Produce's size, only to be overwritten. */
static PyObject *buffer(PyObject *self, PyObject *args)
{
    Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "n", &n))
        return NULL;
    if (n < 0) {
        PyErr_SetString(PyExc_ValueError, "negative buffer size");
        return NULL;
    }
    return PyByteArray_FromStringAndSize(NULL, n);
}

static PyMethodDef methods[] = {
    {"scan", scan, METH_VARARGS, "Check the records of one batch (see the module comment)."},
    {"latest", latest, METH_VARARGS, "Each key's last value in one batch's records."},
    {"buffer", buffer, METH_VARARGS, "An uninitialised bytearray of n bytes."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_recscan", NULL, -1, methods};

PyMODINIT_FUNC PyInit__recscan(void)
{
    return PyModule_Create(&module);
}
