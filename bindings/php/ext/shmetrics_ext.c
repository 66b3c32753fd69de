/*
 * The module: its INI setting, globals, MINIT (the classes, registered by
 * the code gen_stub.php makes from shmetrics.stub.php, then each class's C
 * side), MSHUTDOWN, RSHUTDOWN, MINFO and the module entry. What the
 * extension is and does: php_shmetrics.h.
 */

#include "php_shmetrics.h"

#include <pthread.h>

#include "php_ini.h"
#include "ext/standard/info.h"

#include "shmetrics_arginfo.h"

ZEND_DECLARE_MODULE_GLOBALS(shmetrics)
#if defined(ZTS) && defined(COMPILE_DL_SHMETRICS)
ZEND_TSRMLS_CACHE_DEFINE()
#endif

PHP_INI_BEGIN()
    PHP_INI_ENTRY("shmetrics.library", "", PHP_INI_SYSTEM, NULL)
PHP_INI_END()

/* The arrays of shm_declare_array_constant(), freed at MSHUTDOWN. */
static HashTable *array_constants[2];
static int array_constant_count;

void shm_declare_array_constant(zend_class_entry *ce, const char *name, const char *const *keys, size_t n,
    bool list)
{
    HashTable *ht = pemalloc(sizeof(HashTable), 1);
    zend_hash_init(ht, (uint32_t)n, NULL, NULL, 1);
    for (size_t i = 0; i < n; i++) {
        zval v;
        if (list) {
            ZVAL_INTERNED_STR(&v, zend_string_init_interned(keys[i], strlen(keys[i]), 1));
            zend_hash_next_index_insert(ht, &v);
        } else {
            ZVAL_LONG(&v, (zend_long)i + 1);
            zend_hash_add(ht, zend_string_init_interned(keys[i], strlen(keys[i]), 1), &v);
        }
    }
    ZEND_ASSERT(array_constant_count < (int)(sizeof array_constants / sizeof array_constants[0]));
    array_constants[array_constant_count++] = ht;
    GC_SET_REFCOUNT(ht, 2);
    /* persistent (as zend_hash_init made it): zend_hash_destroy() at MSHUTDOWN frees it with free() */
    GC_TYPE_INFO(ht) = GC_ARRAY | ((IS_ARRAY_IMMUTABLE | GC_NOT_COLLECTABLE | GC_PERSISTENT) << GC_FLAGS_SHIFT);
    zval zv;
    ZVAL_ARR(&zv, ht);
    Z_TYPE_FLAGS(zv) = 0;
    zend_declare_class_constant_ex(ce, zend_string_init_interned(name, strlen(name), 1), &zv, ZEND_ACC_PUBLIC, NULL);
}

static PHP_GINIT_FUNCTION(shmetrics)
{
#if defined(ZTS) && defined(COMPILE_DL_SHMETRICS)
    ZEND_TSRMLS_CACHE_UPDATE();
#endif
    ZVAL_UNDEF(&shmetrics_globals->default_registry);
}

PHP_MINIT_FUNCTION(shmetrics)
{
    REGISTER_INI_ENTRIES();
    pthread_atfork(NULL, NULL, shm_lib_atfork_child);
    shm_defs_minit();

    shm_ce_store = register_class_Shmetrics_Ext_Store();
    shm_store_minit();
    shm_ce_storage = register_class_Shmetrics_Storage_Shmetrics();
    shm_storage_minit();
    shm_ce_collector = register_class_Shmetrics_Collector();
    shm_metric_minit();
    shm_ce_counter = register_class_Shmetrics_Counter(shm_ce_collector);
    shm_ce_gauge = register_class_Shmetrics_Gauge(shm_ce_collector);
    shm_ce_histogram = register_class_Shmetrics_Histogram(shm_ce_collector);
    shm_ce_summary = register_class_Shmetrics_Summary(shm_ce_collector);
    shm_collector_minit();
    shm_ce_registry = register_class_Shmetrics_CollectorRegistry();
    shm_registry_minit();
    return SUCCESS;
}

PHP_MSHUTDOWN_FUNCTION(shmetrics)
{
    UNREGISTER_INI_ENTRIES();
    shm_store_mshutdown();
    /* Immutable: the class constants that hold them are not refcounted, and never read after MSHUTDOWN. */
    for (int i = 0; i < array_constant_count; i++) {
        zend_hash_destroy(array_constants[i]);
        pefree(array_constants[i], 1);
    }
    array_constant_count = 0;
    shm_defs_mshutdown();
    return SUCCESS;
}

PHP_RSHUTDOWN_FUNCTION(shmetrics)
{
    zval_ptr_dtor(&SHM_G(default_registry));
    ZVAL_UNDEF(&SHM_G(default_registry));
    return SUCCESS;
}

PHP_MINFO_FUNCTION(shmetrics)
{
    php_info_print_table_start();
    php_info_print_table_header(2, "shmetrics support", "enabled");
    php_info_print_table_row(2, "extension version", PHP_SHMETRICS_VERSION);
    php_info_print_table_row(2, "library", shm_lib_ready() ? lib.shmetrics_version() : "not loaded yet");
    php_info_print_table_end();
    DISPLAY_INI_ENTRIES();
}

zend_module_entry shmetrics_module_entry = {
    STANDARD_MODULE_HEADER,
    "shmetrics",
    ext_functions,
    PHP_MINIT(shmetrics),
    PHP_MSHUTDOWN(shmetrics),
    NULL,
    PHP_RSHUTDOWN(shmetrics),
    PHP_MINFO(shmetrics),
    PHP_SHMETRICS_VERSION,
    PHP_MODULE_GLOBALS(shmetrics),
    PHP_GINIT(shmetrics),
    NULL,
    NULL,
    STANDARD_MODULE_PROPERTIES_EX
};

#ifdef COMPILE_DL_SHMETRICS
ZEND_GET_MODULE(shmetrics)
#endif
