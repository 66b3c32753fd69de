/*
 * The methods of Shmetrics\Collector, Counter, Gauge, Histogram and
 * Summary: each parses its parameters and calls the metric's C side
 * (shmetrics_metric.c); and the classes' array constants, which
 * gen_stub.php does not make.
 */

#include "php_shmetrics.h"

zend_class_entry *shm_ce_collector, *shm_ce_counter, *shm_ce_gauge, *shm_ce_histogram, *shm_ce_summary;

/* ---- the constructors ----------------------------------------------------------------------------- */

#define METRIC_CONSTRUCT(cls, init, parse, max)                                                                 \
    ZEND_METHOD(cls, __construct)                                                                            \
    {                                                                                                        \
        zval *storage;                                                                                       \
        ARGS_INIT(a);                                                                                        \
        ZEND_PARSE_PARAMETERS_START(4, max)                                                                  \
            Z_PARAM_OBJECT(storage)                                                                          \
            parse(a)                                                                                         \
        ZEND_PARSE_PARAMETERS_END();                                                                         \
        shm_metric *m = THIS_METRIC();                                                                       \
        if (m->constructed) {                                                                                \
            zend_throw_error(NULL, "%s is constructed already", ZSTR_VAL(m->std.ce->name));                \
            RETURN_THROWS();                                                                                 \
        }                                                                                                    \
        if (!init(m, storage, &a)) {                                                                         \
            RETURN_THROWS();                                                                                 \
        }                                                                                                    \
    }

METRIC_CONSTRUCT(Shmetrics_Counter, shm_counter_init, PARSE_COUNTER, 7)
METRIC_CONSTRUCT(Shmetrics_Gauge, shm_gauge_init, PARSE_GAUGE, 7)
METRIC_CONSTRUCT(Shmetrics_Histogram, shm_histogram_init, PARSE_HISTOGRAM, 9)
METRIC_CONSTRUCT(Shmetrics_Summary, shm_summary_init, PARSE_SUMMARY, 8)

/* ---- Collector's methods ---------------------------------------------------------------------- */

#define METRIC_READY(m)                                                                                      \
    if (!(m)->ready) {                                                                                 \
        zend_throw_error(NULL, "%s was not constructed", ZSTR_VAL((m)->std.ce->name));                      \
        RETURN_THROWS();                                                                                     \
    }

ZEND_METHOD(Shmetrics_Collector, getName)
{
    ZEND_PARSE_PARAMETERS_NONE();
    shm_metric *m = THIS_METRIC();
    METRIC_READY(m);
    RETURN_STR_COPY(shm_metric_name(m));
}

ZEND_METHOD(Shmetrics_Collector, getHelp)
{
    ZEND_PARSE_PARAMETERS_NONE();
    shm_metric *m = THIS_METRIC();
    METRIC_READY(m);
    RETURN_STR_COPY(m->help);
}

ZEND_METHOD(Shmetrics_Collector, getType)
{
    ZEND_PARSE_PARAMETERS_NONE();
    RETURN_STRING(SHM_KIND_NAMES[THIS_METRIC()->kind]);
}

ZEND_METHOD(Shmetrics_Collector, getLabelNames)
{
    ZEND_PARSE_PARAMETERS_NONE();
    shm_metric *m = THIS_METRIC();
    METRIC_READY(m);
    RETURN_COPY(&m->labels);
}

ZEND_METHOD(Shmetrics_Collector, getTtl)
{
    ZEND_PARSE_PARAMETERS_NONE();
    shm_metric *m = THIS_METRIC();
    if (m->ttl_ms == 0) {
        RETURN_NULL();
    }
    RETURN_DOUBLE((double)m->ttl_ms / 1000);
}

/* sha1($name . serialize($labelNames)), as PromPHP's */
ZEND_METHOD(Shmetrics_Collector, getKey)
{
    ZEND_PARSE_PARAMETERS_NONE();
    shm_metric *m = THIS_METRIC();
    METRIC_READY(m);
    zval fn, ser, arg;
    ZVAL_STRING(&fn, "serialize");
    call_user_function(NULL, NULL, &fn, &ser, 1, &m->labels);
    zval_ptr_dtor(&fn);
    if (EG(exception)) {
        RETURN_THROWS();
    }
    zend_string *name = shm_metric_name(m);
    ZVAL_STR(&arg, zend_string_concat2(ZSTR_VAL(name), ZSTR_LEN(name), Z_STRVAL(ser), Z_STRLEN(ser)));
    zval_ptr_dtor(&ser);
    ZVAL_STRING(&fn, "sha1");
    call_user_function(NULL, NULL, &fn, return_value, 1, &arg);
    zval_ptr_dtor(&fn);
    zval_ptr_dtor(&arg);
}

