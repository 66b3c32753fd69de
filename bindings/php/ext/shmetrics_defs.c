/*
 * Registering a metric's family (shm_metric_register), and the process's
 * definitions cache with its series handles (shm_def_update), which make
 * a request's registrations and updates cost no hash of the library's.
 *
 * An update through a series handle is the library's lean path
 * (shmetrics_counter_add, shmetrics_observe: no hash, no lock), where
 * shmetrics_update hashes the label values and takes its cache's lock.
 *
 * The definitions this process registered, each with the handles of the
 * series it updated, live as long as the process (php-fpm's worker: from
 * one request to the next), in `defs`, by store handle, kind, namespace
 * and name. A request's getOrRegister*() or constructor compares its
 * definition with the entries of its name (the help, label names, buckets
 * ... as given: lengths and bytes, no hashing of the whole description)
 * and, if one is the same, takes its token and needs no library call; else
 * it goes to the library (shmetrics_family_cached, then
 * shmetrics_family_cache, which refuses a definition that conflicts with
 * the store's) and records the definition it accepted. An update finds its
 * series' handle in the entry by the joined label values (the key of the
 * library's own cache), or gets it with shmetrics_series_get and keeps it
 * (not an overflow series: a label set gets its own series once there is
 * room, as in the library's cache), so even the first update of a request
 * takes the lean path.
 *
 * The library's cached calls stay the reference: a handle that went stale
 * (its series deleted or expired, the store wiped, by any process) fails
 * with SHMETRICS_STALE_HANDLE before it writes anything; it is then
 * dropped and the update made through shmetrics_update, which looks the
 * series up again (registering the family again after a wipe): no update
 * is lost. A family's handle that went stale is registered again from the
 * entry's description. A store replaced by another file has another handle
 * (shm_store_open), hence other entries.
 *
 * Not shared between threads: under ZTS, every metric registers through
 * the library's cache and updates go through shmetrics_update only.
 */

#include "php_shmetrics.h"

/* The numbers of $arr as doubles (emalloc'd, or NULL when empty); false when one is not a number. */
static bool to_doubles(zend_string *what, zval *arr, double **out, size_t *n)
{
    HashTable *ht = Z_ARRVAL_P(arr);
    *n = zend_hash_num_elements(ht);
    *out = *n ? safe_emalloc(*n, sizeof(double), 0) : NULL;
    size_t i = 0;
    zval *v;
    ZEND_HASH_FOREACH_VAL(ht, v) {
        ZVAL_DEREF(v);
        if (Z_TYPE_P(v) == IS_LONG) {
            (*out)[i++] = (double)Z_LVAL_P(v);
        } else if (Z_TYPE_P(v) == IS_DOUBLE) {
            (*out)[i++] = Z_DVAL_P(v);
        } else {
            if (*out) efree(*out);
            *out = NULL;
            zval args[2], ret;
            ZVAL_STR_COPY(&args[0], what);
            ZVAL_COPY(&args[1], arr);
            shm_call_static("Shmetrics\\Checks", "numbers", &ret, 2, args);
            zval_ptr_dtor(&args[0]);
            zval_ptr_dtor(&args[1]);
            zval_ptr_dtor(&ret);
            return false;
        }
    } ZEND_HASH_FOREACH_END();
    return true;
}

static void append_doubles(smart_str *key, char tag, const double *v, size_t n)
{
    smart_str_appendc(key, tag);
    smart_str_appendl(key, (const char *)v, n * sizeof(double)); /* pack('e*'): little-endian doubles */
}

/* The doubles of *in into *out and *n (emalloc'd into *owned, if from an array); false when it threw. */
static bool numbers_of(shm_metric *m, const shm_numbers *in, const double **out, size_t *n, double **owned)
{
    *owned = NULL;
    *out = in->defaults;
    *n = in->count;
    if (in->arr != NULL) {
        if (!to_doubles(shm_metric_what(m), in->arr, owned, n)) {
            return false;
        }
        *out = *owned;
    }
    return true;
}

/* A native histogram's [factor, threshold, max buckets] of m (checked by Checks::nativeDesc). */
static void native_of(shm_metric *m, double nat[2], uint64_t *nat_max)
{
    HashTable *n = Z_ARRVAL(m->native);
    zval *f = zend_hash_index_find(n, 0), *z = zend_hash_index_find(n, 1), *x = zend_hash_index_find(n, 2);
    nat[0] = f ? zval_get_double(f) : 0;
    nat[1] = z ? zval_get_double(z) : 0;
    *nat_max = x ? (uint64_t)zval_get_long(x) : 0;
}

