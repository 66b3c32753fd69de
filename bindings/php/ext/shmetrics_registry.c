/*
 * Shmetrics\CollectorRegistry: the metrics of a registry by kind and
 * name, made through the constructors' C side (shmetrics_metric.c), and
 * the request's default registry (getDefault()).
 */

#include "php_shmetrics.h"

zend_class_entry *shm_ce_registry;

typedef struct {
    zval storage;
    HashTable metrics[5]; /* by kind (1..4), then "namespace:name" */
    bool ready;
    zend_object std;
} shm_registry;

static zend_object_handlers registry_handlers;

static inline shm_registry *registry_of(zend_object *o)
{
    return (shm_registry *)((char *)o - XtOffsetOf(shm_registry, std));
}

static zend_object *registry_create(zend_class_entry *ce)
{
    shm_registry *r = zend_object_alloc(sizeof(shm_registry), ce);
    ZVAL_UNDEF(&r->storage);
    for (int k = 1; k <= 4; k++) {
        zend_hash_init(&r->metrics[k], 8, NULL, ZVAL_PTR_DTOR, 0);
    }
    r->ready = false;
    return shm_object_ready(&r->std, ce, &registry_handlers);
}

static void registry_free(zend_object *o)
{
    shm_registry *r = registry_of(o);
    zval_ptr_dtor(&r->storage);
    for (int k = 1; k <= 4; k++) {
        zend_hash_destroy(&r->metrics[k]);
    }
    zend_object_std_dtor(o);
}

static HashTable *registry_gc(zend_object *o, zval **table, int *n)
{
    shm_registry *r = registry_of(o);
    zend_get_gc_buffer *buf = zend_get_gc_buffer_create();
    zend_get_gc_buffer_add_zval(buf, &r->storage);
    for (int k = 1; k <= 4; k++) {
        zval *v;
        ZEND_HASH_FOREACH_VAL(&r->metrics[k], v) {
            zend_get_gc_buffer_add_zval(buf, v);
        } ZEND_HASH_FOREACH_END();
    }
    zend_get_gc_buffer_use(buf, table, n);
    return zend_std_get_properties(o);
}

#define THIS_REGISTRY() registry_of(Z_OBJ_P(ZEND_THIS))

static zend_class_entry *const *const KIND_CLASSES[] = {NULL, &shm_ce_counter, &shm_ce_gauge, &shm_ce_histogram, &shm_ce_summary};
static const metric_init_fn KIND_INITS[] = {NULL, shm_counter_init, shm_gauge_init, shm_histogram_init, shm_summary_init};

static zend_string *registry_id(zend_string *ns, zend_string *name)
{
    return zend_string_concat3(ZSTR_VAL(ns), ZSTR_LEN(ns), ":", 1, ZSTR_VAL(name), ZSTR_LEN(name));
}

static void throw_registry(const char *method, uint32_t kind, zend_string *ns, zend_string *name)
{
    zval args[3];
    ZVAL_STRING(&args[0], SHM_KIND_NAMES[kind]);
    ZVAL_STR(&args[1], ns);
    ZVAL_STR(&args[2], name);
    shm_throw_from("Shmetrics\\Checks", method, 3, args);
    zval_ptr_dtor(&args[0]);
}

/*
 * register*() (or_get false) and getOrRegister*() (true): the metric of
 * kind for a, made and registered if this registry has none of its name.
 */
static void registry_register(shm_registry *r, uint32_t kind, metric_args *a, bool or_get, zval *return_value)
{
    zend_string *id = registry_id(a->ns, a->name);
    zval *known = zend_hash_find(&r->metrics[kind], id);
    if (known != NULL) {
        zend_string_release(id);
        if (or_get) {
            RETURN_COPY(known);
        }
        throw_registry("registeredTwice", kind, a->ns, a->name);
        RETURN_THROWS();
    }
    zval obj;
    object_init_ex(&obj, *KIND_CLASSES[kind]);
    if (!KIND_INITS[kind](metric_of(Z_OBJ(obj)), &r->storage, a)) {
        zend_string_release(id);
        zval_ptr_dtor(&obj);
        RETURN_THROWS();
    }
    zend_hash_add_new(&r->metrics[kind], id, &obj);
    zend_string_release(id);
    RETURN_COPY(&obj);
}

