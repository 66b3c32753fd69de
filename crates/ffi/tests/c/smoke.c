/*
 * End-to-end use of the shmetrics C ABI: open a store in a temporary
 * directory, register families, update series, hit the error paths, and
 * render. Prints one line per failed check and "N passed, N failed" last;
 * exits non-zero on any failure.
 *
 * Build (the program loads the library by its SONAME, libshmetrics.so.1):
 *        ln -sf libshmetrics.so target/debug/libshmetrics.so.1
 *        cc -std=c11 -Wall -Wextra -Werror -I crates/ffi/include \
 *          crates/ffi/tests/c/smoke.c -L target/debug -lshmetrics \
 *          -Wl,-rpath,target/debug -o smoke
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "shmetrics.h"

static int passed, failed;

#define CHECK(cond)                                                        \
  do {                                                                     \
    if (cond) {                                                            \
      passed++;                                                            \
    } else {                                                               \
      failed++;                                                            \
      fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);     \
    }                                                                      \
  } while (0)

/* Checks that a call returns `want`; prints the last error otherwise. */
#define CHECK_RC(call, want)                                               \
  do {                                                                     \
    shmetrics_result rc_ = (call);                                         \
    if (rc_ == (shmetrics_result)(want)) {                                 \
      passed++;                                                            \
    } else {                                                               \
      failed++;                                                            \
      fprintf(stderr, "FAIL %s:%d: %s gave %u (%s), want %s: %s\n",        \
              __FILE__, __LINE__, #call, (unsigned)rc_,                    \
              shmetrics_strerror(rc_), #want, last_error());               \
    }                                                                      \
  } while (0)

#define OK(call) CHECK_RC(call, SHMETRICS_OK)

static char err_buf[1024];

/* The last error message (truncated to the buffer, NUL-terminated). */
static const char *last_error(void) {
  size_t len = 0;
  shmetrics_last_error(err_buf, sizeof err_buf, &len);
  return err_buf;
}

static size_t last_error_len(void) {
  size_t len = 0;
  shmetrics_last_error(NULL, 0, &len);
  return len;
}

static shmetrics_str S(const char *s) {
  shmetrics_str r = {s, strlen(s)};
  return r;
}

/* Whether `text` (len bytes) contains `line` as a whole line. */
static int has_line(const char *text, size_t len, const char *line) {
  size_t n = strlen(line);
  const char *p = text, *end = text + len;
  while (p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    size_t l = nl ? (size_t)(nl - p) : (size_t)(end - p);
    if (l == n && memcmp(p, line, n) == 0) return 1;
    if (!nl) break;
    p = nl + 1;
  }
  return 0;
}

/* Whether `text` (len bytes) has a line that starts with `prefix`. */
static int has_line_prefix(const char *text, size_t len, const char *prefix) {
  size_t n = strlen(prefix);
  const char *p = text, *end = text + len;
  while (p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    size_t l = nl ? (size_t)(nl - p) : (size_t)(end - p);
    if (l >= n && memcmp(p, prefix, n) == 0) return 1;
    if (!nl) break;
    p = nl + 1;
  }
  return 0;
}

#define CHECK_LINE(text, len, line)                                        \
  do {                                                                     \
    if (has_line((text), (len), (line))) {                                 \
      passed++;                                                            \
    } else {                                                               \
      failed++;                                                            \
      fprintf(stderr, "FAIL %s:%d: missing line: %s\n--- got:\n%.*s---\n", \
              __FILE__, __LINE__, (line), (int)(len), (text));             \
    }                                                                      \
  } while (0)

int main(void) {
  char dir[] = "/tmp/shmetrics-smoke-XXXXXX";
  if (!mkdtemp(dir)) {
    perror("mkdtemp");
    return 2;
  }
  char path[256], foreign[256];
  snprintf(path, sizeof path, "%s/store", dir);
  snprintf(foreign, sizeof foreign, "%s/foreign", dir);

  /* Version and static strings. */
  CHECK(strlen(shmetrics_version()) > 0);
  CHECK(shmetrics_version_major() == SHMETRICS_VERSION_MAJOR);
  CHECK(shmetrics_version_minor() == SHMETRICS_VERSION_MINOR);
  CHECK(shmetrics_version_patch() == SHMETRICS_VERSION_PATCH);
  CHECK(strcmp(shmetrics_strerror(SHMETRICS_OK), "success") == 0);
  CHECK(strlen(shmetrics_strerror(424242)) > 0);
  CHECK(strncmp(shmetrics_format_content_type(SHMETRICS_FORMAT_OPENMETRICS),
                "application/openmetrics-text", 28) == 0);
  CHECK(shmetrics_format_content_type(7) == NULL);

  /* Open. */
  shmetrics_options opts;
  OK(shmetrics_options_default(&opts));
  CHECK(opts.create && !opts.read_only && opts.mode == 0600);
  opts.max_series = 256;
  opts.label_bytes = 1 << 16;
  opts.max_writers = 8;
  shmetrics_store *store = NULL;
  OK(shmetrics_store_open(path, strlen(path), &opts, &store));
  CHECK(store != NULL);
  if (!store) {
    printf("%d passed, %d failed\n", passed, failed + 1);
    return 1;
  }

  /* A counter with labels. */
  shmetrics_str req_labels[] = {S("method"), S("status")};
  shmetrics_family_desc d;
  memset(&d, 0, sizeof d);
  d.name = S("http_requests_total");
  d.help = S("Requests served.");
  d.kind = SHMETRICS_KIND_COUNTER;
  d.label_names = req_labels;
  d.label_count = 2;
  shmetrics_family requests;
  OK(shmetrics_register(store, &d, &requests));
  CHECK(requests.kind == SHMETRICS_KIND_COUNTER);
  CHECK(requests.label_count == 2);

  /* A gauge. */
  memset(&d, 0, sizeof d);
  d.name = S("in_flight");
  d.help = S("Requests in flight.");
  d.kind = SHMETRICS_KIND_GAUGE;
  d.gauge_mode = SHMETRICS_GAUGE_LIVESUM;
  shmetrics_family in_flight;
  OK(shmetrics_register(store, &d, &in_flight));

  /* A histogram. */
  double bounds[] = {0.1, 0.5, 1.0};
  memset(&d, 0, sizeof d);
  d.name = S("latency_seconds");
  d.help = S("Latency.");
  d.kind = SHMETRICS_KIND_HISTOGRAM;
  d.buckets = bounds;
  d.bucket_count = 3;
  shmetrics_family latency;
  OK(shmetrics_register(store, &d, &latency));

  /* A counter that keeps exemplars. */
  memset(&d, 0, sizeof d);
  d.name = S("jobs_total");
  d.kind = SHMETRICS_KIND_COUNTER;
  d.exemplars = true;
  shmetrics_family jobs;
  OK(shmetrics_register(store, &d, &jobs));

  /* Series and updates. */
  shmetrics_str get200[] = {S("GET"), S("200")};
  shmetrics_series ok;
  OK(shmetrics_series_get(store, &requests, get200, 2, &ok));
  OK(shmetrics_counter_inc(store, &ok));
  OK(shmetrics_counter_add(store, &ok, 2));
  shmetrics_series ok_again;
  OK(shmetrics_series_get(store, &requests, get200, 2, &ok_again));
  CHECK(memcmp(&ok, &ok_again, sizeof ok) == 0);

  shmetrics_series g;
  OK(shmetrics_series_get(store, &in_flight, NULL, 0, &g));
  OK(shmetrics_gauge_set(store, &g, 5));
  OK(shmetrics_gauge_add(store, &g, -2));

  shmetrics_series h;
  OK(shmetrics_series_get(store, &latency, NULL, 0, &h));
  OK(shmetrics_observe(store, &h, 0.25));
  OK(shmetrics_observe(store, &h, 0.5));
  OK(shmetrics_observe(store, &h, 2.0));

  shmetrics_series job;
  OK(shmetrics_series_get(store, &jobs, NULL, 0, &job));
  shmetrics_str ex_names[] = {S("trace_id")};
  shmetrics_str ex_values[] = {S("abc123")};
  OK(shmetrics_counter_inc_exemplar(store, &job, NULL, NULL, 0));
  OK(shmetrics_counter_add_exemplar(store, &job, 2, ex_names, ex_values, 1));
  shmetrics_str bad_names[] = {S("__trace_id")}; /* reserved under every rule */
  CHECK_RC(shmetrics_counter_add_exemplar(store, &job, 1, bad_names, ex_values, 1),
           SHMETRICS_INVALID_NAME);
  CHECK_RC(shmetrics_counter_add_exemplar(store, &ok, 1, ex_names, ex_values, 1),
           SHMETRICS_INVALID_OPTIONS);
  CHECK_RC(shmetrics_observe_exemplar(store, &h, 0.3, ex_names, ex_values, 1),
           SHMETRICS_INVALID_OPTIONS);
  CHECK_RC(shmetrics_counter_add_exemplar(store, &job, 1, NULL, ex_values, 1),
           SHMETRICS_NULL_PARAMETER);

  /* Error paths. */
  CHECK_RC(shmetrics_counter_add(store, &ok, NAN), SHMETRICS_INVALID_VALUE);
  CHECK(last_error_len() > 0);
  CHECK(strstr(last_error(), "NaN") != NULL);
  CHECK_RC(shmetrics_counter_add(store, &ok, -1), SHMETRICS_INVALID_VALUE);
  CHECK_RC(shmetrics_counter_add(store, &ok, INFINITY), SHMETRICS_INVALID_VALUE);
  CHECK_RC(shmetrics_gauge_set(store, &g, NAN), SHMETRICS_INVALID_VALUE);
  CHECK_RC(shmetrics_observe(store, &h, NAN), SHMETRICS_INVALID_VALUE);
  CHECK_RC(shmetrics_gauge_set(store, &ok, 1), SHMETRICS_WRONG_TYPE);

  shmetrics_series bad;
  CHECK_RC(shmetrics_series_get(store, &requests, get200, 1, &bad),
           SHMETRICS_LABEL_COUNT);
  CHECK(strstr(last_error(), "expected 2 label values, got 1") != NULL);

  memset(&d, 0, sizeof d);
  d.name = S("bad-name");
  d.kind = SHMETRICS_KIND_COUNTER;
  d.name_rules = SHMETRICS_NAMES_LEGACY; /* any UTF-8 name otherwise */
  shmetrics_family bad_family;
  CHECK_RC(shmetrics_register(store, &d, &bad_family), SHMETRICS_INVALID_NAME);
  CHECK(strstr(last_error(), "bad-name") != NULL);

  CHECK_RC(shmetrics_counter_inc(NULL, &ok), SHMETRICS_NULL_PARAMETER);
  CHECK(strcmp(last_error(), "shmetrics_counter_inc: argument `store` is NULL") == 0);
  CHECK_RC(shmetrics_counter_inc(store, NULL), SHMETRICS_NULL_PARAMETER);
  CHECK(strcmp(last_error(), "shmetrics_counter_inc: argument `series` is NULL") == 0);
  CHECK_RC(shmetrics_register(store, NULL, &bad_family), SHMETRICS_NULL_PARAMETER);
  CHECK_RC(shmetrics_series_get(store, &requests, NULL, 2, &bad),
           SHMETRICS_NULL_PARAMETER);
  CHECK_RC(shmetrics_store_open(path, strlen(path), NULL, NULL),
           SHMETRICS_NULL_PARAMETER);

  shmetrics_series zero;
  memset(&zero, 0, sizeof zero);
  CHECK_RC(shmetrics_counter_inc(store, &zero), SHMETRICS_STALE_HANDLE);

  FILE *f = fopen(foreign, "w");
  CHECK(f != NULL);
  if (f) {
    for (int i = 0; i < 1000; i++) fputs("not a store\n", f);
    fclose(f);
  }
  shmetrics_store *other = (shmetrics_store *)&passed; /* must become NULL */
  CHECK_RC(shmetrics_store_open(foreign, strlen(foreign), NULL, &other),
           SHMETRICS_FOREIGN_FILE);
  CHECK(other == NULL);
  CHECK(strstr(last_error(), foreign) != NULL);

  /* The last error: size query, truncation. */
  size_t len = 0;
  CHECK_RC(shmetrics_last_error(NULL, 0, &len), SHMETRICS_BUFFER_TOO_SMALL);
  CHECK(len > 10);
  char tiny[6];
  CHECK_RC(shmetrics_last_error(tiny, sizeof tiny, &len), SHMETRICS_BUFFER_TOO_SMALL);
  CHECK(strlen(tiny) == sizeof tiny - 1);

  /* Render into a buffer that is too small, then retry. */
  char small[16];
  len = 0;
  CHECK_RC(shmetrics_render(store, SHMETRICS_FORMAT_PROMETHEUS_TEXT, small,
                            sizeof small, &len),
           SHMETRICS_BUFFER_TOO_SMALL);
  CHECK(len > sizeof small);
  size_t cap = len;
  char *text = malloc(cap);
  CHECK(text != NULL);
  if (text) {
    OK(shmetrics_render(store, SHMETRICS_FORMAT_PROMETHEUS_TEXT, text, cap, &len));
    CHECK(len == cap);
    CHECK_LINE(text, len, "# HELP http_requests_total Requests served.");
    CHECK_LINE(text, len, "# TYPE http_requests_total counter");
    CHECK_LINE(text, len, "http_requests_total{method=\"GET\",status=\"200\"} 3");
    CHECK_LINE(text, len, "# TYPE in_flight gauge");
    CHECK_LINE(text, len, "in_flight 3");
    CHECK_LINE(text, len, "# TYPE latency_seconds histogram");
    CHECK_LINE(text, len, "latency_seconds_bucket{le=\"0.1\"} 0");
    CHECK_LINE(text, len, "latency_seconds_bucket{le=\"0.5\"} 2");
    CHECK_LINE(text, len, "latency_seconds_bucket{le=\"1.0\"} 2");
    CHECK_LINE(text, len, "latency_seconds_bucket{le=\"+Inf\"} 3");
    CHECK_LINE(text, len, "latency_seconds_sum 2.75");
    CHECK_LINE(text, len, "latency_seconds_count 3");
    free(text);
  }

  /* OpenMetrics into a library-owned buffer. */
  shmetrics_buf *buf = NULL;
  OK(shmetrics_render_alloc(store, SHMETRICS_FORMAT_OPENMETRICS, &buf));
  CHECK(buf != NULL);
  const char *om = (const char *)shmetrics_buf_data(buf);
  size_t om_len = shmetrics_buf_len(buf);
  CHECK(om != NULL && om_len > 6);
  if (om && om_len > 6) {
    CHECK(memcmp(om + om_len - 6, "# EOF\n", 6) == 0);
    CHECK(om[om_len] == '\0');
    CHECK_LINE(om, om_len, "# TYPE http_requests counter");
    CHECK_LINE(om, om_len, "http_requests_total{method=\"GET\",status=\"200\"} 3");
    /* The exemplar, then its timestamp. */
    CHECK(has_line_prefix(om, om_len, "jobs_total 3 # {trace_id=\"abc123\"} 2 "));
  }
  shmetrics_buf_free(buf);
  CHECK_RC(shmetrics_render(store, 9, NULL, 0, &len), SHMETRICS_INVALID_ARGUMENT);

  /* The same contents as data: a snapshot walk. */
  shmetrics_snapshot *snap = NULL;
  OK(shmetrics_snapshot_take(store, &snap));
  CHECK(snap != NULL && shmetrics_snapshot_family_count(snap) == 4);
  int walked = 0;
  for (size_t i = 0; i < shmetrics_snapshot_family_count(snap); i++) {
    shmetrics_family_info fi;
    OK(shmetrics_snapshot_family(snap, i, &fi));
    shmetrics_series_info si;
    if (fi.name.len == 13 && memcmp(fi.name.ptr, "http_requests", 13) == 0) {
      CHECK(fi.kind == SHMETRICS_KIND_COUNTER && fi.label_count == 2 && fi.series_count >= 1);
      CHECK(fi.label_names[1].len == 6 && memcmp(fi.label_names[1].ptr, "status", 6) == 0);
      OK(shmetrics_snapshot_series(snap, i, 0, &si));
      CHECK(si.value == 3 && si.label_values[0].len == 3 && si.extra_label_name.len == 0);
      walked++;
    } else if (fi.kind == SHMETRICS_KIND_HISTOGRAM) {
      CHECK(fi.bucket_count == 3 && fi.buckets[2] == 1.0);
      OK(shmetrics_snapshot_series(snap, i, 0, &si));
      CHECK(si.count > 0 && si.cumulative[3] == si.count);
      CHECK_RC(shmetrics_snapshot_series(snap, i, fi.series_count, &si),
               SHMETRICS_INVALID_ARGUMENT);
      walked++;
    }
  }
  CHECK(walked == 2);
  shmetrics_snapshot_free(snap);
  shmetrics_snapshot_free(NULL);

  /* A handle made before a fork updates through the slow path in the
   * child until shmetrics_series_place places it for the child. */
  bool placed = false;
  OK(shmetrics_series_is_placed(store, &ok, &placed));
  CHECK(placed);
  OK(shmetrics_series_place(store, &ok)); /* placed already: left as it is */
  CHECK(memcmp(&ok, &ok_again, sizeof ok) == 0);
  fflush(stdout);
  fflush(stderr);
  pid_t child = fork();
  if (child == 0) {
    shmetrics_series before = ok;
    bool was = true, now = false;
    int good = shmetrics_series_is_placed(store, &ok, &was) == SHMETRICS_OK && !was &&
               shmetrics_series_place(store, &ok) == SHMETRICS_OK &&
               memcmp(&before, &ok, sizeof ok) != 0 &&
               shmetrics_series_is_placed(store, &ok, &now) == SHMETRICS_OK && now &&
               shmetrics_counter_add(store, &ok, 10) == SHMETRICS_OK &&
               shmetrics_counter_add(store, &before, 100) == SHMETRICS_OK;
    shmetrics_store_close(store); /* what valgrind's leak check in the child wants */
    _exit(good ? 0 : 1);
  }
  int child_status = 0;
  CHECK(child > 0 && waitpid(child, &child_status, 0) == child);
  CHECK(WIFEXITED(child_status) && WEXITSTATUS(child_status) == 0);
  OK(shmetrics_series_is_placed(store, &ok, &placed));
  CHECK(placed);
  {
    char text[4096];
    size_t len = 0;
    OK(shmetrics_render(store, SHMETRICS_FORMAT_PROMETHEUS_TEXT, text, sizeof text, &len));
    CHECK_LINE(text, len, "http_requests_total{method=\"GET\",status=\"200\"} 113");
  }
  CHECK_RC(shmetrics_series_is_placed(store, &ok, NULL), SHMETRICS_NULL_PARAMETER);
  CHECK_RC(shmetrics_series_place(store, NULL), SHMETRICS_NULL_PARAMETER);

  /* Store operations. */
  shmetrics_stats stats;
  OK(shmetrics_store_stats(store, &stats));
  CHECK(stats.families == 4);
  CHECK(stats.series_capacity == 256);
  CHECK(stats.writers_live >= 1);
  CHECK(stats.sketch_cells_capacity > 0);
  CHECK(stats.series_expired_total == 0);

  bool existed = false;
  OK(shmetrics_series_delete(store, &requests, get200, 2, &existed));
  CHECK(existed);
  OK(shmetrics_series_delete(store, &requests, get200, 2, &existed));
  CHECK(!existed);
  /* A deleted series' handle is stale; getting it again makes a new one. */
  CHECK_RC(shmetrics_counter_inc(store, &ok), SHMETRICS_STALE_HANDLE);
  OK(shmetrics_series_get(store, &requests, get200, 2, &ok));
  OK(shmetrics_store_reset(store));
  OK(shmetrics_store_release_slot(store));
  OK(shmetrics_counter_inc(store, &ok)); /* claims a slot again */
  OK(shmetrics_store_wipe(store));
  CHECK_RC(shmetrics_counter_inc(store, &ok), SHMETRICS_STALE_HANDLE);
  CHECK_RC(shmetrics_series_get(store, &requests, get200, 2, &bad),
           SHMETRICS_STALE_HANDLE);

  /* A read-only handle on the same file. */
  opts.read_only = true;
  shmetrics_store *ro = NULL;
  OK(shmetrics_store_open(path, strlen(path), &opts, &ro));
  CHECK_RC(shmetrics_store_wipe(ro), SHMETRICS_READ_ONLY);
  shmetrics_store_close(ro);

  shmetrics_store_close(store);
  shmetrics_store_close(NULL);
  shmetrics_buf_free(NULL);

  unlink(path);
  unlink(foreign);
  rmdir(dir);
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