/* ---- the updates and defaults --------------------------------------------------------------------- */

#define UPDATE_PARAMS_LABELS(labels)                                                                         \
    Z_PARAM_OPTIONAL                                                                                         \
    Z_PARAM_ARRAY(labels)

/* The default $labels: the immutable empty array. */
static zval empty_labels;

/* inc(array $labels = [], ?array $exemplar = null) */
ZEND_METHOD(Shmetrics_Counter, inc)
{
    zval *labels = &empty_labels;
    zval *exemplar = NULL;
    ZEND_PARSE_PARAMETERS_START(0, 2)
        UPDATE_PARAMS_LABELS(labels)
        Z_PARAM_ARRAY_OR_NULL(exemplar)
    ZEND_PARSE_PARAMETERS_END();
    shm_metric *m = THIS_METRIC();
    METRIC_READY(m);
    shm_metric_update(m, SHMETRICS_OP_COUNTER_ADD, labels, 1.0, exemplar);
}

/* incBy(int|float $count, array $labels = [], ?array $exemplar = null) */
ZEND_METHOD(Shmetrics_Counter, incBy)
{
    zval *count;
    zval *labels = &empty_labels;
    zval *exemplar = NULL;
    ZEND_PARSE_PARAMETERS_START(1, 3)
        Z_PARAM_NUMBER(count)
        UPDATE_PARAMS_LABELS(labels)
        Z_PARAM_ARRAY_OR_NULL(exemplar)
    ZEND_PARSE_PARAMETERS_END();
    shm_metric *m = THIS_METRIC();
    METRIC_READY(m);
    shm_metric_update(m, SHMETRICS_OP_COUNTER_ADD, labels, zval_get_double(count), exemplar);
}

ZEND_METHOD(Shmetrics_Gauge, getMode)
{
    ZEND_PARSE_PARAMETERS_NONE();
    shm_metric *m = THIS_METRIC();
    METRIC_READY(m);
    RETURN_STR_COPY(m->mode);
}

/* set(float $value, array $labels = []) */
ZEND_METHOD(Shmetrics_Gauge, set)
{
    double value;
    zval *labels = &empty_labels;
    ZEND_PARSE_PARAMETERS_START(1, 2)
        Z_PARAM_DOUBLE(value)
        UPDATE_PARAMS_LABELS(labels)
    ZEND_PARSE_PARAMETERS_END();
    shm_metric *m = THIS_METRIC();
    METRIC_READY(m);
    shm_metric_update(m, SHMETRICS_OP_GAUGE_SET, labels, value, NULL);
}

static void gauge_add(INTERNAL_FUNCTION_PARAMETERS, double sign)
{
    zval *labels = &empty_labels;
    ZEND_PARSE_PARAMETERS_START(0, 1)
        UPDATE_PARAMS_LABELS(labels)
    ZEND_PARSE_PARAMETERS_END();
    shm_metric *m = THIS_METRIC();
    METRIC_READY(m);
    shm_metric_update(m, SHMETRICS_OP_GAUGE_ADD, labels, sign, NULL);
}

static void gauge_add_by(INTERNAL_FUNCTION_PARAMETERS, double sign)
{
    zval *value;
    zval *labels = &empty_labels;
    ZEND_PARSE_PARAMETERS_START(1, 2)
        Z_PARAM_NUMBER(value)
        UPDATE_PARAMS_LABELS(labels)
    ZEND_PARSE_PARAMETERS_END();
    shm_metric *m = THIS_METRIC();
    METRIC_READY(m);
    shm_metric_update(m, SHMETRICS_OP_GAUGE_ADD, labels, sign * zval_get_double(value), NULL);
}

