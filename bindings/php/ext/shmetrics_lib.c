/*
 * The library, loaded once per process at first use. Its functions are
 * written once, when the first call that needs the library loads it
 * (never in MINIT, so that every php-fpm worker loads the library its pool
 * names: shm_load_slow(), shmetrics_calls.c), then never unloaded. Plain
 * C, without PHP's API, so that tests/ext/loader-threads.c can run it from
 * many threads under ThreadSanitizer.
 */

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "shmetrics_lib.h"

shm_lib lib;
bool shm_lib_loaded;
static pthread_mutex_t lib_mutex = PTHREAD_MUTEX_INITIALIZER;

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
        __atomic_store_n(&shm_lib_loaded, true, __ATOMIC_RELEASE);
        return true;
    }
    snprintf(err, cap,
        "cannot load the shmetrics library %s. Install libshmetrics.so.%d on the system's library path, or "
        "build it with `cargo build --release -p shmetrics-ffi` and point $SHMETRICS_LIBRARY or the ini "
        "setting shmetrics.library at it",
        why, SHM_ABI_MAJOR);
    return false;
}

/* Once per process, whichever thread asks first (ZTS): shmetrics_lib.h. */
bool shm_lib_load(const char *ini, const char *env, char *err, size_t cap)
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
void shm_lib_atfork_child(void)
{
    pthread_mutex_init(&lib_mutex, NULL);
}