#define REGISTRY_READY(r)                                                                                    \
    if (!(r)->ready) {                                                                                       \
        zend_throw_error(NULL, "Shmetrics\\CollectorRegistry was not constructed");                         \
        RETURN_THROWS();                                                                                     \
    }

#define REGISTRY_METHODS(Type, kind, parse, max)                                                             \
    ZEND_METHOD(Shmetrics_CollectorRegistry, register##Type)                                                            \
    {                                                                                                        \
        ARGS_INIT(a);                                                                                        \
        ZEND_PARSE_PARAMETERS_START(3, max)                                                                  \
            parse(a)                                                                                         \
        ZEND_PARSE_PARAMETERS_END();                                                                         \
        shm_registry *r = THIS_REGISTRY();                                                                   \
        REGISTRY_READY(r);                                                                                   \
        registry_register(r, kind, &a, false, return_value);                                                 \
    }                                                                                                        \
    ZEND_METHOD(Shmetrics_CollectorRegistry, getOrRegister##Type)                                                       \
    {                                                                                                        \
        ARGS_INIT(a);                                                                                        \
        ZEND_PARSE_PARAMETERS_START(3, max)                                                                  \
            parse(a)                                                                                         \
        ZEND_PARSE_PARAMETERS_END();                                                                         \
        shm_registry *r = THIS_REGISTRY();                                                                   \
        REGISTRY_READY(r);                                                                                   \
        registry_register(r, kind, &a, true, return_value);                                                  \
    }                                                                                                        \
    ZEND_METHOD(Shmetrics_CollectorRegistry, get##Type)                                                                 \
    {                                                                                                        \
        zend_string *ns, *name;                                                                              \
        ZEND_PARSE_PARAMETERS_START(2, 2)                                                                    \
            Z_PARAM_STR(ns)                                                                                  \
            Z_PARAM_STR(name)                                                                                \
        ZEND_PARSE_PARAMETERS_END();                                                                         \
        shm_registry *r = THIS_REGISTRY();                                                                   \
        zend_string *id = registry_id(ns, name);                                                             \
        zval *known = zend_hash_find(&r->metrics[kind], id);                                                 \
        zend_string_release(id);                                                                             \
        if (known == NULL) {                                                                                 \
            throw_registry("notFound", kind, ns, name);                                                      \
            RETURN_THROWS();                                                                                 \
        }                                                                                                    \
        RETURN_COPY(known);                                                                                  \
    }

REGISTRY_METHODS(Counter, SHMETRICS_KIND_COUNTER, PARSE_COUNTER, 6)
REGISTRY_METHODS(Gauge, SHMETRICS_KIND_GAUGE, PARSE_GAUGE, 6)
REGISTRY_METHODS(Histogram, SHMETRICS_KIND_HISTOGRAM, PARSE_HISTOGRAM, 8)
REGISTRY_METHODS(Summary, SHMETRICS_KIND_SUMMARY, PARSE_SUMMARY, 7)

/* __construct(Shmetrics|string|null $storage = null, bool $registerDefaultMetrics = true) */
ZEND_METHOD(Shmetrics_CollectorRegistry, __construct)
{
    zval *storage = NULL;
    bool defaults = true;
    ZEND_PARSE_PARAMETERS_START(0, 2)
        Z_PARAM_OPTIONAL
        Z_PARAM_ZVAL(storage)
        Z_PARAM_BOOL(defaults)
    ZEND_PARSE_PARAMETERS_END();
    shm_registry *r = THIS_REGISTRY();
    if (r->ready) {
        zend_throw_error(NULL, "Shmetrics\\CollectorRegistry is constructed already");
        RETURN_THROWS();
    }
    if (storage != NULL && Z_TYPE_P(storage) == IS_OBJECT && Z_OBJCE_P(storage) == shm_ce_storage) {
        ZVAL_COPY(&r->storage, storage);
    } else if (storage == NULL || Z_TYPE_P(storage) == IS_NULL || Z_TYPE_P(storage) == IS_STRING) {
        object_init_ex(&r->storage, shm_ce_storage);
        zend_string *path = storage != NULL && Z_TYPE_P(storage) == IS_STRING ? Z_STR_P(storage) : NULL;
        if (!shm_storage_init(storage_of(Z_OBJ(r->storage)), path, (HashTable *)&zend_empty_array)) {
            zval_ptr_dtor(&r->storage);
            ZVAL_UNDEF(&r->storage);
            RETURN_THROWS();
        }
    } else {
        zend_argument_type_error(1, "must be of type Shmetrics\\Storage\\Shmetrics|string|null, %s given",
            zend_zval_type_name(storage));
        RETURN_THROWS();
    }
    r->ready = true;
    if (defaults) {
        ARGS_INIT(a);
        zval labels, gauge, version;
        array_init(&labels);
        add_next_index_string(&labels, "version");
        a.ns = ZSTR_EMPTY_ALLOC();
        a.name = zend_string_init("php_info", 8, 0);
        a.help = zend_string_init("Information about the PHP environment.", 38, 0);
        a.labels = Z_ARRVAL(labels);
        registry_register(r, SHMETRICS_KIND_GAUGE, &a, true, &gauge);
        zend_string_release(a.name);
        zend_string_release(a.help);
        zval_ptr_dtor(&labels);
        if (EG(exception)) {
            RETURN_THROWS();
        }
        array_init(&version);
        add_next_index_string(&version, PHP_VERSION);
        shm_metric_update(metric_of(Z_OBJ(gauge)), SHMETRICS_OP_GAUGE_SET, &version, 1.0, NULL);
        zval_ptr_dtor(&version);
        zval_ptr_dtor(&gauge);
    }
}

ZEND_METHOD(Shmetrics_CollectorRegistry, getDefault)
{
    ZEND_PARSE_PARAMETERS_NONE();
    if (Z_TYPE(SHM_G(default_registry)) != IS_OBJECT) {
        zval r;
        object_init_ex(&r, shm_ce_registry);
        zend_call_known_instance_method_with_0_params(shm_ce_registry->constructor, Z_OBJ(r), NULL);
        if (EG(exception)) {
            zval_ptr_dtor(&r);
            RETURN_THROWS();
        }
        ZVAL_COPY_VALUE(&SHM_G(default_registry), &r);
    }
    RETURN_COPY(&SHM_G(default_registry));
}

ZEND_METHOD(Shmetrics_CollectorRegistry, getStorage)
{
    ZEND_PARSE_PARAMETERS_NONE();
    shm_registry *r = THIS_REGISTRY();
    REGISTRY_READY(r);
    RETURN_COPY(&r->storage);
}

static void call_storage(INTERNAL_FUNCTION_PARAMETERS, const char *method)
{
    ZEND_PARSE_PARAMETERS_NONE();
    shm_registry *r = THIS_REGISTRY();
    REGISTRY_READY(r);
    zend_call_method(Z_OBJ(r->storage), Z_OBJCE(r->storage), NULL, method, strlen(method), return_value, 0, NULL, NULL);
}

ZEND_METHOD(Shmetrics_CollectorRegistry, getMetricFamilySamples) { call_storage(INTERNAL_FUNCTION_PARAM_PASSTHRU, "collect"); }
ZEND_METHOD(Shmetrics_CollectorRegistry, wipeStorage) { call_storage(INTERNAL_FUNCTION_PARAM_PASSTHRU, "wipeStorage"); }

void shm_registry_minit(void)
{
    shm_ce_registry->create_object = registry_create;
    memcpy(&registry_handlers, zend_get_std_object_handlers(), sizeof registry_handlers);
    registry_handlers.offset = XtOffsetOf(shm_registry, std);
    registry_handlers.free_obj = registry_free;
    registry_handlers.clone_obj = NULL;
    registry_handlers.get_gc = registry_gc;
}
