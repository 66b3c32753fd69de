/*
 * A metric: the object behind Shmetrics\Collector and its kinds (Counter,
 * Gauge, Histogram, Summary; their methods are shmetrics_collector.c's),
 * its construction, shared by `new` and the registry (each kind's checks,
 * then metric_init(), then the registration of its family,
 * shmetrics_defs.c), and its updates (shm_metric_update: the loop's path,
 * the request's path through the process's series handles, else the
 * library's cached update).
 */

#include "php_shmetrics.h"

static zend_object_handlers metric_handlers;

static zend_object *metric_create(zend_class_entry *ce)
{
    shm_metric *m = zend_object_alloc(sizeof(shm_metric), ce);
    memset(m, 0, XtOffsetOf(shm_metric, std));
    ZVAL_UNDEF(&m->labels);
    ZVAL_UNDEF(&m->storage);
    ZVAL_NULL(&m->native);
    return shm_object_ready(&m->std, ce, &metric_handlers);
}

static void metric_free(zend_object *o)
{
    shm_metric *m = metric_of(o);
    if (m->name) zend_string_release(m->name);
    if (m->help) zend_string_release(m->help);
    if (m->what) zend_string_release(m->what);
    if (m->mode) zend_string_release(m->mode);
    zval_ptr_dtor(&m->labels);
    zval_ptr_dtor(&m->storage);
    zval_ptr_dtor(&m->native);
    zend_object_std_dtor(o);
}

/* "counter app_requests", for messages (slow paths only). */
zend_string *shm_metric_what(shm_metric *m)
{
    if (m->what == NULL) {
        const char *kind = SHM_KIND_NAMES[m->kind];
        zend_string *name = shm_metric_name(m);
        m->what = zend_string_concat3(kind, strlen(kind), " ", 1, ZSTR_VAL(name), ZSTR_LEN(name));
    }
    return m->what;
}

static HashTable *metric_gc(zend_object *o, zval **table, int *n)
{
    shm_metric *m = metric_of(o);
    *table = &m->storage;
    *n = 1;
    return zend_std_get_properties(o);
}

/* m's full name: namespace_name (made from its definition's when needed). */
zend_string *shm_metric_name(shm_metric *m)
{
#ifndef ZTS
    if (m->name == NULL && m->def != NULL) {
        zend_string *def_name = shm_def_name(m->def);
        m->name = zend_string_init(ZSTR_VAL(def_name), ZSTR_LEN(def_name), 0);
    }
#endif
    return m->name;
}

/*
 * What every constructor does after its own checks: the name, the label
 * names, the TTL, and the registration. The kind-specific fields are set
 * already. False when it threw.
 */
