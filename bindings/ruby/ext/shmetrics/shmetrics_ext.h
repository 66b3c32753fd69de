/*
 * shmetrics_ext.h: what the files of the gem's native part share.
 *
 *   shmetrics.c     Init, the library's functions (Native.load), errors,
 *                   integer conversions
 *   store.c         Shmetrics::Store
 *   snapshot.c      Store#snapshot
 *   family.c        Shmetrics::Family and Shmetrics::Series: the label
 *                   cache, the update path, label values as UTF-8
 *   series_cache.c  the StatsD facade's series cache
 *
 * The update path's last step (series_apply) is inline here: the StatsD
 * cache's updates share it without a call.
 */
#ifndef SHMETRICS_EXT_H
#define SHMETRICS_EXT_H

#include <ruby.h>
#include <ruby/encoding.h>
#include <dlfcn.h>
#include <string.h>

#include "shmetrics.h"

/* Everything the files share stays inside the extension's .so: Ruby
 * loads extensions with RTLD_GLOBAL, and an exported `L` or `check`
 * could bind to another library's symbol of that name. Only
 * Init_shmetrics_ext is exported. */
#pragma GCC visibility push(hidden)

/* ---------------------------------------------------------------------
 * The library's functions, filled in by Native.load.
 */
#define SHM_FUNCS(X)                                                           \
    X(shmetrics_strerror)                                                      \
    X(shmetrics_last_error)                                                    \
    X(shmetrics_version)                                                       \
    X(shmetrics_version_major)                                                 \
    X(shmetrics_options_default)                                               \
    X(shmetrics_store_open)                                                    \
    X(shmetrics_store_close)                                                   \
    X(shmetrics_store_reset)                                                   \
    X(shmetrics_store_wipe)                                                    \
    X(shmetrics_store_release_slot)                                            \
    X(shmetrics_store_path_now)                                                \
    X(shmetrics_store_stats)                                                   \
    X(shmetrics_register)                                                      \
    X(shmetrics_series_get)                                                    \
    X(shmetrics_series_place)                                                  \
    X(shmetrics_series_is_placed)                                              \
    X(shmetrics_series_delete)                                                 \
    X(shmetrics_family_clear)                                                  \
    X(shmetrics_counter_add)                                                   \
    X(shmetrics_gauge_set)                                                     \
    X(shmetrics_gauge_add)                                                     \
    X(shmetrics_gauge_set_to_current_time)                                     \
    X(shmetrics_observe)                                                       \
    X(shmetrics_counter_add_exemplar)                                          \
    X(shmetrics_observe_exemplar)                                              \
    X(shmetrics_render_alloc)                                                  \
    X(shmetrics_render_families_alloc)                                         \
    X(shmetrics_buf_data)                                                      \
    X(shmetrics_buf_len)                                                       \
    X(shmetrics_buf_free)                                                      \
    X(shmetrics_format_content_type)                                           \
    X(shmetrics_negotiate)                                                     \
    X(shmetrics_snapshot_take)                                                 \
    X(shmetrics_snapshot_family_count)                                         \
    X(shmetrics_snapshot_family)                                               \
    X(shmetrics_snapshot_series)                                               \
    X(shmetrics_snapshot_free)

struct shm_lib {
#define X(f) __typeof__(f) *f;
    SHM_FUNCS(X)
#undef X
};
extern struct shm_lib L;
extern int loaded;

extern VALUE mShmetrics, eError, eLibraryError, eLibraryVersionError;
extern VALUE error_classes[105];

/* Errors (shmetrics.c). */
NORETURN(void raise_rc(shmetrics_result rc));
void require_loaded(void);
static inline void check(shmetrics_result rc)
{
    if (rc != SHMETRICS_OK)
        raise_rc(rc);
}

/* Integers from Ruby, never wrapped or truncated (shmetrics.c). */
uint64_t int_u64(VALUE v, uint64_t max, const char *what);
int64_t int_i64(VALUE v, const char *what);

/* Stores (store.c). */
typedef struct store_s {
    struct shmetrics_store *ptr;
    VALUE path;
    struct shmetrics_options opts;
    /* Bumped by every reopen: families registered under an older
     * generation register again before their next update. */
    unsigned long gen;
    /* Every opened store of the process, for Store.__check_all: a list
     * in C memory, with a C copy of the path, so that walking it never
     * touches a Ruby object (a store the GC found dead but has not freed
     * yet must not be handed back to Ruby; Ruby 3.1's WeakMap#keys
     * did, and the next call crashed). */
    char *cpath;
    size_t cpath_len;
    struct store_s *prev, *next;
} store_t;

store_t *get_store(VALUE obj);
store_t *open_store(VALUE obj);
VALUE store_snapshot(int argc, VALUE *argv, VALUE self); /* snapshot.c */

/* Families and series (family.c). */
enum { OP_COUNTER_ADD, OP_GAUGE_SET, OP_GAUGE_ADD, OP_OBSERVE, OP_SET_TO_CURRENT_TIME };

