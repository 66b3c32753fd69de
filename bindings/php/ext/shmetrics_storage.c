/*
 * The extension's Shmetrics\Storage\Shmetrics: the API of
 * src/Storage/Shmetrics.php (which is then never loaded), in C, because
 * php-fpm builds one in every request. Its public properties are the PHP
 * class's: $ffi (null here) and $store (a Shmetrics\Ext\Store), which
 * Shmetrics\Snapshot reads.
 */

#include "php_shmetrics.h"

zend_class_entry *shm_ce_storage;

static zend_object_handlers storage_handlers;

/* The declared properties' slots, in the order of their declaration (shmetrics.stub.php). */
#define STORAGE_PROP_FFI 0
#define STORAGE_PROP_STORE 1

static zend_object *storage_create(zend_class_entry *ce)
{
    shm_storage *s = zend_object_alloc(sizeof(shm_storage), ce);
    s->st = NULL;
    s->path = NULL;
    return shm_object_ready(&s->std, ce, &storage_handlers);
}

static void storage_free(zend_object *o)
{
    shm_storage *s = storage_of(o);
    if (s->path) zend_string_release(s->path);
    zend_object_std_dtor(o);
}

/* Opens the store for a new storage object; path NULL for the default. False when it threw. */
bool shm_storage_init(shm_storage *s, zend_string *path, HashTable *options)
{
    if (!shm_store_options_ok(options)) {
        return false;
    }
    zend_string *p;
    if (path != NULL) {
        p = zend_string_copy(path);
    } else {
        /* getenv('SHMETRICS_STORE'), as PHP's getenv() reads it: Apache's SetEnv first */
        p = shm_env("SHMETRICS_STORE", sizeof("SHMETRICS_STORE") - 1);
        if (p == NULL || ZSTR_LEN(p) == 0) {
            if (p) zend_string_release(p);
            p = zend_string_init("/dev/shm/shmetrics", sizeof("/dev/shm/shmetrics") - 1, 0);
        }
    }
    if (ZSTR_LEN(p) == 0) {
        zend_string_release(p);
        shm_throw_from("Shmetrics\\Checks", "emptyStorePath", 0, NULL);
        return false;
    }
    shmetrics_store *st = shm_store_open(p, options);
    if (st == NULL) {
        zend_string_release(p);
        return false;
    }
    s->st = st;
    s->path = p;
    zval *store = OBJ_PROP_NUM(&s->std, STORAGE_PROP_STORE);
    zval_ptr_dtor(store);
    shm_store_object(store, st);
    return true;
}

#define THIS_STORAGE() storage_of(Z_OBJ_P(ZEND_THIS))

#define STORAGE_READY(s)                                                                                     \
    if ((s)->st == NULL) {                                                                                   \
        zend_throw_error(NULL, "Shmetrics\\Storage\\Shmetrics was not constructed");                        \
        RETURN_THROWS();                                                                                     \
    }

/* __construct(?string $path = null, array $options = []) */
ZEND_METHOD(Shmetrics_Storage_Shmetrics, __construct)
{
    zend_string *path = NULL;
    HashTable *options = (HashTable *)&zend_empty_array;
    ZEND_PARSE_PARAMETERS_START(0, 2)
        Z_PARAM_OPTIONAL
        Z_PARAM_STR_OR_NULL(path)
        Z_PARAM_ARRAY_HT(options)
    ZEND_PARSE_PARAMETERS_END();
    shm_storage *s = THIS_STORAGE();
    if (s->st != NULL) {
        zend_throw_error(NULL, "Shmetrics\\Storage\\Shmetrics is constructed already");
        RETURN_THROWS();
    }
    if (!shm_storage_init(s, path, options)) {
        RETURN_THROWS();
    }
}

ZEND_METHOD(Shmetrics_Storage_Shmetrics, path)
{
    ZEND_PARSE_PARAMETERS_NONE();
    shm_storage *s = THIS_STORAGE();
    STORAGE_READY(s);
    RETURN_STR_COPY(s->path);
}

/* Throws Native::exception($rc, "$what {$this->path}"). */
static void storage_throw(shm_storage *s, uint32_t rc, const char *what)
{
    shm_throw_rc(rc, zend_string_concat3(what, strlen(what), " ", 1, ZSTR_VAL(s->path), ZSTR_LEN(s->path)));
}