#ifndef ZTS
/* The most series handles a definition keeps; past them, updates go through shmetrics_update. */
#define DEF_SERIES_MAX 4096
/* The most definitions kept of one name (they differ in help, say); past them, a new one is not kept. */
#define DEF_CHAIN_MAX 8

/* A definition the library accepted in this process (see above); never freed before the process ends. */
typedef struct shm_def {
    struct shm_def *older; /* another definition of the same key (in defs), still the metrics' that have it */
    const shmetrics_store *st;
    uint32_t token;             /* shmetrics_family_cached's */
    bool fam_ok;                /* fam is a live handle, as far as this process knows */
    bool buckets_given, quantiles_given; /* as the library's key: bounds (defaults or an array), else none */
    shmetrics_family fam;
    shmetrics_family_desc desc; /* its strings and arrays are this entry's own, below */
    zend_string *name, *help;   /* persistent */
    zend_string **labels;       /* persistent, desc.label_count of them */
    HashTable series;           /* joined label values => shmetrics_series* (pemalloc'd) */
} shm_def;

/* Per process: store handle, kind, namespace length, namespace, name => the shm_def chain. */
static HashTable defs;

/* The destructor of defs' values: a chain of entries. */
static void defs_free(zval *v)
{
    shm_def *d = Z_PTR_P(v);
    while (d != NULL) {
        shm_def *older = d->older;
        zend_string_release(d->name);
        zend_string_release(d->help);
        for (size_t i = 0; i < d->desc.label_count; i++) {
            zend_string_release(d->labels[i]);
        }
        if (d->labels) pefree(d->labels, 1);
        if (d->desc.label_names) pefree((void *)d->desc.label_names, 1);
        if (d->desc.buckets) pefree((void *)d->desc.buckets, 1);
        if (d->desc.quantiles) pefree((void *)d->desc.quantiles, 1);
        zend_hash_destroy(&d->series);
        pefree(d, 1);
        d = older;
    }
}

/* The key of defs for m's definition into buf (cap bytes); its length, 0 if it does not fit. */
static size_t def_key(shm_metric *m, zend_string *ns, zend_string *name, char *buf, size_t cap)
{
    uint32_t ns_len = (uint32_t)ZSTR_LEN(ns);
    size_t len = sizeof m->st + 1 + sizeof ns_len + ZSTR_LEN(ns) + ZSTR_LEN(name);
    if (len > cap || ZSTR_LEN(ns) > UINT32_MAX) {
        return 0;
    }
    char *p = buf;
    memcpy(p, &m->st, sizeof m->st);
    p += sizeof m->st;
    *p++ = (char)m->kind;
    memcpy(p, &ns_len, sizeof ns_len);
    p += sizeof ns_len;
    memcpy(p, ZSTR_VAL(ns), ZSTR_LEN(ns));
    memcpy(p + ZSTR_LEN(ns), ZSTR_VAL(name), ZSTR_LEN(name));
    return len;
}

/* Whether the numbers in (as given) are those of a definition: given at all, then count and bytes. */
static bool numbers_match(const shm_numbers *in, bool given, const double *have, size_t n)
{
    if ((in->arr != NULL || in->defaults != NULL) != given) {
        return false;
    }
    if (in->arr == NULL) {
        return in->count == n && (n == 0 || memcmp(in->defaults, have, n * sizeof(double)) == 0);
    }
    HashTable *ht = Z_ARRVAL_P(in->arr);
    if (zend_hash_num_elements(ht) != n) {
        return false;
    }
    size_t i = 0;
    zval *v;
    ZEND_HASH_FOREACH_VAL(ht, v) {
        ZVAL_DEREF(v);
        double x;
        if (Z_TYPE_P(v) == IS_LONG) {
            x = (double)Z_LVAL_P(v);
        } else if (Z_TYPE_P(v) == IS_DOUBLE) {
            x = Z_DVAL_P(v);
        } else {
            return false;
        }
        if (memcmp(&x, &have[i++], sizeof x) != 0) { /* the bytes, as the library's key compares them */
            return false;
        }
    } ZEND_HASH_FOREACH_END();
    return true;
}

