#include "shmetrics_ext.h"

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

void shm_define_series_cache(void)
{
    VALUE mSeriesCache = rb_define_module_under(rb_define_module_under(mShmetrics, "StatsD"), "SeriesCache");
    rb_define_singleton_method(mSeriesCache, "key", sc_key, 1);
    rb_define_singleton_method(mSeriesCache, "same?", sc_same, 2);
    rb_define_singleton_method(mSeriesCache, "find", sc_find, 2);
    rb_define_singleton_method(mSeriesCache, "counter_add", sc_counter_add, 3);
    rb_define_singleton_method(mSeriesCache, "gauge_set", sc_gauge_set, 3);
    rb_define_singleton_method(mSeriesCache, "observe", sc_observe, 3);
    id_counter_add = rb_intern("__counter_add");
    id_gauge_set = rb_intern("__gauge_set");
    id_observe = rb_intern("__observe");

}
