/*
 * What the extension asks of PHP, on slow paths only: the package's PHP
 * classes (Shmetrics\Checks and Shmetrics\Native::exception() make every
 * message of a refusal, so that the extension and the FFI classes say the
 * same), the environment as getenv() reads it, and the library's loading
 * with the ini setting shmetrics.library and $SHMETRICS_LIBRARY.
 */

#include "php_shmetrics.h"

#include "php_ini.h"
#include "SAPI.h"
#include "ext/standard/basic_functions.h"

zend_class_entry *shm_php_class(const char *name)
{
    zend_string *n = zend_string_init(name, strlen(name), 0);
    zend_class_entry *ce = zend_lookup_class(n);
    zend_string_release(n);
    if (ce == NULL && !EG(exception)) {
        zend_throw_error(NULL, "class %s not found: load the shmetrics package's autoloader", name);
    }
    return ce;
}

/* Calls the static method $class::$method(...$argv) into ret; false when it threw. */
bool shm_call_static(const char *class_name, const char *method, zval *ret, uint32_t argc, zval *argv)
{
    ZVAL_UNDEF(ret);
    zend_class_entry *ce = shm_php_class(class_name);
    if (ce == NULL) {
        return false;
    }
    zend_function *fn = zend_hash_str_find_ptr_lc(&ce->function_table, method, strlen(method));
    if (fn == NULL) {
        zend_throw_error(NULL, "%s::%s() not found", class_name, method);
        return false;
    }
    zend_call_known_function(fn, NULL, ce, ret, argc, argv, NULL);
    if (EG(exception)) {
        zval_ptr_dtor(ret);
        ZVAL_UNDEF(ret);
        return false;
    }
    return true;
}

/* Throws the exception that $class::$method(...$argv) returns. */
void shm_throw_from(const char *class_name, const char *method, uint32_t argc, zval *argv)
{
    zval ret;
    if (shm_call_static(class_name, method, &ret, argc, argv)) {
        if (Z_TYPE(ret) == IS_OBJECT) {
            zend_throw_exception_object(&ret);
        } else {
            zval_ptr_dtor(&ret);
        }
    }
}

/* Throws Native::exception($rc, $context); releases context. */
void shm_throw_rc(uint32_t rc, zend_string *context)
{
    zval args[2];
    ZVAL_LONG(&args[0], rc);
    ZVAL_STR(&args[1], context);
    shm_throw_from("Shmetrics\\Native", "exception", 2, args);
    zend_string_release(context);
}

void shm_throw_storage(const char *message)
{
    zend_class_entry *ce = shm_php_class("Shmetrics\\Exception\\StorageException");
    if (ce != NULL) {
        zend_throw_exception(ce, message, 0);
    }
}

/*
 * The environment variable NAME as PHP's getenv() reads it: the SAPI's own
 * first (Apache's SetEnv, under mod_php), then the process's (php-fpm's
 * pool env[] included). NULL when unset; else a string of this request.
 */
zend_string *shm_env(const char *name, size_t len)
{
    char *v = sapi_getenv(name, len); /* emalloc()ed, as PHP's getenv() frees it */
    if (v != NULL) {
        zend_string *s = zend_string_init(v, strlen(v), 0);
        efree(v);
        return s;
    }
    return php_getenv(name, len);
}

/*
 * Loads the library at this process's first call that needs it, with this
 * process's ini setting shmetrics.library and $SHMETRICS_LIBRARY (a
 * php-fpm pool's php_admin_value[] and env[], Apache's php_admin_value and
 * SetEnv included); false when it threw. Through shm_load(), whose
 * inline check makes the calls after the first one a load and a branch.
 */
bool shm_load_slow(void)
{
    char err[2048];
    zend_string *env = shm_env("SHMETRICS_LIBRARY", sizeof("SHMETRICS_LIBRARY") - 1);
    bool ok = shm_lib_load(INI_STR("shmetrics.library"), env ? ZSTR_VAL(env) : NULL, err, sizeof err);
    if (env != NULL) {
        zend_string_release(env);
    }
    if (ok) {
        return true;
    }
    shm_throw_storage(err);
    return false;
}