static bool metric_init(shm_metric *m, zval *storage, zend_string *ns, zend_string *name, zend_string *help,
    HashTable *labels, bool ttl_null, double ttl, const shm_numbers *bounds, const shm_numbers *quants)
{
    if (Z_OBJCE_P(storage) != shm_ce_storage) {
        zend_type_error("%s::__construct(): Argument #1 ($storage) must be of type Shmetrics\\Storage\\Shmetrics, %s given",
            ZSTR_VAL(m->std.ce->name), ZSTR_VAL(Z_OBJCE_P(storage)->name));
        return false;
    }
    m->st = storage_of(Z_OBJ_P(storage))->st;
    if (m->st == NULL) {
        zend_throw_error(NULL, "Shmetrics\\Storage\\Shmetrics was not constructed");
        return false;
    }
    m->constructed = true;
    ZVAL_COPY(&m->storage, storage);
    m->help = zend_string_copy(help);
    /* array_values($labels), which must all be strings: the array itself
     * when it is a list of strings (a literal's is immutable: no copy) */
    bool strings = true, refs = false;
    zval *v;
    ZEND_HASH_FOREACH_VAL(labels, v) {
        refs |= Z_ISREF_P(v);
        ZVAL_DEREF(v);
        if (Z_TYPE_P(v) != IS_STRING) strings = false;
    } ZEND_HASH_FOREACH_END();
    if (!refs && zend_array_is_list(labels)) {
        ZVAL_ARR(&m->labels, labels);
        if (GC_FLAGS(labels) & GC_IMMUTABLE) {
            Z_TYPE_FLAGS(m->labels) = 0; /* not refcounted */
        } else {
            GC_ADDREF(labels);
        }
    } else {
        array_init_size(&m->labels, zend_hash_num_elements(labels));
        ZEND_HASH_FOREACH_VAL(labels, v) {
            ZVAL_DEREF(v);
            Z_TRY_ADDREF_P(v);
            add_next_index_zval(&m->labels, v);
        } ZEND_HASH_FOREACH_END();
    }
    m->label_count = zend_hash_num_elements(labels);
    if (!ttl_null || !strings) {
        /* for the messages: concat, not a printf */
        m->name = ZSTR_LEN(ns) ? zend_string_concat3(ZSTR_VAL(ns), ZSTR_LEN(ns), "_", 1, ZSTR_VAL(name), ZSTR_LEN(name))
                               : zend_string_copy(name);
    }
    if (!ttl_null) {
        zval args[2], ret;
        ZVAL_STR(&args[0], shm_metric_what(m));
        ZVAL_DOUBLE(&args[1], ttl);
        if (!shm_call_static("Shmetrics\\Checks", "ttlMs", &ret, 2, args)) {
            return false;
        }
        m->ttl_ms = (uint64_t)zval_get_long(&ret);
    }
    if (!strings) {
        zval args[2], ret;
        ZVAL_STR(&args[0], shm_metric_what(m));
        ZVAL_COPY_VALUE(&args[1], &m->labels);
        shm_call_static("Shmetrics\\Checks", "labelNames", &ret, 2, args);
        zval_ptr_dtor(&ret);
        return false;
    }
    if (!shm_metric_register(m, ns, name, bounds, quants)) {
        return false;
    }
    m->ready = true;
    return true;
}

/*
 * The label values joined by "\xff" into buf (the series' key in the
 * library's cache); NULL when the values need the slow path (not all
 * strings or integers, the wrong number, a byte 0xff, or longer than buf).
 */
static const char *join_fast(shm_metric *m, HashTable *labels, char *buf, size_t cap, size_t *len)
{
    if (zend_hash_num_elements(labels) != m->label_count) {
        return NULL;
    }
    size_t n = 0;
    uint32_t i = 0;
    zval *v;
    ZEND_HASH_FOREACH_VAL(labels, v) {
        const char *p;
        size_t l;
        char num[MAX_LENGTH_OF_LONG + 1];
        if (Z_TYPE_P(v) == IS_STRING) {
            p = Z_STRVAL_P(v);
            l = Z_STRLEN_P(v);
            if (memchr(p, 0xff, l) != NULL) {
                return NULL;
            }
        } else if (Z_TYPE_P(v) == IS_LONG) {
            char *end = num + sizeof num - 1;
            p = zend_print_long_to_buf(end, Z_LVAL_P(v));
            l = (size_t)(end - p);
        } else {
            return NULL;
        }
        if (n + l + 1 > cap) {
            return NULL;
        }
        if (i++ > 0) buf[n++] = '\xff';
        memcpy(buf + n, p, l);
        n += l;
    } ZEND_HASH_FOREACH_END();
    *len = n;
    return buf;
}

