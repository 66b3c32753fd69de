/*
 * Shmetrics\Ext\Store, a persistent store handle, and the functions of
 * Shmetrics\Ext\ (open, wipe, render, content_type, stats, snapshot,
 * last_error, version), which the PHP classes Shmetrics\Storage\Shmetrics
 * (when the extension's own is not used) and Shmetrics\Snapshot call; and
 * the store handles this process opened, which Shmetrics\Storage\Shmetrics
 * (shmetrics_storage.c) opens through shm_store_open().
 */

#include "php_shmetrics.h"

#include <sys/stat.h>

zend_class_entry *shm_ce_store;

typedef struct {
    shmetrics_store *st; /* the library's per-process handle: never closed */
    zend_object std;
} shm_store;

static zend_object_handlers store_handlers;

static inline shm_store *store_of(zend_object *o)
{
    return (shm_store *)((char *)o - XtOffsetOf(shm_store, std));
}

static zend_object *store_create(zend_class_entry *ce)
{
    shm_store *s = zend_object_alloc(sizeof(shm_store), ce);
    s->st = NULL;
    return shm_object_ready(&s->std, ce, &store_handlers);
}

static zend_function *store_get_constructor(zend_object *o)
{
    zend_throw_error(NULL, "Shmetrics\\Ext\\Store is made by Shmetrics\\Ext\\open(), not by new");
    return NULL;
}

void shm_store_object(zval *out, shmetrics_store *st)
{
    object_init_ex(out, shm_ce_store);
    store_of(Z_OBJ_P(out))->st = st;
}

/*
 * The store handles this process opened, by path and read_only: the
 * library's persistent handle and the file (device, inode) it maps, so
 * that the check that the path still names that file (issue 17: a store
 * removed or replaced is opened again, at the next request) is one lstat,
 * not the library's fstat of its descriptor plus lstat of the path. A
 * mapped file keeps its inode, so no other file can take its number while
 * the handle lives: lstat(path) giving the same (device, inode) means the
 * path names the mapped file. Anything else goes to the library, which
 * checks again and opens the path again if needed.
 */
typedef struct {
    shmetrics_store *st;
    dev_t dev;
    ino_t ino;
    bool known; /* dev and ino are the mapped file's */
} shm_opened;

/* Per process, "w" or "r" (read_only) then the path => shm_opened*. Not
 * shared between threads: under ZTS, every check goes to the library. */
static HashTable opened;

/*
 * Opens the store at path through the library (the persistent handle, or
 * a new one if the path now names another file) and records which file it
 * maps, when that is sure: the path named the same file just before and
 * just after the library found that it names the mapped one. NULL when it
 * threw.
 */