/* Families with at most this many labels use the identity memo. */
#define MEMO_LABELS 4
#define MEMO_SIZE 64

struct memo_entry {
    VALUE values[MEMO_LABELS]; /* 0 when the entry is empty */
    VALUE handle;
};

/* A family's definition, checked once by Family#__init: what
 * family_register gives the library (again after a wipe or a reopen). */
struct family_def {
    VALUE name, help, unit;   /* frozen Strings; unit may be nil */
    VALUE buckets, quantiles; /* frozen Arrays of Floats, or nil */
    uint32_t kind, gauge_mode, age_buckets, max_series;
    uint64_t max_age_ms, ttl_ms;
    bool exemplars, name_as_given;
    uint32_t hints; /* SHMETRICS_HINT_* */
};

typedef struct {
    VALUE store; /* nil until Family#__init: the family cannot be used */
    struct family_def def;
    struct shmetrics_family fam;
    unsigned long gen; /* the store generation it was registered in */
    VALUE spec;        /* the definition, a frozen Hash */
    VALUE label_syms;  /* label names as Symbols, frozen */
    VALUE label_strs;  /* label names as Strings, frozen */
    long nlabels;
    /* Labels an update's Hash may hold besides the family's (the
     * prometheus-client data store's `le` and `quantile`): how many, and
     * which (frozen Array of Symbols, or nil). */
    long extra_keys;
    VALUE extra_syms;
    /* label values -> handle: nested Hashes, one level per label. */
    VALUE cache;
    long cached, cache_limit;
    VALUE nolabels; /* the handle of a family without labels */
    /* In front of `cache`, label values -> handle by object identity, for
     * values whose contents cannot change (frozen Strings, Symbols,
     * Integers...): a hit costs no string hashing. Direct-mapped,
     * MEMO_SIZE entries; NULL until the first update with labels. */
    struct memo_entry *memo;
} family_t;

typedef struct {
    struct shmetrics_series h;
    VALUE family;      /* the Shmetrics::Family */
    VALUE values;      /* the label values: a frozen Array of frozen Strings */
    unsigned long gen; /* the store generation `h` was got in */
    unsigned long forks; /* shm_forks when `h` was placed */
} series_t;

extern const rb_data_type_t family_type, series_type;
void series_refresh(series_t *sr);
void series_place(series_t *sr);

/* Forks this process descends from, counted in the child by a
 * pthread_atfork handler (shmetrics.c): a handle placed before the last
 * one (a preloading master's, in a Puma or Unicorn worker) is placed
 * again for this process before its next update, which then takes the
 * library's fast path. */
extern unsigned long shm_forks;

/* libruby's rb_hash_stlike_foreach, or NULL (family.c). */
typedef int (*stlike_foreach_fn)(VALUE, int (*)(st_data_t, st_data_t, st_data_t), st_data_t);
extern stlike_foreach_fn hash_walk;

/* A number as a double: small Integers without a call. */
static inline double num_dbl(VALUE v)
{
    if (RB_FIXNUM_P(v))
        return (double)RB_FIX2LONG(v);
    return NUM2DBL(v);
}

/* The update path is inlined into each entry point, whose `op` is a
 * constant: the switch and the calls between them go. */
#define HOT static inline __attribute__((always_inline))

HOT shmetrics_result apply(int op, struct shmetrics_store *st, const struct shmetrics_series *s, double v)
{
    switch (op) {
    case OP_COUNTER_ADD: return L.shmetrics_counter_add(st, s, v);
    case OP_GAUGE_SET: return L.shmetrics_gauge_set(st, s, v);
    case OP_GAUGE_ADD: return L.shmetrics_gauge_add(st, s, v);
    case OP_OBSERVE: return L.shmetrics_observe(st, s, v);
    default: return L.shmetrics_gauge_set_to_current_time(st, s);
    }
}

/* `op` with `v` on the Series `h`. A stale handle (a series deleted, or
 * expired, by any process; a wiped store) is looked up again once and the
 * update retried. */
HOT VALUE series_apply(VALUE h, int op, double v)
{
    series_t *sr = RTYPEDDATA_DATA(h);
    family_t *f = RTYPEDDATA_DATA(sr->family);
    store_t *s = RTYPEDDATA_DATA(f->store);
    if (RB_UNLIKELY(s->ptr == NULL || sr->gen != s->gen))
        series_refresh(sr); /* raises if the store is closed */
    else if (RB_UNLIKELY(sr->forks != shm_forks))
        series_place(sr);
    shmetrics_result rc = apply(op, s->ptr, &sr->h, v);
    if (RB_LIKELY(rc == SHMETRICS_OK))
        return Qnil;
    if (rc == SHMETRICS_STALE_HANDLE) {
        series_refresh(sr);
        rc = apply(op, s->ptr, &sr->h, v);
    }
    RB_GC_GUARD(h);
    check(rc);
    return Qnil;
}

/* Each file defines its classes and methods. */
void shm_define_store(void);
void shm_define_family(void);
void shm_define_series_cache(void);

#pragma GCC visibility pop

#endif
