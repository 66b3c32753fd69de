/* The C ABI's hot path, for callgrind: a counter add and a 19-bucket
 * histogram observe through series handles (what the Lua binding calls
 * per update), and the same two through the cached path, shmetrics_update
 * (what the PHP extension calls), and a counter add through a handle
 * made for another process (as one made before a fork is in the child:
 * its updates take the cold path, which finds the series' cells in the
 * process's map), each in a loop of its own so that
 * callgrind can count just that loop. Built and run by hotpath.sh, which
 * prints instructions per call. The calls go through the shared library's
 * exported symbols, as from LuaJIT's FFI or PHP.
 *
 *     hotpath STORE N
 *
 * Prints each loop's thread CPU time per call (noisy on a loaded
 * machine; the instruction counts are not).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "shmetrics.h"

static void check(shmetrics_result rc, const char *what) {
    if (rc != SHMETRICS_OK) {
        char buf[512];
        size_t len = 0;
        shmetrics_last_error(buf, sizeof buf, &len);
        fprintf(stderr, "%s: %u %s\n", what, (unsigned)rc, buf);
        exit(1);
    }
}

/* nginx-lua-prometheus's default buckets, as the Lua binding's. */
static const double BUCKETS[19] = {0.005, 0.01, 0.02, 0.03, 0.05, 0.075, 0.1, 0.2, 0.3, 0.4,
                                   0.5,   0.75, 1,    1.5,  2,    3,     4,   5,   10};

/* Observed values, spread over the buckets. */
static double values[1024];

static shmetrics_str str(const char *s) {
    shmetrics_str r = {s, strlen(s)};
    return r;
}

__attribute__((noinline)) static void counter_add_loop(const shmetrics_store *st,
                                                       const shmetrics_series *s, long n) {
    for (long i = 0; i < n; i++)
        if (shmetrics_counter_add(st, s, 1.0) != SHMETRICS_OK) abort();
}

__attribute__((noinline)) static void foreign_add_loop(const shmetrics_store *st,
                                                       const shmetrics_series *s, long n) {
    for (long i = 0; i < n; i++)
        if (shmetrics_counter_add(st, s, 2.0) != SHMETRICS_OK) abort();
}

__attribute__((noinline)) static void observe_loop(const shmetrics_store *st,
                                                   const shmetrics_series *s, long n) {
    for (long i = 0; i < n; i++)
        if (shmetrics_observe(st, s, values[i & 1023]) != SHMETRICS_OK) abort();
}

__attribute__((noinline)) static void cached_add_loop(const shmetrics_store *st, uint32_t token,
                                                      const char *lv, size_t len, long n) {
    for (long i = 0; i < n; i++)
        if (shmetrics_update(st, token, SHMETRICS_OP_COUNTER_ADD, lv, len, 1.0) != SHMETRICS_OK)
            abort();
}

__attribute__((noinline)) static void cached_observe_loop(const shmetrics_store *st,
                                                          uint32_t token, const char *lv,
                                                          size_t len, long n) {
    for (long i = 0; i < n; i++)
        if (shmetrics_update(st, token, SHMETRICS_OP_OBSERVE, lv, len, values[i & 1023]) !=
            SHMETRICS_OK)
            abort();
}

static double cpu_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s STORE N\n", argv[0]);
        return 2;
    }
    long n = atol(argv[2]);
    for (int i = 0; i < 1024; i++) values[i] = (double)((i * 7919) % 1024) / 100.0;
    shmetrics_options o;
    check(shmetrics_options_default(&o), "options");
    shmetrics_store *st;
    check(shmetrics_store_open(argv[1], strlen(argv[1]), &o, &st), "open");

    shmetrics_str names[2] = {str("route"), str("status")};
    shmetrics_family_desc cd = {0}, hd = {0};
    cd.name = str("requests_total");
    cd.kind = SHMETRICS_KIND_COUNTER;
    cd.label_names = names;
    cd.label_count = 2;
    hd.name = str("latency_seconds");
    hd.kind = SHMETRICS_KIND_HISTOGRAM;
    hd.label_names = names;
    hd.label_count = 1;
    hd.buckets = BUCKETS;
    hd.bucket_count = 19;
    shmetrics_family cf, hf;
    check(shmetrics_register(st, &cd, &cf), "register counter");
    check(shmetrics_register(st, &hd, &hf), "register histogram");
    shmetrics_str lv[2] = {str("/"), str("200")};
    shmetrics_series cs, hs;
    check(shmetrics_series_get(st, &cf, lv, 2, &cs), "counter series");
    check(shmetrics_series_get(st, &hf, lv, 1, &hs), "histogram series");

    uint32_t ct, ht;
    check(shmetrics_family_cache(st, "c", 1, &cd, &ct), "cache counter");
    check(shmetrics_family_cache(st, "h", 1, &hd, &ht), "cache histogram");
    const char joined[] = "/\xff" "200";

    /* The same counter series through a handle whose process and slot
     * word (its last word, private to this build of the library) names
     * no process: what a handle made before a fork is in the child. */
    shmetrics_series foreign = cs;
    foreign.opaque[6] = 0;

    double t[6];
    t[0] = cpu_ns();
    counter_add_loop(st, &cs, n);
    t[1] = cpu_ns();
    observe_loop(st, &hs, n);
    t[2] = cpu_ns();
    cached_add_loop(st, ct, joined, sizeof joined - 1, n);
    t[3] = cpu_ns();
    cached_observe_loop(st, ht, "/", 1, n);
    t[4] = cpu_ns();
    foreign_add_loop(st, &foreign, n);
    t[5] = cpu_ns();
    shmetrics_store_close(st);
    const char *loops[5] = {"shmetrics_counter_add", "shmetrics_observe (19 buckets)",
                            "shmetrics_update, counter add", "shmetrics_update, observe",
                            "counter add, foreign handle"};
    printf("hotpath: %ld calls per loop, thread CPU time per call\n", n);
    for (int i = 0; i < 5; i++) printf("  %-32s %7.2f ns\n", loops[i], (t[i + 1] - t[i]) / n);
    return 0;
}
