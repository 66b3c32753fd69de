/* Store#snapshot: every family and series, merged over all processes,
 * as Ruby Hashes. */
#include "shmetrics_ext.h"

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
VALUE store_snapshot(int argc, VALUE *argv, VALUE self)
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

