/*
 * shmetrics_ext: the native part of the shmetrics gem.
 *
 * A thin layer over libshmetrics's C ABI (shmetrics.h). The library is
 * loaded at run time with dlopen (Shmetrics::Native.load picks the file),
 * so every ABI function is called through a pointer from dlsym.
 *
 * What lives here rather than in Ruby is only the hot path: finding the
 * series handle of a label set (a per-process cache of label values to
 * handles, nested one Hash per label) and the update call. Everything runs
 * with the GVL held: no other Ruby thread of the process runs meanwhile,
 * so the caches need no lock, and no thread can be inside the library
 * when the process forks (the library gives a forked child a writer slot
 * of its own on its first update).
 */
#include <ruby.h>
#include <ruby/encoding.h>
#include <dlfcn.h>
#include <string.h>

#include "shmetrics.h"

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

static struct {
#define X(f) __typeof__(f) *f;
    SHM_FUNCS(X)
#undef X
} L;
static int loaded;

static VALUE mShmetrics, cStore, cFamily, cSeries, eError, eLibraryError, eLibraryVersionError;
static VALUE error_classes[105];
static ID id_to_s, id_text, id_openmetrics, id_same, id_gone, id_other;

/* ---------------------------------------------------------------------
 * Errors.
 */

/* The calling thread's last error message from the library. */
static VALUE last_error_message(shmetrics_result rc)
{
    char buf[1024];
    size_t len = 0;
    shmetrics_result r = L.shmetrics_last_error(buf, sizeof buf, &len);
    if (r == SHMETRICS_BUFFER_TOO_SMALL) {
        VALUE s = rb_str_buf_new((long)len + 1);
        if (L.shmetrics_last_error(RSTRING_PTR(s), len + 1, &len) == SHMETRICS_OK) {
            rb_str_set_len(s, (long)len);
            return rb_enc_associate(s, rb_utf8_encoding());
        }
        len = sizeof buf - 1;
    }
    if (len == 0)
        return rb_utf8_str_new_cstr(L.shmetrics_strerror(rc));
    return rb_utf8_str_new(buf, (long)len);
}

static VALUE error_class(shmetrics_result rc)
{
    if (rc < sizeof error_classes / sizeof error_classes[0] && error_classes[rc] != 0)
        return error_classes[rc];
    return eError;
}

/* Raises the Ruby exception for `rc`, with the library's message. */
NORETURN(static void raise_rc(shmetrics_result rc));
static void raise_rc(shmetrics_result rc)
{
    VALUE msg = last_error_message(rc);
    VALUE exc = rb_exc_new_str(error_class(rc), msg);
    rb_ivar_set(exc, rb_intern("@code"), UINT2NUM(rc));
    rb_exc_raise(exc);
}

static void check(shmetrics_result rc)
{
    if (rc != SHMETRICS_OK)
        raise_rc(rc);
}

static void require_loaded(void)
{
    if (!loaded)
        rb_raise(eLibraryError, "shmetrics: the library is not loaded (Shmetrics::Native.load)");
}

/* ---------------------------------------------------------------------
 * Integers from Ruby: never wrapped or truncated. NUM2ULL would take -1
 * as 2**64-1, and a cast to uint32_t would cut 2**32 to 0.
 */

/* `v`, an Integer in [0, max]: TypeError for another type (a Float is
 * not silently truncated), ArgumentError when negative, RangeError when
 * above `max`. `what` names it in the message. */
static uint64_t int_u64(VALUE v, uint64_t max, const char *what)
{
    if (!RB_INTEGER_TYPE_P(v))
        rb_raise(rb_eTypeError, "shmetrics: %s must be an Integer, not %" PRIsVALUE, what, rb_obj_class(v));
    uint64_t out = 0;
    int sign = rb_integer_pack(v, &out, 1, sizeof out, 0, INTEGER_PACK_LSWORD_FIRST | INTEGER_PACK_NATIVE_BYTE_ORDER);
    if (sign < 0)
        rb_raise(rb_eArgError, "shmetrics: %s must not be negative, got %" PRIsVALUE, what, v);
    if (sign > 1 || out > max)
        rb_raise(rb_eRangeError, "shmetrics: %s must be at most %llu, got %" PRIsVALUE, what,
                 (unsigned long long)max, v);
    return out;
}

/* `v`, an Integer that fits in an int64_t. */
static int64_t int_i64(VALUE v, const char *what)
{
    if (!RB_INTEGER_TYPE_P(v))
        rb_raise(rb_eTypeError, "shmetrics: %s must be an Integer, not %" PRIsVALUE, what, rb_obj_class(v));
    int64_t out = 0;
    int r = rb_integer_pack(v, &out, 1, sizeof out, 0, INTEGER_PACK_LSWORD_FIRST | INTEGER_PACK_NATIVE_BYTE_ORDER | INTEGER_PACK_2COMP);
    if (r < -1 || r > 1 || (r > 0 && out < 0) || (r < 0 && out >= 0))
        rb_raise(rb_eRangeError, "shmetrics: %s is out of range: %" PRIsVALUE, what, v);
    return out;
}

/* ---------------------------------------------------------------------
 * Native.load: dlopen a library and check its major version.
 */

/* Native.__load(name, major) -> version string. Loads `name` with dlopen
 * and refuses a library whose major version is not `major`. */
