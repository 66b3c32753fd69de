/*
 * The shmetrics PHP extension: the classes a request runs through
 * (Shmetrics\CollectorRegistry, Collector, Counter, Gauge, Histogram,
 * Summary) as internal classes, and the store calls of
 * Shmetrics\Storage\Shmetrics and Shmetrics\Snapshot (namespace
 * Shmetrics\Ext), over libshmetrics' C ABI. It replaces PHP FFI, whose
 * calls cost thousands of instructions each, and the PHP classes' own
 * execution; the PHP classes of src/ stay the fallback when the extension
 * is not loaded (they are autoloaded only if these are missing).
 *
 * Thin by design: the library checks names, labels and values, hashes
 * and caches families and series (shmetrics_family_cached,
 * shmetrics_update); this file only moves PHP values into C arguments.
 * Every message of a refusal comes from the PHP class Shmetrics\Checks (or
 * Shmetrics\Native::exception()), called on the slow paths only, so both
 * implementations say the same.
 *
 * The library is loaded at run time, as the FFI binding loads it: the ini
 * setting shmetrics.library, else $SHMETRICS_LIBRARY, else the SONAME
 * libshmetrics.so.1 on the system's library path, then libshmetrics.so;
 * a library of another major version is refused. Its declarations are the package's own copy
 * (include/shmetrics.cdef.h).
 */

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/* From ../include in the repository; beside this file in the PECL package
 * (scripts/build-pecl.sh). */
#include "shmetrics.cdef.h"

#define PHP_SHMETRICS_VERSION "1.0.0"
/* The major version of the C ABI this extension is written for. */
#define SHM_ABI_MAJOR 1
#define SHM_STR_(x) #x
#define SHM_STR(x) SHM_STR_(x)

/* The C ABI's functions this file calls, resolved by dlsym. */
#define SHM_FUNCS(X)                                                                                         \
    X(shmetrics_version)                                                                                     \
    X(shmetrics_version_major)                                                                               \
    X(shmetrics_last_error)                                                                                  \
    X(shmetrics_options_default)                                                                             \
    X(shmetrics_store_persistent)                                                                            \
    X(shmetrics_store_reopen_persistent)                                                                     \
    X(shmetrics_store_wipe)                                                                                  \
    X(shmetrics_store_stats)                                                                                 \
    X(shmetrics_render_alloc)                                                                                \
    X(shmetrics_buf_data)                                                                                    \
    X(shmetrics_buf_len)                                                                                     \
    X(shmetrics_buf_free)                                                                                    \
    X(shmetrics_format_content_type)                                                                         \
    X(shmetrics_snapshot_take)                                                                               \
    X(shmetrics_snapshot_family_count)                                                                       \
    X(shmetrics_snapshot_family)                                                                             \
    X(shmetrics_snapshot_series)                                                                             \
    X(shmetrics_snapshot_free)                                                                               \
    X(shmetrics_family_cached)                                                                               \
    X(shmetrics_family_cache)                                                                                \
    X(shmetrics_update)                                                                                      \
    X(shmetrics_update_exemplar)                                                                             \
    X(shmetrics_register)                                                                                    \
    X(shmetrics_series_get)                                                                                  \
    X(shmetrics_counter_add)                                                                                 \
    X(shmetrics_gauge_set)                                                                                   \
    X(shmetrics_gauge_add)                                                                                   \
    X(shmetrics_gauge_set_to_current_time)                                                                   \
    X(shmetrics_observe)

typedef struct {
#define SHM_FIELD(f) __typeof__(f) *f;
    SHM_FUNCS(SHM_FIELD)
#undef SHM_FIELD
} shm_lib;

/* ---- the library, loaded once per process at first use ---------------------------------------- */

/*
 * The library's functions. Per process: written once, when the first call
 * that needs the library loads it (never in MINIT, so that every php-fpm
 * worker loads the library its pool names), then never unloaded. This
 * part is plain C, without PHP's API, so that tests/ext/loader-threads.c
 * can run it from many threads under ThreadSanitizer.
 */
static shm_lib lib;
static bool lib_loaded; /* lib is complete: set (release) after lib is written, under lib_mutex */
static pthread_mutex_t lib_mutex = PTHREAD_MUTEX_INITIALIZER;

/* Whether lib is loaded; once true, lib's fields may be read without the lock (acquire). */
static inline bool shm_lib_ready(void)
{
    return __atomic_load_n(&lib_loaded, __ATOMIC_ACQUIRE);
}