/* Makes update op of v on the series of $labels, with an exemplar if not NULL. */
void shm_metric_update(shm_metric *m, uint32_t op, zval *labels, double v, zval *exemplar)
{
    char buf[512];
    size_t len = 0;
    zval slow;
    ZVAL_UNDEF(&slow);
    uint32_t rc;
    HashTable *ht = Z_ARRVAL_P(labels);
#ifndef ZTS
    /* A loop's path: the same literal label array as the last update of this object, whose handle it
     * copied. Anything but success goes the whole way below, which makes the update again (nothing
     * was written). */
    if (ht == m->last_ht && exemplar == NULL && EXPECTED(series_op(op)(m->st, &m->last_series, v) == 0)) {
        return;
    }
    m->last_ht = NULL;
#endif
    const char *key = join_fast(m, ht, buf, sizeof buf, &len);
#ifndef ZTS
    /* The request's path: the series' handle, kept by the process. */
    const shmetrics_series *used;
    if (key != NULL && exemplar == NULL && m->def != NULL && shm_def_update(m, m->def, op, key, len, v, &rc, &used)) {
        if (used != NULL && rc == 0 && (GC_FLAGS(ht) & IS_ARRAY_IMMUTABLE)) {
            /* a literal: never changes, never freed while the object lives (a request) */
            m->last_ht = ht;
            m->last_series = *used;
        }
        goto done;
    }
#endif
    if (key == NULL) {
        zval args[3];
        ZVAL_STR(&args[0], shm_metric_what(m));
        ZVAL_COPY_VALUE(&args[1], &m->labels);
        ZVAL_COPY_VALUE(&args[2], labels);
        if (!shm_call_static("Shmetrics\\Checks", "labelValues", &slow, 3, args)) {
            return;
        }
        key = Z_STRVAL(slow);
        len = Z_STRLEN(slow);
    }
    if (exemplar == NULL) {
        rc = lib.shmetrics_update(m->st, m->family, op, key, len, v);
    } else {
        zval args[2], pair;
        ZVAL_STR(&args[0], shm_metric_what(m));
        ZVAL_COPY_VALUE(&args[1], exemplar);
        if (!shm_call_static("Shmetrics\\Checks", "exemplar", &pair, 2, args)) {
            zval_ptr_dtor(&slow);
            return;
        }
        HashTable *names = Z_ARRVAL_P(zend_hash_index_find(Z_ARRVAL(pair), 0));
        HashTable *values = Z_ARRVAL_P(zend_hash_index_find(Z_ARRVAL(pair), 1));
        uint32_t n = zend_hash_num_elements(names);
        shmetrics_str *ns = n ? safe_emalloc(n, sizeof(shmetrics_str), 0) : NULL;
        shmetrics_str *vs = n ? safe_emalloc(n, sizeof(shmetrics_str), 0) : NULL;
        uint32_t i = 0;
        zval *z;
        ZEND_HASH_FOREACH_VAL(names, z) {
            ns[i].ptr = Z_STRVAL_P(z);
            ns[i++].len = Z_STRLEN_P(z);
        } ZEND_HASH_FOREACH_END();
        i = 0;
        ZEND_HASH_FOREACH_VAL(values, z) {
            vs[i].ptr = Z_STRVAL_P(z);
            vs[i++].len = Z_STRLEN_P(z);
        } ZEND_HASH_FOREACH_END();
        rc = lib.shmetrics_update_exemplar(m->st, m->family, op, key, len, v, ns, vs, n);
        if (ns) efree(ns);
        if (vs) efree(vs);
        zval_ptr_dtor(&pair);
    }
    zval_ptr_dtor(&slow);
#ifndef ZTS
done:
#endif
    if (rc != 0) {
        zval args[5];
        ZVAL_LONG(&args[0], rc);
        ZVAL_STR(&args[1], shm_metric_what(m));
        ZVAL_COPY_VALUE(&args[2], &m->labels);
        ZVAL_COPY_VALUE(&args[3], labels);
        ZVAL_BOOL(&args[4], exemplar != NULL);
        shm_throw_from("Shmetrics\\Checks", "updateFailed", 5, args);
    }
}

/* ---- the constructors, shared by `new` and the registry ----------------------------------------- */

bool shm_counter_init(shm_metric *m, zval *storage, metric_args *a)
{
    m->kind = SHMETRICS_KIND_COUNTER;
    m->exemplars = a->exemplars;
    return metric_init(m, storage, a->ns, a->name, a->help, a->labels, a->ttl_null, a->ttl, &NO_NUMBERS, &NO_NUMBERS);
}

