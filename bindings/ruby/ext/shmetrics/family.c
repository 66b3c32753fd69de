/* Shmetrics::Family and Shmetrics::Series: registration from a checked
 * definition, the per-process cache of series handles, the update path,
 * and label values as UTF-8. */
#include "shmetrics_ext.h"

static VALUE cFamily, cSeries;

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

const rb_data_type_t family_type = {
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

const rb_data_type_t series_type = {
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
    d->hints = (uint32_t)spec_uint(spec, "hints", UINT32_MAX);
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
    d.hints = df->hints;
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
    sr->forks = shm_forks;
    return obj;
}

/* Looks the series up again (it went stale, or the store was reopened). */
void series_refresh(series_t *sr)
{
    family_t *f = RTYPEDDATA_DATA(sr->family);
    resolve(sr->family, f, sr->values, &sr->h);
    sr->gen = get_store(f->store)->gen;
    sr->forks = shm_forks;
}

/* Places the handle for this process, after a fork: its updates take the
 * fast path again. One that cannot be placed stays as it is; its update
 * reports why. */
void series_place(series_t *sr)
{
    family_t *f = RTYPEDDATA_DATA(sr->family);
    L.shmetrics_series_place(get_store(f->store)->ptr, &sr->h);
    sr->forks = shm_forks;
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
stlike_foreach_fn hash_walk;

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
        else if (sr->forks != shm_forks)
            series_place(sr);
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

/* Series#__placed? -> whether updates through it take the library's fast
 * path in this process (a handle made before a fork does not, in the
 * child, until its first update there places it). */
static VALUE series_placed_p(VALUE self)
{
    series_t *sr = get_series(self);
    family_t *f = RTYPEDDATA_DATA(sr->family);
    bool placed = false;
    check(L.shmetrics_series_is_placed(open_store(f->store)->ptr, &sr->h, &placed));
    return placed ? Qtrue : Qfalse;
}

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

void shm_define_family(void)
{
    hash_walk = (stlike_foreach_fn)dlsym(RTLD_DEFAULT, "rb_hash_stlike_foreach");
    cSeries = rb_define_class_under(mShmetrics, "Series", rb_cObject);
    rb_undef_alloc_func(cSeries);
    rb_define_method(cSeries, "family", series_family, 0);
    rb_define_method(cSeries, "__placed?", series_placed_p, 0);
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

    rb_define_singleton_method(mShmetrics, "__label_value", label_value_s, 1);
}
