/*
 * Preloaded (before libasan) into the PHP that runs the extension built
 * with AddressSanitizer (scripts/php-sanitizers.sh): PHP loads extensions
 * with dlopen(RTLD_DEEPBIND), which ASan's runtime refuses (a library that
 * binds its own symbols first would bypass ASan's malloc). This dlopen()
 * drops the flag and calls the next dlopen (ASan's).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>

typedef void *(*dlopen_fn)(const char *, int);

void *dlopen(const char *file, int mode)
{
    static dlopen_fn next;
    if (next == NULL) {
        next = (dlopen_fn)dlsym(RTLD_NEXT, "dlopen");
    }
    return next(file, mode & ~RTLD_DEEPBIND);
}