bool shm_gauge_init(shm_metric *m, zval *storage, metric_args *a)
{
    m->kind = SHMETRICS_KIND_GAUGE;
    if (a->mode == NULL) {
        m->gauge_mode = SHMETRICS_GAUGE_SHARED;
    }
    for (uint32_t i = 1; a->mode != NULL && i < SHM_GAUGE_MODE_COUNT; i++) {
        if (zend_string_equals_cstr(a->mode, SHM_GAUGE_MODES[i], strlen(SHM_GAUGE_MODES[i]))) {
            m->gauge_mode = i;
        }
    }
    if (m->gauge_mode == 0) {
        zval args[2];
        ZVAL_STR(&args[0], a->mode);
        zend_class_constant *c = zend_hash_str_find_ptr(&shm_ce_gauge->constants_table, "MODES", 5);
        ZVAL_COPY_VALUE(&args[1], &c->value);
        shm_throw_from("Shmetrics\\Checks", "unknownGaugeMode", 2, args);
        return false;
    }
    m->mode = a->mode ? zend_string_copy(a->mode) : zend_string_init("shared", 6, 0);
    return metric_init(m, storage, a->ns, a->name, a->help, a->labels, a->ttl_null, a->ttl, &NO_NUMBERS, &NO_NUMBERS);
}

bool shm_histogram_init(shm_metric *m, zval *storage, metric_args *a)
{
    m->kind = SHMETRICS_KIND_HISTOGRAM;
    if (a->buckets != NULL && zend_hash_num_elements(Z_ARRVAL_P(a->buckets)) == 0) {
        zval args[1];
        ZVAL_STR(&args[0], a->name);
        shm_throw_from("Shmetrics\\Checks", "emptyBuckets", 1, args);
        return false;
    }
    if (a->native != NULL) {
        zval args[3];
        ZVAL_STR(&args[0], a->name);
        zend_class_constant *c = zend_hash_str_find_ptr(&shm_ce_histogram->constants_table, "NATIVE_OPTIONS", 14);
        ZVAL_COPY_VALUE(&args[1], &c->value);
        ZVAL_COPY_VALUE(&args[2], a->native);
        if (!shm_call_static("Shmetrics\\Checks", "nativeDesc", &m->native, 3, args)) {
            ZVAL_NULL(&m->native);
            return false;
        }
    }
    shm_numbers bounds = NO_NUMBERS;
    if (a->buckets != NULL) {
        bounds.arr = a->buckets;
    } else if (a->native == NULL) {
        bounds = (shm_numbers){NULL, SHM_DEFAULT_BUCKETS, sizeof SHM_DEFAULT_BUCKETS / sizeof(double)};
    }
    m->exemplars = a->exemplars;
    return metric_init(m, storage, a->ns, a->name, a->help, a->labels, a->ttl_null, a->ttl, &bounds, &NO_NUMBERS);
}

bool shm_summary_init(shm_metric *m, zval *storage, metric_args *a)
{
    m->kind = SHMETRICS_KIND_SUMMARY;
    /* At most Checks::MAX_AGE_SECONDS: its milliseconds fit a u64 and a zend_long (the definition's key) */
    if (a->max_age <= 0 || a->max_age > ZEND_LONG_MAX / 1000) {
        zval args[2];
        ZVAL_STR(&args[0], a->name);
        ZVAL_LONG(&args[1], a->max_age);
        shm_throw_from("Shmetrics\\Checks", "maxAge", 2, args);
        return false;
    }
    m->max_age_ms = (uint64_t)a->max_age * 1000;
    shm_numbers quants = {NULL, SHM_DEFAULT_QUANTILES, sizeof SHM_DEFAULT_QUANTILES / sizeof(double)};
    if (a->quantiles != NULL) {
        quants = (shm_numbers){a->quantiles, NULL, 0};
    }
    return metric_init(m, storage, a->ns, a->name, a->help, a->labels, a->ttl_null, a->ttl, &NO_NUMBERS, &quants);
}

void shm_metric_minit(void)
{
    /* Before the kinds are registered: they inherit it. */
    shm_ce_collector->create_object = metric_create;
    memcpy(&metric_handlers, zend_get_std_object_handlers(), sizeof metric_handlers);
    metric_handlers.offset = XtOffsetOf(shm_metric, std);
    metric_handlers.free_obj = metric_free;
    metric_handlers.clone_obj = NULL;
    metric_handlers.get_gc = metric_gc;
}