ZEND_METHOD(Shmetrics_Storage_Shmetrics, wipeStorage)
{
    ZEND_PARSE_PARAMETERS_NONE();
    shm_storage *s = THIS_STORAGE();
    STORAGE_READY(s);
    uint32_t rc = lib.shmetrics_store_wipe(s->st);
    if (rc != 0) {
        storage_throw(s, rc, "cannot wipe the store");
        RETURN_THROWS();
    }
}

/* The exposition of the store in format into return_value; false when it threw. */
static bool storage_render(shm_storage *s, uint32_t format, zval *return_value)
{
    shmetrics_buf *buf = NULL;
    uint32_t rc = lib.shmetrics_render_alloc(s->st, format, &buf);
    if (rc != 0) {
        storage_throw(s, rc, "cannot render the store");
        return false;
    }
    ZVAL_STRINGL(return_value, (const char *)lib.shmetrics_buf_data(buf), lib.shmetrics_buf_len(buf));
    lib.shmetrics_buf_free(buf);
    return true;
}

/* render(int $format = FORMAT_TEXT): string */
ZEND_METHOD(Shmetrics_Storage_Shmetrics, render)
{
    zend_long format = 0;
    ZEND_PARSE_PARAMETERS_START(0, 1)
        Z_PARAM_OPTIONAL
        Z_PARAM_LONG(format)
    ZEND_PARSE_PARAMETERS_END();
    shm_storage *s = THIS_STORAGE();
    STORAGE_READY(s);
    if (!storage_render(s, format_of(format), return_value)) {
        RETURN_THROWS();
    }
}

/* contentType(int $format = FORMAT_TEXT): string */
ZEND_METHOD(Shmetrics_Storage_Shmetrics, contentType)
{
    zend_long format = 0;
    ZEND_PARSE_PARAMETERS_START(0, 1)
        Z_PARAM_OPTIONAL
        Z_PARAM_LONG(format)
    ZEND_PARSE_PARAMETERS_END();
    const char *t = shm_load() ? lib.shmetrics_format_content_type(format_of(format)) : NULL;
    if (t == NULL) {
        if (!EG(exception)) {
            zval arg;
            ZVAL_LONG(&arg, format);
            shm_throw_from("Shmetrics\\Checks", "unknownFormat", 1, &arg);
        }
        RETURN_THROWS();
    }
    RETURN_STRING(t);
}

/* collect(): list<Exposition>, one of the whole store */
ZEND_METHOD(Shmetrics_Storage_Shmetrics, collect)
{
    ZEND_PARSE_PARAMETERS_NONE();
    shm_storage *s = THIS_STORAGE();
    STORAGE_READY(s);
    zend_class_entry *ce = shm_php_class("Shmetrics\\Exposition");
    zval text, exposition;
    if (ce == NULL || !storage_render(s, 0, &text)) {
        RETURN_THROWS();
    }
    object_init_ex(&exposition, ce);
    zend_call_known_instance_method_with_1_params(ce->constructor, Z_OBJ(exposition), NULL, &text);
    zval_ptr_dtor(&text);
    if (EG(exception)) {
        zval_ptr_dtor(&exposition);
        RETURN_THROWS();
    }
    array_init_size(return_value, 1);
    add_next_index_zval(return_value, &exposition);
}

/* stats(): array<string, int> */
ZEND_METHOD(Shmetrics_Storage_Shmetrics, stats)
{
    ZEND_PARSE_PARAMETERS_NONE();
    shm_storage *s = THIS_STORAGE();
    STORAGE_READY(s);
    uint32_t rc = shm_stats_array(s->st, return_value);
    if (rc != 0) {
        storage_throw(s, rc, "cannot read the statistics of");
        RETURN_THROWS();
    }
}

void shm_storage_minit(void)
{
    shm_ce_storage->create_object = storage_create;
    memcpy(&storage_handlers, zend_get_std_object_handlers(), sizeof storage_handlers);
    storage_handlers.offset = XtOffsetOf(shm_storage, std);
    storage_handlers.free_obj = storage_free;
    storage_handlers.clone_obj = NULL;
}
