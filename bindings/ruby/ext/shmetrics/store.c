/* Shmetrics::Store: an open store file. */
#include "shmetrics_ext.h"

static ID id_text, id_openmetrics, id_same, id_gone, id_other;

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

store_t *get_store(VALUE obj)
{
    store_t *s;
    TypedData_Get_Struct(obj, store_t, &store_type, s);
    return s;
}

store_t *open_store(VALUE obj)
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

/* Store#__render_client_ruby(names) -> String: the families named (as
 * the store keeps them), in that order, as prometheus-client's
 * Formats::Text writes them (Shmetrics::DataStore's page). */
static VALUE store_render_client_ruby(VALUE self, VALUE names)
{
    Check_Type(names, T_ARRAY);
    long n = RARRAY_LEN(names);
    store_t *s = open_store(self);
    for (long i = 0; i < n; i++)
        Check_Type(RARRAY_AREF(names, i), T_STRING);
    VALUE tmp;
    struct shmetrics_str *strs = ALLOCV_N(struct shmetrics_str, tmp, n + 1);
    for (long i = 0; i < n; i++) {
        VALUE name = RARRAY_AREF(names, i);
        strs[i].ptr = RSTRING_PTR(name);
        strs[i].len = (size_t)RSTRING_LEN(name);
    }
    struct shmetrics_buf *buf = NULL;
    shmetrics_result rc = L.shmetrics_render_families_alloc(s->ptr, SHMETRICS_FORMAT_CLIENT_RUBY_TEXT, strs,
                                                            (size_t)n, &buf);
    ALLOCV_END(tmp);
    RB_GC_GUARD(names);
    check(rc);
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

void shm_define_store(void)
{
    VALUE cStore;
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
    rb_define_private_method(cStore, "__render_client_ruby", store_render_client_ruby, 1);
    rb_define_method(cStore, "stats", store_stats, 0);
    rb_define_method(cStore, "snapshot", store_snapshot, -1);
    rb_define_singleton_method(cStore, "content_type", store_s_content_type, -1);
    rb_define_singleton_method(cStore, "negotiate", store_s_negotiate, 1);
    rb_define_singleton_method(cStore, "__check_all", store_s_check_all, 0);

    id_text = rb_intern("text");
    id_openmetrics = rb_intern("openmetrics");
    id_same = rb_intern("same");
    id_gone = rb_intern("gone");
    id_other = rb_intern("other");
}
