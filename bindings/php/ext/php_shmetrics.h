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
 * shmetrics_update); the extension only moves PHP values into C arguments.
 * Every message of a refusal comes from the PHP class Shmetrics\Checks (or
 * Shmetrics\Native::exception()), called on the slow paths only, so both
 * implementations say the same.
 *
 * The library is loaded at run time, as the FFI binding loads it: the ini
 * setting shmetrics.library, else $SHMETRICS_LIBRARY, else the SONAME
 * libshmetrics.so.1 on the system's library path, then libshmetrics.so;
 * a library of another major version is refused. Its declarations are the
 * package's own copy (include/shmetrics.cdef.h).
 *
 * The files, by concern (this header declares what they share):
 *   shmetrics.stub.php     the PHP-visible API; shmetrics_arginfo.h is generated from it (gen-arginfo.sh)
 *   shmetrics_ext.c        the module: MINIT (the classes, from the arginfo), MSHUTDOWN, RSHUTDOWN, MINFO, the INI
 *   shmetrics_lib.c/.h     loading the library (dlopen), once per process, ZTS-safe; plain C
 *   shmetrics_calls.c      what the extension asks of PHP: the package's classes (Checks, Native: every
 *                          refusal's message), getenv(), the library's loading with the ini setting
 *   shmetrics_store.c      Shmetrics\Ext\Store and the Shmetrics\Ext\ functions: the process's store handles
 *   shmetrics_storage.c    Shmetrics\Storage\Shmetrics
 *   shmetrics_metric.c     a metric's object: its construction (by `new` and the registry) and its updates
 *   shmetrics_defs.c       registering a metric's family: the process's definitions cache and series handles
 *   shmetrics_collector.c  the methods and constants of Collector, Counter, Gauge, Histogram, Summary
 *   shmetrics_registry.c   Shmetrics\CollectorRegistry
 */
#ifndef PHP_SHMETRICS_H
#define PHP_SHMETRICS_H

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "php.h"
#include "Zend/zend_exceptions.h"
#include "Zend/zend_interfaces.h"
#include "Zend/zend_smart_str.h"

#include "shmetrics_lib.h"

#define PHP_SHMETRICS_VERSION "1.0.0"

extern zend_module_entry shmetrics_module_entry;
#define phpext_shmetrics_ptr &shmetrics_module_entry

#if defined(ZTS) && defined(COMPILE_DL_SHMETRICS)
ZEND_TSRMLS_CACHE_EXTERN()
#endif

/* Internal to the extension's shared object: direct accesses, not through the GOT or the PLT. */
#pragma GCC visibility push(hidden)

ZEND_BEGIN_MODULE_GLOBALS(shmetrics)
    zval default_registry; /* CollectorRegistry::getDefault(), per request */
ZEND_END_MODULE_GLOBALS(shmetrics)
ZEND_EXTERN_MODULE_GLOBALS(shmetrics)
#define SHM_G(v) ZEND_MODULE_GLOBALS_ACCESSOR(shmetrics, v)

/* The classes, registered by MINIT (shmetrics_ext.c); each defined in the file of its class. */
extern zend_class_entry *shm_ce_store, *shm_ce_storage, *shm_ce_collector, *shm_ce_counter, *shm_ce_gauge,
    *shm_ce_histogram, *shm_ce_summary, *shm_ce_registry;

/* Each class's C side, set up by MINIT once the class is registered; and their MSHUTDOWNs. */
void shm_store_minit(void);
void shm_store_mshutdown(void);
void shm_storage_minit(void);
void shm_metric_minit(void);
void shm_collector_minit(void);
void shm_defs_minit(void);
void shm_defs_mshutdown(void);
void shm_registry_minit(void);

/* A persistent, immutable array constant of an internal class (shmetrics_ext.c): names => 1..n, or a list. */
void shm_declare_array_constant(zend_class_entry *ce, const char *name, const char *const *keys, size_t n,
    bool list);

/* ---- shmetrics_calls.c: calling the PHP side (slow paths only) -------------------------------------- */

/* The class name, autoloaded if needed; NULL when it threw. */
zend_class_entry *shm_php_class(const char *name);
/* Calls the static method $class::$method(...$argv) into ret; false when it threw. */
bool shm_call_static(const char *class_name, const char *method, zval *ret, uint32_t argc, zval *argv);
/* Throws the exception that $class::$method(...$argv) returns. */
void shm_throw_from(const char *class_name, const char *method, uint32_t argc, zval *argv);
/* Throws Native::exception($rc, $context); releases context. */
void shm_throw_rc(uint32_t rc, zend_string *context);
/* Throws a Shmetrics\Exception\StorageException. */
void shm_throw_storage(const char *message);
/* The environment variable NAME as PHP's getenv() reads it; NULL when unset. */
zend_string *shm_env(const char *name, size_t len);
/* Loads the library, through shm_load(); false when it threw. */
bool shm_load_slow(void);

/* Whether the library is loaded, by this call if needed; false when it threw. */
static zend_always_inline bool shm_load(void)
{
    return EXPECTED(shm_lib_ready()) || shm_load_slow();
}

/* Initialises the zend_object std of a new object of class ce with handlers h; returns it. */
static inline zend_object *shm_object_ready(zend_object *std, zend_class_entry *ce, const zend_object_handlers *h)
{
    zend_object_std_init(std, ce);
    object_properties_init(std, ce);
    std->handlers = h;
    return std;
}

/* The destructor of a table of pemalloc'd pointers. */
static inline void shm_ptr_pefree(zval *v)
{
    pefree(Z_PTR_P(v), 1);
}