static shmetrics_store *store_open_slow(zend_string *path, HashTable *options, bool read_only, const char *key,
    size_t key_len)
{
    struct stat before;
    bool seen = lstat(ZSTR_VAL(path), &before) == 0;
    shmetrics_store *st = lib.shmetrics_store_persistent(ZSTR_VAL(path), ZSTR_LEN(path), read_only);
    bool confirmed = st != NULL;
    if (st == NULL) {
        shmetrics_options o;
        lib.shmetrics_options_default(&o);
        zend_string *k;
        zval *v;
        ZEND_HASH_FOREACH_STR_KEY_VAL(options, k, v) {
            if (k == NULL) {
                continue;
            }
#define SHM_OPT(field, conv)                                                                                 \
    if (zend_string_equals_literal(k, #field)) {                                                             \
        o.field = conv;                                                                                      \
    }
            SHM_OPT(create, zend_is_true(v))
            SHM_OPT(read_only, zend_is_true(v))
            SHM_OPT(mode, (uint32_t)zval_get_long(v))
            SHM_OPT(max_families, (uint32_t)zval_get_long(v))
            SHM_OPT(max_series, (uint32_t)zval_get_long(v))
            SHM_OPT(label_bytes, (uint64_t)zval_get_long(v))
            SHM_OPT(max_writers, (uint32_t)zval_get_long(v))
            SHM_OPT(cells_per_writer, (uint64_t)zval_get_long(v))
            SHM_OPT(sketch_cells_per_writer, (uint64_t)zval_get_long(v))
#undef SHM_OPT
        } ZEND_HASH_FOREACH_END();
        uint32_t rc = lib.shmetrics_store_reopen_persistent(ZSTR_VAL(path), ZSTR_LEN(path), &o, &st);
        if (rc != 0) {
            shm_throw_rc(rc, zend_string_init("cannot open the store", sizeof("cannot open the store") - 1, 0));
            return NULL;
        }
    }
#ifndef ZTS
    shm_opened *e = zend_hash_str_find_ptr(&opened, key, key_len);
    if (e == NULL) {
        e = pemalloc(sizeof *e, 1);
        zend_hash_str_add_new_ptr(&opened, key, key_len, e);
    }
    e->st = st;
    struct stat after;
    /* After a new open, the next request's check confirms the file first. A
     * path with a byte 0 is not the path lstat sees: never known. */
    e->known = confirmed && seen && lstat(ZSTR_VAL(path), &after) == 0 && before.st_dev == after.st_dev
        && before.st_ino == after.st_ino && strlen(ZSTR_VAL(path)) == ZSTR_LEN(path);
    e->dev = before.st_dev;
    e->ino = before.st_ino;
#else
    (void)key, (void)key_len, (void)seen, (void)confirmed;
#endif
    return st;
}

/* The process's handle of the store at path, opened if needed; NULL when it threw. */
shmetrics_store *shm_store_open(zend_string *path, HashTable *options)
{
    if (!shm_load()) {
        return NULL;
    }
    zval *ro = zend_hash_str_find(options, "read_only", sizeof("read_only") - 1);
    bool read_only = ro != NULL && zend_is_true(ro);
    ALLOCA_FLAG(use_heap);
    size_t key_len = ZSTR_LEN(path) + 1;
    char *key = do_alloca(key_len, use_heap);
    key[0] = read_only ? 'r' : 'w';
    memcpy(key + 1, ZSTR_VAL(path), ZSTR_LEN(path));
    shm_opened *e = zend_hash_str_find_ptr(&opened, key, key_len);
    struct stat now;
    shmetrics_store *st;
    if (e != NULL && e->known && lstat(ZSTR_VAL(path), &now) == 0 && now.st_dev == e->dev && now.st_ino == e->ino) {
        st = e->st;
    } else {
        st = store_open_slow(path, options, read_only, key, key_len);
    }
    free_alloca(key, use_heap);
    return st;
}

/* Checks::storeOptions($options): false when it threw (an unknown option, a value of the wrong type or range). */
bool shm_store_options_ok(HashTable *options)
{
    if (zend_hash_num_elements(options) == 0) {
        return true;
    }
    zval arg, ret;
    ZVAL_ARR(&arg, options);
    if (!shm_call_static("Shmetrics\\Checks", "storeOptions", &ret, 1, &arg)) {
        return false;
    }
    zval_ptr_dtor(&ret);
    return true;
}

/* open(string $path, array $options): Store; the options checked by Checks::storeOptions(), as the PHP class does. */
ZEND_FUNCTION(Shmetrics_Ext_open)
{
    zend_string *path;
    HashTable *options;
    ZEND_PARSE_PARAMETERS_START(2, 2)
        Z_PARAM_STR(path)
        Z_PARAM_ARRAY_HT(options)
    ZEND_PARSE_PARAMETERS_END();
    if (!shm_store_options_ok(options)) {
        RETURN_THROWS();
    }
    shmetrics_store *st = shm_store_open(path, options);
    if (st == NULL) {
        RETURN_THROWS();
    }
    shm_store_object(return_value, st);
}

#define STORE_ARG(var) Z_PARAM_OBJECT_OF_CLASS(var##_zv, shm_ce_store)

#define STORE_PTR(var) (store_of(Z_OBJ_P(var##_zv))->st)

/* wipe(Store $store): int, the result code */
ZEND_FUNCTION(Shmetrics_Ext_wipe)
{
    zval *s_zv;
    ZEND_PARSE_PARAMETERS_START(1, 1)
        STORE_ARG(s)
    ZEND_PARSE_PARAMETERS_END();
    RETURN_LONG(lib.shmetrics_store_wipe(STORE_PTR(s)));
}

/* render(Store $store, int $format, ?string &$out): int */
ZEND_FUNCTION(Shmetrics_Ext_render)
{
    zval *s_zv;
    zend_long format;
    zval *out;
    ZEND_PARSE_PARAMETERS_START(3, 3)
        STORE_ARG(s)
        Z_PARAM_LONG(format)
        Z_PARAM_ZVAL(out)
    ZEND_PARSE_PARAMETERS_END();
    shmetrics_buf *buf = NULL;
    uint32_t rc = lib.shmetrics_render_alloc(STORE_PTR(s), ext_format_of(format), &buf);
    if (rc == 0) {
        ZEND_TRY_ASSIGN_REF_STRINGL(out, (const char *)lib.shmetrics_buf_data(buf), lib.shmetrics_buf_len(buf));
        lib.shmetrics_buf_free(buf);
    }
    RETURN_LONG(rc);
}

/* content_type(int $format): ?string */
ZEND_FUNCTION(Shmetrics_Ext_content_type)
{
    zend_long format;
    ZEND_PARSE_PARAMETERS_START(1, 1)
        Z_PARAM_LONG(format)
    ZEND_PARSE_PARAMETERS_END();
    if (!shm_load()) {
        RETURN_THROWS();
    }
    const char *t = lib.shmetrics_format_content_type(format_of(format));
    if (t == NULL) {
        RETURN_NULL();
    }
    RETURN_STRING(t);
}

/* The store's statistics as an array into out; the result code. */
uint32_t shm_stats_array(shmetrics_store *st, zval *out)
{
    shmetrics_stats stats;
    uint32_t rc = lib.shmetrics_store_stats(st, &stats);
    if (rc != 0) {
        return rc;
    }
    array_init(out);
#define SHM_STAT(f) add_assoc_long(out, #f, (zend_long)stats.f);
    SHM_STAT(layout_version) SHM_STAT(families) SHM_STAT(families_capacity) SHM_STAT(series_allocated)
    SHM_STAT(series_capacity) SHM_STAT(writers_capacity) SHM_STAT(writers_live) SHM_STAT(writers_dead)
    SHM_STAT(file_size) SHM_STAT(label_bytes_used) SHM_STAT(label_bytes_capacity) SHM_STAT(cells_used)
    SHM_STAT(cells_capacity) SHM_STAT(writer_claims_total) SHM_STAT(writer_reuses_total)
    SHM_STAT(writers_exhausted_total) SHM_STAT(overflows_total) SHM_STAT(lock_recoveries_total)
    SHM_STAT(sketch_cells_used) SHM_STAT(sketch_cells_capacity) SHM_STAT(series_expired_total)
#undef SHM_STAT
    return 0;
}

/* stats(Store $store, ?array &$out): int */
ZEND_FUNCTION(Shmetrics_Ext_stats)
{
    zval *s_zv;
    zval *out;
    ZEND_PARSE_PARAMETERS_START(2, 2)
        STORE_ARG(s)
        Z_PARAM_ZVAL(out)
    ZEND_PARSE_PARAMETERS_END();
    zval arr;
    uint32_t rc = shm_stats_array(STORE_PTR(s), &arr);
    if (rc == 0) {
        ZEND_TRY_ASSIGN_REF_ARR(out, Z_ARR(arr));
    }
    RETURN_LONG(rc);
}

static void add_str(zval *arr, const char *key, shmetrics_str s)
{
    if (key == NULL) {
        add_next_index_stringl(arr, s.len ? s.ptr : "", s.len);
    } else {
        add_assoc_stringl(arr, key, s.len ? s.ptr : "", s.len);
    }
}


/* snapshot(Store $store, ?array &$out): int; the arrays of Shmetrics\Snapshot::take() */
ZEND_FUNCTION(Shmetrics_Ext_snapshot)
{
    zval *s_zv;
    zval *out;
    ZEND_PARSE_PARAMETERS_START(2, 2)
        STORE_ARG(s)
        Z_PARAM_ZVAL(out)
    ZEND_PARSE_PARAMETERS_END();
    shmetrics_snapshot *snap = NULL;
    uint32_t rc = lib.shmetrics_snapshot_take(STORE_PTR(s), &snap);
    if (rc != 0) {
        RETURN_LONG(rc);
    }
    zval families;
    array_init(&families);
    size_t nf = lib.shmetrics_snapshot_family_count(snap);
    for (size_t i = 0; i < nf && rc == 0; i++) {
        shmetrics_family_info f;
        if ((rc = lib.shmetrics_snapshot_family(snap, i, &f)) != 0) {
            break;
        }
        zval fam, labels, buckets, series;
        array_init(&fam);
        add_str(&fam, "name", f.name);
        add_str(&fam, "help", f.help);
        add_assoc_string(&fam, "type", (char *)SHM_KIND_NAMES[f.kind <= 4 ? f.kind : 0]);
        add_assoc_bool(&fam, "nameAsGiven", f.name_as_given != 0);
        array_init_size(&labels, (uint32_t)f.label_count);
        for (size_t k = 0; k < f.label_count; k++) {
            add_str(&labels, NULL, f.label_names[k]);
        }
        add_assoc_zval(&fam, "labelNames", &labels);
        array_init_size(&buckets, (uint32_t)f.bucket_count);
        for (size_t k = 0; k < f.bucket_count; k++) {
            add_next_index_double(&buckets, f.buckets[k]);
        }
        add_assoc_zval(&fam, "buckets", &buckets);
        array_init_size(&series, (uint32_t)f.series_count);
        for (size_t j = 0; j < f.series_count; j++) {
            shmetrics_series_info si;
            if ((rc = lib.shmetrics_snapshot_series(snap, i, j, &si)) != 0) {
                break;
            }
            zval one, values, extra, cumulative, quantiles;
            array_init(&one);
            array_init_size(&values, (uint32_t)f.label_count);
            for (size_t k = 0; k < f.label_count; k++) {
                add_str(&values, NULL, si.label_values[k]);
            }
            add_assoc_zval(&one, "labelValues", &values);
            array_init(&extra);
            if (si.extra_label_name.len != 0) {
                add_assoc_stringl_ex(&extra, si.extra_label_name.ptr, si.extra_label_name.len,
                    si.extra_label_value.len ? si.extra_label_value.ptr : "", si.extra_label_value.len);
            }
            add_assoc_zval(&one, "extra", &extra);
            add_assoc_double(&one, "value", si.value);
            add_assoc_long(&one, "count", (zend_long)si.count);
            array_init(&cumulative);
            if (si.cumulative != NULL) {
                for (size_t k = 0; k <= f.bucket_count; k++) {
                    add_next_index_long(&cumulative, (zend_long)si.cumulative[k]);
                }
            }
            add_assoc_zval(&one, "cumulative", &cumulative);
            array_init_size(&quantiles, (uint32_t)si.quantile_count);
            for (size_t k = 0; k < si.quantile_count; k++) {
                zval pair;
                array_init_size(&pair, 2);
                add_next_index_double(&pair, si.quantiles[k].quantile);
                add_next_index_double(&pair, si.quantiles[k].value);
                add_next_index_zval(&quantiles, &pair);
            }
            add_assoc_zval(&one, "quantiles", &quantiles);
            add_next_index_zval(&series, &one);
        }
        add_assoc_zval(&fam, "series", &series);
        add_next_index_zval(&families, &fam);
    }
    lib.shmetrics_snapshot_free(snap);
    if (rc == 0) {
        ZEND_TRY_ASSIGN_REF_ARR(out, Z_ARR(families));
    } else {
        zval_ptr_dtor(&families);
    }
    RETURN_LONG(rc);
}

/* last_error(): string, the library's message for this thread's last failed call */
ZEND_FUNCTION(Shmetrics_Ext_last_error)
{
    ZEND_PARSE_PARAMETERS_NONE();
    if (!shm_lib_ready()) {
        RETURN_EMPTY_STRING();
    }
    size_t len = 0;
    lib.shmetrics_last_error(NULL, 0, &len);
    zend_string *s = zend_string_alloc(len, 0);
    lib.shmetrics_last_error(ZSTR_VAL(s), len + 1, &len);
    ZSTR_LEN(s) = len;
    ZSTR_VAL(s)[len] = '\0';
    RETURN_NEW_STR(s);
}

/* version(): string, the library's version */
ZEND_FUNCTION(Shmetrics_Ext_version)
{
    ZEND_PARSE_PARAMETERS_NONE();
    if (!shm_load()) {
        RETURN_THROWS();
    }
    RETURN_STRING(lib.shmetrics_version());
}

void shm_store_minit(void)
{
    zend_hash_init(&opened, 4, NULL, shm_ptr_pefree, 1);
    shm_ce_store->create_object = store_create;
    memcpy(&store_handlers, zend_get_std_object_handlers(), sizeof store_handlers);
    store_handlers.offset = XtOffsetOf(shm_store, std);
    store_handlers.get_constructor = store_get_constructor;
    store_handlers.clone_obj = NULL;
}

void shm_store_mshutdown(void)
{
    zend_hash_destroy(&opened);
}