/* Appends a formatted part to the message in err (cap bytes, truncated if needed). */
static void err_append(char *err, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void err_append(char *err, size_t cap, const char *fmt, ...)
{
    size_t used = strnlen(err, cap);
    if (used + 1 >= cap) {
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err + used, cap - used, fmt, ap);
    va_end(ap);
}

/* dlopen()s path and resolves every function into *out; false with why appended to why. */
static bool shm_lib_open(const char *path, shm_lib *out, char *why, size_t cap)
{
    const char *sep = why[0] ? ", " : "";
    void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    if (h == NULL) {
        const char *e = dlerror();
        err_append(why, cap, "%s\"%s\": %s", sep, path, e ? e : "?");
        return false;
    }
    bool complete = true;
#define SHM_SYM(f)                                                                                           \
    out->f = (__typeof__(f) *)dlsym(h, #f);                                                                  \
    if (out->f == NULL && complete) {                                                                        \
        err_append(why, cap, "%s\"%s\": no symbol " #f, sep, path);                                          \
        complete = false;                                                                                    \
    }
    SHM_FUNCS(SHM_SYM)
#undef SHM_SYM
    return complete;
}

/*
 * Loads the library, lib_mutex held: the ini setting if set, else the
 * environment's path if set, else the SONAME then libshmetrics.so. lib
 * is written only once a candidate is complete and of this major. False
 * with the message in err.
 */
static bool shm_lib_load_locked(const char *ini, const char *env, char *err, size_t cap)
{
    const char *candidates[2];
    int n = 0;
    if (ini != NULL && *ini != '\0') {
        candidates[n++] = ini;
    } else if (env != NULL && *env != '\0') {
        candidates[n++] = env;
    } else {
        candidates[n++] = "libshmetrics.so." SHM_STR(SHM_ABI_MAJOR); /* the SONAME */
        candidates[n++] = "libshmetrics.so";
    }
    char why[1536] = "";
    for (int i = 0; i < n; i++) {
        shm_lib found;
        if (!shm_lib_open(candidates[i], &found, why, sizeof why)) {
            continue;
        }
        uint32_t major = found.shmetrics_version_major();
        if (major != SHM_ABI_MAJOR) {
            snprintf(err, cap,
                "the shmetrics library %s is version %s (major %u), but this binding is written for major %d: "
                "install libshmetrics.so.%d, or point $SHMETRICS_LIBRARY at a library of major %d",
                candidates[i], found.shmetrics_version(), major, SHM_ABI_MAJOR, SHM_ABI_MAJOR, SHM_ABI_MAJOR);
            return false;
        }
        lib = found;
        __atomic_store_n(&lib_loaded, true, __ATOMIC_RELEASE);
        return true;
    }
    snprintf(err, cap,
        "cannot load the shmetrics library %s. Install libshmetrics.so.%d on the system's library path, or "
        "build it with `cargo build --release -p shmetrics-ffi` and point $SHMETRICS_LIBRARY or the ini "
        "setting shmetrics.library at it",
        why, SHM_ABI_MAJOR);
    return false;
}

/*
 * Loads the library once per process, whichever thread asks first (ZTS):
 * true when it is loaded, by this call or an earlier one; else false with
 * the message in err (cap bytes), and a later call tries again.
 */
static bool shm_lib_load(const char *ini, const char *env, char *err, size_t cap)
{
    if (shm_lib_ready()) {
        return true;
    }
    pthread_mutex_lock(&lib_mutex);
    bool ok = shm_lib_ready() || shm_lib_load_locked(ini, env, err, cap);
    pthread_mutex_unlock(&lib_mutex);
    return ok;
}

/*
 * In a child forked while another thread held lib_mutex (ZTS: a thread
 * loading the library while another forks), the lock would stay taken
 * forever: the child starts with a new one (registered in MINIT).
 */
static void shm_lib_atfork_child(void)
{
    pthread_mutex_init(&lib_mutex, NULL);
}

/* The rest is the extension; tests/ext/loader-threads.c includes this file for the part above only. */
#ifndef SHMETRICS_LOADER_TEST

#include "php.h"
#include "php_ini.h"
#include "SAPI.h"
#include "ext/standard/basic_functions.h"
#include "ext/standard/info.h"
#include "Zend/zend_exceptions.h"
#include "Zend/zend_interfaces.h"
#include "Zend/zend_smart_str.h"

ZEND_BEGIN_MODULE_GLOBALS(shmetrics)
    zval default_registry; /* CollectorRegistry::getDefault(), per request */
ZEND_END_MODULE_GLOBALS(shmetrics)
ZEND_DECLARE_MODULE_GLOBALS(shmetrics)
#define SHM_G(v) ZEND_MODULE_GLOBALS_ACCESSOR(shmetrics, v)

PHP_INI_BEGIN()
    PHP_INI_ENTRY("shmetrics.library", "", PHP_INI_SYSTEM, NULL)
PHP_INI_END()

static zend_class_entry *ce_store, *ce_storage, *ce_collector, *ce_counter, *ce_gauge, *ce_histogram, *ce_summary, *ce_registry;

/* ---- calling the PHP side (slow paths only) ---------------------------------------------------- */

static zend_class_entry *php_class(const char *name)
{
    zend_string *n = zend_string_init(name, strlen(name), 0);
    zend_class_entry *ce = zend_lookup_class(n);
    zend_string_release(n);
    if (ce == NULL && !EG(exception)) {
        zend_throw_error(NULL, "class %s not found: load the shmetrics package's autoloader", name);
    }
    return ce;
}

/* Calls the static method $class::$method(...$argv) into ret; false when it threw. */
static bool call_static(const char *class_name, const char *method, zval *ret, uint32_t argc, zval *argv)
{
    ZVAL_UNDEF(ret);
    zend_class_entry *ce = php_class(class_name);
    if (ce == NULL) {
        return false;
    }
    zend_function *fn = zend_hash_str_find_ptr_lc(&ce->function_table, method, strlen(method));
    if (fn == NULL) {
        zend_throw_error(NULL, "%s::%s() not found", class_name, method);
        return false;
    }
    zend_call_known_function(fn, NULL, ce, ret, argc, argv, NULL);
    if (EG(exception)) {
        zval_ptr_dtor(ret);
        ZVAL_UNDEF(ret);
        return false;
    }
    return true;
}

/* Throws the exception that $class::$method(...$argv) returns. */
static void throw_from(const char *class_name, const char *method, uint32_t argc, zval *argv)
{
    zval ret;
    if (call_static(class_name, method, &ret, argc, argv)) {
        if (Z_TYPE(ret) == IS_OBJECT) {
            zend_throw_exception_object(&ret);
        } else {
            zval_ptr_dtor(&ret);
        }
    }
}

/* Throws Native::exception($rc, $context); releases context. */
static void throw_rc(uint32_t rc, zend_string *context)
{
    zval args[2];
    ZVAL_LONG(&args[0], rc);
    ZVAL_STR(&args[1], context);
    throw_from("Shmetrics\\Native", "exception", 2, args);
    zend_string_release(context);
}

static void throw_storage(const char *message)
{
    zend_class_entry *ce = php_class("Shmetrics\\Exception\\StorageException");
    if (ce != NULL) {
        zend_throw_exception(ce, message, 0);
    }
}

/* ---- the library ------------------------------------------------------------------------------- */

/*
 * The environment variable NAME as PHP's getenv() reads it: the SAPI's own
 * first (Apache's SetEnv, under mod_php), then the process's (php-fpm's
 * pool env[] included). NULL when unset; else a string of this request.
 */
static zend_string *php_env(const char *name, size_t len)
{
    char *v = sapi_getenv(name, len); /* emalloc()ed, as PHP's getenv() frees it */
    if (v != NULL) {
        zend_string *s = zend_string_init(v, strlen(v), 0);
        efree(v);
        return s;
    }
    return php_getenv(name, len);
}

/*
 * Loads the library at this process's first call that needs it, with this
 * process's ini setting shmetrics.library and $SHMETRICS_LIBRARY (a
 * php-fpm pool's php_admin_value[] and env[], Apache's php_admin_value and
 * SetEnv included); false when it threw.
 */
static bool shm_load(void)
{
    if (EXPECTED(shm_lib_ready())) {
        return true;
    }
    char err[2048];
    zend_string *env = php_env("SHMETRICS_LIBRARY", sizeof("SHMETRICS_LIBRARY") - 1);
    bool ok = shm_lib_load(INI_STR("shmetrics.library"), env ? ZSTR_VAL(env) : NULL, err, sizeof err);
    if (env != NULL) {
        zend_string_release(env);
    }
    if (ok) {
        return true;
    }
    throw_storage(err);
    return false;
}

/* Initialises the zend_object std of a new object of class ce with handlers h; returns it. */
static zend_object *object_ready(zend_object *std, zend_class_entry *ce, const zend_object_handlers *h)
{
    zend_object_std_init(std, ce);
    object_properties_init(std, ce);
    std->handlers = h;
    return std;
}

/* ---- Shmetrics\Ext\Store: a persistent store handle ------------------------------------------- */

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
    return object_ready(&s->std, ce, &store_handlers);
}

static zend_function *store_get_constructor(zend_object *o)
{
    zend_throw_error(NULL, "Shmetrics\\Ext\\Store is made by Shmetrics\\Ext\\open(), not by new");
    return NULL;
}

/* ---- Shmetrics\Ext\ functions ------------------------------------------------------------------ */

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

/* The destructor of the per-process tables' values: pemalloc'd. */
static void opened_free(zval *v)
{
    pefree(Z_PTR_P(v), 1);
}

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
            throw_rc(rc, zend_string_init("cannot open the store", sizeof("cannot open the store") - 1, 0));
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
static shmetrics_store *store_open(zend_string *path, HashTable *options)
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
static bool store_options_ok(HashTable *options)
{
    if (zend_hash_num_elements(options) == 0) {
        return true;
    }
    zval arg, ret;
    ZVAL_ARR(&arg, options);
    if (!call_static("Shmetrics\\Checks", "storeOptions", &ret, 1, &arg)) {
        return false;
    }
    zval_ptr_dtor(&ret);
    return true;
}

/* open(string $path, array $options): Store; the options checked by Checks::storeOptions(), as the PHP class does. */
PHP_FUNCTION(open)
{
    zend_string *path;
    HashTable *options;
    ZEND_PARSE_PARAMETERS_START(2, 2)
        Z_PARAM_STR(path)
        Z_PARAM_ARRAY_HT(options)
    ZEND_PARSE_PARAMETERS_END();
    if (!store_options_ok(options)) {
        RETURN_THROWS();
    }
    shmetrics_store *st = store_open(path, options);
    if (st == NULL) {
        RETURN_THROWS();
    }
    object_init_ex(return_value, ce_store);
    store_of(Z_OBJ_P(return_value))->st = st;
}

#define STORE_ARG(var) Z_PARAM_OBJECT_OF_CLASS(var##_zv, ce_store)

#define STORE_PTR(var) (store_of(Z_OBJ_P(var##_zv))->st)

/* An exposition format as the C ABI's u32 (Checks::format()): UINT32_MAX, no format, when out of its range. */
static inline uint32_t format_of(zend_long format)
{
    return format >= 0 && format < (zend_long)UINT32_MAX ? (uint32_t)format : UINT32_MAX;
}

/* wipe(Store $store): int, the result code */
PHP_FUNCTION(wipe)
{
    zval *s_zv;
    ZEND_PARSE_PARAMETERS_START(1, 1)
        STORE_ARG(s)
    ZEND_PARSE_PARAMETERS_END();
    RETURN_LONG(lib.shmetrics_store_wipe(STORE_PTR(s)));
}

/* render(Store $store, int $format, ?string &$out): int */
PHP_FUNCTION(render)
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
    uint32_t rc = lib.shmetrics_render_alloc(STORE_PTR(s), format_of(format), &buf);
    if (rc == 0) {
        ZEND_TRY_ASSIGN_REF_STRINGL(out, (const char *)lib.shmetrics_buf_data(buf), lib.shmetrics_buf_len(buf));
        lib.shmetrics_buf_free(buf);
    }
    RETURN_LONG(rc);
}

/* content_type(int $format): ?string */
PHP_FUNCTION(content_type)
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
static uint32_t stats_array(shmetrics_store *st, zval *out)
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
PHP_FUNCTION(stats)
{
    zval *s_zv;
    zval *out;
    ZEND_PARSE_PARAMETERS_START(2, 2)
        STORE_ARG(s)
        Z_PARAM_ZVAL(out)
    ZEND_PARSE_PARAMETERS_END();
    zval arr;
    uint32_t rc = stats_array(STORE_PTR(s), &arr);
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

static const char *const KIND_NAMES[] = {"unknown", "counter", "gauge", "histogram", "summary"};

/* snapshot(Store $store, ?array &$out): int; the arrays of Shmetrics\Snapshot::take() */
PHP_FUNCTION(snapshot)
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
        add_assoc_string(&fam, "type", (char *)KIND_NAMES[f.kind <= 4 ? f.kind : 0]);
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
PHP_FUNCTION(last_error)
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
PHP_FUNCTION(version)
{
    ZEND_PARSE_PARAMETERS_NONE();
    if (!shm_load()) {
        RETURN_THROWS();
    }
    RETURN_STRING(lib.shmetrics_version());
}

/* ---- Shmetrics\Storage\Shmetrics: the store, in place of the PHP class ---------------------------- */

/*
 * The extension's Shmetrics\Storage\Shmetrics: the API of
 * src/Storage/Shmetrics.php (which is then never loaded), in C, because
 * php-fpm builds one in every request. Its public properties are the PHP
 * class's: $ffi (null here) and $store (a Shmetrics\Ext\Store), which
 * Shmetrics\Snapshot reads.
 */
typedef struct {
    shmetrics_store *st; /* NULL until constructed */
    zend_string *path;
    zend_object std;
} shm_storage;

static zend_object_handlers storage_handlers;

/* The declared properties' slots, in the order of their declaration. */
#define STORAGE_PROP_FFI 0
#define STORAGE_PROP_STORE 1

static inline shm_storage *storage_of(zend_object *o)
{
    return (shm_storage *)((char *)o - XtOffsetOf(shm_storage, std));
}

static zend_object *storage_create(zend_class_entry *ce)
{
    shm_storage *s = zend_object_alloc(sizeof(shm_storage), ce);
    s->st = NULL;
    s->path = NULL;
    return object_ready(&s->std, ce, &storage_handlers);
}

static void storage_free(zend_object *o)
{
    shm_storage *s = storage_of(o);
    if (s->path) zend_string_release(s->path);
    zend_object_std_dtor(o);
}

/* Opens the store for a new storage object; path NULL for the default. False when it threw. */
static bool storage_init(shm_storage *s, zend_string *path, HashTable *options)
{
    if (!store_options_ok(options)) {
        return false;
    }
    zend_string *p;
    if (path != NULL) {
        p = zend_string_copy(path);
    } else {
        /* getenv('SHMETRICS_STORE'), as PHP's getenv() reads it: Apache's SetEnv first */
        p = php_env("SHMETRICS_STORE", sizeof("SHMETRICS_STORE") - 1);
        if (p == NULL || ZSTR_LEN(p) == 0) {
            if (p) zend_string_release(p);
            p = zend_string_init("/dev/shm/shmetrics", sizeof("/dev/shm/shmetrics") - 1, 0);
        }
    }
    if (ZSTR_LEN(p) == 0) {
        zend_string_release(p);
        throw_from("Shmetrics\\Checks", "emptyStorePath", 0, NULL);
        return false;
    }
    shmetrics_store *st = store_open(p, options);
    if (st == NULL) {
        zend_string_release(p);
        return false;
    }
    s->st = st;
    s->path = p;
    zval *store = OBJ_PROP_NUM(&s->std, STORAGE_PROP_STORE);
    zval_ptr_dtor(store);
    object_init_ex(store, ce_store);
    store_of(Z_OBJ_P(store))->st = st;
    return true;
}

#define THIS_STORAGE() storage_of(Z_OBJ_P(ZEND_THIS))

#define STORAGE_READY(s)                                                                                     \
    if ((s)->st == NULL) {                                                                                   \
        zend_throw_error(NULL, "Shmetrics\\Storage\\Shmetrics was not constructed");                        \
        RETURN_THROWS();                                                                                     \
    }

/* __construct(?string $path = null, array $options = []) */
PHP_METHOD(Storage, __construct)
{
    zend_string *path = NULL;
    HashTable *options = (HashTable *)&zend_empty_array;
    ZEND_PARSE_PARAMETERS_START(0, 2)
        Z_PARAM_OPTIONAL
        Z_PARAM_STR_OR_NULL(path)
        Z_PARAM_ARRAY_HT(options)
    ZEND_PARSE_PARAMETERS_END();
    shm_storage *s = THIS_STORAGE();
    if (s->st != NULL) {
        zend_throw_error(NULL, "Shmetrics\\Storage\\Shmetrics is constructed already");
        RETURN_THROWS();
    }
    if (!storage_init(s, path, options)) {
        RETURN_THROWS();
    }
}

PHP_METHOD(Storage, path)
{
    ZEND_PARSE_PARAMETERS_NONE();
    shm_storage *s = THIS_STORAGE();
    STORAGE_READY(s);
    RETURN_STR_COPY(s->path);
}

/* Throws Native::exception($rc, "$what {$this->path}"). */
static void storage_throw(shm_storage *s, uint32_t rc, const char *what)
{
    throw_rc(rc, zend_string_concat3(what, strlen(what), " ", 1, ZSTR_VAL(s->path), ZSTR_LEN(s->path)));
}

PHP_METHOD(Storage, wipeStorage)
{
    ZEND_PARSE_PARAMETERS_NONE();
    shm_storage *s = THIS_STORAGE();
    STORAGE_READY(s);
    uint32_t rc = lib.shmetrics_store_wipe(s->st);
    if (rc != 0) {
        storage_throw(s, rc, "cannot wipe the store");
        RETURN_THROWS();
    }
}

/* The exposition of the store in format into return_value; false when it threw. */
static bool storage_render(shm_storage *s, uint32_t format, zval *return_value)
{
    shmetrics_buf *buf = NULL;
    uint32_t rc = lib.shmetrics_render_alloc(s->st, format, &buf);
    if (rc != 0) {
        storage_throw(s, rc, "cannot render the store");
        return false;
    }
    ZVAL_STRINGL(return_value, (const char *)lib.shmetrics_buf_data(buf), lib.shmetrics_buf_len(buf));
    lib.shmetrics_buf_free(buf);
    return true;
}

/* render(int $format = FORMAT_TEXT): string */
PHP_METHOD(Storage, render)
{
    zend_long format = 0;
    ZEND_PARSE_PARAMETERS_START(0, 1)
        Z_PARAM_OPTIONAL
        Z_PARAM_LONG(format)
    ZEND_PARSE_PARAMETERS_END();
    shm_storage *s = THIS_STORAGE();
    STORAGE_READY(s);
    if (!storage_render(s, format_of(format), return_value)) {
        RETURN_THROWS();
    }
}

/* contentType(int $format = FORMAT_TEXT): string */
PHP_METHOD(Storage, contentType)
{
    zend_long format = 0;
    ZEND_PARSE_PARAMETERS_START(0, 1)
        Z_PARAM_OPTIONAL
        Z_PARAM_LONG(format)
    ZEND_PARSE_PARAMETERS_END();
    const char *t = shm_load() ? lib.shmetrics_format_content_type(format_of(format)) : NULL;
    if (t == NULL) {
        if (!EG(exception)) {
            zval arg;
            ZVAL_LONG(&arg, format);
            throw_from("Shmetrics\\Checks", "unknownFormat", 1, &arg);
        }
        RETURN_THROWS();
    }
    RETURN_STRING(t);
}

/* collect(): list<Exposition>, one of the whole store */
PHP_METHOD(Storage, collect)
{
    ZEND_PARSE_PARAMETERS_NONE();
    shm_storage *s = THIS_STORAGE();
    STORAGE_READY(s);
    zend_class_entry *ce = php_class("Shmetrics\\Exposition");
    zval text, exposition;
    if (ce == NULL || !storage_render(s, 0, &text)) {
        RETURN_THROWS();
    }
    object_init_ex(&exposition, ce);
    zend_call_known_instance_method_with_1_params(ce->constructor, Z_OBJ(exposition), NULL, &text);
    zval_ptr_dtor(&text);
    if (EG(exception)) {
        zval_ptr_dtor(&exposition);
        RETURN_THROWS();
    }
    array_init_size(return_value, 1);
    add_next_index_zval(return_value, &exposition);
}

/* stats(): array<string, int> */
PHP_METHOD(Storage, stats)
{
    ZEND_PARSE_PARAMETERS_NONE();
    shm_storage *s = THIS_STORAGE();
    STORAGE_READY(s);
    uint32_t rc = stats_array(s->st, return_value);
    if (rc != 0) {
        storage_throw(s, rc, "cannot read the statistics of");
        RETURN_THROWS();
    }
}

/* ---- the metrics ------------------------------------------------------------------------------- */

struct shm_def;

typedef struct {
    shmetrics_store *st;
    uint32_t family; /* the token of shmetrics_family_cached */
    struct shm_def *def; /* the process's entry of this definition (series handles), or NULL */
    HashTable *last_ht;  /* the immutable label array (a literal) of the last update, or NULL ... */
    shmetrics_series last_series; /* ... and its series' handle */
    uint32_t kind;   /* SHMETRICS_KIND_* */
    uint32_t label_count;
    uint32_t gauge_mode;
    bool exemplars;
    bool constructed; /* its constructor ran (maybe threw) */
    bool ready;       /* its constructor succeeded */
    uint64_t ttl_ms;
    uint64_t max_age_ms;
    zend_string *name; /* the full name: made when needed (metric_name) if def has it */
    zend_string *help;
    zend_string *what; /* "counter app_requests", for messages: made when one needs it (metric_what) */
    zval labels;       /* list<string>, the label names */
    zval storage;      /* the Storage\Shmetrics */
    zval native;       /* a histogram's [factor, threshold, max buckets] or null */
    zend_string *mode; /* a gauge's mode */
    zend_object std;
} shm_metric;

static zend_object_handlers metric_handlers;

static inline shm_metric *metric_of(zend_object *o)
{
    return (shm_metric *)((char *)o - XtOffsetOf(shm_metric, std));
}

static zend_object *metric_create(zend_class_entry *ce)
{
    shm_metric *m = zend_object_alloc(sizeof(shm_metric), ce);
    memset(m, 0, XtOffsetOf(shm_metric, std));
    ZVAL_UNDEF(&m->labels);
    ZVAL_UNDEF(&m->storage);
    ZVAL_NULL(&m->native);
    return object_ready(&m->std, ce, &metric_handlers);
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

#define THIS_METRIC() metric_of(Z_OBJ_P(ZEND_THIS))

static zend_string *metric_name(shm_metric *m);

/* "counter app_requests", for messages (slow paths only). */
static zend_string *metric_what(shm_metric *m)
{
    if (m->what == NULL) {
        const char *kind = KIND_NAMES[m->kind];
        zend_string *name = metric_name(m);
        m->what = zend_string_concat3(kind, strlen(kind), " ", 1, ZSTR_VAL(name), ZSTR_LEN(name));
    }
    return m->what;
}

static const char *const GAUGE_MODES[] = {NULL, "all", "liveall", "sum", "livesum", "max", "livemax", "min",
    "livemin", "mostrecent", "livemostrecent", "shared", "liveaverage"};
#define GAUGE_MODE_COUNT 13

static const double DEFAULT_BUCKETS[] = {0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0};
static const double DEFAULT_QUANTILES[] = {0.01, 0.05, 0.5, 0.95, 0.99};

static void doubles_array(zval *out, const double *v, size_t n)
{
    array_init_size(out, (uint32_t)n);
    for (size_t i = 0; i < n; i++) {
        add_next_index_double(out, v[i]);
    }
}

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
            call_static("Shmetrics\\Checks", "numbers", &ret, 2, args);
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

/*
 * Series handles. An update through a handle is the library's lean path
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
 * (store_open), hence other entries.
 *
 * Not shared between threads: under ZTS, every metric registers through
 * the library's cache and updates go through shmetrics_update only.
 */

/*
 * A histogram's bounds or a summary's quantiles, for the registration
 * only: the user's array, else defaults (a C array), else none.
 */
typedef struct {
    zval *arr;
    const double *defaults;
    size_t count;
} shm_numbers;

#define NO_NUMBERS ((shm_numbers){NULL, NULL, 0})

/* The doubles of *in into *out and *n (emalloc'd into *owned, if from an array); false when it threw. */
static bool numbers_of(shm_metric *m, const shm_numbers *in, const double **out, size_t *n, double **owned)
{
    *owned = NULL;
    *out = in->defaults;
    *n = in->count;
    if (in->arr != NULL) {
        if (!to_doubles(metric_what(m), in->arr, owned, n)) {
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
/* The handle updates of the ops, by op (SHMETRICS_OP_*). */
typedef shmetrics_result (*series_op_fn)(const shmetrics_store *, const shmetrics_series *, double);

static shmetrics_result op_set_to_current_time(const shmetrics_store *st, const shmetrics_series *s, double v)
{
    return lib.shmetrics_gauge_set_to_current_time(st, s);
}

static inline series_op_fn series_op(uint32_t op)
{
    switch (op) {
    case SHMETRICS_OP_COUNTER_ADD: return lib.shmetrics_counter_add;
    case SHMETRICS_OP_GAUGE_SET: return lib.shmetrics_gauge_set;
    case SHMETRICS_OP_GAUGE_ADD: return lib.shmetrics_gauge_add;
    case SHMETRICS_OP_OBSERVE: return lib.shmetrics_observe;
    case SHMETRICS_OP_GAUGE_SET_TO_CURRENT_TIME: return op_set_to_current_time;
    default: return NULL;
    }
}

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
    zend_hash_init(&e->series, 8, NULL, opened_free, 1);
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
static bool def_update(shm_metric *m, shm_def *d, uint32_t op, const char *key, size_t len, double v, uint32_t *rc,
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

/* m's full name: namespace_name (made from its definition's when needed). */
static zend_string *metric_name(shm_metric *m)
{
#ifndef ZTS
    if (m->name == NULL && m->def != NULL) {
        m->name = zend_string_init(ZSTR_VAL(m->def->name), ZSTR_LEN(m->def->name), 0);
    }
#endif
    return m->name;
}

/*
 * Registers the family of *m: finds its definition among the process's
 * (defs), else registers it through the library's per-process cache, by
 * a key made of the whole definition (the same key as
 * Storage\Shmetrics::register()), and records it. Sets m->family (and
 * m->def); false when it threw.
 */
static bool metric_register(shm_metric *m, zend_string *ns, zend_string *name, const shm_numbers *bounds,
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
        throw_rc(rc, zend_strpprintf(0, "cannot register %s", ZSTR_VAL(metric_what(m))));
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

/*
 * What every constructor does after its own checks: the name, the label
 * names, the TTL, and the registration. The kind-specific fields are set
 * already. False when it threw.
 */
static bool metric_init(shm_metric *m, zval *storage, zend_string *ns, zend_string *name, zend_string *help,
    HashTable *labels, bool ttl_null, double ttl, const shm_numbers *bounds, const shm_numbers *quants)
{
    if (Z_OBJCE_P(storage) != ce_storage) {
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
        ZVAL_STR(&args[0], metric_what(m));
        ZVAL_DOUBLE(&args[1], ttl);
        if (!call_static("Shmetrics\\Checks", "ttlMs", &ret, 2, args)) {
            return false;
        }
        m->ttl_ms = (uint64_t)zval_get_long(&ret);
    }
    if (!strings) {
        zval args[2], ret;
        ZVAL_STR(&args[0], metric_what(m));
        ZVAL_COPY_VALUE(&args[1], &m->labels);
        call_static("Shmetrics\\Checks", "labelNames", &ret, 2, args);
        zval_ptr_dtor(&ret);
        return false;
    }
    if (!metric_register(m, ns, name, bounds, quants)) {
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
static void metric_update(shm_metric *m, uint32_t op, zval *labels, double v, zval *exemplar)
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
    if (key != NULL && exemplar == NULL && m->def != NULL && def_update(m, m->def, op, key, len, v, &rc, &used)) {
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
        ZVAL_STR(&args[0], metric_what(m));
        ZVAL_COPY_VALUE(&args[1], &m->labels);
        ZVAL_COPY_VALUE(&args[2], labels);
        if (!call_static("Shmetrics\\Checks", "labelValues", &slow, 3, args)) {
            return;
        }
        key = Z_STRVAL(slow);
        len = Z_STRLEN(slow);
    }
    if (exemplar == NULL) {
        rc = lib.shmetrics_update(m->st, m->family, op, key, len, v);
    } else {
        zval args[2], pair;
        ZVAL_STR(&args[0], metric_what(m));
        ZVAL_COPY_VALUE(&args[1], exemplar);
        if (!call_static("Shmetrics\\Checks", "exemplar", &pair, 2, args)) {
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
        ZVAL_STR(&args[1], metric_what(m));
        ZVAL_COPY_VALUE(&args[2], &m->labels);
        ZVAL_COPY_VALUE(&args[3], labels);
        ZVAL_BOOL(&args[4], exemplar != NULL);
        throw_from("Shmetrics\\Checks", "updateFailed", 5, args);
    }
}

/* ---- the constructors, shared by `new` and the registry ----------------------------------------- */

typedef struct {
    zend_string *ns, *name, *help;
    HashTable *labels;
    bool exemplars;
    zend_string *mode;
    zval *buckets, *native, *quantiles; /* NULL when null */
    zend_long max_age;
    bool ttl_null;
    double ttl;
} metric_args;

static bool counter_init(shm_metric *m, zval *storage, metric_args *a)
{
    m->kind = SHMETRICS_KIND_COUNTER;
    m->exemplars = a->exemplars;
    return metric_init(m, storage, a->ns, a->name, a->help, a->labels, a->ttl_null, a->ttl, &NO_NUMBERS, &NO_NUMBERS);
}

static bool gauge_init(shm_metric *m, zval *storage, metric_args *a)
{
    m->kind = SHMETRICS_KIND_GAUGE;
    if (a->mode == NULL) {
        m->gauge_mode = SHMETRICS_GAUGE_SHARED;
    }
    for (uint32_t i = 1; a->mode != NULL && i < GAUGE_MODE_COUNT; i++) {
        if (zend_string_equals_cstr(a->mode, GAUGE_MODES[i], strlen(GAUGE_MODES[i]))) {
            m->gauge_mode = i;
        }
    }
    if (m->gauge_mode == 0) {
        zval args[2];
        ZVAL_STR(&args[0], a->mode);
        zend_class_constant *c = zend_hash_str_find_ptr(&ce_gauge->constants_table, "MODES", 5);
        ZVAL_COPY_VALUE(&args[1], &c->value);
        throw_from("Shmetrics\\Checks", "unknownGaugeMode", 2, args);
        return false;
    }
    m->mode = a->mode ? zend_string_copy(a->mode) : zend_string_init("shared", 6, 0);
    return metric_init(m, storage, a->ns, a->name, a->help, a->labels, a->ttl_null, a->ttl, &NO_NUMBERS, &NO_NUMBERS);
}

static bool histogram_init(shm_metric *m, zval *storage, metric_args *a)
{
    m->kind = SHMETRICS_KIND_HISTOGRAM;
    if (a->buckets != NULL && zend_hash_num_elements(Z_ARRVAL_P(a->buckets)) == 0) {
        zval args[1];
        ZVAL_STR(&args[0], a->name);
        throw_from("Shmetrics\\Checks", "emptyBuckets", 1, args);
        return false;
    }
    if (a->native != NULL) {
        zval args[3];
        ZVAL_STR(&args[0], a->name);
        zend_class_constant *c = zend_hash_str_find_ptr(&ce_histogram->constants_table, "NATIVE_OPTIONS", 14);
        ZVAL_COPY_VALUE(&args[1], &c->value);
        ZVAL_COPY_VALUE(&args[2], a->native);
        if (!call_static("Shmetrics\\Checks", "nativeDesc", &m->native, 3, args)) {
            ZVAL_NULL(&m->native);
            return false;
        }
    }
    shm_numbers bounds = NO_NUMBERS;
    if (a->buckets != NULL) {
        bounds.arr = a->buckets;
    } else if (a->native == NULL) {
        bounds = (shm_numbers){NULL, DEFAULT_BUCKETS, sizeof DEFAULT_BUCKETS / sizeof(double)};
    }
    m->exemplars = a->exemplars;
    return metric_init(m, storage, a->ns, a->name, a->help, a->labels, a->ttl_null, a->ttl, &bounds, &NO_NUMBERS);
}

static bool summary_init(shm_metric *m, zval *storage, metric_args *a)
{
    m->kind = SHMETRICS_KIND_SUMMARY;
    /* At most Checks::MAX_AGE_SECONDS: its milliseconds fit a u64 and a zend_long (the definition's key) */
    if (a->max_age <= 0 || a->max_age > ZEND_LONG_MAX / 1000) {
        zval args[2];
        ZVAL_STR(&args[0], a->name);
        ZVAL_LONG(&args[1], a->max_age);
        throw_from("Shmetrics\\Checks", "maxAge", 2, args);
        return false;
    }
    m->max_age_ms = (uint64_t)a->max_age * 1000;
    shm_numbers quants = {NULL, DEFAULT_QUANTILES, sizeof DEFAULT_QUANTILES / sizeof(double)};
    if (a->quantiles != NULL) {
        quants = (shm_numbers){a->quantiles, NULL, 0};
    }
    return metric_init(m, storage, a->ns, a->name, a->help, a->labels, a->ttl_null, a->ttl, &NO_NUMBERS, &quants);
}

typedef bool (*metric_init_fn)(shm_metric *, zval *, metric_args *);

/* The parameters every constructor and register*() start with. */
#define PARSE_COMMON(a)                                                                                      \
    Z_PARAM_STR((a).ns)                                                                                      \
    Z_PARAM_STR((a).name)                                                                                    \
    Z_PARAM_STR((a).help)                                                                                    \
    Z_PARAM_OPTIONAL                                                                                         \
    Z_PARAM_ARRAY_HT((a).labels)

#define ARGS_INIT(a)                                                                                         \
    metric_args a;                                                                                           \
    memset(&a, 0, sizeof a);                                                                                 \
    a.labels = (HashTable *)&zend_empty_array;                                                               \
    a.ttl_null = true;                                                                                       \
    a.max_age = 86400

#define PARSE_TTL(a) Z_PARAM_DOUBLE_OR_NULL((a).ttl, (a).ttl_null)

/* Each type's parameters after the common ones; for the constructors and register*(). */
#define PARSE_COUNTER(a)                                                                                     \
    PARSE_COMMON(a)                                                                                          \
    Z_PARAM_BOOL((a).exemplars)                                                                              \
    PARSE_TTL(a)
#define PARSE_GAUGE(a)                                                                                       \
    PARSE_COMMON(a)                                                                                          \
    Z_PARAM_STR((a).mode)                                                                                    \
    PARSE_TTL(a)
#define PARSE_HISTOGRAM(a)                                                                                   \
    PARSE_COMMON(a)                                                                                          \
    Z_PARAM_ARRAY_OR_NULL((a).buckets)                                                                       \
    Z_PARAM_ARRAY_OR_NULL((a).native)                                                                        \
    Z_PARAM_BOOL((a).exemplars)                                                                              \
    PARSE_TTL(a)
#define PARSE_SUMMARY(a)                                                                                     \
    PARSE_COMMON(a)                                                                                          \
    Z_PARAM_LONG((a).max_age)                                                                                \
    Z_PARAM_ARRAY_OR_NULL((a).quantiles)                                                                     \
    PARSE_TTL(a)

#define METRIC_CONSTRUCT(cls, init, parse, max)                                                                 \
    PHP_METHOD(cls, __construct)                                                                             \
    {                                                                                                        \
        zval *storage;                                                                                       \
        ARGS_INIT(a);                                                                                        \
        ZEND_PARSE_PARAMETERS_START(4, max)                                                                  \
            Z_PARAM_OBJECT(storage)                                                                          \
            parse(a)                                                                                         \
        ZEND_PARSE_PARAMETERS_END();                                                                         \
        shm_metric *m = THIS_METRIC();                                                                       \
        if (m->constructed) {                                                                                \
            zend_throw_error(NULL, "%s is constructed already", ZSTR_VAL(m->std.ce->name));                \
            RETURN_THROWS();                                                                                 \
        }                                                                                                    \
        if (!init(m, storage, &a)) {                                                                         \
            RETURN_THROWS();                                                                                 \
        }                                                                                                    \
    }

METRIC_CONSTRUCT(Counter, counter_init, PARSE_COUNTER, 7)
METRIC_CONSTRUCT(Gauge, gauge_init, PARSE_GAUGE, 7)
METRIC_CONSTRUCT(Histogram, histogram_init, PARSE_HISTOGRAM, 9)
METRIC_CONSTRUCT(Summary, summary_init, PARSE_SUMMARY, 8)

/* ---- Collector's methods ---------------------------------------------------------------------- */

#define METRIC_READY(m)                                                                                      \
    if (!(m)->ready) {                                                                                 \
        zend_throw_error(NULL, "%s was not constructed", ZSTR_VAL((m)->std.ce->name));                      \
        RETURN_THROWS();                                                                                     \
    }

PHP_METHOD(Collector, getName)
{
    ZEND_PARSE_PARAMETERS_NONE();
    shm_metric *m = THIS_METRIC();
    METRIC_READY(m);
    RETURN_STR_COPY(metric_name(m));
}

PHP_METHOD(Collector, getHelp)
{
    ZEND_PARSE_PARAMETERS_NONE();
    shm_metric *m = THIS_METRIC();
    METRIC_READY(m);
    RETURN_STR_COPY(m->help);
}

PHP_METHOD(Collector, getType)
{
    ZEND_PARSE_PARAMETERS_NONE();
    RETURN_STRING(KIND_NAMES[THIS_METRIC()->kind]);
}

PHP_METHOD(Collector, getLabelNames)
{
    ZEND_PARSE_PARAMETERS_NONE();
    shm_metric *m = THIS_METRIC();
    METRIC_READY(m);
    RETURN_COPY(&m->labels);
}

PHP_METHOD(Collector, getTtl)
{
    ZEND_PARSE_PARAMETERS_NONE();
    shm_metric *m = THIS_METRIC();
    if (m->ttl_ms == 0) {
        RETURN_NULL();
    }
    RETURN_DOUBLE((double)m->ttl_ms / 1000);
}

/* sha1($name . serialize($labelNames)), as PromPHP's */
PHP_METHOD(Collector, getKey)
{
    ZEND_PARSE_PARAMETERS_NONE();
    shm_metric *m = THIS_METRIC();
    METRIC_READY(m);
    zval fn, ser, arg;
    ZVAL_STRING(&fn, "serialize");
    call_user_function(NULL, NULL, &fn, &ser, 1, &m->labels);
    zval_ptr_dtor(&fn);
    if (EG(exception)) {
        RETURN_THROWS();
    }
    zend_string *name = metric_name(m);
    ZVAL_STR(&arg, zend_string_concat2(ZSTR_VAL(name), ZSTR_LEN(name), Z_STRVAL(ser), Z_STRLEN(ser)));
    zval_ptr_dtor(&ser);
    ZVAL_STRING(&fn, "sha1");
    call_user_function(NULL, NULL, &fn, return_value, 1, &arg);
    zval_ptr_dtor(&fn);
    zval_ptr_dtor(&arg);
}

/* ---- the updates -------------------------------------------------------------------------------- */

#define UPDATE_PARAMS_LABELS(labels)                                                                         \
    Z_PARAM_OPTIONAL                                                                                         \
    Z_PARAM_ARRAY(labels)

static zval empty_labels;

/* inc(array $labels = [], ?array $exemplar = null) */
PHP_METHOD(Counter, inc)
{
    zval *labels = &empty_labels;
    zval *exemplar = NULL;
    ZEND_PARSE_PARAMETERS_START(0, 2)
        UPDATE_PARAMS_LABELS(labels)
        Z_PARAM_ARRAY_OR_NULL(exemplar)
    ZEND_PARSE_PARAMETERS_END();
    shm_metric *m = THIS_METRIC();
    METRIC_READY(m);
    metric_update(m, SHMETRICS_OP_COUNTER_ADD, labels, 1.0, exemplar);
}

/* incBy(int|float $count, array $labels = [], ?array $exemplar = null) */
PHP_METHOD(Counter, incBy)
{
    zval *count;
    zval *labels = &empty_labels;
    zval *exemplar = NULL;
    ZEND_PARSE_PARAMETERS_START(1, 3)
        Z_PARAM_NUMBER(count)
        UPDATE_PARAMS_LABELS(labels)
        Z_PARAM_ARRAY_OR_NULL(exemplar)
    ZEND_PARSE_PARAMETERS_END();
    shm_metric *m = THIS_METRIC();
    METRIC_READY(m);
    metric_update(m, SHMETRICS_OP_COUNTER_ADD, labels, zval_get_double(count), exemplar);
}

PHP_METHOD(Gauge, getMode)
{
    ZEND_PARSE_PARAMETERS_NONE();
    shm_metric *m = THIS_METRIC();
    METRIC_READY(m);
    RETURN_STR_COPY(m->mode);
}

/* set(float $value, array $labels = []) */
PHP_METHOD(Gauge, set)
{
    double value;
    zval *labels = &empty_labels;
    ZEND_PARSE_PARAMETERS_START(1, 2)
        Z_PARAM_DOUBLE(value)
        UPDATE_PARAMS_LABELS(labels)
    ZEND_PARSE_PARAMETERS_END();
    shm_metric *m = THIS_METRIC();
    METRIC_READY(m);
    metric_update(m, SHMETRICS_OP_GAUGE_SET, labels, value, NULL);
}

static void gauge_add(INTERNAL_FUNCTION_PARAMETERS, double sign)
{
    zval *labels = &empty_labels;
    ZEND_PARSE_PARAMETERS_START(0, 1)
        UPDATE_PARAMS_LABELS(labels)
    ZEND_PARSE_PARAMETERS_END();
    shm_metric *m = THIS_METRIC();
    METRIC_READY(m);
    metric_update(m, SHMETRICS_OP_GAUGE_ADD, labels, sign, NULL);
}

static void gauge_add_by(INTERNAL_FUNCTION_PARAMETERS, double sign)
{
    zval *value;
    zval *labels = &empty_labels;
    ZEND_PARSE_PARAMETERS_START(1, 2)
        Z_PARAM_NUMBER(value)
        UPDATE_PARAMS_LABELS(labels)
    ZEND_PARSE_PARAMETERS_END();
    shm_metric *m = THIS_METRIC();
    METRIC_READY(m);
    metric_update(m, SHMETRICS_OP_GAUGE_ADD, labels, sign * zval_get_double(value), NULL);
}

PHP_METHOD(Gauge, inc) { gauge_add(INTERNAL_FUNCTION_PARAM_PASSTHRU, 1.0); }
PHP_METHOD(Gauge, dec) { gauge_add(INTERNAL_FUNCTION_PARAM_PASSTHRU, -1.0); }
PHP_METHOD(Gauge, incBy) { gauge_add_by(INTERNAL_FUNCTION_PARAM_PASSTHRU, 1.0); }
PHP_METHOD(Gauge, decBy) { gauge_add_by(INTERNAL_FUNCTION_PARAM_PASSTHRU, -1.0); }

PHP_METHOD(Gauge, setToCurrentTime)
{
    zval *labels = &empty_labels;
    ZEND_PARSE_PARAMETERS_START(0, 1)
        UPDATE_PARAMS_LABELS(labels)
    ZEND_PARSE_PARAMETERS_END();
    shm_metric *m = THIS_METRIC();
    METRIC_READY(m);
    metric_update(m, SHMETRICS_OP_GAUGE_SET_TO_CURRENT_TIME, labels, 0.0, NULL);
}

/* observe(float $value, array $labels = [], ?array $exemplar = null), Histogram's and Summary's */
PHP_METHOD(Histogram, observe)
{
    double value;
    zval *labels = &empty_labels;
    zval *exemplar = NULL;
    ZEND_PARSE_PARAMETERS_START(1, 3)
        Z_PARAM_DOUBLE(value)
        UPDATE_PARAMS_LABELS(labels)
        Z_PARAM_ARRAY_OR_NULL(exemplar)
    ZEND_PARSE_PARAMETERS_END();
    shm_metric *m = THIS_METRIC();
    METRIC_READY(m);
    metric_update(m, SHMETRICS_OP_OBSERVE, labels, value, exemplar);
}

PHP_METHOD(Summary, observe)
{
    double value;
    zval *labels = &empty_labels;
    ZEND_PARSE_PARAMETERS_START(1, 2)
        Z_PARAM_DOUBLE(value)
        UPDATE_PARAMS_LABELS(labels)
    ZEND_PARSE_PARAMETERS_END();
    shm_metric *m = THIS_METRIC();
    METRIC_READY(m);
    metric_update(m, SHMETRICS_OP_OBSERVE, labels, value, NULL);
}

PHP_METHOD(Histogram, getDefaultBuckets)
{
    ZEND_PARSE_PARAMETERS_NONE();
    doubles_array(return_value, DEFAULT_BUCKETS, sizeof DEFAULT_BUCKETS / sizeof(double));
}

PHP_METHOD(Histogram, exponentialBuckets)
{
    double start, factor;
    zend_long n;
    ZEND_PARSE_PARAMETERS_START(3, 3)
        Z_PARAM_DOUBLE(start)
        Z_PARAM_DOUBLE(factor)
        Z_PARAM_LONG(n)
    ZEND_PARSE_PARAMETERS_END();
    zval args[3];
    ZVAL_DOUBLE(&args[0], start);
    ZVAL_DOUBLE(&args[1], factor);
    ZVAL_LONG(&args[2], n);
    if (!call_static("Shmetrics\\Checks", "exponentialBuckets", return_value, 3, args)) {
        RETURN_THROWS();
    }
}

PHP_METHOD(Summary, getDefaultQuantiles)
{
    ZEND_PARSE_PARAMETERS_NONE();
    doubles_array(return_value, DEFAULT_QUANTILES, sizeof DEFAULT_QUANTILES / sizeof(double));
}

/* ---- CollectorRegistry ---------------------------------------------------------------------------- */

typedef struct {
    zval storage;
    HashTable metrics[5]; /* by kind (1..4), then "namespace:name" */
    bool ready;
    zend_object std;
} shm_registry;

static zend_object_handlers registry_handlers;

static inline shm_registry *registry_of(zend_object *o)
{
    return (shm_registry *)((char *)o - XtOffsetOf(shm_registry, std));
}

static zend_object *registry_create(zend_class_entry *ce)
{
    shm_registry *r = zend_object_alloc(sizeof(shm_registry), ce);
    ZVAL_UNDEF(&r->storage);
    for (int k = 1; k <= 4; k++) {
        zend_hash_init(&r->metrics[k], 8, NULL, ZVAL_PTR_DTOR, 0);
    }
    r->ready = false;
    return object_ready(&r->std, ce, &registry_handlers);
}

static void registry_free(zend_object *o)
{
    shm_registry *r = registry_of(o);
    zval_ptr_dtor(&r->storage);
    for (int k = 1; k <= 4; k++) {
        zend_hash_destroy(&r->metrics[k]);
    }
    zend_object_std_dtor(o);
}

static HashTable *registry_gc(zend_object *o, zval **table, int *n)
{
    shm_registry *r = registry_of(o);
    zend_get_gc_buffer *buf = zend_get_gc_buffer_create();
    zend_get_gc_buffer_add_zval(buf, &r->storage);
    for (int k = 1; k <= 4; k++) {
        zval *v;
        ZEND_HASH_FOREACH_VAL(&r->metrics[k], v) {
            zend_get_gc_buffer_add_zval(buf, v);
        } ZEND_HASH_FOREACH_END();
    }
    zend_get_gc_buffer_use(buf, table, n);
    return zend_std_get_properties(o);
}

static HashTable *metric_gc(zend_object *o, zval **table, int *n)
{
    shm_metric *m = metric_of(o);
    *table = &m->storage;
    *n = 1;
    return zend_std_get_properties(o);
}

#define THIS_REGISTRY() registry_of(Z_OBJ_P(ZEND_THIS))

static zend_class_entry *const *const KIND_CLASSES[] = {NULL, &ce_counter, &ce_gauge, &ce_histogram, &ce_summary};
static const metric_init_fn KIND_INITS[] = {NULL, counter_init, gauge_init, histogram_init, summary_init};

static zend_string *registry_id(zend_string *ns, zend_string *name)
{
    return zend_string_concat3(ZSTR_VAL(ns), ZSTR_LEN(ns), ":", 1, ZSTR_VAL(name), ZSTR_LEN(name));
}

static void throw_registry(const char *method, uint32_t kind, zend_string *ns, zend_string *name)
{
    zval args[3];
    ZVAL_STRING(&args[0], KIND_NAMES[kind]);
    ZVAL_STR(&args[1], ns);
    ZVAL_STR(&args[2], name);
    throw_from("Shmetrics\\Checks", method, 3, args);
    zval_ptr_dtor(&args[0]);
}

/*
 * register*() (or_get false) and getOrRegister*() (true): the metric of
 * kind for a, made and registered if this registry has none of its name.
 */
static void registry_register(shm_registry *r, uint32_t kind, metric_args *a, bool or_get, zval *return_value)
{
    zend_string *id = registry_id(a->ns, a->name);
    zval *known = zend_hash_find(&r->metrics[kind], id);
    if (known != NULL) {
        zend_string_release(id);
        if (or_get) {
            RETURN_COPY(known);
        }
        throw_registry("registeredTwice", kind, a->ns, a->name);
        RETURN_THROWS();
    }
    zval obj;
    object_init_ex(&obj, *KIND_CLASSES[kind]);
    if (!KIND_INITS[kind](metric_of(Z_OBJ(obj)), &r->storage, a)) {
        zend_string_release(id);
        zval_ptr_dtor(&obj);
        RETURN_THROWS();
    }
    zend_hash_add_new(&r->metrics[kind], id, &obj);
    zend_string_release(id);
    RETURN_COPY(&obj);
}

#define REGISTRY_READY(r)                                                                                    \
    if (!(r)->ready) {                                                                                       \
        zend_throw_error(NULL, "Shmetrics\\CollectorRegistry was not constructed");                         \
        RETURN_THROWS();                                                                                     \
    }

#define REGISTRY_METHODS(Type, kind, parse, max)                                                             \
    PHP_METHOD(CollectorRegistry, register##Type)                                                            \
    {                                                                                                        \
        ARGS_INIT(a);                                                                                        \
        ZEND_PARSE_PARAMETERS_START(3, max)                                                                  \
            parse(a)                                                                                         \
        ZEND_PARSE_PARAMETERS_END();                                                                         \
        shm_registry *r = THIS_REGISTRY();                                                                   \
        REGISTRY_READY(r);                                                                                   \
        registry_register(r, kind, &a, false, return_value);                                                 \
    }                                                                                                        \
    PHP_METHOD(CollectorRegistry, getOrRegister##Type)                                                       \
    {                                                                                                        \
        ARGS_INIT(a);                                                                                        \
        ZEND_PARSE_PARAMETERS_START(3, max)                                                                  \
            parse(a)                                                                                         \
        ZEND_PARSE_PARAMETERS_END();                                                                         \
        shm_registry *r = THIS_REGISTRY();                                                                   \
        REGISTRY_READY(r);                                                                                   \
        registry_register(r, kind, &a, true, return_value);                                                  \
    }                                                                                                        \
    PHP_METHOD(CollectorRegistry, get##Type)                                                                 \
    {                                                                                                        \
        zend_string *ns, *name;                                                                              \
        ZEND_PARSE_PARAMETERS_START(2, 2)                                                                    \
            Z_PARAM_STR(ns)                                                                                  \
            Z_PARAM_STR(name)                                                                                \
        ZEND_PARSE_PARAMETERS_END();                                                                         \
        shm_registry *r = THIS_REGISTRY();                                                                   \
        zend_string *id = registry_id(ns, name);                                                             \
        zval *known = zend_hash_find(&r->metrics[kind], id);                                                 \
        zend_string_release(id);                                                                             \
        if (known == NULL) {                                                                                 \
            throw_registry("notFound", kind, ns, name);                                                      \
            RETURN_THROWS();                                                                                 \
        }                                                                                                    \
        RETURN_COPY(known);                                                                                  \
    }

REGISTRY_METHODS(Counter, SHMETRICS_KIND_COUNTER, PARSE_COUNTER, 6)
REGISTRY_METHODS(Gauge, SHMETRICS_KIND_GAUGE, PARSE_GAUGE, 6)
REGISTRY_METHODS(Histogram, SHMETRICS_KIND_HISTOGRAM, PARSE_HISTOGRAM, 8)
REGISTRY_METHODS(Summary, SHMETRICS_KIND_SUMMARY, PARSE_SUMMARY, 7)

/* __construct(Shmetrics|string|null $storage = null, bool $registerDefaultMetrics = true) */
PHP_METHOD(CollectorRegistry, __construct)
{
    zval *storage = NULL;
    bool defaults = true;
    ZEND_PARSE_PARAMETERS_START(0, 2)
        Z_PARAM_OPTIONAL
        Z_PARAM_ZVAL(storage)
        Z_PARAM_BOOL(defaults)
    ZEND_PARSE_PARAMETERS_END();
    shm_registry *r = THIS_REGISTRY();
    if (r->ready) {
        zend_throw_error(NULL, "Shmetrics\\CollectorRegistry is constructed already");
        RETURN_THROWS();
    }
    if (storage != NULL && Z_TYPE_P(storage) == IS_OBJECT && Z_OBJCE_P(storage) == ce_storage) {
        ZVAL_COPY(&r->storage, storage);
    } else if (storage == NULL || Z_TYPE_P(storage) == IS_NULL || Z_TYPE_P(storage) == IS_STRING) {
        object_init_ex(&r->storage, ce_storage);
        zend_string *path = storage != NULL && Z_TYPE_P(storage) == IS_STRING ? Z_STR_P(storage) : NULL;
        if (!storage_init(storage_of(Z_OBJ(r->storage)), path, (HashTable *)&zend_empty_array)) {
            zval_ptr_dtor(&r->storage);
            ZVAL_UNDEF(&r->storage);
            RETURN_THROWS();
        }
    } else {
        zend_argument_type_error(1, "must be of type Shmetrics\\Storage\\Shmetrics|string|null, %s given",
            zend_zval_type_name(storage));
        RETURN_THROWS();
    }
    r->ready = true;
    if (defaults) {
        ARGS_INIT(a);
        zval labels, gauge, version;
        array_init(&labels);
        add_next_index_string(&labels, "version");
        a.ns = ZSTR_EMPTY_ALLOC();
        a.name = zend_string_init("php_info", 8, 0);
        a.help = zend_string_init("Information about the PHP environment.", 38, 0);
        a.labels = Z_ARRVAL(labels);
        registry_register(r, SHMETRICS_KIND_GAUGE, &a, true, &gauge);
        zend_string_release(a.name);
        zend_string_release(a.help);
        zval_ptr_dtor(&labels);
        if (EG(exception)) {
            RETURN_THROWS();
        }
        array_init(&version);
        add_next_index_string(&version, PHP_VERSION);
        metric_update(metric_of(Z_OBJ(gauge)), SHMETRICS_OP_GAUGE_SET, &version, 1.0, NULL);
        zval_ptr_dtor(&version);
        zval_ptr_dtor(&gauge);
    }
}

PHP_METHOD(CollectorRegistry, getDefault)
{
    ZEND_PARSE_PARAMETERS_NONE();
    if (Z_TYPE(SHM_G(default_registry)) != IS_OBJECT) {
        zval r;
        object_init_ex(&r, ce_registry);
        zend_call_known_instance_method_with_0_params(ce_registry->constructor, Z_OBJ(r), NULL);
        if (EG(exception)) {
            zval_ptr_dtor(&r);
            RETURN_THROWS();
        }
        ZVAL_COPY_VALUE(&SHM_G(default_registry), &r);
    }
    RETURN_COPY(&SHM_G(default_registry));
}

PHP_METHOD(CollectorRegistry, getStorage)
{
    ZEND_PARSE_PARAMETERS_NONE();
    shm_registry *r = THIS_REGISTRY();
    REGISTRY_READY(r);
    RETURN_COPY(&r->storage);
}

static void call_storage(INTERNAL_FUNCTION_PARAMETERS, const char *method)
{
    ZEND_PARSE_PARAMETERS_NONE();
    shm_registry *r = THIS_REGISTRY();
    REGISTRY_READY(r);
    zend_call_method(Z_OBJ(r->storage), Z_OBJCE(r->storage), NULL, method, strlen(method), return_value, 0, NULL, NULL);
}

PHP_METHOD(CollectorRegistry, getMetricFamilySamples) { call_storage(INTERNAL_FUNCTION_PARAM_PASSTHRU, "collect"); }
PHP_METHOD(CollectorRegistry, wipeStorage) { call_storage(INTERNAL_FUNCTION_PARAM_PASSTHRU, "wipeStorage"); }

/* ---- arginfo ---------------------------------------------------------------------------------- */

#define ARG_STORAGE ZEND_ARG_OBJ_INFO(0, storage, Shmetrics\\Storage\\Shmetrics, 0)
#define ARG_COMMON                                                                                           \
    ZEND_ARG_TYPE_INFO(0, namespace, IS_STRING, 0)                                                           \
    ZEND_ARG_TYPE_INFO(0, name, IS_STRING, 0)                                                                \
    ZEND_ARG_TYPE_INFO(0, help, IS_STRING, 0)                                                                \
    ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, labels, IS_ARRAY, 0, "[]")
#define ARG_TTL ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, ttl, IS_DOUBLE, 1, "null")
#define ARG_EXEMPLARS ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, exemplars, _IS_BOOL, 0, "false")
#define ARGS_COUNTER ARG_COMMON ARG_EXEMPLARS ARG_TTL
#define ARGS_GAUGE ARG_COMMON ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, mode, IS_STRING, 0, "\"shared\"") ARG_TTL
#define ARGS_HISTOGRAM                                                                                       \
    ARG_COMMON                                                                                               \
    ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, buckets, IS_ARRAY, 1, "null")                                   \
    ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, native, IS_ARRAY, 1, "null")                                    \
    ARG_EXEMPLARS ARG_TTL
#define ARGS_SUMMARY                                                                                         \
    ARG_COMMON                                                                                               \
    ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, maxAgeSeconds, IS_LONG, 0, "86400")                             \
    ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, quantiles, IS_ARRAY, 1, "null")                                 \
    ARG_TTL

ZEND_BEGIN_ARG_INFO_EX(ai_counter_construct, 0, 0, 4)
    ARG_STORAGE ARGS_COUNTER
ZEND_END_ARG_INFO()
ZEND_BEGIN_ARG_INFO_EX(ai_gauge_construct, 0, 0, 4)
    ARG_STORAGE ARGS_GAUGE
ZEND_END_ARG_INFO()
ZEND_BEGIN_ARG_INFO_EX(ai_histogram_construct, 0, 0, 4)
    ARG_STORAGE ARGS_HISTOGRAM
ZEND_END_ARG_INFO()
ZEND_BEGIN_ARG_INFO_EX(ai_summary_construct, 0, 0, 4)
    ARG_STORAGE ARGS_SUMMARY
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_OBJ_INFO_EX(ai_register_counter, 0, 3, Shmetrics\\Counter, 0)
    ARGS_COUNTER
ZEND_END_ARG_INFO()
ZEND_BEGIN_ARG_WITH_RETURN_OBJ_INFO_EX(ai_register_gauge, 0, 3, Shmetrics\\Gauge, 0)
    ARGS_GAUGE
ZEND_END_ARG_INFO()
ZEND_BEGIN_ARG_WITH_RETURN_OBJ_INFO_EX(ai_register_histogram, 0, 3, Shmetrics\\Histogram, 0)
    ARGS_HISTOGRAM
ZEND_END_ARG_INFO()
ZEND_BEGIN_ARG_WITH_RETURN_OBJ_INFO_EX(ai_register_summary, 0, 3, Shmetrics\\Summary, 0)
    ARGS_SUMMARY
ZEND_END_ARG_INFO()
#define AI_GET(Type)                                                                                         \
    ZEND_BEGIN_ARG_WITH_RETURN_OBJ_INFO_EX(ai_get_##Type, 0, 2, Shmetrics\\Type, 0)                          \
        ZEND_ARG_TYPE_INFO(0, namespace, IS_STRING, 0)                                                       \
        ZEND_ARG_TYPE_INFO(0, name, IS_STRING, 0)                                                            \
    ZEND_END_ARG_INFO()
AI_GET(Counter)
AI_GET(Gauge)
AI_GET(Histogram)
AI_GET(Summary)

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(ai_string, 0, 0, IS_STRING, 0)
ZEND_END_ARG_INFO()
ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(ai_array, 0, 0, IS_ARRAY, 0)
ZEND_END_ARG_INFO()
ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(ai_ttl, 0, 0, IS_DOUBLE, 1)
ZEND_END_ARG_INFO()
ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(ai_void, 0, 0, IS_VOID, 0)
ZEND_END_ARG_INFO()

#define ARG_LABELS ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, labels, IS_ARRAY, 0, "[]")
#define ARG_EXEMPLAR ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, exemplar, IS_ARRAY, 1, "null")
ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(ai_labels, 0, 0, IS_VOID, 0)
    ARG_LABELS
ZEND_END_ARG_INFO()
ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(ai_labels_exemplar, 0, 0, IS_VOID, 0)
    ARG_LABELS ARG_EXEMPLAR
ZEND_END_ARG_INFO()
ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(ai_count_labels_exemplar, 0, 1, IS_VOID, 0)
    ZEND_ARG_TYPE_MASK(0, count, MAY_BE_LONG | MAY_BE_DOUBLE, NULL)
    ARG_LABELS ARG_EXEMPLAR
ZEND_END_ARG_INFO()
ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(ai_number_labels, 0, 1, IS_VOID, 0)
    ZEND_ARG_TYPE_MASK(0, value, MAY_BE_LONG | MAY_BE_DOUBLE, NULL)
    ARG_LABELS
ZEND_END_ARG_INFO()
ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(ai_float_labels, 0, 1, IS_VOID, 0)
    ZEND_ARG_TYPE_INFO(0, value, IS_DOUBLE, 0)
    ARG_LABELS
ZEND_END_ARG_INFO()
ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(ai_float_labels_exemplar, 0, 1, IS_VOID, 0)
    ZEND_ARG_TYPE_INFO(0, value, IS_DOUBLE, 0)
    ARG_LABELS ARG_EXEMPLAR
ZEND_END_ARG_INFO()
ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(ai_exponential, 0, 3, IS_ARRAY, 0)
    ZEND_ARG_TYPE_INFO(0, start, IS_DOUBLE, 0)
    ZEND_ARG_TYPE_INFO(0, growthFactor, IS_DOUBLE, 0)
    ZEND_ARG_TYPE_INFO(0, numberOfBuckets, IS_LONG, 0)
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_INFO_EX(ai_registry_construct, 0, 0, 0)
    ZEND_ARG_OBJ_TYPE_MASK(0, storage, Shmetrics\\Storage\\Shmetrics, MAY_BE_STRING | MAY_BE_NULL, "null")
    ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, registerDefaultMetrics, _IS_BOOL, 0, "true")
ZEND_END_ARG_INFO()
ZEND_BEGIN_ARG_WITH_RETURN_OBJ_INFO_EX(ai_registry_default, 0, 0, Shmetrics\\CollectorRegistry, 0)
ZEND_END_ARG_INFO()
ZEND_BEGIN_ARG_WITH_RETURN_OBJ_INFO_EX(ai_registry_storage, 0, 0, Shmetrics\\Storage\\Shmetrics, 0)
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_OBJ_INFO_EX(ai_open, 0, 2, Shmetrics\\Ext\\Store, 0)
    ZEND_ARG_TYPE_INFO(0, path, IS_STRING, 0)
    ZEND_ARG_TYPE_INFO(0, options, IS_ARRAY, 0)
ZEND_END_ARG_INFO()
ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(ai_wipe, 0, 1, IS_LONG, 0)
    ZEND_ARG_OBJ_INFO(0, store, Shmetrics\\Ext\\Store, 0)
ZEND_END_ARG_INFO()
ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(ai_render, 0, 3, IS_LONG, 0)
    ZEND_ARG_OBJ_INFO(0, store, Shmetrics\\Ext\\Store, 0)
    ZEND_ARG_TYPE_INFO(0, format, IS_LONG, 0)
    ZEND_ARG_INFO(1, out)
ZEND_END_ARG_INFO()
ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(ai_content_type, 0, 1, IS_STRING, 1)
    ZEND_ARG_TYPE_INFO(0, format, IS_LONG, 0)
ZEND_END_ARG_INFO()
ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(ai_store_out, 0, 2, IS_LONG, 0)
    ZEND_ARG_OBJ_INFO(0, store, Shmetrics\\Ext\\Store, 0)
    ZEND_ARG_INFO(1, out)
ZEND_END_ARG_INFO()

static const zend_function_entry ext_functions[] = {
    ZEND_NS_FE("Shmetrics\\Ext", open, ai_open)
    ZEND_NS_FE("Shmetrics\\Ext", wipe, ai_wipe)
    ZEND_NS_FE("Shmetrics\\Ext", render, ai_render)
    ZEND_NS_FE("Shmetrics\\Ext", content_type, ai_content_type)
    ZEND_NS_FE("Shmetrics\\Ext", stats, ai_store_out)
    ZEND_NS_FE("Shmetrics\\Ext", snapshot, ai_store_out)
    ZEND_NS_FE("Shmetrics\\Ext", last_error, ai_string)
    ZEND_NS_FE("Shmetrics\\Ext", version, ai_string)
    PHP_FE_END
};

ZEND_BEGIN_ARG_INFO_EX(ai_storage_construct, 0, 0, 0)
    ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, path, IS_STRING, 1, "null")
    ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, options, IS_ARRAY, 0, "[]")
ZEND_END_ARG_INFO()
ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(ai_format_string, 0, 0, IS_STRING, 0)
    ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, format, IS_LONG, 0, "Shmetrics\\Storage\\Shmetrics::FORMAT_TEXT")
ZEND_END_ARG_INFO()

static const zend_function_entry storage_methods[] = {
    PHP_ME(Storage, __construct, ai_storage_construct, ZEND_ACC_PUBLIC)
    PHP_ME(Storage, path, ai_string, ZEND_ACC_PUBLIC)
    PHP_ME(Storage, wipeStorage, ai_void, ZEND_ACC_PUBLIC)
    PHP_ME(Storage, render, ai_format_string, ZEND_ACC_PUBLIC)
    PHP_ME(Storage, contentType, ai_format_string, ZEND_ACC_PUBLIC)
    PHP_ME(Storage, collect, ai_array, ZEND_ACC_PUBLIC)
    PHP_ME(Storage, stats, ai_array, ZEND_ACC_PUBLIC)
    PHP_FE_END
};

static const zend_function_entry collector_methods[] = {
    PHP_ME(Collector, getName, ai_string, ZEND_ACC_PUBLIC)
    PHP_ME(Collector, getHelp, ai_string, ZEND_ACC_PUBLIC)
    PHP_ME(Collector, getType, ai_string, ZEND_ACC_PUBLIC)
    PHP_ME(Collector, getLabelNames, ai_array, ZEND_ACC_PUBLIC)
    PHP_ME(Collector, getKey, ai_string, ZEND_ACC_PUBLIC)
    PHP_ME(Collector, getTtl, ai_ttl, ZEND_ACC_PUBLIC)
    PHP_FE_END
};

static const zend_function_entry counter_methods[] = {
    PHP_ME(Counter, __construct, ai_counter_construct, ZEND_ACC_PUBLIC)
    PHP_ME(Counter, inc, ai_labels_exemplar, ZEND_ACC_PUBLIC)
    PHP_ME(Counter, incBy, ai_count_labels_exemplar, ZEND_ACC_PUBLIC)
    PHP_FE_END
};

static const zend_function_entry gauge_methods[] = {
    PHP_ME(Gauge, __construct, ai_gauge_construct, ZEND_ACC_PUBLIC)
    PHP_ME(Gauge, getMode, ai_string, ZEND_ACC_PUBLIC)
    PHP_ME(Gauge, set, ai_float_labels, ZEND_ACC_PUBLIC)
    PHP_ME(Gauge, inc, ai_labels, ZEND_ACC_PUBLIC)
    PHP_ME(Gauge, incBy, ai_number_labels, ZEND_ACC_PUBLIC)
    PHP_ME(Gauge, dec, ai_labels, ZEND_ACC_PUBLIC)
    PHP_ME(Gauge, decBy, ai_number_labels, ZEND_ACC_PUBLIC)
    PHP_ME(Gauge, setToCurrentTime, ai_labels, ZEND_ACC_PUBLIC)
    PHP_FE_END
};

static const zend_function_entry histogram_methods[] = {
    PHP_ME(Histogram, __construct, ai_histogram_construct, ZEND_ACC_PUBLIC)
    PHP_ME(Histogram, getDefaultBuckets, ai_array, ZEND_ACC_PUBLIC | ZEND_ACC_STATIC)
    PHP_ME(Histogram, exponentialBuckets, ai_exponential, ZEND_ACC_PUBLIC | ZEND_ACC_STATIC)
    PHP_ME(Histogram, observe, ai_float_labels_exemplar, ZEND_ACC_PUBLIC)
    PHP_FE_END
};

static const zend_function_entry summary_methods[] = {
    PHP_ME(Summary, __construct, ai_summary_construct, ZEND_ACC_PUBLIC)
    PHP_ME(Summary, getDefaultQuantiles, ai_array, ZEND_ACC_PUBLIC | ZEND_ACC_STATIC)
    PHP_ME(Summary, observe, ai_float_labels, ZEND_ACC_PUBLIC)
    PHP_FE_END
};

static const zend_function_entry registry_methods[] = {
    PHP_ME(CollectorRegistry, __construct, ai_registry_construct, ZEND_ACC_PUBLIC)
    PHP_ME(CollectorRegistry, getDefault, ai_registry_default, ZEND_ACC_PUBLIC | ZEND_ACC_STATIC)
    PHP_ME(CollectorRegistry, getStorage, ai_registry_storage, ZEND_ACC_PUBLIC)
    PHP_ME(CollectorRegistry, getMetricFamilySamples, ai_array, ZEND_ACC_PUBLIC)
    PHP_ME(CollectorRegistry, wipeStorage, ai_void, ZEND_ACC_PUBLIC)
    PHP_ME(CollectorRegistry, registerCounter, ai_register_counter, ZEND_ACC_PUBLIC)
    PHP_ME(CollectorRegistry, getCounter, ai_get_Counter, ZEND_ACC_PUBLIC)
    PHP_ME(CollectorRegistry, getOrRegisterCounter, ai_register_counter, ZEND_ACC_PUBLIC)
    PHP_ME(CollectorRegistry, registerGauge, ai_register_gauge, ZEND_ACC_PUBLIC)
    PHP_ME(CollectorRegistry, getGauge, ai_get_Gauge, ZEND_ACC_PUBLIC)
    PHP_ME(CollectorRegistry, getOrRegisterGauge, ai_register_gauge, ZEND_ACC_PUBLIC)
    PHP_ME(CollectorRegistry, registerHistogram, ai_register_histogram, ZEND_ACC_PUBLIC)
    PHP_ME(CollectorRegistry, getHistogram, ai_get_Histogram, ZEND_ACC_PUBLIC)
    PHP_ME(CollectorRegistry, getOrRegisterHistogram, ai_register_histogram, ZEND_ACC_PUBLIC)
    PHP_ME(CollectorRegistry, registerSummary, ai_register_summary, ZEND_ACC_PUBLIC)
    PHP_ME(CollectorRegistry, getSummary, ai_get_Summary, ZEND_ACC_PUBLIC)
    PHP_ME(CollectorRegistry, getOrRegisterSummary, ai_register_summary, ZEND_ACC_PUBLIC)
    PHP_FE_END
};

/* ---- the module ---------------------------------------------------------------------------------- */

/* The arrays of declare_array_constant(), freed at MSHUTDOWN. */
static HashTable *array_constants[2];
static int array_constant_count;

/* A persistent, immutable array for a class constant of an internal class. */
static void declare_array_constant(zend_class_entry *ce, const char *name, const char *const *keys, size_t n,
    bool list)
{
    HashTable *ht = pemalloc(sizeof(HashTable), 1);
    zend_hash_init(ht, (uint32_t)n, NULL, NULL, 1);
    for (size_t i = 0; i < n; i++) {
        zval v;
        if (list) {
            ZVAL_INTERNED_STR(&v, zend_string_init_interned(keys[i], strlen(keys[i]), 1));
            zend_hash_next_index_insert(ht, &v);
        } else {
            ZVAL_LONG(&v, (zend_long)i + 1);
            zend_hash_add(ht, zend_string_init_interned(keys[i], strlen(keys[i]), 1), &v);
        }
    }
    ZEND_ASSERT(array_constant_count < (int)(sizeof array_constants / sizeof array_constants[0]));
    array_constants[array_constant_count++] = ht;
    GC_SET_REFCOUNT(ht, 2);
    /* persistent (as zend_hash_init made it): zend_hash_destroy() at MSHUTDOWN frees it with free() */
    GC_TYPE_INFO(ht) = GC_ARRAY | ((IS_ARRAY_IMMUTABLE | GC_NOT_COLLECTABLE | GC_PERSISTENT) << GC_FLAGS_SHIFT);
    zval zv;
    ZVAL_ARR(&zv, ht);
    Z_TYPE_FLAGS(zv) = 0;
    zend_declare_class_constant_ex(ce, zend_string_init_interned(name, strlen(name), 1), &zv, ZEND_ACC_PUBLIC, NULL);
}

static zend_class_entry *register_class(const char *name, const zend_function_entry *methods,
    zend_class_entry *parent, uint32_t flags, zend_object *(*create)(zend_class_entry *))
{
    zend_class_entry tmp;
    INIT_CLASS_ENTRY_EX(tmp, name, strlen(name), methods);
    zend_class_entry *ce = parent ? zend_register_internal_class_ex(&tmp, parent) : zend_register_internal_class(&tmp);
    ce->ce_flags |= flags;
    if (create) ce->create_object = create;
    return ce;
}

static const char *const NATIVE_OPTIONS[] = {"bucketFactor", "zeroThreshold", "maxBucketNumber"};

static PHP_GINIT_FUNCTION(shmetrics)
{
    ZVAL_UNDEF(&shmetrics_globals->default_registry);
}

PHP_MINIT_FUNCTION(shmetrics)
{
    REGISTER_INI_ENTRIES();
    pthread_atfork(NULL, NULL, shm_lib_atfork_child);
    ZVAL_EMPTY_ARRAY(&empty_labels);
    zend_hash_init(&opened, 4, NULL, opened_free, 1);
#ifndef ZTS
    zend_hash_init(&defs, 16, NULL, defs_free, 1);
#endif

    ce_store = register_class("Shmetrics\\Ext\\Store", NULL, NULL, ZEND_ACC_FINAL | ZEND_ACC_NO_DYNAMIC_PROPERTIES
        | ZEND_ACC_NOT_SERIALIZABLE, store_create);
    memcpy(&store_handlers, zend_get_std_object_handlers(), sizeof store_handlers);
    store_handlers.offset = XtOffsetOf(shm_store, std);
    store_handlers.get_constructor = store_get_constructor;
    store_handlers.clone_obj = NULL;

    memcpy(&storage_handlers, zend_get_std_object_handlers(), sizeof storage_handlers);
    storage_handlers.offset = XtOffsetOf(shm_storage, std);
    storage_handlers.free_obj = storage_free;
    storage_handlers.clone_obj = NULL;
    ce_storage = register_class("Shmetrics\\Storage\\Shmetrics", storage_methods, NULL, ZEND_ACC_FINAL
        | ZEND_ACC_NOT_SERIALIZABLE, storage_create);
    zend_declare_class_constant_long(ce_storage, "FORMAT_TEXT", sizeof("FORMAT_TEXT") - 1, 0);
    zend_declare_class_constant_long(ce_storage, "FORMAT_OPENMETRICS", sizeof("FORMAT_OPENMETRICS") - 1, 1);
    /* In this order: STORAGE_PROP_FFI, STORAGE_PROP_STORE */
    zend_declare_property_null(ce_storage, "ffi", sizeof("ffi") - 1, ZEND_ACC_PUBLIC);
    zend_declare_property_null(ce_storage, "store", sizeof("store") - 1, ZEND_ACC_PUBLIC);

    memcpy(&metric_handlers, zend_get_std_object_handlers(), sizeof metric_handlers);
    metric_handlers.offset = XtOffsetOf(shm_metric, std);
    metric_handlers.free_obj = metric_free;
    metric_handlers.clone_obj = NULL;
    metric_handlers.get_gc = metric_gc;
    uint32_t sealed = ZEND_ACC_NO_DYNAMIC_PROPERTIES | ZEND_ACC_NOT_SERIALIZABLE;
    ce_collector = register_class("Shmetrics\\Collector", collector_methods, NULL, ZEND_ACC_ABSTRACT | sealed,
        metric_create);
    ce_counter = register_class("Shmetrics\\Counter", counter_methods, ce_collector, ZEND_ACC_FINAL | sealed, NULL);
    ce_gauge = register_class("Shmetrics\\Gauge", gauge_methods, ce_collector, ZEND_ACC_FINAL | sealed, NULL);
    ce_histogram = register_class("Shmetrics\\Histogram", histogram_methods, ce_collector, ZEND_ACC_FINAL | sealed, NULL);
    ce_summary = register_class("Shmetrics\\Summary", summary_methods, ce_collector, ZEND_ACC_FINAL | sealed, NULL);
    zend_declare_class_constant_string(ce_counter, "TYPE", 4, "counter");
    zend_declare_class_constant_string(ce_gauge, "TYPE", 4, "gauge");
    zend_declare_class_constant_string(ce_histogram, "TYPE", 4, "histogram");
    zend_declare_class_constant_string(ce_summary, "TYPE", 4, "summary");
    declare_array_constant(ce_gauge, "MODES", GAUGE_MODES + 1, GAUGE_MODE_COUNT - 1, false);
    declare_array_constant(ce_histogram, "NATIVE_OPTIONS", NATIVE_OPTIONS, 3, true);

    memcpy(&registry_handlers, zend_get_std_object_handlers(), sizeof registry_handlers);
    registry_handlers.offset = XtOffsetOf(shm_registry, std);
    registry_handlers.free_obj = registry_free;
    registry_handlers.clone_obj = NULL;
    registry_handlers.get_gc = registry_gc;
    ce_registry = register_class("Shmetrics\\CollectorRegistry", registry_methods, NULL, sealed, registry_create);

    return SUCCESS;
}

PHP_MSHUTDOWN_FUNCTION(shmetrics)
{
    UNREGISTER_INI_ENTRIES();
    zend_hash_destroy(&opened);
    /* Immutable: the class constants that hold them are not refcounted, and never read after MSHUTDOWN. */
    for (int i = 0; i < array_constant_count; i++) {
        zend_hash_destroy(array_constants[i]);
        pefree(array_constants[i], 1);
    }
    array_constant_count = 0;
#ifndef ZTS
    zend_hash_destroy(&defs);
#endif
    return SUCCESS;
}

PHP_RSHUTDOWN_FUNCTION(shmetrics)
{
    zval_ptr_dtor(&SHM_G(default_registry));
    ZVAL_UNDEF(&SHM_G(default_registry));
    return SUCCESS;
}

PHP_MINFO_FUNCTION(shmetrics)
{
    php_info_print_table_start();
    php_info_print_table_header(2, "shmetrics support", "enabled");
    php_info_print_table_row(2, "extension version", PHP_SHMETRICS_VERSION);
    php_info_print_table_row(2, "library", shm_lib_ready() ? lib.shmetrics_version() : "not loaded yet");
    php_info_print_table_end();
    DISPLAY_INI_ENTRIES();
}

zend_module_entry shmetrics_module_entry = {
    STANDARD_MODULE_HEADER,
    "shmetrics",
    ext_functions,
    PHP_MINIT(shmetrics),
    PHP_MSHUTDOWN(shmetrics),
    NULL,
    PHP_RSHUTDOWN(shmetrics),
    PHP_MINFO(shmetrics),
    PHP_SHMETRICS_VERSION,
    PHP_MODULE_GLOBALS(shmetrics),
    PHP_GINIT(shmetrics),
    NULL,
    NULL,
    STANDARD_MODULE_PROPERTIES_EX
};

#ifdef COMPILE_DL_SHMETRICS
ZEND_GET_MODULE(shmetrics)
#endif

#endif /* SHMETRICS_LOADER_TEST */