/* Whether d is m's definition, as the library's key would say (the same key, save for the name's split). */
static bool def_matches(const shm_def *d, shm_metric *m, const shm_numbers *bounds, const shm_numbers *quants)
{
    const shmetrics_family_desc *dd = &d->desc;
    if (dd->kind != m->kind || dd->gauge_mode != m->gauge_mode || dd->exemplars != m->exemplars
        || dd->ttl_ms != m->ttl_ms || dd->max_age_ms != m->max_age_ms || dd->label_count != m->label_count
        || dd->native != (Z_TYPE(m->native) == IS_ARRAY) || !zend_string_equals(d->help, m->help)) {
        return false;
    }
    uint32_t i = 0;
    zval *v;
    ZEND_HASH_FOREACH_VAL(Z_ARRVAL(m->labels), v) {
        if (!zend_string_equals(Z_STR_P(v), d->labels[i++])) {
            return false;
        }
    } ZEND_HASH_FOREACH_END();
    if (dd->native) {
        double nat[2];
        uint64_t nat_max;
        native_of(m, nat, &nat_max);
        if (memcmp(&nat[0], &dd->native_bucket_factor, sizeof(double)) != 0
            || memcmp(&nat[1], &dd->native_zero_threshold, sizeof(double)) != 0
            || (uint32_t)nat_max != dd->native_max_buckets) {
            return false;
        }
    }
    return numbers_match(bounds, d->buckets_given, dd->buckets, dd->bucket_count)
        && numbers_match(quants, d->quantiles_given, dd->quantiles, dd->quantile_count);
}

static void *pe_dup(const void *p, size_t n)
{
    return n ? memcpy(pemalloc(n, 1), p, n) : NULL;
}

/* Records the definition d of m that the library accepted as token, ahead of the other entries of key. */
static shm_def *def_add(const char *key, size_t key_len, shm_def *older, shm_metric *m,
    const shmetrics_family_desc *d, bool buckets_given, bool quantiles_given, uint32_t token)
{
    shm_def *e = pecalloc(1, sizeof *e, 1);
    e->older = older;
    e->st = m->st;
    e->token = token;
    e->buckets_given = buckets_given;
    e->quantiles_given = quantiles_given;
    e->desc = *d;
    e->name = zend_string_init(d->name.ptr, d->name.len, 1);
    e->help = zend_string_init(d->help.ptr, d->help.len, 1);
    e->desc.name.ptr = ZSTR_VAL(e->name);
    e->desc.help.ptr = ZSTR_VAL(e->help);
    size_t n = d->label_count;
    shmetrics_str *names = n ? pemalloc(n * sizeof *names, 1) : NULL;
    e->labels = n ? pemalloc(n * sizeof *e->labels, 1) : NULL;
    for (size_t i = 0; i < n; i++) {
        e->labels[i] = zend_string_init(d->label_names[i].ptr, d->label_names[i].len, 1);
        names[i].ptr = ZSTR_VAL(e->labels[i]);
        names[i].len = ZSTR_LEN(e->labels[i]);
    }
    e->desc.label_names = names;
    e->desc.buckets = d->buckets ? pe_dup(d->buckets, d->bucket_count * sizeof(double)) : NULL;
    e->desc.quantiles = d->quantiles ? pe_dup(d->quantiles, d->quantile_count * sizeof(double)) : NULL;
    zend_hash_init(&e->series, 8, NULL, shm_ptr_pefree, 1);
    /* The same definition as the token's: the same family. */
    e->fam_ok = lib.shmetrics_register(m->st, &e->desc, &e->fam) == 0;
    zval *slot = older != NULL ? zend_hash_str_find(&defs, key, key_len) : NULL;
    if (slot != NULL) {
        Z_PTR_P(slot) = e; /* ahead of the chain, which it keeps: not through the table's destructor */
    } else {
        zend_hash_str_add_new_ptr(&defs, key, key_len, e);
    }
    return e;
}

/*
 * Makes update op of v through the handle of the series of the label
 * values joined in key (len bytes), kept in d or found now. True when
 * done, *rc its result: 0, or a refusal that wrote nothing (the library
 * recorded its message). False when the update must go through
 * shmetrics_update: a stale handle, no handle to be had, or a failure to
 * find one (the library's message).
 */