/* An exposition format as the C ABI's u32 (Checks::format()): UINT32_MAX, no format, unless a PHP one. */
static inline uint32_t format_of(zend_long format)
{
    /* PHP's formats, text and OpenMetrics (as Checks::format): the library's
     * others are other bindings' page shapes. */
    return format == 0 || format == 1 ? (uint32_t)format : UINT32_MAX;
}

/* A format for Shmetrics\Ext\render(), the adapter's call: PHP's pages, and
 * PromPHP's series in columns (SHMETRICS_FORMAT_PROMPHP_SERIES, _SORTED);
 * UINT32_MAX for any other. */
static inline uint32_t ext_format_of(zend_long format)
{
    return format == 3 || format == 4 ? (uint32_t)format : format_of(format);
}

/* ---- shmetrics_store.c: the process's store handles ------------------------------------------------ */

/* The process's handle of the store at path, opened if needed; NULL when it threw. */
shmetrics_store *shm_store_open(zend_string *path, HashTable *options);
/* Checks::storeOptions($options): false when it threw (an unknown option, a value of the wrong type or range). */
bool shm_store_options_ok(HashTable *options);
/* A new Shmetrics\Ext\Store of st into out. */
void shm_store_object(zval *out, shmetrics_store *st);
/* The store's statistics as an array into out; the result code. */
uint32_t shm_stats_array(shmetrics_store *st, zval *out);

/* ---- shmetrics_storage.c: Shmetrics\Storage\Shmetrics ---------------------------------------------- */

typedef struct {
    shmetrics_store *st; /* NULL until constructed */
    zend_string *path;
    zend_object std;
} shm_storage;

static inline shm_storage *storage_of(zend_object *o)
{
    return (shm_storage *)((char *)o - XtOffsetOf(shm_storage, std));
}

/* Opens the store for a new storage object; path NULL for the default. False when it threw. */
bool shm_storage_init(shm_storage *s, zend_string *path, HashTable *options);

/* ---- shmetrics_metric.c: a metric ---------------------------------------------------------------- */

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
    zend_string *name; /* the full name: made when needed (shm_metric_name) if def has it */
    zend_string *help;
    zend_string *what; /* "counter app_requests", for messages: made when one needs it (shm_metric_what) */
    zval labels;       /* list<string>, the label names */
    zval storage;      /* the Storage\Shmetrics */
    zval native;       /* a histogram's [factor, threshold, max buckets] or null */
    zend_string *mode; /* a gauge's mode */
    zend_object std;
} shm_metric;

static inline shm_metric *metric_of(zend_object *o)
{
    return (shm_metric *)((char *)o - XtOffsetOf(shm_metric, std));
}

#define THIS_METRIC() metric_of(Z_OBJ_P(ZEND_THIS))

/* The kinds' names, by SHMETRICS_KIND_* (0: "unknown"). */
static const char *const SHM_KIND_NAMES[] = {"unknown", "counter", "gauge", "histogram", "summary"};

/* The gauge modes' names, by SHMETRICS_GAUGE_* (from 1). */
static const char *const SHM_GAUGE_MODES[] = {NULL, "all", "liveall", "sum", "livesum", "max", "livemax", "min",
    "livemin", "mostrecent", "livemostrecent", "shared", "liveaverage"};
#define SHM_GAUGE_MODE_COUNT (sizeof SHM_GAUGE_MODES / sizeof SHM_GAUGE_MODES[0])

static const double SHM_DEFAULT_BUCKETS[] = {0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0,
    7.5, 10.0};
static const double SHM_DEFAULT_QUANTILES[] = {0.01, 0.05, 0.5, 0.95, 0.99};

/* m's full name: namespace_name (made from its definition's when needed). */
zend_string *shm_metric_name(shm_metric *m);
/* "counter app_requests", for messages (slow paths only). */
zend_string *shm_metric_what(shm_metric *m);
/* Makes update op of v on the series of $labels, with an exemplar if not NULL. */
void shm_metric_update(shm_metric *m, uint32_t op, zval *labels, double v, zval *exemplar);

/* The arguments of a constructor, and of the registry's register*() (zend_parse_parameters'). */
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

/* The constructors, shared by `new` and the registry: false when they threw. */
typedef bool (*metric_init_fn)(shm_metric *, zval *, metric_args *);
bool shm_counter_init(shm_metric *m, zval *storage, metric_args *a);
bool shm_gauge_init(shm_metric *m, zval *storage, metric_args *a);
bool shm_histogram_init(shm_metric *m, zval *storage, metric_args *a);
bool shm_summary_init(shm_metric *m, zval *storage, metric_args *a);

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

/* ---- shmetrics_defs.c: registering a metric's family ----------------------------------------------- */

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

/* Registers the family of *m (its kind-specific fields, name, help and labels set); false when it threw. */
bool shm_metric_register(shm_metric *m, zend_string *ns, zend_string *name, const shm_numbers *bounds,
    const shm_numbers *quants);

#ifndef ZTS
/* The name of the definition d (persistent). */
zend_string *shm_def_name(const struct shm_def *d);

/*
 * Makes update op of v through d's handle of the series of the label
 * values joined in key; false when the update must go through
 * shmetrics_update (shmetrics_defs.c says when).
 */
bool shm_def_update(shm_metric *m, struct shm_def *d, uint32_t op, const char *key, size_t len, double v,
    uint32_t *rc, const shmetrics_series **used);

/* The handle updates of the ops, by op (SHMETRICS_OP_*). */
typedef shmetrics_result (*series_op_fn)(const shmetrics_store *, const shmetrics_series *, double);

static inline shmetrics_result op_set_to_current_time(const shmetrics_store *st, const shmetrics_series *s, double v)
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
#endif

#pragma GCC visibility pop

#endif /* PHP_SHMETRICS_H */
