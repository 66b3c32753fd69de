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
 * of its own on its first update, and the extension places the handles
 * the child kept from its parent for that slot: shm_forks).
 */
#include <pthread.h>

#include "shmetrics_ext.h"

struct shm_lib L;
int loaded;
unsigned long shm_forks;

/* Only an increment: what a handler that runs in the child of a
 * multi-threaded parent may do. */
static void count_fork(void)
{
    shm_forks++;
}

VALUE mShmetrics, eError, eLibraryError, eLibraryVersionError;
VALUE error_classes[105];

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
NORETURN(void raise_rc(shmetrics_result rc));
void raise_rc(shmetrics_result rc)
{
    VALUE msg = last_error_message(rc);
    VALUE exc = rb_exc_new_str(error_class(rc), msg);
    rb_ivar_set(exc, rb_intern("@code"), UINT2NUM(rc));
    rb_exc_raise(exc);
}

void require_loaded(void)
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
uint64_t int_u64(VALUE v, uint64_t max, const char *what)
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
int64_t int_i64(VALUE v, const char *what)
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
    pthread_atfork(NULL, NULL, count_fork);

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

    shm_define_store();
    shm_define_family();
    shm_define_series_cache();
}