ZEND_METHOD(Shmetrics_Gauge, inc) { gauge_add(INTERNAL_FUNCTION_PARAM_PASSTHRU, 1.0); }
ZEND_METHOD(Shmetrics_Gauge, dec) { gauge_add(INTERNAL_FUNCTION_PARAM_PASSTHRU, -1.0); }
ZEND_METHOD(Shmetrics_Gauge, incBy) { gauge_add_by(INTERNAL_FUNCTION_PARAM_PASSTHRU, 1.0); }
ZEND_METHOD(Shmetrics_Gauge, decBy) { gauge_add_by(INTERNAL_FUNCTION_PARAM_PASSTHRU, -1.0); }

ZEND_METHOD(Shmetrics_Gauge, setToCurrentTime)
{
    zval *labels = &empty_labels;
    ZEND_PARSE_PARAMETERS_START(0, 1)
        UPDATE_PARAMS_LABELS(labels)
    ZEND_PARSE_PARAMETERS_END();
    shm_metric *m = THIS_METRIC();
    METRIC_READY(m);
    shm_metric_update(m, SHMETRICS_OP_GAUGE_SET_TO_CURRENT_TIME, labels, 0.0, NULL);
}

/* observe(float $value, array $labels = [], ?array $exemplar = null), Histogram's and Summary's */
ZEND_METHOD(Shmetrics_Histogram, observe)
{
    double value;
    zval *labels = &empty_labels;
    zval *exemplar = NULL;
    ZEND_PARSE_PARAMETERS_START(1, 3)
        Z_PARAM_DOUBLE(value)
        UPDATE_PARAMS_LABELS(labels)
        Z_PARAM_ARRAY_OR_NULL(exemplar)
    ZEND_PARSE_PARAMETERS_END();
    shm_metric *m = THIS_METRIC();
    METRIC_READY(m);
    shm_metric_update(m, SHMETRICS_OP_OBSERVE, labels, value, exemplar);
}

ZEND_METHOD(Shmetrics_Summary, observe)
{
    double value;
    zval *labels = &empty_labels;
    ZEND_PARSE_PARAMETERS_START(1, 2)
        Z_PARAM_DOUBLE(value)
        UPDATE_PARAMS_LABELS(labels)
    ZEND_PARSE_PARAMETERS_END();
    shm_metric *m = THIS_METRIC();
    METRIC_READY(m);
    shm_metric_update(m, SHMETRICS_OP_OBSERVE, labels, value, NULL);
}

static void doubles_array(zval *out, const double *v, size_t n)
{
    array_init_size(out, (uint32_t)n);
    for (size_t i = 0; i < n; i++) {
        add_next_index_double(out, v[i]);
    }
}

ZEND_METHOD(Shmetrics_Histogram, getDefaultBuckets)
{
    ZEND_PARSE_PARAMETERS_NONE();
    doubles_array(return_value, SHM_DEFAULT_BUCKETS, sizeof SHM_DEFAULT_BUCKETS / sizeof(double));
}

ZEND_METHOD(Shmetrics_Histogram, exponentialBuckets)
{
    double start, factor;
    zend_long n;
    ZEND_PARSE_PARAMETERS_START(3, 3)
        Z_PARAM_DOUBLE(start)
        Z_PARAM_DOUBLE(factor)
        Z_PARAM_LONG(n)
    ZEND_PARSE_PARAMETERS_END();
    zval args[3];
    ZVAL_DOUBLE(&args[0], start);
    ZVAL_DOUBLE(&args[1], factor);
    ZVAL_LONG(&args[2], n);
    if (!shm_call_static("Shmetrics\\Checks", "exponentialBuckets", return_value, 3, args)) {
        RETURN_THROWS();
    }
}

ZEND_METHOD(Shmetrics_Summary, getDefaultQuantiles)
{
    ZEND_PARSE_PARAMETERS_NONE();
    doubles_array(return_value, SHM_DEFAULT_QUANTILES, sizeof SHM_DEFAULT_QUANTILES / sizeof(double));
}

static const char *const NATIVE_OPTIONS[] = {"bucketFactor", "zeroThreshold", "maxBucketNumber"};

void shm_collector_minit(void)
{
    ZVAL_EMPTY_ARRAY(&empty_labels);
    shm_declare_array_constant(shm_ce_gauge, "MODES", SHM_GAUGE_MODES + 1, SHM_GAUGE_MODE_COUNT - 1, false);
    shm_declare_array_constant(shm_ce_histogram, "NATIVE_OPTIONS", NATIVE_OPTIONS, 3, true);
}