static VALUE native_load(VALUE mod, VALUE name, VALUE want_major)
{
    if (loaded)
        return rb_str_new_cstr(L.shmetrics_version());
    uint32_t want = (uint32_t)int_u64(want_major, UINT32_MAX, "the major version");
    name = rb_str_new_frozen(StringValue(name));
    void *h = dlopen(StringValueCStr(name), RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        const char *e = dlerror();
        rb_raise(eLibraryError, "%s", e ? e : "dlopen failed");
    }
    /* shmetrics_version_major never changes: ask it first. */
    uint32_t (*major)(void) = (uint32_t(*)(void))dlsym(h, "shmetrics_version_major");
    const char *(*version)(void) = (const char *(*)(void))dlsym(h, "shmetrics_version");
    if (major == NULL || version == NULL) {
        dlclose(h);
        rb_raise(eLibraryError, "%" PRIsVALUE " is not libshmetrics (no shmetrics_version_major)", name);
    }
    uint32_t got = major();
    if (got != want) {
        VALUE v = rb_str_new_cstr(version());
        dlclose(h);
        rb_raise(eLibraryVersionError,
                 "shmetrics: the library '%" PRIsVALUE "' is version %" PRIsVALUE " (major %u), but "
                 "this gem is written for major %u: install libshmetrics.so.%u, or point "
                 "$SHMETRICS_LIBRARY at a library of major %u",
                 name, v, got, want, want, want);
    }
#define X(f)                                                                                       \
    L.f = (__typeof__(f) *)dlsym(h, #f);                                                           \
    if (L.f == NULL) {                                                                             \
        dlclose(h);                                                                                \
        rb_raise(eLibraryError, "shmetrics: the library '%" PRIsVALUE "' has no %s: it is older "  \
                 "than this gem (header version %d.%d.%d)", name, #f, SHMETRICS_VERSION_MAJOR,     \
                 SHMETRICS_VERSION_MINOR, SHMETRICS_VERSION_PATCH);                                \
    }
    SHM_FUNCS(X)
#undef X
    loaded = 1;
    return rb_str_new_cstr(L.shmetrics_version());
}

static VALUE native_loaded_p(VALUE mod)
{
    return loaded ? Qtrue : Qfalse;
}

/* ---------------------------------------------------------------------
 * Store.
 */
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

static store_t *all_stores;

static void store_unlink(store_t *s)
{
    if (s->prev)
        s->prev->next = s->next;
    else if (all_stores == s)
        all_stores = s->next;
    if (s->next)
        s->next->prev = s->prev;
    s->prev = s->next = NULL;
}

/* Keeps a C copy of `path` and puts `s` on the list of stores. */
static void store_track(store_t *s, VALUE path)
{
    char *copy = ruby_xmalloc((size_t)RSTRING_LEN(path) + 1);
    memcpy(copy, RSTRING_PTR(path), (size_t)RSTRING_LEN(path));
    copy[RSTRING_LEN(path)] = 0;
    xfree(s->cpath);
    s->cpath = copy;
    s->cpath_len = (size_t)RSTRING_LEN(path);
    if (s->prev == NULL && all_stores != s) {
        s->next = all_stores;
        if (all_stores)
            all_stores->prev = s;
        all_stores = s;
    }
}

static void store_mark(void *p)
{
    store_t *s = p;
    rb_gc_mark(s->path);
}

static void store_free(void *p)
{
    store_t *s = p;
    if (s->ptr && loaded)
        L.shmetrics_store_close(s->ptr);
    store_unlink(s);
    xfree(s->cpath);
    xfree(s);
}

static size_t store_memsize(const void *p)
{
    return sizeof(store_t);
}

static const rb_data_type_t store_type = {
    "Shmetrics::Store",
    {store_mark, store_free, store_memsize, NULL, {NULL}},
    0, 0, RUBY_TYPED_FREE_IMMEDIATELY,
};

static VALUE store_alloc(VALUE klass)
{
    store_t *s;
    VALUE obj = TypedData_Make_Struct(klass, store_t, &store_type, s);
    s->path = Qnil;
    s->gen = 1;
    return obj;
}

static store_t *get_store(VALUE obj)
{
    store_t *s;
    TypedData_Get_Struct(obj, store_t, &store_type, s);
    return s;
}

static store_t *open_store(VALUE obj)
{
    store_t *s = get_store(obj);
    if (s->ptr == NULL && NIL_P(s->path))
        rb_raise(eError, "shmetrics: this store was never opened (made without Store.new)");
    if (s->ptr == NULL)
        rb_raise(eError, "shmetrics: the store %" PRIsVALUE " is closed", s->path);
    return s;
}

/* The option `key` of `h`, nil when not given. */
static VALUE opt_get(VALUE h, const char *key)
{
    return rb_hash_lookup2(h, ID2SYM(rb_intern(key)), Qnil);
}

/* An unsigned option in [0, max]: never wrapped or truncated. */
static uint64_t opt_u64(VALUE h, const char *key, uint64_t max, uint64_t dflt)
{
    VALUE v = opt_get(h, key);
    return NIL_P(v) ? dflt : int_u64(v, max, key);
}

static int64_t opt_i64(VALUE h, const char *key, int64_t dflt)
{
    VALUE v = opt_get(h, key);
    return NIL_P(v) ? dflt : int_i64(v, key);
}

static int opt_bool(VALUE h, const char *key, int dflt)
{
    VALUE v = rb_hash_lookup2(h, ID2SYM(rb_intern(key)), Qundef);
    return v == Qundef || NIL_P(v) ? dflt : RTEST(v);
}

/* The store options of the Hash `opts`, over the library's defaults. */
static void store_options(VALUE opts, struct shmetrics_options *o)
{
    check(L.shmetrics_options_default(o));
    o->create = opt_bool(opts, "create", o->create);
    o->read_only = opt_bool(opts, "read_only", o->read_only);
    o->mode = (uint32_t)opt_u64(opts, "mode", UINT32_MAX, o->mode);
    o->max_families = (uint32_t)opt_u64(opts, "max_families", UINT32_MAX, o->max_families);
    o->max_series = (uint32_t)opt_u64(opts, "max_series", UINT32_MAX, o->max_series);
    o->label_bytes = opt_u64(opts, "label_bytes", UINT64_MAX, o->label_bytes);
    o->max_writers = (uint32_t)opt_u64(opts, "max_writers", UINT32_MAX, o->max_writers);
    o->cells_per_writer = opt_u64(opts, "cells_per_writer", UINT64_MAX, o->cells_per_writer);
    o->sketch_cells_per_writer =
        opt_u64(opts, "sketch_cells_per_writer", UINT64_MAX, o->sketch_cells_per_writer);
    o->owner = opt_i64(opts, "owner", o->owner);
    o->group = opt_i64(opts, "group", o->group);
}

/* Store#__open(path, opts): opens (or creates) the store file. */
static VALUE store_open(VALUE self, VALUE path, VALUE opts)
{
    require_loaded();
    store_t *s = get_store(self);
    Check_Type(opts, T_HASH);
    path = rb_str_new_frozen(StringValue(path));
    struct shmetrics_options o;
    store_options(opts, &o);
    struct shmetrics_store *p = NULL;
    /* No allocation between RSTRING_PTR and the call: the GC cannot move
     * the path's bytes meanwhile. */
    check(L.shmetrics_store_open(RSTRING_PTR(path), (size_t)RSTRING_LEN(path), &o, &p));
    if (s->ptr)
        L.shmetrics_store_close(s->ptr);
    s->ptr = p;
    s->path = path;
    s->opts = o;
    s->gen++;
    store_track(s, path);
    return self;
}

/* Opens the store's path again if another file replaced the one it
 * maps (the C side of Store#check); 1 if it did. */
static int store_check_now(store_t *s)
{
    shmetrics_path_now now = SHMETRICS_PATH_SAME;
    if (s->ptr == NULL || L.shmetrics_store_path_now(s->ptr, &now) != SHMETRICS_OK ||
        now != SHMETRICS_PATH_OTHER)
        return 0;
    struct shmetrics_store *p = NULL;
    struct shmetrics_options o = s->opts;
    if (L.shmetrics_store_open(s->cpath, s->cpath_len, &o, &p) != SHMETRICS_OK)
        return 0;
    L.shmetrics_store_close(s->ptr);
    s->ptr = p;
    s->gen++;
    return 1;
}

/* Store.__check_all -> whether any store of the process was reopened:
 * Store#check on each, walking the C list (no Ruby object touched). */
static VALUE store_s_check_all(VALUE klass)
{
    int any = 0;
    if (!loaded)
        return Qfalse;
    for (store_t *s = all_stores; s; s = s->next)
        any |= store_check_now(s);
    return any ? Qtrue : Qfalse;
}

/* Store#reopen: opens the path again (a file that replaced the one this
 * handle mapped) and closes the old handle. Every family registers again
 * before its next update; series caches start empty. */
static VALUE store_reopen(VALUE self)
{
    store_t *s = open_store(self);
    struct shmetrics_store *p = NULL;
    struct shmetrics_options o = s->opts;
    check(L.shmetrics_store_open(RSTRING_PTR(s->path), (size_t)RSTRING_LEN(s->path), &o, &p));
    L.shmetrics_store_close(s->ptr);
    s->ptr = p;
    s->gen++;
    return self;
}

static VALUE store_close(VALUE self)
{
    store_t *s = get_store(self);
    if (s->ptr) {
        L.shmetrics_store_close(s->ptr);
        s->ptr = NULL;
    }
    return Qnil;
}

static VALUE store_closed_p(VALUE self)
{
    return get_store(self)->ptr ? Qfalse : Qtrue;
}

static VALUE store_path(VALUE self)
{
    return get_store(self)->path;
}

static VALUE store_read_only_p(VALUE self)
{
    return get_store(self)->opts.read_only ? Qtrue : Qfalse;
}

static VALUE store_generation(VALUE self)
{
    return ULONG2NUM(get_store(self)->gen);
}

static VALUE store_reset(VALUE self)
{
    check(L.shmetrics_store_reset(open_store(self)->ptr));
    return Qnil;
}

static VALUE store_wipe(VALUE self)
{
    check(L.shmetrics_store_wipe(open_store(self)->ptr));
    return Qnil;
}

static VALUE store_release_slot(VALUE self)
{
    check(L.shmetrics_store_release_slot(open_store(self)->ptr));
    return Qnil;
}

/* Store#path_now -> :same, :gone or :other. */
static VALUE store_path_now(VALUE self)
{
    shmetrics_path_now now = SHMETRICS_PATH_OTHER;
    check(L.shmetrics_store_path_now(open_store(self)->ptr, &now));
    switch (now) {
    case SHMETRICS_PATH_SAME: return ID2SYM(id_same);
    case SHMETRICS_PATH_GONE: return ID2SYM(id_gone);
    default: return ID2SYM(id_other);
    }
}

static uint32_t format_of(VALUE format)
{
    if (NIL_P(format))
        return SHMETRICS_FORMAT_PROMETHEUS_TEXT;
    if (SYMBOL_P(format)) {
        ID id = SYM2ID(format);
        if (id == id_text) return SHMETRICS_FORMAT_PROMETHEUS_TEXT;
        if (id == id_openmetrics) return SHMETRICS_FORMAT_OPENMETRICS;
    }
    rb_raise(rb_eArgError, "unknown exposition format %" PRIsVALUE ": use :text or :openmetrics",
             rb_inspect(format));
}

/* Store#render(format = :text) -> String. */
static VALUE store_render(int argc, VALUE *argv, VALUE self)
{
    VALUE format;
    rb_scan_args(argc, argv, "01", &format);
    uint32_t f = format_of(format);
    store_t *s = open_store(self);
    struct shmetrics_buf *buf = NULL;
    check(L.shmetrics_render_alloc(s->ptr, f, &buf));
    VALUE out = rb_utf8_str_new((const char *)L.shmetrics_buf_data(buf), (long)L.shmetrics_buf_len(buf));
    L.shmetrics_buf_free(buf);
    return out;
}

/* Store.content_type(format = :text) -> String. */
static VALUE store_s_content_type(int argc, VALUE *argv, VALUE klass)
{
    VALUE format;
    rb_scan_args(argc, argv, "01", &format);
    require_loaded();
    return rb_str_new_cstr(L.shmetrics_format_content_type(format_of(format)));
}

/* Store.negotiate(accept) -> :text or :openmetrics. */
static VALUE store_s_negotiate(VALUE klass, VALUE accept)
{
    require_loaded();
    uint32_t f;
    if (NIL_P(accept))
        f = L.shmetrics_negotiate(NULL, 0);
    else {
        StringValue(accept);
        f = L.shmetrics_negotiate(RSTRING_PTR(accept), (size_t)RSTRING_LEN(accept));
    }
    return ID2SYM(f == SHMETRICS_FORMAT_OPENMETRICS ? id_openmetrics : id_text);
}

static VALUE store_stats(VALUE self)
{
    struct shmetrics_stats st;
    check(L.shmetrics_store_stats(open_store(self)->ptr, &st));
    VALUE h = rb_hash_new();
#define U(f) rb_hash_aset(h, ID2SYM(rb_intern(#f)), ULL2NUM(st.f));
    U(layout_version) U(families) U(families_capacity) U(series_allocated) U(series_capacity)
    U(writers_capacity) U(writers_live) U(writers_dead) U(file_size) U(label_bytes_used)
    U(label_bytes_capacity) U(cells_used) U(cells_capacity) U(writer_claims_total)
    U(writer_reuses_total) U(writers_exhausted_total) U(overflows_total)
    U(lock_recoveries_total) U(sketch_cells_used) U(sketch_cells_capacity)
    U(series_expired_total)
#undef U
    return h;
}

static VALUE str_of(struct shmetrics_str s)
{
    return rb_utf8_str_new(s.ptr, (long)s.len);
}

static VALUE kind_sym(uint32_t kind)
{
    switch (kind) {
    case SHMETRICS_KIND_COUNTER: return ID2SYM(rb_intern("counter"));
    case SHMETRICS_KIND_GAUGE: return ID2SYM(rb_intern("gauge"));
    case SHMETRICS_KIND_HISTOGRAM: return ID2SYM(rb_intern("histogram"));
    default: return ID2SYM(rb_intern("summary"));
    }
}

struct snap_args {
    struct shmetrics_snapshot *snap;
    VALUE only;
};

static VALUE snapshot_convert(VALUE arg)
{
    struct snap_args *a = (struct snap_args *)arg;
    VALUE out = rb_ary_new();
    size_t nf = L.shmetrics_snapshot_family_count(a->snap);
    for (size_t i = 0; i < nf; i++) {
        struct shmetrics_family_info fi;
        check(L.shmetrics_snapshot_family(a->snap, i, &fi));
        if (!NIL_P(a->only) &&
            ((size_t)RSTRING_LEN(a->only) != fi.name.len ||
             memcmp(RSTRING_PTR(a->only), fi.name.ptr, fi.name.len) != 0))
            continue;
        VALUE f = rb_hash_new();
        rb_hash_aset(f, ID2SYM(rb_intern("name")), str_of(fi.name));
        rb_hash_aset(f, ID2SYM(rb_intern("help")), str_of(fi.help));
        rb_hash_aset(f, ID2SYM(rb_intern("unit")), str_of(fi.unit));
        rb_hash_aset(f, ID2SYM(rb_intern("kind")), kind_sym(fi.kind));
        rb_hash_aset(f, ID2SYM(rb_intern("gauge_mode")), UINT2NUM(fi.gauge_mode));
        VALUE names = rb_ary_new_capa((long)fi.label_count);
        for (size_t k = 0; k < fi.label_count; k++)
            rb_ary_push(names, str_of(fi.label_names[k]));
        rb_hash_aset(f, ID2SYM(rb_intern("label_names")), names);
        VALUE buckets = rb_ary_new_capa((long)fi.bucket_count);
        for (size_t k = 0; k < fi.bucket_count; k++)
            rb_ary_push(buckets, DBL2NUM(fi.buckets[k]));
        rb_hash_aset(f, ID2SYM(rb_intern("buckets")), buckets);
        VALUE series = rb_ary_new_capa((long)fi.series_count);
        for (size_t j = 0; j < fi.series_count; j++) {
            struct shmetrics_series_info si;
            check(L.shmetrics_snapshot_series(a->snap, i, j, &si));
            VALUE s = rb_hash_new();
            VALUE vals = rb_ary_new_capa((long)fi.label_count);
            for (size_t k = 0; k < fi.label_count; k++)
                rb_ary_push(vals, str_of(si.label_values[k]));
            rb_hash_aset(s, ID2SYM(rb_intern("labels")), vals);
            if (si.extra_label_name.len > 0)
                rb_hash_aset(s, ID2SYM(rb_intern("extra")),
                             rb_assoc_new(str_of(si.extra_label_name), str_of(si.extra_label_value)));
            rb_hash_aset(s, ID2SYM(rb_intern("value")), DBL2NUM(si.value));
            rb_hash_aset(s, ID2SYM(rb_intern("count")), ULL2NUM(si.count));
            if (si.cumulative) {
                VALUE cum = rb_ary_new_capa((long)fi.bucket_count + 1);
                for (size_t k = 0; k <= fi.bucket_count; k++)
                    rb_ary_push(cum, ULL2NUM(si.cumulative[k]));
                rb_hash_aset(s, ID2SYM(rb_intern("cumulative")), cum);
            }
            if (si.quantile_count > 0) {
                VALUE qs = rb_ary_new_capa((long)si.quantile_count);
                for (size_t k = 0; k < si.quantile_count; k++)
                    rb_ary_push(qs, rb_assoc_new(DBL2NUM(si.quantiles[k].quantile),
                                                 DBL2NUM(si.quantiles[k].value)));
                rb_hash_aset(s, ID2SYM(rb_intern("quantiles")), qs);
            }
            rb_ary_push(series, s);
        }
        rb_hash_aset(f, ID2SYM(rb_intern("series")), series);
        rb_ary_push(out, f);
    }
    return out;
}

static VALUE snapshot_release(VALUE arg)
{
    L.shmetrics_snapshot_free(((struct snap_args *)arg)->snap);
    return Qnil;
}

/* Store#snapshot(name = nil) -> Array of family Hashes (only the family
 * registered as `name`, when given), merged over every process. */
static VALUE store_snapshot(int argc, VALUE *argv, VALUE self)
{
    VALUE only;
    rb_scan_args(argc, argv, "01", &only);
    if (!NIL_P(only))
        only = rb_str_new_frozen(rb_obj_as_string(only));
    struct snap_args a = {NULL, only};
    check(L.shmetrics_snapshot_take(open_store(self)->ptr, &a.snap));
    VALUE out = rb_ensure(snapshot_convert, (VALUE)&a, snapshot_release, (VALUE)&a);
    RB_GC_GUARD(only);
    return out;
}

/* ---------------------------------------------------------------------
 * Family.
 */
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

static void family_mark(void *p)
{
    family_t *f = p;
    rb_gc_mark(f->store);
    rb_gc_mark(f->def.name);
    rb_gc_mark(f->def.help);
    rb_gc_mark(f->def.unit);
    rb_gc_mark(f->def.buckets);
    rb_gc_mark(f->def.quantiles);
    rb_gc_mark(f->spec);
    rb_gc_mark(f->label_syms);
    rb_gc_mark(f->label_strs);
    rb_gc_mark(f->extra_syms);
    rb_gc_mark(f->cache);
    rb_gc_mark(f->nolabels);
    /* The memo's values are marked too: an address in it must not be
     * reused by another object while the entry is there. */
    if (f->memo) {
        for (int i = 0; i < MEMO_SIZE; i++) {
            if (f->memo[i].handle == 0)
                continue;
            for (int k = 0; k < MEMO_LABELS; k++)
                rb_gc_mark(f->memo[i].values[k]);
            rb_gc_mark(f->memo[i].handle);
        }
    }
}

static void family_free(void *p)
{
    family_t *f = p;
    xfree(f->memo);
    xfree(f);
}

static size_t family_memsize(const void *p)
{
    const family_t *f = p;
    return sizeof(family_t) + (f->memo ? MEMO_SIZE * sizeof(struct memo_entry) : 0);
}

/* Empties the family's caches (the nested Hashes and the memo). */
static void cache_reset(family_t *f)
{
    f->cache = rb_hash_new();
    f->cached = 0;
    f->nolabels = Qnil;
    if (f->memo)
        memset(f->memo, 0, MEMO_SIZE * sizeof(struct memo_entry));
}

static const rb_data_type_t family_type = {
    "Shmetrics::Family",
    {family_mark, family_free, family_memsize, NULL, {NULL}},
    0, 0, RUBY_TYPED_FREE_IMMEDIATELY,
};

static VALUE family_alloc(VALUE klass)
{
    family_t *f;
    VALUE obj = TypedData_Make_Struct(klass, family_t, &family_type, f);
    f->store = f->spec = f->label_syms = f->label_strs = f->extra_syms = f->cache = f->nolabels = Qnil;
    f->def.name = f->def.help = f->def.unit = f->def.buckets = f->def.quantiles = Qnil;
    return obj;
}

NORETURN(static void raise_uninitialized(VALUE obj));
static void raise_uninitialized(VALUE obj)
{
    rb_raise(eError, "shmetrics: this %" PRIsVALUE " was made without its store (use Store#counter, "
             "#gauge, #histogram or #summary)", rb_obj_class(obj));
}

/* The family of `obj`, initialized or not (for Family#__init). */
static family_t *family_data(VALUE obj)
{
    /* The update path's check first: rb_check_typeddata is a call. */
    if (RB_LIKELY(!RB_SPECIAL_CONST_P(obj) && RB_BUILTIN_TYPE(obj) == T_DATA && RTYPEDDATA_P(obj) &&
                  RTYPEDDATA_TYPE(obj) == &family_type))
        return RTYPEDDATA_DATA(obj);
    family_t *f;
    TypedData_Get_Struct(obj, family_t, &family_type, f);
    return f;
}

/* The family of `obj`; raises Shmetrics::Error for one made by
 * `allocate` or `new` (no store: Counter.new.increment). */
static inline family_t *get_family(VALUE obj)
{
    family_t *f = family_data(obj);
    if (RB_UNLIKELY(NIL_P(f->store)))
        raise_uninitialized(obj);
    return f;
}

/* ---------------------------------------------------------------------
 * Series: a series handle bound to its family and its label values. They
 * are the leaves of a family's cache, and what Family#series and
 * Family#__bind return. A handle gone stale (the series deleted or
 * expired by any process, the store wiped) is looked up again in place,
 * from the label values it keeps, so whoever holds a Series never sees
 * the staleness.
 */
typedef struct {
    struct shmetrics_series h;
    VALUE family;      /* the Shmetrics::Family */
    VALUE values;      /* the label values: a frozen Array of frozen Strings */
    unsigned long gen; /* the store generation `h` was got in */
} series_t;

static void series_mark(void *p)
{
    series_t *sr = p;
    rb_gc_mark(sr->family);
    rb_gc_mark(sr->values);
}

static size_t series_memsize(const void *p)
{
    return sizeof(series_t);
}

static const rb_data_type_t series_type = {
    "Shmetrics::Series",
    {series_mark, RUBY_TYPED_DEFAULT_FREE, series_memsize, NULL, {NULL}},
    0, 0, RUBY_TYPED_FREE_IMMEDIATELY,
};

static series_t *get_series(VALUE obj)
{
    if (RB_LIKELY(!RB_SPECIAL_CONST_P(obj) && RB_BUILTIN_TYPE(obj) == T_DATA && RTYPEDDATA_P(obj) &&
                  RTYPEDDATA_TYPE(obj) == &series_type))
        return RTYPEDDATA_DATA(obj);
    series_t *sr;
    TypedData_Get_Struct(obj, series_t, &series_type, sr);
    return sr;
}

static VALUE spec_get(VALUE spec, const char *key)
{
    return rb_hash_lookup2(spec, ID2SYM(rb_intern(key)), Qnil);
}

/* A String's bytes. The pointer is valid until the next allocation (a
 * GC may move an embedded String's bytes): take it just before the call
 * that reads it. */
static struct shmetrics_str sstr(VALUE s)
{
    struct shmetrics_str r = {NIL_P(s) ? NULL : RSTRING_PTR(s), NIL_P(s) ? 0 : (size_t)RSTRING_LEN(s)};
    return r;
}

/* The String `key` of `spec` as a frozen copy (nil if absent and
 * `optional`, else ""). */
static VALUE spec_str(VALUE spec, const char *key, int optional)
{
    VALUE v = spec_get(spec, key);
    if (NIL_P(v))
        return optional ? Qnil : rb_str_new_frozen(rb_utf8_str_new("", 0));
    return rb_str_new_frozen(StringValue(v));
}

/* The Array of numbers `key` of `spec` as a frozen Array of Floats, or
 * nil. */
static VALUE spec_floats(VALUE spec, const char *key)
{
    VALUE v = spec_get(spec, key);
    if (NIL_P(v))
        return Qnil;
    Check_Type(v, T_ARRAY);
    v = rb_ary_dup(v);
    for (long i = 0; i < RARRAY_LEN(v); i++)
        rb_ary_store(v, i, rb_to_float(RARRAY_AREF(v, i)));
    return rb_obj_freeze(v);
}

static uint64_t spec_uint(VALUE spec, const char *key, uint64_t max)
{
    VALUE v = spec_get(spec, key);
    return NIL_P(v) ? 0 : int_u64(v, max, key);
}

/* Checks the definition `spec` into `d`: TypeError, ArgumentError or
 * RangeError for a value of the wrong type or out of range. */
static void spec_def(VALUE spec, struct family_def *d)
{
    d->name = spec_str(spec, "name", 0);
    d->help = spec_str(spec, "help", 0);
    d->unit = spec_str(spec, "unit", 1);
    d->buckets = spec_floats(spec, "buckets");
    d->quantiles = spec_floats(spec, "quantiles");
    if (NIL_P(spec_get(spec, "kind")))
        rb_raise(rb_eArgError, "shmetrics: a family's definition needs its kind");
    d->kind = (uint32_t)spec_uint(spec, "kind", UINT32_MAX);
    d->gauge_mode = (uint32_t)spec_uint(spec, "gauge_mode", UINT32_MAX);
    d->max_age_ms = spec_uint(spec, "max_age_ms", UINT64_MAX);
    d->age_buckets = (uint32_t)spec_uint(spec, "age_buckets", UINT32_MAX);
    d->max_series = (uint32_t)spec_uint(spec, "max_series", UINT32_MAX);
    d->ttl_ms = spec_uint(spec, "ttl_ms", UINT64_MAX);
    d->exemplars = RTEST(spec_get(spec, "exemplars"));
    d->name_as_given = RTEST(spec_get(spec, "name_as_given"));
}

/* Copies a frozen Array of Floats (or nil) into `out`; returns the count. */
static size_t fill_doubles(VALUE ary, double *out)
{
    long n = NIL_P(ary) ? 0 : RARRAY_LEN(ary);
    for (long i = 0; i < n; i++)
        out[i] = RFLOAT_VALUE(RARRAY_AREF(ary, i));
    return (size_t)n;
}

static long ary_len(VALUE ary)
{
    return NIL_P(ary) ? 0 : RARRAY_LEN(ary);
}

/* Registers the family from its definition (again, after a wipe or a
 * reopen), and empties its caches. */
static void family_register(VALUE self, family_t *f)
{
    store_t *s = open_store(f->store);
    const struct family_def *df = &f->def;
    long nb = ary_len(df->buckets), nq = ary_len(df->quantiles);
    VALUE tmp;
    char *mem = ALLOCV(tmp, (size_t)f->nlabels * sizeof(struct shmetrics_str) +
                                (size_t)(nb + nq) * sizeof(double) + 1);
    /* From here to the call nothing allocates: no GC can move the
     * Strings whose bytes `d` points to. */
    struct shmetrics_str *names = (struct shmetrics_str *)mem;
    double *buckets = (double *)(names + f->nlabels), *quantiles = buckets + nb;
    for (long i = 0; i < f->nlabels; i++)
        names[i] = sstr(RARRAY_AREF(f->label_strs, i));
    struct shmetrics_family_desc d;
    memset(&d, 0, sizeof d);
    d.name = sstr(df->name);
    d.help = sstr(df->help);
    d.unit = sstr(df->unit);
    d.label_names = f->nlabels ? names : NULL;
    d.label_count = (size_t)f->nlabels;
    d.kind = df->kind;
    d.gauge_mode = df->gauge_mode;
    d.bucket_count = fill_doubles(df->buckets, buckets);
    d.buckets = nb ? buckets : NULL;
    d.quantile_count = fill_doubles(df->quantiles, quantiles);
    d.quantiles = nq ? quantiles : NULL;
    d.max_age_ms = df->max_age_ms;
    d.age_buckets = df->age_buckets;
    d.max_series = df->max_series;
    d.ttl_ms = df->ttl_ms;
    d.exemplars = df->exemplars;
    d.name_as_given = df->name_as_given;
    /* prometheus-client's names: the legacy character sets, checked by the store. */
    d.name_rules = SHMETRICS_NAMES_LEGACY;
    struct shmetrics_family out;
    shmetrics_result rc = L.shmetrics_register(s->ptr, &d, &out);
    ALLOCV_END(tmp);
    check(rc);
    f->fam = out;
    f->gen = s->gen;
    cache_reset(f);
}

/* The label names of `spec` as frozen Arrays of Symbols and of frozen
 * Strings. */
static void spec_labels(VALUE spec, VALUE *syms, VALUE *strs)
{
    VALUE labels = spec_get(spec, "labels");
    if (NIL_P(labels))
        labels = rb_ary_new();
    Check_Type(labels, T_ARRAY);
    labels = rb_ary_dup(labels); /* a conversion below cannot change it */
    long n = RARRAY_LEN(labels);
    *syms = rb_ary_new_capa(n);
    *strs = rb_ary_new_capa(n);
    for (long i = 0; i < n; i++) {
        VALUE l = RARRAY_AREF(labels, i);
        VALUE str = rb_str_new_frozen(SYMBOL_P(l) ? rb_sym2str(l) : StringValue(l));
        rb_ary_push(*strs, str);
        rb_ary_push(*syms, rb_str_intern(str));
    }
    rb_obj_freeze(*syms);
    rb_obj_freeze(*strs);
}

/* Family#__init(store, spec, extra_label_names): registers the family
 * `spec` (a Hash: name, help, unit, kind, labels, gauge_mode, buckets,
 * quantiles, max_age_ms, age_buckets, max_series, ttl_ms, exemplars,
 * name_as_given, cache_limit) in `store`. Everything is checked before
 * the family takes any of it: a family is either whole or unusable. */
static VALUE family_init(VALUE self, VALUE store, VALUE spec, VALUE extra)
{
    family_t *f = family_data(self);
    if (!NIL_P(f->store))
        rb_raise(eError, "shmetrics: this family is already initialized");
    get_store(store);
    Check_Type(spec, T_HASH);
    struct family_def d;
    spec_def(spec, &d);
    VALUE syms, strs;
    spec_labels(spec, &syms, &strs);
    if (!NIL_P(extra))
        Check_Type(extra, T_ARRAY);
    VALUE extra_syms = NIL_P(extra) ? rb_ary_new() : rb_ary_dup(extra);
    VALUE limit = spec_get(spec, "cache_limit");
    long cache_limit = NIL_P(limit) ? 100000 : (long)int_u64(limit, LONG_MAX, "cache_limit");
    VALUE fspec = rb_hash_dup(spec);
    rb_hash_aset(fspec, ID2SYM(rb_intern("name")), d.name);
    rb_hash_aset(fspec, ID2SYM(rb_intern("help")), d.help);
    f->def = d;
    f->spec = rb_obj_freeze(fspec);
    f->label_syms = syms;
    f->label_strs = strs;
    f->nlabels = RARRAY_LEN(strs);
    f->extra_syms = rb_obj_freeze(extra_syms);
    f->extra_keys = RARRAY_LEN(extra_syms);
    f->cache_limit = cache_limit;
    f->cache = rb_hash_new();
    f->store = store; /* last: the family is usable from now on */
    family_register(self, f);
    return self;
}

static VALUE family_label_names(VALUE self)
{
    return get_family(self)->label_syms;
}

static VALUE family_spec(VALUE self)
{
    return get_family(self)->spec;
}

static VALUE family_store(VALUE self)
{
    return get_family(self)->store;
}

/* The label value for `sym` in `labels`, looked up by Symbol then by
 * String; Qundef when missing. */
static VALUE label_value(VALUE labels, VALUE sym, VALUE str)
{
    VALUE v = rb_hash_lookup2(labels, sym, Qundef);
    if (v == Qundef)
        v = rb_hash_lookup2(labels, str, Qundef);
    return v;
}

struct key_check {
    family_t *f;
    VALUE bad;
};

static int find_unexpected(VALUE key, VALUE val, VALUE arg)
{
    struct key_check *k = (struct key_check *)arg;
    /* A String key that is not valid in its encoding has no Symbol
     * (rb_str_intern would raise EncodingError): it is unexpected. */
    VALUE sym = SYMBOL_P(key) ? key
              : RB_TYPE_P(key, T_STRING) && rb_enc_str_coderange(key) != ENC_CODERANGE_BROKEN
                  ? rb_str_intern(key)
                  : Qnil;
    if (NIL_P(sym) ||
        (!RTEST(rb_ary_includes(k->f->label_syms, sym)) && !RTEST(rb_ary_includes(k->f->extra_syms, sym)))) {
        k->bad = key;
        return ST_STOP;
    }
    return ST_CONTINUE;
}

NORETURN(static void raise_labels(family_t *f, VALUE labels, const char *what, VALUE which));
static void raise_labels(family_t *f, VALUE labels, const char *what, VALUE which)
{
    VALUE exc = rb_exc_new_str(
        error_classes[SHMETRICS_LABEL_COUNT],
        rb_sprintf("shmetrics: %" PRIsVALUE ": %s %" PRIsVALUE "; the labels are %" PRIsVALUE
                   ", got %" PRIsVALUE,
                   spec_get(f->spec, "name"), what, rb_inspect(which),
                   rb_inspect(f->label_syms), rb_inspect(labels)));
    rb_ivar_set(exc, rb_intern("@code"), UINT2NUM(SHMETRICS_LABEL_COUNT));
    rb_exc_raise(exc);
}

/* Gets the handle of the series with the label values `strs` (Strings,
 * in label order) into `out`, registering the family again first if the
 * store was reopened or wiped. On OVERFLOW `out` is the family's overflow
 * series, which records under shmetrics_overflow="true"; any other
 * failure raises. */
/* Points `vals` at the bytes of the Strings of `strs` (Array of `n`):
 * call it just before the library call that reads them, with no
 * allocation between (which could let GC.compact move them). */
static const struct shmetrics_str *str_ptrs(VALUE strs, long n, struct shmetrics_str *vals)
{
    for (long i = 0; i < n; i++)
        vals[i] = sstr(RARRAY_AREF(strs, i));
    return n ? vals : NULL;
}

static void resolve(VALUE fam, family_t *f, VALUE strs, struct shmetrics_series *out)
{
    store_t *s = open_store(f->store);
    if (f->gen != s->gen)
        family_register(fam, f);
    long n = RARRAY_LEN(strs);
    VALUE tmp;
    struct shmetrics_str *vals = ALLOCV_N(struct shmetrics_str, tmp, n + 1);
    shmetrics_result rc = L.shmetrics_series_get(s->ptr, &f->fam, str_ptrs(strs, n, vals), (size_t)n, out);
    if (rc == SHMETRICS_STALE_HANDLE) {
        /* The store was wiped: the family is gone; register it again
         * (which allocates: the pointers are taken again). */
        family_register(fam, f);
        rc = L.shmetrics_series_get(s->ptr, &f->fam, str_ptrs(strs, n, vals), (size_t)n, out);
    }
    ALLOCV_END(tmp);
    RB_GC_GUARD(strs);
    if (rc != SHMETRICS_OK && rc != SHMETRICS_OVERFLOW)
        raise_rc(rc);
}

/* A new Series of family `fam` for the label values `strs` (frozen
 * Strings, in label order; the Array is kept frozen). */
static VALUE series_bind(VALUE fam, family_t *f, VALUE strs)
{
    series_t *sr;
    VALUE obj = TypedData_Make_Struct(cSeries, series_t, &series_type, sr);
    sr->family = fam;
    sr->values = rb_obj_freeze(strs);
    resolve(fam, f, strs, &sr->h);
    sr->gen = get_store(f->store)->gen;
    return obj;
}

/* Looks the series up again (it went stale, or the store was reopened). */
static void series_refresh(series_t *sr)
{
    family_t *f = RTYPEDDATA_DATA(sr->family);
    resolve(sr->family, f, sr->values, &sr->h);
    sr->gen = get_store(f->store)->gen;
}

/* A String as UTF-8, which is all the store holds, as the exposition
 * formats are. A String tagged UTF-8 or US-ASCII is kept; binary
 * (ASCII-8BIT: Rack's PATH_INFO, a socket's read) is taken as UTF-8; a
 * String of another encoding (UTF-16, ISO-8859-1, Shift_JIS...) is
 * transcoded. Bytes that are not UTF-8, or have no UTF-8 form, become
 * U+FFFD: an update never raises for its label values' encoding. */
static VALUE utf8_str(VALUE str)
{
    int idx = RB_ENCODING_GET(str);
    if (idx != rb_utf8_encindex() && idx != rb_usascii_encindex() && idx != rb_ascii8bit_encindex()) {
        rb_encoding *enc = rb_enc_from_index(idx);
        if (rb_econv_has_convpath_p(rb_enc_name(enc), "UTF-8"))
            return rb_str_encode(str, rb_enc_from_encoding(rb_utf8_encoding()),
                                 ECONV_INVALID_REPLACE | ECONV_UNDEF_REPLACE, Qnil);
    }
    if (idx != rb_utf8_encindex() && idx != rb_usascii_encindex() && !rb_enc_str_asciionly_p(str))
        str = rb_enc_associate_index(rb_str_dup(str), rb_utf8_encindex());
    if (rb_enc_str_coderange(str) == ENC_CODERANGE_BROKEN) {
        VALUE fixed = rb_str_scrub(str, Qnil);
        if (!NIL_P(fixed))
            str = fixed;
    }
    return str;
}

/* A label value as the store keeps it: a frozen UTF-8 String. */
static VALUE value_str(VALUE v)
{
    return rb_str_new_frozen(utf8_str(RB_TYPE_P(v, T_STRING) ? v : rb_obj_as_string(v)));
}

/* Shmetrics.__label_value(v) -> the String the store keeps for the label
 * value `v`. */
static VALUE label_value_s(VALUE mod, VALUE v)
{
    return value_str(v);
}

/* Gets (or creates) the series for `labels` from the store, and caches
 * its handle. The slow path: checks the labels and says what is wrong. */
static VALUE family_lookup_slow(VALUE self, family_t *f, VALUE labels)
{
    store_t *s = open_store(f->store);
    if (f->gen != s->gen)
        family_register(self, f);
    if (NIL_P(labels))
        labels = rb_hash_new();
    if (!RB_TYPE_P(labels, T_HASH))
        rb_raise(rb_eTypeError, "shmetrics: labels must be a Hash, not %" PRIsVALUE, rb_obj_class(labels));
    struct key_check kc = {f, Qundef};
    rb_hash_foreach(labels, find_unexpected, (VALUE)&kc);
    if (kc.bad != Qundef)
        raise_labels(f, labels, "unexpected label", kc.bad);
    long n = f->nlabels;
    VALUE raw = rb_ary_new_capa(n), strs = rb_ary_new_capa(n);
    for (long i = 0; i < n; i++) {
        VALUE v = label_value(labels, RARRAY_AREF(f->label_syms, i), RARRAY_AREF(f->label_strs, i));
        if (v == Qundef)
            raise_labels(f, labels, "missing label", RARRAY_AREF(f->label_syms, i));
        rb_ary_push(raw, v);
        rb_ary_push(strs, value_str(v));
    }
    VALUE handle = series_bind(self, f, strs);
    if (n == 0) {
        f->nolabels = handle;
        return handle;
    }
    if (f->cached >= f->cache_limit)
        cache_reset(f);
    VALUE node = f->cache;
    for (long i = 0; i < n - 1; i++) {
        VALUE k = RARRAY_AREF(raw, i);
        VALUE next = rb_hash_lookup2(node, k, Qundef);
        if (next == Qundef) {
            next = rb_hash_new();
            rb_hash_aset(node, k, next);
        }
        node = next;
    }
    rb_hash_aset(node, RARRAY_AREF(raw, n - 1), handle);
    f->cached++;
    return handle;
}

/* Whether a label value's contents can never change, so that the memo
 * may know it by identity: immediates (small Integers, Symbols, true,
 * false, nil, Floats), frozen Strings and dynamic Symbols. */
static inline int memo_stable(VALUE v)
{
    if (RB_SPECIAL_CONST_P(v))
        return 1;
    return (RB_BUILTIN_TYPE(v) == T_STRING && RB_OBJ_FROZEN_RAW(v)) || RB_BUILTIN_TYPE(v) == T_SYMBOL;
}

/* The label values of `labels` in the family's label order, for the
 * fast path: one pass over the Hash, keys compared with the family's
 * label Symbols by identity (no key hashing). Any other key must be one
 * of the family's extra keys; a String key, a missing label or an
 * unknown key stops the pass, and the slow path says what is wrong. */
struct pick {
    const VALUE *syms;
    long n;
    const VALUE *extra;
    long nextra;
    long found;
    int bad;
    VALUE vals[MEMO_LABELS];
};

static int pick_label(st_data_t key, st_data_t val, st_data_t arg)
{
    struct pick *p = (struct pick *)arg;
    for (long i = 0; i < p->n; i++) {
        if (p->syms[i] == (VALUE)key) {
            p->vals[i] = (VALUE)val;
            p->found++;
            return ST_CONTINUE;
        }
    }
    for (long i = 0; i < p->nextra; i++)
        if (p->extra[i] == (VALUE)key)
            return ST_CONTINUE;
    p->bad = 1;
    return ST_STOP;
}

/* libruby's rb_hash_stlike_foreach: exported by every libruby since 2.7
 * with this signature, but declared only in Ruby's internal headers. It
 * walks a Hash without rb_hash_foreach's rb_ensure frame (a setjmp), for
 * callbacks that neither raise nor change the Hash, as pick_label does.
 * Looked up at load; without it, the fast path looks each label up. */
typedef int (*stlike_foreach_fn)(VALUE, int (*)(st_data_t, st_data_t, st_data_t), st_data_t);
static stlike_foreach_fn hash_walk;

/* The values of the family's labels in `labels` (a Hash of RHASH_SIZE
 * `size`) into p->vals; 0 if the slow path must decide. */
static inline int pick_labels(family_t *f, VALUE labels, long size, struct pick *p)
{
    p->syms = RARRAY_CONST_PTR(f->label_syms);
    p->n = f->nlabels;
    if (hash_walk) {
        p->extra = RARRAY_CONST_PTR(f->extra_syms);
        p->nextra = f->extra_keys;
        p->found = 0;
        p->bad = 0;
        hash_walk(labels, pick_label, (st_data_t)p);
        return !p->bad && p->found == p->n;
    }
    if (size > p->n)
        return 0; /* extra keys: the slow path checks them */
    for (long i = 0; i < p->n; i++) {
        VALUE v = rb_hash_lookup2(labels, p->syms[i], Qundef);
        if (v == Qundef)
            return 0;
        p->vals[i] = v;
    }
    return 1;
}

/* The handle for `labels`: the cached one, found without allocating, or
 * the slow path's. */
static inline VALUE family_lookup(VALUE self, family_t *f, VALUE labels)
{
    store_t *s = RTYPEDDATA_DATA(f->store);
    if (RB_UNLIKELY(s->ptr == NULL || f->gen != s->gen))
        return family_lookup_slow(self, f, labels);
    long n = f->nlabels;
    if (n == 0) {
        if (f->nolabels != Qnil &&
            (NIL_P(labels) || (RB_TYPE_P(labels, T_HASH) && RHASH_SIZE(labels) == (size_t)f->extra_keys)))
            return f->nolabels;
        return family_lookup_slow(self, f, labels);
    }
    if (!RB_TYPE_P(labels, T_HASH))
        return family_lookup_slow(self, f, labels);
    long size = (long)RHASH_SIZE(labels);
    if (size < n || size > n + f->extra_keys)
        return family_lookup_slow(self, f, labels);
    if (n <= MEMO_LABELS) {
        struct pick p;
        memset(p.vals, 0, sizeof p.vals);
        if (!pick_labels(f, labels, size, &p))
            return family_lookup_slow(self, f, labels);
        uint64_t h = 0;
        int stable = 1;
        for (long i = 0; i < n; i++) {
            stable &= memo_stable(p.vals[i]);
            h = (h ^ (uint64_t)p.vals[i]) * 0x9E3779B97F4A7C15ull;
        }
        struct memo_entry *e = f->memo ? &f->memo[(h >> 58) & (MEMO_SIZE - 1)] : NULL;
        if (e && e->handle && memcmp(e->values, p.vals, sizeof p.vals) == 0)
            return e->handle;
        VALUE node = f->cache;
        for (long i = 0; i < n; i++) {
            node = rb_hash_lookup2(node, p.vals[i], Qundef);
            if (node == Qundef)
                return family_lookup_slow(self, f, labels);
        }
        if (stable) {
            if (!f->memo)
                f->memo = ZALLOC_N(struct memo_entry, MEMO_SIZE);
            e = &f->memo[(h >> 58) & (MEMO_SIZE - 1)];
            memcpy(e->values, p.vals, sizeof p.vals);
            e->handle = node;
        }
        return node;
    }
    const VALUE *syms = RARRAY_CONST_PTR(f->label_syms);
    VALUE node = f->cache;
    for (long i = 0; i < n; i++) {
        VALUE v = rb_hash_lookup2(labels, syms[i], Qundef);
        if (v == Qundef)
            return family_lookup_slow(self, f, labels);
        node = rb_hash_lookup2(node, v, Qundef);
        if (node == Qundef)
            return family_lookup_slow(self, f, labels);
    }
    return node;
}

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

/* One update: the handle for `labels`, then `op` with `v`. */
HOT VALUE update(VALUE self, int op, VALUE labels, VALUE value)
{
    family_t *f = get_family(self);
    double v = op == OP_SET_TO_CURRENT_TIME ? 0.0 : num_dbl(value);
    return series_apply(family_lookup(self, f, labels), op, v);
}

/* The update entry points: (labels, value). */
static VALUE family_counter_add(VALUE self, VALUE labels, VALUE v) { return update(self, OP_COUNTER_ADD, labels, v); }
static VALUE family_gauge_set(VALUE self, VALUE labels, VALUE v) { return update(self, OP_GAUGE_SET, labels, v); }
static VALUE family_gauge_add(VALUE self, VALUE labels, VALUE v) { return update(self, OP_GAUGE_ADD, labels, v); }
static VALUE family_observe(VALUE self, VALUE labels, VALUE v) { return update(self, OP_OBSERVE, labels, v); }
static VALUE family_set_to_current_time(VALUE self, VALUE labels) { return update(self, OP_SET_TO_CURRENT_TIME, labels, Qnil); }

/* Family#__touch(labels): makes sure the series exists (at zero). */
static VALUE family_touch(VALUE self, VALUE labels)
{
    family_t *f = get_family(self);
    family_lookup(self, f, labels);
    return Qnil;
}

/* The exemplar's label names and values, from `pairs` ([[name, value],
 * ...], sorted by the Ruby side), as Arrays of Strings. */
static void exemplar_strs(VALUE pairs, VALUE *ks, VALUE *vs)
{
    Check_Type(pairs, T_ARRAY);
    pairs = rb_ary_dup(pairs);
    long n = RARRAY_LEN(pairs);
    *ks = rb_ary_new_capa(n);
    *vs = rb_ary_new_capa(n);
    for (long i = 0; i < n; i++) {
        VALUE pair = RARRAY_AREF(pairs, i);
        Check_Type(pair, T_ARRAY);
        if (RARRAY_LEN(pair) != 2)
            rb_raise(rb_eArgError, "shmetrics: an exemplar pair is [name, value]");
        VALUE k = rb_ary_entry(pair, 0), v = rb_ary_entry(pair, 1);
        rb_ary_push(*ks, utf8_str(StringValue(k)));
        rb_ary_push(*vs, utf8_str(StringValue(v)));
    }
}

/* Family#__exemplar(observe, labels, value, pairs): an update with an
 * exemplar; `observe` picks shmetrics_observe_exemplar over
 * shmetrics_counter_add_exemplar. */
static VALUE family_exemplar(VALUE self, VALUE observe, VALUE labels, VALUE value, VALUE pairs)
{
    family_t *f = get_family(self);
    double v = NUM2DBL(value);
    VALUE ks, vs;
    exemplar_strs(pairs, &ks, &vs);
    long n = RARRAY_LEN(ks);
    VALUE h = family_lookup(self, f, labels);
    series_t *sr = RTYPEDDATA_DATA(h);
    VALUE tmp;
    struct shmetrics_str *names = ALLOCV_N(struct shmetrics_str, tmp, 2 * n + 1), *vals = names + n;
    shmetrics_result rc = SHMETRICS_STALE_HANDLE;
    for (int attempt = 0; attempt < 2 && rc == SHMETRICS_STALE_HANDLE; attempt++) {
        if (attempt || sr->gen != open_store(f->store)->gen)
            series_refresh(sr);
        struct shmetrics_store *st = open_store(f->store)->ptr;
        /* The pointers are taken after every call that allocates. */
        const struct shmetrics_str *np = str_ptrs(ks, n, names), *vp = str_ptrs(vs, n, vals);
        rc = RTEST(observe) ? L.shmetrics_observe_exemplar(st, &sr->h, v, np, vp, (size_t)n)
                            : L.shmetrics_counter_add_exemplar(st, &sr->h, v, np, vp, (size_t)n);
    }
    ALLOCV_END(tmp);
    RB_GC_GUARD(h);
    RB_GC_GUARD(ks);
    RB_GC_GUARD(vs);
    check(rc);
    return Qnil;
}

/* Family#__remove(labels) -> true if the series existed. */
static VALUE family_remove(VALUE self, VALUE labels)
{
    family_t *f = get_family(self);
    open_store(f->store);
    if (NIL_P(labels))
        labels = rb_hash_new();
    Check_Type(labels, T_HASH);
    long n = f->nlabels;
    VALUE strs = rb_ary_new_capa(n);
    for (long i = 0; i < n; i++) {
        VALUE v = label_value(labels, RARRAY_AREF(f->label_syms, i), RARRAY_AREF(f->label_strs, i));
        if (v == Qundef)
            raise_labels(f, labels, "missing label", RARRAY_AREF(f->label_syms, i));
        rb_ary_push(strs, value_str(v));
    }
    /* After the values' #to_s, which may have reopened or closed it. */
    store_t *s = open_store(f->store);
    if (f->gen != s->gen)
        family_register(self, f);
    VALUE tmp;
    struct shmetrics_str *vals = ALLOCV_N(struct shmetrics_str, tmp, n + 1);
    bool existed = false;
    shmetrics_result rc = L.shmetrics_series_delete(s->ptr, &f->fam,
                                                    str_ptrs(strs, n, vals), (size_t)n, &existed);
    ALLOCV_END(tmp);
    RB_GC_GUARD(strs);
    cache_reset(f);
    if (rc == SHMETRICS_STALE_HANDLE)
        return Qfalse; /* wiped: nothing to delete */
    check(rc);
    return existed ? Qtrue : Qfalse;
}

/* Family#__clear -> how many series were deleted. */
static VALUE family_clear(VALUE self)
{
    family_t *f = get_family(self);
    store_t *s = open_store(f->store);
    if (f->gen != s->gen)
        family_register(self, f);
    size_t deleted = 0;
    shmetrics_result rc = L.shmetrics_family_clear(s->ptr, &f->fam, &deleted);
    cache_reset(f);
    if (rc == SHMETRICS_STALE_HANDLE)
        return INT2FIX(0);
    check(rc);
    return SIZET2NUM(deleted);
}

/* Family#__register: registers the family again now (it may have been
 * wiped since), raising what the store says (ConflictError when the name
 * was taken meanwhile by another definition). */
static VALUE family_register_now(VALUE self)
{
    family_register(self, get_family(self));
    return self;
}

/* Family#series(labels) -> the Series for `labels` (the one in the
 * family's cache). */
static VALUE family_series(VALUE self, VALUE labels)
{
    return family_lookup(self, get_family(self), labels);
}

/* Family#__bind(values) -> a new Series for these label values, in the
 * order of the family's label names, not kept in the family's cache (the
 * caller keeps it). */
static VALUE family_bind(VALUE self, VALUE values)
{
    family_t *f = get_family(self);
    Check_Type(values, T_ARRAY);
    if (RARRAY_LEN(values) != f->nlabels)
        raise_labels(f, values, "label values count", LONG2NUM(RARRAY_LEN(values)));
    VALUE strs = rb_ary_new_capa(f->nlabels);
    for (long i = 0; i < f->nlabels; i++)
        rb_ary_push(strs, value_str(RARRAY_AREF(values, i)));
    return series_bind(self, f, strs);
}

/* The Series update entry points: (value). `__add` adds to a counter, or
 * to a gauge. */
static VALUE series_add(VALUE self, VALUE v)
{
    series_t *sr = get_series(self);
    family_t *f = RTYPEDDATA_DATA(sr->family);
    return series_apply(self, f->fam.kind == SHMETRICS_KIND_GAUGE ? OP_GAUGE_ADD : OP_COUNTER_ADD, num_dbl(v));
}
static VALUE series_counter_add(VALUE self, VALUE v) { get_series(self); return series_apply(self, OP_COUNTER_ADD, num_dbl(v)); }
static VALUE series_gauge_set(VALUE self, VALUE v) { get_series(self); return series_apply(self, OP_GAUGE_SET, num_dbl(v)); }
static VALUE series_observe(VALUE self, VALUE v) { get_series(self); return series_apply(self, OP_OBSERVE, num_dbl(v)); }
static VALUE series_set_to_current_time(VALUE self) { get_series(self); return series_apply(self, OP_SET_TO_CURRENT_TIME, 0.0); }

static VALUE series_family(VALUE self)
{
    return get_series(self)->family;
}

static VALUE series_label_values(VALUE self)
{
    return get_series(self)->values;
}

static VALUE family_cached_count(VALUE self)
{
    family_t *f = get_family(self);
    return LONG2NUM(f->cached + (f->nolabels != Qnil ? 1 : 0));
}

/* ---------------------------------------------------------------------
 * The StatsD facade's series cache (lib/shmetrics/statsd/series_cache.rb):
 * per StatsD name, a Hash of the tags' key (an Integer) to
 * [frozen copy of the tags, series, more], `more` nil or a list of
 * [tags, series] pairs whose tags have the same key. Tags are what the
 * app passes: nil, a String, an Array (of Strings, nearly always) or a
 * Hash. An Array of Strings is hashed and compared here, string by
 * string: Array#hash and Array#== go through Ruby's recursion guard,
 * which cost more than the store update. Anything else uses its own
 * #hash and #==.
 */

/* Whether `tags` is an Array of Strings only, and their bytes in all. */
static int string_array_p(VALUE tags, long *bytes)
{
    if (!RB_TYPE_P(tags, T_ARRAY))
        return 0;
    long n = RARRAY_LEN(tags), sum = 0;
    const VALUE *e = RARRAY_CONST_PTR(tags);
    for (long i = 0; i < n; i++) {
        if (!RB_TYPE_P(e[i], T_STRING))
            return 0;
        sum += RSTRING_LEN(e[i]);
    }
    *bytes = sum;
    return 1;
}

/* The key of an Array of Strings: one rb_memhash (Ruby's seeded hash, as
 * String#hash) over the strings, each after its length, when they fit in
 * a small buffer; else the strings' hashes combined. Equal tags have
 * equal bytes, so equal keys. */
#define TAGS_BUF 256
static st_index_t string_array_hash(VALUE tags, long bytes)
{
    long n = RARRAY_LEN(tags);
    const VALUE *e = RARRAY_CONST_PTR(tags);
    if (bytes + n * (long)sizeof(long) <= TAGS_BUF) {
        char buf[TAGS_BUF];
        long at = 0;
        for (long i = 0; i < n; i++) {
            long len = RSTRING_LEN(e[i]);
            memcpy(buf + at, &len, sizeof len);
            memcpy(buf + at + sizeof len, RSTRING_PTR(e[i]), (size_t)len);
            at += (long)sizeof len + len;
        }
        return rb_memhash(buf, at);
    }
    st_index_t h = rb_hash_start((st_index_t)n);
    for (long i = 0; i < n; i++)
        h = rb_hash_uint(h, rb_str_hash(e[i]));
    return rb_hash_end(h);
}

/* A Hash of tags with Symbol keys (static Symbols, which keep their
 * identity) and String or immediate values (Integers, true...), up to
 * TAGS_PAIRS pairs, read in one pass: hashed and compared here, pair by
 * pair and in any order, as Hash#== does. Other Hashes use Hash#hash and
 * Hash#==. */
#define TAGS_PAIRS 8
struct tag_pairs {
    long n;
    int bad;
    VALUE k[TAGS_PAIRS], v[TAGS_PAIRS];
};

static int collect_pair(st_data_t key, st_data_t val, st_data_t arg)
{
    struct tag_pairs *p = (struct tag_pairs *)arg;
    VALUE k = (VALUE)key, v = (VALUE)val;
    if (p->n == TAGS_PAIRS || !RB_STATIC_SYM_P(k) || !(RB_SPECIAL_CONST_P(v) || RB_TYPE_P(v, T_STRING))) {
        p->bad = 1;
        return ST_STOP;
    }
    p->k[p->n] = k;
    p->v[p->n] = v;
    p->n++;
    return ST_CONTINUE;
}

static int tag_pairs_of(VALUE tags, struct tag_pairs *p)
{
    p->n = 0;
    p->bad = 0;
    if (!hash_walk || !RB_TYPE_P(tags, T_HASH) || RHASH_SIZE(tags) > TAGS_PAIRS)
        return 0;
    hash_walk(tags, collect_pair, (st_data_t)p);
    return !p->bad;
}

static st_index_t tag_pairs_hash(const struct tag_pairs *p)
{
    st_index_t h = (st_index_t)p->n;
    for (long i = 0; i < p->n; i++) {
        VALUE v = p->v[i];
        st_index_t vh = RB_SPECIAL_CONST_P(v) ? rb_hash_end(rb_hash_start((st_index_t)v))
                                              : rb_memhash(RSTRING_PTR(v), RSTRING_LEN(v));
        h += ((st_index_t)p->k[i] * 0x9E3779B97F4A7C15ull) ^ vh; /* a sum: any order */
    }
    return h;
}

static inline int str_same(VALUE a, VALUE b);

/* Whether two pair sets are the same, in any order. */
static int tag_pairs_same(const struct tag_pairs *a, const struct tag_pairs *b)
{
    if (a->n != b->n)
        return 0;
    for (long i = 0; i < a->n; i++) {
        long j = 0;
        while (j < b->n && b->k[j] != a->k[i])
            j++;
        if (j == b->n)
            return 0;
        VALUE x = a->v[i], y = b->v[j];
        if (x != y && (RB_SPECIAL_CONST_P(x) || RB_SPECIAL_CONST_P(y) || !str_same(x, y)))
            return 0;
    }
    return 1;
}

static VALUE tags_key(VALUE tags)
{
    st_index_t h;
    long bytes;
    struct tag_pairs p;
    if (NIL_P(tags))
        return INT2FIX(0);
    if (RB_TYPE_P(tags, T_STRING))
        h = rb_str_hash(tags);
    else if (string_array_p(tags, &bytes))
        h = string_array_hash(tags, bytes);
    else if (tag_pairs_of(tags, &p))
        h = tag_pairs_hash(&p);
    else
        return rb_hash(tags);
    return LONG2FIX((long)(h >> 2)); /* a Fixnum */
}

/* Two Strings the same as String#== says: same bytes and encoding here,
 * else String#== decides. */
static inline int str_same(VALUE a, VALUE b)
{
    long len = RSTRING_LEN(a);
    if (len != RSTRING_LEN(b))
        return 0;
    if (memcmp(RSTRING_PTR(a), RSTRING_PTR(b), (size_t)len) != 0)
        return 0;
    return RB_ENCODING_GET_INLINED(a) == RB_ENCODING_GET_INLINED(b) || RTEST(rb_str_equal(a, b));
}

static int tags_same(VALUE a, VALUE b)
{
    if (a == b)
        return 1;
    if (RB_TYPE_P(a, T_STRING) && RB_TYPE_P(b, T_STRING))
        return str_same(a, b);
    if (RB_TYPE_P(a, T_ARRAY) && RB_TYPE_P(b, T_ARRAY)) {
        long n = RARRAY_LEN(a);
        if (RARRAY_LEN(b) != n)
            return 0;
        long i = 0;
        for (; i < n; i++) {
            VALUE x = RARRAY_AREF(a, i), y = RARRAY_AREF(b, i);
            if (!RB_TYPE_P(x, T_STRING) || !RB_TYPE_P(y, T_STRING))
                break;
            if (!str_same(x, y))
                return 0;
        }
        if (i == n)
            return 1;
    }
    struct tag_pairs pa, pb;
    if (tag_pairs_of(a, &pa) && tag_pairs_of(b, &pb))
        return tag_pairs_same(&pa, &pb);
    return RTEST(rb_equal(a, b));
}

/* SeriesCache.key(tags) -> the Integer its entries are filed under. */
static VALUE sc_key(VALUE mod, VALUE tags)
{
    return tags_key(tags);
}

/* SeriesCache.same?(a, b) -> whether two tags are the same. */
static VALUE sc_same(VALUE mod, VALUE a, VALUE b)
{
    return tags_same(a, b) ? Qtrue : Qfalse;
}

/* The series of the entry `e` ([tags, series, more], as
 * SeriesCache.store files it) for `tags`, or nil. The entry is read with
 * bounds and type checks at every step: the root is an app's Hash, and
 * #== of its tags may run any code. */
static VALUE sc_lookup(VALUE root, VALUE tags)
{
    VALUE e = rb_hash_lookup2(root, tags_key(tags), Qnil);
    if (!RB_TYPE_P(e, T_ARRAY) || RARRAY_LEN(e) < 2)
        return Qnil;
    if (tags_same(rb_ary_entry(e, 0), tags))
        return rb_ary_entry(e, 1);
    VALUE more = rb_ary_entry(e, 2);
    if (!RB_TYPE_P(more, T_ARRAY))
        return Qnil;
    for (long i = 0; i < RARRAY_LEN(more); i++) {
        VALUE pair = rb_ary_entry(more, i);
        if (RB_TYPE_P(pair, T_ARRAY) && RARRAY_LEN(pair) >= 2 && tags_same(rb_ary_entry(pair, 0), tags))
            return rb_ary_entry(pair, 1);
    }
    return Qnil;
}

/* SeriesCache.find(root, tags) -> the series cached for `tags`, or nil. */
static VALUE sc_find(VALUE mod, VALUE root, VALUE tags)
{
    Check_Type(root, T_HASH);
    return sc_lookup(root, tags);
}

static ID id_counter_add, id_gauge_set, id_observe;

/* An update of the series cached in `root` for `tags`: true when done,
 * nil when nothing is cached (the caller looks the series up). A cached
 * object that is no Series (the facade's Dropped) gets the Ruby call. */
static VALUE sc_update(VALUE root, VALUE tags, int op, ID id, VALUE value)
{
    Check_Type(root, T_HASH);
    VALUE s = sc_lookup(root, tags);
    if (NIL_P(s))
        return Qnil;
    if (!RB_SPECIAL_CONST_P(s) && RB_BUILTIN_TYPE(s) == T_DATA && RTYPEDDATA_P(s) &&
        RTYPEDDATA_TYPE(s) == &series_type)
        series_apply(s, op, num_dbl(value));
    else
        rb_funcallv(s, id, 1, &value);
    return Qtrue;
}

/* SeriesCache.counter_add / gauge_set / observe(root, tags, value). */
static VALUE sc_counter_add(VALUE mod, VALUE root, VALUE tags, VALUE v) { return sc_update(root, tags, OP_COUNTER_ADD, id_counter_add, v); }
static VALUE sc_gauge_set(VALUE mod, VALUE root, VALUE tags, VALUE v) { return sc_update(root, tags, OP_GAUGE_SET, id_gauge_set, v); }
static VALUE sc_observe(VALUE mod, VALUE root, VALUE tags, VALUE v) { return sc_update(root, tags, OP_OBSERVE, id_observe, v); }

/* ---------------------------------------------------------------------
 * Init.
 */
void Init_shmetrics_ext(void)
{
    mShmetrics = rb_define_module("Shmetrics");
    VALUE mNative = rb_define_module_under(mShmetrics, "Native");
    rb_define_const(mNative, "HEADER_VERSION",
                    rb_sprintf("%d.%d.%d", SHMETRICS_VERSION_MAJOR, SHMETRICS_VERSION_MINOR,
                               SHMETRICS_VERSION_PATCH));
    rb_define_const(mNative, "ABI_MAJOR", INT2FIX(SHMETRICS_VERSION_MAJOR));
    rb_define_singleton_method(mNative, "__load", native_load, 2);
    rb_define_singleton_method(mNative, "loaded?", native_loaded_p, 0);
    hash_walk = (stlike_foreach_fn)dlsym(RTLD_DEFAULT, "rb_hash_stlike_foreach");

    /* Errors: Shmetrics::Error and one subclass per result code. The
     * classes are defined in Ruby (lib/shmetrics/errors.rb) and looked
     * up here. */
    eError = rb_const_get(mShmetrics, rb_intern("Error"));
    eLibraryError = rb_const_get(mShmetrics, rb_intern("LibraryError"));
    eLibraryVersionError = rb_const_get(mShmetrics, rb_intern("LibraryVersionError"));
    /* Kept in C globals: pinned and kept alive, even if their constants
     * are removed, and never moved by GC.compact. */
    rb_gc_register_mark_object(eError);
    rb_gc_register_mark_object(eLibraryError);
    rb_gc_register_mark_object(eLibraryVersionError);
    VALUE codes = rb_const_get(mShmetrics, rb_intern("ERROR_CLASSES"));
    for (long i = 0; i < RARRAY_LEN(codes); i++) {
        VALUE pair = RARRAY_AREF(codes, i);
        long code = NUM2LONG(RARRAY_AREF(pair, 0));
        if (code >= 0 && code < (long)(sizeof error_classes / sizeof error_classes[0])) {
            error_classes[code] = RARRAY_AREF(pair, 1);
            rb_gc_register_mark_object(error_classes[code]);
        }
    }

    cStore = rb_define_class_under(mShmetrics, "Store", rb_cObject);
    rb_define_alloc_func(cStore, store_alloc);
    rb_define_private_method(cStore, "__open", store_open, 2);
    rb_define_method(cStore, "reopen", store_reopen, 0);
    rb_define_method(cStore, "close", store_close, 0);
    rb_define_method(cStore, "closed?", store_closed_p, 0);
    rb_define_method(cStore, "path", store_path, 0);
    rb_define_method(cStore, "read_only?", store_read_only_p, 0);
    rb_define_method(cStore, "generation", store_generation, 0);
    rb_define_method(cStore, "reset", store_reset, 0);
    rb_define_method(cStore, "wipe", store_wipe, 0);
    rb_define_method(cStore, "release_slot", store_release_slot, 0);
    rb_define_method(cStore, "path_now", store_path_now, 0);
    rb_define_method(cStore, "render", store_render, -1);
    rb_define_method(cStore, "stats", store_stats, 0);
    rb_define_method(cStore, "snapshot", store_snapshot, -1);
    rb_define_singleton_method(cStore, "content_type", store_s_content_type, -1);
    rb_define_singleton_method(cStore, "negotiate", store_s_negotiate, 1);
    rb_define_singleton_method(cStore, "__check_all", store_s_check_all, 0);

    cSeries = rb_define_class_under(mShmetrics, "Series", rb_cObject);
    rb_undef_alloc_func(cSeries);
    rb_define_method(cSeries, "family", series_family, 0);
    rb_define_method(cSeries, "label_values", series_label_values, 0);
    rb_define_method(cSeries, "__add", series_add, 1);
    rb_define_method(cSeries, "__counter_add", series_counter_add, 1);
    rb_define_method(cSeries, "__gauge_set", series_gauge_set, 1);
    rb_define_method(cSeries, "__observe", series_observe, 1);
    rb_define_method(cSeries, "__set_to_current_time", series_set_to_current_time, 0);

    cFamily = rb_define_class_under(mShmetrics, "Family", rb_cObject);
    rb_define_alloc_func(cFamily, family_alloc);
    rb_define_private_method(cFamily, "__init", family_init, 3);
    rb_define_method(cFamily, "label_names", family_label_names, 0);
    rb_define_method(cFamily, "spec", family_spec, 0);
    rb_define_method(cFamily, "store", family_store, 0);
    rb_define_method(cFamily, "cached_series", family_cached_count, 0);
    rb_define_method(cFamily, "__counter_add", family_counter_add, 2);
    rb_define_method(cFamily, "__gauge_set", family_gauge_set, 2);
    rb_define_method(cFamily, "__gauge_add", family_gauge_add, 2);
    rb_define_method(cFamily, "__observe", family_observe, 2);
    rb_define_method(cFamily, "__set_to_current_time", family_set_to_current_time, 1);
    rb_define_method(cFamily, "__touch", family_touch, 1);
    rb_define_method(cFamily, "series", family_series, 1);
    rb_define_method(cFamily, "__bind", family_bind, 1);
    rb_define_method(cFamily, "__register", family_register_now, 0);
    rb_define_method(cFamily, "__exemplar", family_exemplar, 4);
    rb_define_method(cFamily, "__remove", family_remove, 1);
    rb_define_method(cFamily, "__clear", family_clear, 0);

    VALUE mSeriesCache = rb_define_module_under(rb_define_module_under(mShmetrics, "StatsD"), "SeriesCache");
    rb_define_singleton_method(mSeriesCache, "key", sc_key, 1);
    rb_define_singleton_method(mSeriesCache, "same?", sc_same, 2);
    rb_define_singleton_method(mSeriesCache, "find", sc_find, 2);
    rb_define_singleton_method(mSeriesCache, "counter_add", sc_counter_add, 3);
    rb_define_singleton_method(mSeriesCache, "gauge_set", sc_gauge_set, 3);
    rb_define_singleton_method(mSeriesCache, "observe", sc_observe, 3);
    rb_define_singleton_method(mShmetrics, "__label_value", label_value_s, 1);
    id_counter_add = rb_intern("__counter_add");
    id_gauge_set = rb_intern("__gauge_set");
    id_observe = rb_intern("__observe");

    id_to_s = rb_intern("to_s");
    id_text = rb_intern("text");
    id_openmetrics = rb_intern("openmetrics");
    id_same = rb_intern("same");
    id_gone = rb_intern("gone");
    id_other = rb_intern("other");
}
