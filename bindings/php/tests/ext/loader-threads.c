/*
 * The extension's library loading (shm_lib_load in ext/shmetrics_lib.c) from
 * many threads at once, as a ZTS PHP (FrankenPHP, Apache's worker MPM)
 * calls it: Debian's PHP is NTS, so this runs the loader alone, built with
 * ThreadSanitizer (scripts/php-sanitizers.sh), which fails on any data
 * race. Each round, THREADS threads wait at a barrier and load at once:
 *   1. a missing library: every thread gets the error, nothing is loaded;
 *   2. the library: every thread gets it, all see the same functions;
 *   3. another path afterwards: the library stays the one loaded (once per
 *      process).
 *   loader-threads LIBRARY
 */
#include "../../ext/shmetrics_lib.c"

#include <stdlib.h>

#define THREADS 8

static pthread_barrier_t barrier;
static const char *want_path;

typedef struct {
    bool ok;
    char err[2048];
    shm_lib seen;
    uint32_t major;
} outcome;

static outcome outcomes[THREADS];

static void *load(void *arg)
{
    outcome *o = arg;
    o->err[0] = '\0';
    pthread_barrier_wait(&barrier);
    o->ok = shm_lib_load(NULL, want_path, o->err, sizeof o->err);
    if (o->ok) {
        o->seen = lib;
        o->major = lib.shmetrics_version_major();
    }
    return NULL;
}

static void round_of(const char *path)
{
    pthread_t t[THREADS];
    want_path = path;
    pthread_barrier_init(&barrier, NULL, THREADS);
    for (int i = 0; i < THREADS; i++) {
        pthread_create(&t[i], NULL, load, &outcomes[i]);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
    }
    pthread_barrier_destroy(&barrier);
}

static int failures;

static void expect(bool cond, const char *what)
{
    if (!cond) {
        fprintf(stderr, "loader-threads: FAILED: %s\n", what);
        failures++;
    }
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: loader-threads LIBRARY\n");
        return 2;
    }
    round_of("/nonexistent/libshmetrics.so");
    for (int i = 0; i < THREADS; i++) {
        expect(!outcomes[i].ok, "a missing library does not load");
        expect(strstr(outcomes[i].err, "cannot load the shmetrics library \"/nonexistent/libshmetrics.so\"") != NULL,
            "the error names the missing library");
    }
    expect(!shm_lib_ready(), "nothing is loaded after a failure");

    round_of(argv[1]);
    for (int i = 0; i < THREADS; i++) {
        expect(outcomes[i].ok, "the library loads in every thread");
        expect(outcomes[i].major == SHM_ABI_MAJOR, "the library's major version");
        expect(memcmp(&outcomes[i].seen, &outcomes[0].seen, sizeof(shm_lib)) == 0, "every thread sees the same functions");
    }

    shm_lib before = lib;
    round_of("/nonexistent/other.so");
    for (int i = 0; i < THREADS; i++) {
        expect(outcomes[i].ok, "once loaded, the library stays loaded");
    }
    expect(memcmp(&before, &lib, sizeof lib) == 0, "a later path does not replace the library");
    if (failures == 0) {
        printf("loader-threads: %d threads, 3 rounds: ok\n", THREADS);
    }
    return failures == 0 ? 0 : 1;
}