bool shm_def_update(shm_metric *m, shm_def *d, uint32_t op, const char *key, size_t len, double v, uint32_t *rc,
    const shmetrics_series **used)
{
    series_op_fn update = series_op(op);
    shmetrics_series *kept = zend_hash_str_find_ptr(&d->series, key, len);
    *used = NULL;
    if (EXPECTED(kept != NULL)) {
        *rc = update(m->st, kept, v);
        if (EXPECTED(*rc != SHMETRICS_STALE_HANDLE)) {
            *used = kept;
            return true;
        }
        zend_hash_str_del(&d->series, key, len); /* deleted, expired or wiped: looked up again next time */
        return false;
    }
    shmetrics_str values[64];
    if (m->label_count > sizeof values / sizeof values[0]) {
        return false;
    }
    if (!d->fam_ok) {
        /* Wiped (by any process) since it was registered: registered again. */
        d->fam_ok = lib.shmetrics_register(m->st, &d->desc, &d->fam) == 0;
        if (!d->fam_ok) {
            return false;
        }
    }
    const char *p = key, *end = key + len;
    for (uint32_t i = 0; i < m->label_count; i++) {
        const char *sep = memchr(p, 0xff, (size_t)(end - p));
        const char *stop = sep ? sep : end;
        values[i].ptr = p;
        values[i].len = (size_t)(stop - p);
        p = stop + 1;
    }
    shmetrics_series found;
    uint32_t got = lib.shmetrics_series_get(m->st, &d->fam, values, m->label_count, &found);
    if (got != 0 && got != SHMETRICS_OVERFLOW) {
        if (got == SHMETRICS_STALE_HANDLE) {
            d->fam_ok = false; /* wiped: registered again at the next update */
        }
        return false;
    }
    *rc = update(m->st, &found, v);
    if (*rc == SHMETRICS_STALE_HANDLE) {
        return false;
    }
    if (got == 0 && zend_hash_num_elements(&d->series) < DEF_SERIES_MAX) {
        *used = zend_hash_str_add_new_ptr(&d->series, key, len, pe_dup(&found, sizeof found));
    }
    return true;
}
#endif

/*
 * Registers the family of *m: finds its definition among the process's
 * (defs), else registers it through the library's per-process cache, by
 * a key made of the whole definition (the same key as
 * Storage\Shmetrics::register()), and records it. Sets m->family (and
 * m->def); false when it threw.
 */
