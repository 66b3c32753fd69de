/*
 * The library's functions, loaded at run time (shmetrics_lib.c): plain C,
 * without PHP's API, so that tests/ext/loader-threads.c can run the
 * loading from many threads under ThreadSanitizer.
 */
#ifndef SHMETRICS_LIB_H
#define SHMETRICS_LIB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* From ../include in the repository; beside this file in the PECL package
 * (scripts/build-pecl.sh). */
#include "shmetrics.cdef.h"

/* The major version of the C ABI this extension is written for. */
#define SHM_ABI_MAJOR 1
#define SHM_STR_(x) #x
#define SHM_STR(x) SHM_STR_(x)

/* The C ABI's functions the extension calls, resolved by dlsym. */
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

/* Internal to the extension's shared object: direct accesses, not through the GOT or the PLT. */
#pragma GCC visibility push(hidden)

/* The library's functions: complete once shm_lib_ready(), then never written again. */
extern shm_lib lib;
/* lib is complete: set (release) after lib is written, under shmetrics_lib.c's mutex. */
extern bool shm_lib_loaded;

/* Whether lib is loaded; once true, lib's fields may be read without the lock (acquire). */
static inline bool shm_lib_ready(void)
{
    return __atomic_load_n(&shm_lib_loaded, __ATOMIC_ACQUIRE);
}

/*
 * Loads the library once per process, whichever thread asks first (ZTS),
 * from ini (the ini setting) if set, else env (the environment's path) if
 * set, else the SONAME then libshmetrics.so: true when it is loaded, by
 * this call or an earlier one; else false with the message in err (cap
 * bytes), and a later call tries again.
 */
bool shm_lib_load(const char *ini, const char *env, char *err, size_t cap);

/* For pthread_atfork(): a child starts with the loader's lock free. */
void shm_lib_atfork_child(void);

#pragma GCC visibility pop

#endif /* SHMETRICS_LIB_H */