bool shm_metric_register(shm_metric *m, zend_string *ns, zend_string *name, const shm_numbers *bounds,
    const shm_numbers *quants)
{
#ifndef ZTS
    char dkey_buf[256];
    size_t dkey_len = def_key(m, ns, name, dkey_buf, sizeof dkey_buf);
    shm_def *head = dkey_len ? zend_hash_str_find_ptr(&defs, dkey_buf, dkey_len) : NULL;
    uint32_t kept = 0;
    for (shm_def *d = head; d != NULL; d = d->older, kept++) {
        if (def_matches(d, m, bounds, quants)) {
            m->def = d;
            m->family = d->token;
            return true;
        }
    }
#endif
    if (m->name == NULL) {
        m->name = ZSTR_LEN(ns) ? zend_string_concat3(ZSTR_VAL(ns), ZSTR_LEN(ns), "_", 1, ZSTR_VAL(name), ZSTR_LEN(name))
                               : zend_string_copy(name);
    }
    const double *buckets, *quantiles;
    double *own_b, *own_q;
    size_t nb, nq;
    bool ok = false;
    if (!numbers_of(m, bounds, &buckets, &nb, &own_b)) {
        return false;
    }
    if (!numbers_of(m, quants, &quantiles, &nq, &own_q)) {
        if (own_b) efree(own_b);
        return false;
    }
    bool buckets_given = buckets != NULL || bounds->arr != NULL;
    bool quantiles_given = quantiles != NULL || quants->arr != NULL;
    HashTable *names = Z_ARRVAL(m->labels);
    smart_str key = {0};
    smart_str_append_long(&key, m->kind);
    smart_str_appendc(&key, '\0');
    smart_str_append(&key, m->name);
    smart_str_appendc(&key, '\0');
    smart_str_append(&key, m->help);
    smart_str_appendc(&key, '\0');
    zval *v;
    uint32_t i = 0;
    ZEND_HASH_FOREACH_VAL(names, v) {
        if (i++ > 0) smart_str_appendc(&key, '\0');
        smart_str_append(&key, Z_STR_P(v));
    } ZEND_HASH_FOREACH_END();
    smart_str_appendc(&key, '\0');
    smart_str_append_long(&key, m->gauge_mode);
    smart_str_appendc(&key, '\0');
    smart_str_append_long(&key, (zend_long)m->max_age_ms);
    smart_str_appendc(&key, '\0');
    smart_str_append_long(&key, (zend_long)m->ttl_ms);
    smart_str_appendc(&key, '\0');
    if (m->exemplars) smart_str_appendc(&key, 'e');
    smart_str_appendc(&key, '\0');
    if (buckets_given) append_doubles(&key, 'b', buckets, nb); else smart_str_appendc(&key, 'n');
    smart_str_appendc(&key, '\0');
    if (quantiles_given) append_doubles(&key, 'q', quantiles, nq); else smart_str_appendc(&key, 'n');
    smart_str_appendc(&key, '\0');
    double nat[2] = {0, 0};
    uint64_t nat_max = 0;
    if (Z_TYPE(m->native) == IS_ARRAY) {
        native_of(m, nat, &nat_max);
        smart_str_appendc(&key, 'h');
        smart_str_appendl(&key, (const char *)nat, sizeof nat);
        smart_str_appendl(&key, (const char *)&nat_max, sizeof nat_max);
    } else {
        smart_str_appendc(&key, 'n');
    }
    smart_str_0(&key);

    uint32_t token = lib.shmetrics_family_cached(m->st, ZSTR_VAL(key.s), ZSTR_LEN(key.s));
    shmetrics_family_desc d;
    memset(&d, 0, sizeof d);
    d.name.ptr = ZSTR_VAL(m->name);
    d.name.len = ZSTR_LEN(m->name);
    d.help.ptr = ZSTR_VAL(m->help);
    d.help.len = ZSTR_LEN(m->help);
    shmetrics_str *ln = m->label_count ? safe_emalloc(m->label_count, sizeof(shmetrics_str), 0) : NULL;
    i = 0;
    ZEND_HASH_FOREACH_VAL(names, v) {
        ln[i].ptr = Z_STRVAL_P(v);
        ln[i].len = Z_STRLEN_P(v);
        i++;
    } ZEND_HASH_FOREACH_END();
    d.label_names = ln;
    d.label_count = m->label_count;
    d.kind = m->kind;
    d.gauge_mode = m->gauge_mode;
    d.buckets = buckets;
    d.bucket_count = nb;
    d.quantiles = quantiles;
    d.quantile_count = nq;
    d.max_age_ms = m->max_age_ms;
    if (Z_TYPE(m->native) == IS_ARRAY) {
        d.native = true;
        d.native_bucket_factor = nat[0];
        d.native_zero_threshold = nat[1];
        d.native_max_buckets = (uint32_t)nat_max;
    }
    d.exemplars = m->exemplars;
    d.ttl_ms = m->ttl_ms;
    /* PromPHP's names: the legacy character sets, checked by the store. */
    d.name_rules = SHMETRICS_NAMES_LEGACY;
    /* The page PromPHP served, as the FFI path registers it: a counter
     * under the name it was given (the store keeps the flag for counters
     * only), le="1" not le="1.0", no _created, text 0.0.4 only. */
    d.name_as_given = 1;
    d.hints = SHMETRICS_HINT_SHORT_BOUNDS | SHMETRICS_HINT_NO_CREATED | SHMETRICS_HINT_TEXT_ONLY;
    uint32_t rc = token != 0 ? 0 : lib.shmetrics_family_cache(m->st, ZSTR_VAL(key.s), ZSTR_LEN(key.s), &d, &token);
    if (rc != 0) {
        shm_throw_rc(rc, zend_strpprintf(0, "cannot register %s", ZSTR_VAL(shm_metric_what(m))));
        goto out;
    }
#ifndef ZTS
    if (dkey_len != 0 && kept < DEF_CHAIN_MAX) {
        m->def = def_add(dkey_buf, dkey_len, head, m, &d, buckets_given, quantiles_given, token);
    }
#endif
    m->family = token;
    ok = true;
out:
    if (ln) efree(ln);
    smart_str_free(&key);
    if (own_b) efree(own_b);
    if (own_q) efree(own_q);
    return ok;
}

#ifndef ZTS
zend_string *shm_def_name(const shm_def *d)
{
    return d->name;
}
#endif

void shm_defs_minit(void)
{
#ifndef ZTS
    zend_hash_init(&defs, 16, NULL, defs_free, 1);
#endif
}

void shm_defs_mshutdown(void)
{
#ifndef ZTS
    zend_hash_destroy(&defs);
#endif
}
