/* This is a generated file, edit the .stub.php file instead.
 * Stub hash: 5da30f8e2207dd0233d0e4fcf9432ae8e7260ae3 */

ZEND_BEGIN_ARG_WITH_RETURN_OBJ_INFO_EX(arginfo_Shmetrics_Ext_open, 0, 2, Shmetrics\\Ext\\Store, 0)
	ZEND_ARG_TYPE_INFO(0, path, IS_STRING, 0)
	ZEND_ARG_TYPE_INFO(0, options, IS_ARRAY, 0)
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_Shmetrics_Ext_wipe, 0, 1, IS_LONG, 0)
	ZEND_ARG_OBJ_INFO(0, store, Shmetrics\\Ext\\Store, 0)
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_Shmetrics_Ext_render, 0, 3, IS_LONG, 0)
	ZEND_ARG_OBJ_INFO(0, store, Shmetrics\\Ext\\Store, 0)
	ZEND_ARG_TYPE_INFO(0, format, IS_LONG, 0)
	ZEND_ARG_INFO(1, out)
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_Shmetrics_Ext_content_type, 0, 1, IS_STRING, 1)
	ZEND_ARG_TYPE_INFO(0, format, IS_LONG, 0)
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_Shmetrics_Ext_stats, 0, 2, IS_LONG, 0)
	ZEND_ARG_OBJ_INFO(0, store, Shmetrics\\Ext\\Store, 0)
	ZEND_ARG_INFO(1, out)
ZEND_END_ARG_INFO()

#define arginfo_Shmetrics_Ext_snapshot arginfo_Shmetrics_Ext_stats

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_Shmetrics_Ext_last_error, 0, 0, IS_STRING, 0)
ZEND_END_ARG_INFO()

#define arginfo_Shmetrics_Ext_version arginfo_Shmetrics_Ext_last_error

ZEND_BEGIN_ARG_INFO_EX(arginfo_class_Shmetrics_Storage_Shmetrics___construct, 0, 0, 0)
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, path, IS_STRING, 1, "null")
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, options, IS_ARRAY, 0, "[]")
ZEND_END_ARG_INFO()

#define arginfo_class_Shmetrics_Storage_Shmetrics_path arginfo_Shmetrics_Ext_last_error

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_class_Shmetrics_Storage_Shmetrics_wipeStorage, 0, 0, IS_VOID, 0)
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_class_Shmetrics_Storage_Shmetrics_render, 0, 0, IS_STRING, 0)
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, format, IS_LONG, 0, "Shmetrics\\Storage\\Shmetrics::FORMAT_TEXT")
ZEND_END_ARG_INFO()

#define arginfo_class_Shmetrics_Storage_Shmetrics_contentType arginfo_class_Shmetrics_Storage_Shmetrics_render

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_class_Shmetrics_Storage_Shmetrics_collect, 0, 0, IS_ARRAY, 0)
ZEND_END_ARG_INFO()

#define arginfo_class_Shmetrics_Storage_Shmetrics_stats arginfo_class_Shmetrics_Storage_Shmetrics_collect

#define arginfo_class_Shmetrics_Collector_getName arginfo_Shmetrics_Ext_last_error

#define arginfo_class_Shmetrics_Collector_getHelp arginfo_Shmetrics_Ext_last_error

#define arginfo_class_Shmetrics_Collector_getType arginfo_Shmetrics_Ext_last_error

#define arginfo_class_Shmetrics_Collector_getLabelNames arginfo_class_Shmetrics_Storage_Shmetrics_collect

#define arginfo_class_Shmetrics_Collector_getKey arginfo_Shmetrics_Ext_last_error

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_class_Shmetrics_Collector_getTtl, 0, 0, IS_DOUBLE, 1)
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_INFO_EX(arginfo_class_Shmetrics_Counter___construct, 0, 0, 4)
	ZEND_ARG_OBJ_INFO(0, storage, Shmetrics\\Storage\\Shmetrics, 0)
	ZEND_ARG_TYPE_INFO(0, namespace, IS_STRING, 0)
	ZEND_ARG_TYPE_INFO(0, name, IS_STRING, 0)
	ZEND_ARG_TYPE_INFO(0, help, IS_STRING, 0)
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, labels, IS_ARRAY, 0, "[]")
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, exemplars, _IS_BOOL, 0, "false")
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, ttl, IS_DOUBLE, 1, "null")
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_class_Shmetrics_Counter_inc, 0, 0, IS_VOID, 0)
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, labels, IS_ARRAY, 0, "[]")
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, exemplar, IS_ARRAY, 1, "null")
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_class_Shmetrics_Counter_incBy, 0, 1, IS_VOID, 0)
	ZEND_ARG_TYPE_MASK(0, count, MAY_BE_LONG|MAY_BE_DOUBLE, NULL)
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, labels, IS_ARRAY, 0, "[]")
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, exemplar, IS_ARRAY, 1, "null")
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_INFO_EX(arginfo_class_Shmetrics_Gauge___construct, 0, 0, 4)
	ZEND_ARG_OBJ_INFO(0, storage, Shmetrics\\Storage\\Shmetrics, 0)
	ZEND_ARG_TYPE_INFO(0, namespace, IS_STRING, 0)
	ZEND_ARG_TYPE_INFO(0, name, IS_STRING, 0)
	ZEND_ARG_TYPE_INFO(0, help, IS_STRING, 0)
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, labels, IS_ARRAY, 0, "[]")
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, mode, IS_STRING, 0, "\"shared\"")
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, ttl, IS_DOUBLE, 1, "null")
ZEND_END_ARG_INFO()

#define arginfo_class_Shmetrics_Gauge_getMode arginfo_Shmetrics_Ext_last_error

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_class_Shmetrics_Gauge_set, 0, 1, IS_VOID, 0)
	ZEND_ARG_TYPE_INFO(0, value, IS_DOUBLE, 0)
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, labels, IS_ARRAY, 0, "[]")
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_class_Shmetrics_Gauge_inc, 0, 0, IS_VOID, 0)
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, labels, IS_ARRAY, 0, "[]")
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_class_Shmetrics_Gauge_incBy, 0, 1, IS_VOID, 0)
	ZEND_ARG_TYPE_MASK(0, value, MAY_BE_LONG|MAY_BE_DOUBLE, NULL)
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, labels, IS_ARRAY, 0, "[]")
ZEND_END_ARG_INFO()

#define arginfo_class_Shmetrics_Gauge_dec arginfo_class_Shmetrics_Gauge_inc

#define arginfo_class_Shmetrics_Gauge_decBy arginfo_class_Shmetrics_Gauge_incBy

#define arginfo_class_Shmetrics_Gauge_setToCurrentTime arginfo_class_Shmetrics_Gauge_inc

ZEND_BEGIN_ARG_INFO_EX(arginfo_class_Shmetrics_Histogram___construct, 0, 0, 4)
	ZEND_ARG_OBJ_INFO(0, storage, Shmetrics\\Storage\\Shmetrics, 0)
	ZEND_ARG_TYPE_INFO(0, namespace, IS_STRING, 0)
	ZEND_ARG_TYPE_INFO(0, name, IS_STRING, 0)
	ZEND_ARG_TYPE_INFO(0, help, IS_STRING, 0)
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, labels, IS_ARRAY, 0, "[]")
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, buckets, IS_ARRAY, 1, "null")
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, native, IS_ARRAY, 1, "null")
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, exemplars, _IS_BOOL, 0, "false")
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, ttl, IS_DOUBLE, 1, "null")
ZEND_END_ARG_INFO()

#define arginfo_class_Shmetrics_Histogram_getDefaultBuckets arginfo_class_Shmetrics_Storage_Shmetrics_collect

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_class_Shmetrics_Histogram_exponentialBuckets, 0, 3, IS_ARRAY, 0)
	ZEND_ARG_TYPE_INFO(0, start, IS_DOUBLE, 0)
	ZEND_ARG_TYPE_INFO(0, growthFactor, IS_DOUBLE, 0)
	ZEND_ARG_TYPE_INFO(0, numberOfBuckets, IS_LONG, 0)
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_class_Shmetrics_Histogram_observe, 0, 1, IS_VOID, 0)
	ZEND_ARG_TYPE_INFO(0, value, IS_DOUBLE, 0)
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, labels, IS_ARRAY, 0, "[]")
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, exemplar, IS_ARRAY, 1, "null")
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_INFO_EX(arginfo_class_Shmetrics_Summary___construct, 0, 0, 4)
	ZEND_ARG_OBJ_INFO(0, storage, Shmetrics\\Storage\\Shmetrics, 0)
	ZEND_ARG_TYPE_INFO(0, namespace, IS_STRING, 0)
	ZEND_ARG_TYPE_INFO(0, name, IS_STRING, 0)
	ZEND_ARG_TYPE_INFO(0, help, IS_STRING, 0)
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, labels, IS_ARRAY, 0, "[]")
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, maxAgeSeconds, IS_LONG, 0, "86400")
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, quantiles, IS_ARRAY, 1, "null")
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, ttl, IS_DOUBLE, 1, "null")
ZEND_END_ARG_INFO()

#define arginfo_class_Shmetrics_Summary_getDefaultQuantiles arginfo_class_Shmetrics_Storage_Shmetrics_collect

#define arginfo_class_Shmetrics_Summary_observe arginfo_class_Shmetrics_Gauge_set

ZEND_BEGIN_ARG_INFO_EX(arginfo_class_Shmetrics_CollectorRegistry___construct, 0, 0, 0)
	ZEND_ARG_OBJ_TYPE_MASK(0, storage, Shmetrics\\Storage\\Shmetrics, MAY_BE_STRING|MAY_BE_NULL, "null")
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, registerDefaultMetrics, _IS_BOOL, 0, "true")
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_OBJ_INFO_EX(arginfo_class_Shmetrics_CollectorRegistry_getDefault, 0, 0, Shmetrics\\CollectorRegistry, 0)
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_OBJ_INFO_EX(arginfo_class_Shmetrics_CollectorRegistry_getStorage, 0, 0, Shmetrics\\Storage\\Shmetrics, 0)
ZEND_END_ARG_INFO()

#define arginfo_class_Shmetrics_CollectorRegistry_getMetricFamilySamples arginfo_class_Shmetrics_Storage_Shmetrics_collect

#define arginfo_class_Shmetrics_CollectorRegistry_wipeStorage arginfo_class_Shmetrics_Storage_Shmetrics_wipeStorage

ZEND_BEGIN_ARG_WITH_RETURN_OBJ_INFO_EX(arginfo_class_Shmetrics_CollectorRegistry_registerCounter, 0, 3, Shmetrics\\Counter, 0)
	ZEND_ARG_TYPE_INFO(0, namespace, IS_STRING, 0)
	ZEND_ARG_TYPE_INFO(0, name, IS_STRING, 0)
	ZEND_ARG_TYPE_INFO(0, help, IS_STRING, 0)
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, labels, IS_ARRAY, 0, "[]")
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, exemplars, _IS_BOOL, 0, "false")
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, ttl, IS_DOUBLE, 1, "null")
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_OBJ_INFO_EX(arginfo_class_Shmetrics_CollectorRegistry_getCounter, 0, 2, Shmetrics\\Counter, 0)
	ZEND_ARG_TYPE_INFO(0, namespace, IS_STRING, 0)
	ZEND_ARG_TYPE_INFO(0, name, IS_STRING, 0)
ZEND_END_ARG_INFO()

#define arginfo_class_Shmetrics_CollectorRegistry_getOrRegisterCounter arginfo_class_Shmetrics_CollectorRegistry_registerCounter

ZEND_BEGIN_ARG_WITH_RETURN_OBJ_INFO_EX(arginfo_class_Shmetrics_CollectorRegistry_registerGauge, 0, 3, Shmetrics\\Gauge, 0)
	ZEND_ARG_TYPE_INFO(0, namespace, IS_STRING, 0)
	ZEND_ARG_TYPE_INFO(0, name, IS_STRING, 0)
	ZEND_ARG_TYPE_INFO(0, help, IS_STRING, 0)
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, labels, IS_ARRAY, 0, "[]")
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, mode, IS_STRING, 0, "\"shared\"")
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, ttl, IS_DOUBLE, 1, "null")
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_OBJ_INFO_EX(arginfo_class_Shmetrics_CollectorRegistry_getGauge, 0, 2, Shmetrics\\Gauge, 0)
	ZEND_ARG_TYPE_INFO(0, namespace, IS_STRING, 0)
	ZEND_ARG_TYPE_INFO(0, name, IS_STRING, 0)
ZEND_END_ARG_INFO()

#define arginfo_class_Shmetrics_CollectorRegistry_getOrRegisterGauge arginfo_class_Shmetrics_CollectorRegistry_registerGauge

ZEND_BEGIN_ARG_WITH_RETURN_OBJ_INFO_EX(arginfo_class_Shmetrics_CollectorRegistry_registerHistogram, 0, 3, Shmetrics\\Histogram, 0)
	ZEND_ARG_TYPE_INFO(0, namespace, IS_STRING, 0)
	ZEND_ARG_TYPE_INFO(0, name, IS_STRING, 0)
	ZEND_ARG_TYPE_INFO(0, help, IS_STRING, 0)
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, labels, IS_ARRAY, 0, "[]")
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, buckets, IS_ARRAY, 1, "null")
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, native, IS_ARRAY, 1, "null")
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, exemplars, _IS_BOOL, 0, "false")
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, ttl, IS_DOUBLE, 1, "null")
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_OBJ_INFO_EX(arginfo_class_Shmetrics_CollectorRegistry_getHistogram, 0, 2, Shmetrics\\Histogram, 0)
	ZEND_ARG_TYPE_INFO(0, namespace, IS_STRING, 0)
	ZEND_ARG_TYPE_INFO(0, name, IS_STRING, 0)
ZEND_END_ARG_INFO()

#define arginfo_class_Shmetrics_CollectorRegistry_getOrRegisterHistogram arginfo_class_Shmetrics_CollectorRegistry_registerHistogram

ZEND_BEGIN_ARG_WITH_RETURN_OBJ_INFO_EX(arginfo_class_Shmetrics_CollectorRegistry_registerSummary, 0, 3, Shmetrics\\Summary, 0)
	ZEND_ARG_TYPE_INFO(0, namespace, IS_STRING, 0)
	ZEND_ARG_TYPE_INFO(0, name, IS_STRING, 0)
	ZEND_ARG_TYPE_INFO(0, help, IS_STRING, 0)
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, labels, IS_ARRAY, 0, "[]")
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, maxAgeSeconds, IS_LONG, 0, "86400")
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, quantiles, IS_ARRAY, 1, "null")
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, ttl, IS_DOUBLE, 1, "null")
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_OBJ_INFO_EX(arginfo_class_Shmetrics_CollectorRegistry_getSummary, 0, 2, Shmetrics\\Summary, 0)
	ZEND_ARG_TYPE_INFO(0, namespace, IS_STRING, 0)
	ZEND_ARG_TYPE_INFO(0, name, IS_STRING, 0)
ZEND_END_ARG_INFO()

#define arginfo_class_Shmetrics_CollectorRegistry_getOrRegisterSummary arginfo_class_Shmetrics_CollectorRegistry_registerSummary


ZEND_FUNCTION(Shmetrics_Ext_open);
ZEND_FUNCTION(Shmetrics_Ext_wipe);
ZEND_FUNCTION(Shmetrics_Ext_render);
ZEND_FUNCTION(Shmetrics_Ext_content_type);
ZEND_FUNCTION(Shmetrics_Ext_stats);
ZEND_FUNCTION(Shmetrics_Ext_snapshot);
ZEND_FUNCTION(Shmetrics_Ext_last_error);
ZEND_FUNCTION(Shmetrics_Ext_version);
ZEND_METHOD(Shmetrics_Storage_Shmetrics, __construct);
ZEND_METHOD(Shmetrics_Storage_Shmetrics, path);
ZEND_METHOD(Shmetrics_Storage_Shmetrics, wipeStorage);
ZEND_METHOD(Shmetrics_Storage_Shmetrics, render);
ZEND_METHOD(Shmetrics_Storage_Shmetrics, contentType);
ZEND_METHOD(Shmetrics_Storage_Shmetrics, collect);
ZEND_METHOD(Shmetrics_Storage_Shmetrics, stats);
ZEND_METHOD(Shmetrics_Collector, getName);
ZEND_METHOD(Shmetrics_Collector, getHelp);
ZEND_METHOD(Shmetrics_Collector, getType);
ZEND_METHOD(Shmetrics_Collector, getLabelNames);
ZEND_METHOD(Shmetrics_Collector, getKey);
ZEND_METHOD(Shmetrics_Collector, getTtl);
ZEND_METHOD(Shmetrics_Counter, __construct);
ZEND_METHOD(Shmetrics_Counter, inc);
ZEND_METHOD(Shmetrics_Counter, incBy);
ZEND_METHOD(Shmetrics_Gauge, __construct);
ZEND_METHOD(Shmetrics_Gauge, getMode);
ZEND_METHOD(Shmetrics_Gauge, set);
ZEND_METHOD(Shmetrics_Gauge, inc);
ZEND_METHOD(Shmetrics_Gauge, incBy);
ZEND_METHOD(Shmetrics_Gauge, dec);
ZEND_METHOD(Shmetrics_Gauge, decBy);
ZEND_METHOD(Shmetrics_Gauge, setToCurrentTime);
ZEND_METHOD(Shmetrics_Histogram, __construct);
ZEND_METHOD(Shmetrics_Histogram, getDefaultBuckets);
ZEND_METHOD(Shmetrics_Histogram, exponentialBuckets);
ZEND_METHOD(Shmetrics_Histogram, observe);
ZEND_METHOD(Shmetrics_Summary, __construct);
ZEND_METHOD(Shmetrics_Summary, getDefaultQuantiles);
ZEND_METHOD(Shmetrics_Summary, observe);
ZEND_METHOD(Shmetrics_CollectorRegistry, __construct);
ZEND_METHOD(Shmetrics_CollectorRegistry, getDefault);
ZEND_METHOD(Shmetrics_CollectorRegistry, getStorage);
ZEND_METHOD(Shmetrics_CollectorRegistry, getMetricFamilySamples);
ZEND_METHOD(Shmetrics_CollectorRegistry, wipeStorage);
ZEND_METHOD(Shmetrics_CollectorRegistry, registerCounter);
ZEND_METHOD(Shmetrics_CollectorRegistry, getCounter);
ZEND_METHOD(Shmetrics_CollectorRegistry, getOrRegisterCounter);
ZEND_METHOD(Shmetrics_CollectorRegistry, registerGauge);
ZEND_METHOD(Shmetrics_CollectorRegistry, getGauge);
ZEND_METHOD(Shmetrics_CollectorRegistry, getOrRegisterGauge);
ZEND_METHOD(Shmetrics_CollectorRegistry, registerHistogram);
ZEND_METHOD(Shmetrics_CollectorRegistry, getHistogram);
ZEND_METHOD(Shmetrics_CollectorRegistry, getOrRegisterHistogram);
ZEND_METHOD(Shmetrics_CollectorRegistry, registerSummary);
ZEND_METHOD(Shmetrics_CollectorRegistry, getSummary);
ZEND_METHOD(Shmetrics_CollectorRegistry, getOrRegisterSummary);


static const zend_function_entry ext_functions[] = {
	ZEND_NS_FALIAS("Shmetrics\\Ext", open, Shmetrics_Ext_open, arginfo_Shmetrics_Ext_open)
	ZEND_NS_FALIAS("Shmetrics\\Ext", wipe, Shmetrics_Ext_wipe, arginfo_Shmetrics_Ext_wipe)
	ZEND_NS_FALIAS("Shmetrics\\Ext", render, Shmetrics_Ext_render, arginfo_Shmetrics_Ext_render)
	ZEND_NS_FALIAS("Shmetrics\\Ext", content_type, Shmetrics_Ext_content_type, arginfo_Shmetrics_Ext_content_type)
	ZEND_NS_FALIAS("Shmetrics\\Ext", stats, Shmetrics_Ext_stats, arginfo_Shmetrics_Ext_stats)
	ZEND_NS_FALIAS("Shmetrics\\Ext", snapshot, Shmetrics_Ext_snapshot, arginfo_Shmetrics_Ext_snapshot)
	ZEND_NS_FALIAS("Shmetrics\\Ext", last_error, Shmetrics_Ext_last_error, arginfo_Shmetrics_Ext_last_error)
	ZEND_NS_FALIAS("Shmetrics\\Ext", version, Shmetrics_Ext_version, arginfo_Shmetrics_Ext_version)
	ZEND_FE_END
};


static const zend_function_entry class_Shmetrics_Ext_Store_methods[] = {
	ZEND_FE_END
};


static const zend_function_entry class_Shmetrics_Storage_Shmetrics_methods[] = {
	ZEND_ME(Shmetrics_Storage_Shmetrics, __construct, arginfo_class_Shmetrics_Storage_Shmetrics___construct, ZEND_ACC_PUBLIC)
	ZEND_ME(Shmetrics_Storage_Shmetrics, path, arginfo_class_Shmetrics_Storage_Shmetrics_path, ZEND_ACC_PUBLIC)
	ZEND_ME(Shmetrics_Storage_Shmetrics, wipeStorage, arginfo_class_Shmetrics_Storage_Shmetrics_wipeStorage, ZEND_ACC_PUBLIC)
	ZEND_ME(Shmetrics_Storage_Shmetrics, render, arginfo_class_Shmetrics_Storage_Shmetrics_render, ZEND_ACC_PUBLIC)
	ZEND_ME(Shmetrics_Storage_Shmetrics, contentType, arginfo_class_Shmetrics_Storage_Shmetrics_contentType, ZEND_ACC_PUBLIC)
	ZEND_ME(Shmetrics_Storage_Shmetrics, collect, arginfo_class_Shmetrics_Storage_Shmetrics_collect, ZEND_ACC_PUBLIC)
	ZEND_ME(Shmetrics_Storage_Shmetrics, stats, arginfo_class_Shmetrics_Storage_Shmetrics_stats, ZEND_ACC_PUBLIC)
	ZEND_FE_END
};


static const zend_function_entry class_Shmetrics_Collector_methods[] = {
	ZEND_ME(Shmetrics_Collector, getName, arginfo_class_Shmetrics_Collector_getName, ZEND_ACC_PUBLIC)
	ZEND_ME(Shmetrics_Collector, getHelp, arginfo_class_Shmetrics_Collector_getHelp, ZEND_ACC_PUBLIC)
	ZEND_ME(Shmetrics_Collector, getType, arginfo_class_Shmetrics_Collector_getType, ZEND_ACC_PUBLIC)
	ZEND_ME(Shmetrics_Collector, getLabelNames, arginfo_class_Shmetrics_Collector_getLabelNames, ZEND_ACC_PUBLIC)
	ZEND_ME(Shmetrics_Collector, getKey, arginfo_class_Shmetrics_Collector_getKey, ZEND_ACC_PUBLIC)
	ZEND_ME(Shmetrics_Collector, getTtl, arginfo_class_Shmetrics_Collector_getTtl, ZEND_ACC_PUBLIC)
	ZEND_FE_END
};


static const zend_function_entry class_Shmetrics_Counter_methods[] = {
	ZEND_ME(Shmetrics_Counter, __construct, arginfo_class_Shmetrics_Counter___construct, ZEND_ACC_PUBLIC)
	ZEND_ME(Shmetrics_Counter, inc, arginfo_class_Shmetrics_Counter_inc, ZEND_ACC_PUBLIC)
	ZEND_ME(Shmetrics_Counter, incBy, arginfo_class_Shmetrics_Counter_incBy, ZEND_ACC_PUBLIC)
	ZEND_FE_END
};


static const zend_function_entry class_Shmetrics_Gauge_methods[] = {
	ZEND_ME(Shmetrics_Gauge, __construct, arginfo_class_Shmetrics_Gauge___construct, ZEND_ACC_PUBLIC)
	ZEND_ME(Shmetrics_Gauge, getMode, arginfo_class_Shmetrics_Gauge_getMode, ZEND_ACC_PUBLIC)
	ZEND_ME(Shmetrics_Gauge, set, arginfo_class_Shmetrics_Gauge_set, ZEND_ACC_PUBLIC)
	ZEND_ME(Shmetrics_Gauge, inc, arginfo_class_Shmetrics_Gauge_inc, ZEND_ACC_PUBLIC)
	ZEND_ME(Shmetrics_Gauge, incBy, arginfo_class_Shmetrics_Gauge_incBy, ZEND_ACC_PUBLIC)
	ZEND_ME(Shmetrics_Gauge, dec, arginfo_class_Shmetrics_Gauge_dec, ZEND_ACC_PUBLIC)
	ZEND_ME(Shmetrics_Gauge, decBy, arginfo_class_Shmetrics_Gauge_decBy, ZEND_ACC_PUBLIC)
	ZEND_ME(Shmetrics_Gauge, setToCurrentTime, arginfo_class_Shmetrics_Gauge_setToCurrentTime, ZEND_ACC_PUBLIC)
	ZEND_FE_END
};


static const zend_function_entry class_Shmetrics_Histogram_methods[] = {
	ZEND_ME(Shmetrics_Histogram, __construct, arginfo_class_Shmetrics_Histogram___construct, ZEND_ACC_PUBLIC)
	ZEND_ME(Shmetrics_Histogram, getDefaultBuckets, arginfo_class_Shmetrics_Histogram_getDefaultBuckets, ZEND_ACC_PUBLIC|ZEND_ACC_STATIC)
	ZEND_ME(Shmetrics_Histogram, exponentialBuckets, arginfo_class_Shmetrics_Histogram_exponentialBuckets, ZEND_ACC_PUBLIC|ZEND_ACC_STATIC)
	ZEND_ME(Shmetrics_Histogram, observe, arginfo_class_Shmetrics_Histogram_observe, ZEND_ACC_PUBLIC)
	ZEND_FE_END
};


static const zend_function_entry class_Shmetrics_Summary_methods[] = {
	ZEND_ME(Shmetrics_Summary, __construct, arginfo_class_Shmetrics_Summary___construct, ZEND_ACC_PUBLIC)
	ZEND_ME(Shmetrics_Summary, getDefaultQuantiles, arginfo_class_Shmetrics_Summary_getDefaultQuantiles, ZEND_ACC_PUBLIC|ZEND_ACC_STATIC)
	ZEND_ME(Shmetrics_Summary, observe, arginfo_class_Shmetrics_Summary_observe, ZEND_ACC_PUBLIC)
	ZEND_FE_END
};


static const zend_function_entry class_Shmetrics_CollectorRegistry_methods[] = {
	ZEND_ME(Shmetrics_CollectorRegistry, __construct, arginfo_class_Shmetrics_CollectorRegistry___construct, ZEND_ACC_PUBLIC)
	ZEND_ME(Shmetrics_CollectorRegistry, getDefault, arginfo_class_Shmetrics_CollectorRegistry_getDefault, ZEND_ACC_PUBLIC|ZEND_ACC_STATIC)
	ZEND_ME(Shmetrics_CollectorRegistry, getStorage, arginfo_class_Shmetrics_CollectorRegistry_getStorage, ZEND_ACC_PUBLIC)
	ZEND_ME(Shmetrics_CollectorRegistry, getMetricFamilySamples, arginfo_class_Shmetrics_CollectorRegistry_getMetricFamilySamples, ZEND_ACC_PUBLIC)
	ZEND_ME(Shmetrics_CollectorRegistry, wipeStorage, arginfo_class_Shmetrics_CollectorRegistry_wipeStorage, ZEND_ACC_PUBLIC)
	ZEND_ME(Shmetrics_CollectorRegistry, registerCounter, arginfo_class_Shmetrics_CollectorRegistry_registerCounter, ZEND_ACC_PUBLIC)
	ZEND_ME(Shmetrics_CollectorRegistry, getCounter, arginfo_class_Shmetrics_CollectorRegistry_getCounter, ZEND_ACC_PUBLIC)
	ZEND_ME(Shmetrics_CollectorRegistry, getOrRegisterCounter, arginfo_class_Shmetrics_CollectorRegistry_getOrRegisterCounter, ZEND_ACC_PUBLIC)
	ZEND_ME(Shmetrics_CollectorRegistry, registerGauge, arginfo_class_Shmetrics_CollectorRegistry_registerGauge, ZEND_ACC_PUBLIC)
	ZEND_ME(Shmetrics_CollectorRegistry, getGauge, arginfo_class_Shmetrics_CollectorRegistry_getGauge, ZEND_ACC_PUBLIC)
	ZEND_ME(Shmetrics_CollectorRegistry, getOrRegisterGauge, arginfo_class_Shmetrics_CollectorRegistry_getOrRegisterGauge, ZEND_ACC_PUBLIC)
	ZEND_ME(Shmetrics_CollectorRegistry, registerHistogram, arginfo_class_Shmetrics_CollectorRegistry_registerHistogram, ZEND_ACC_PUBLIC)
	ZEND_ME(Shmetrics_CollectorRegistry, getHistogram, arginfo_class_Shmetrics_CollectorRegistry_getHistogram, ZEND_ACC_PUBLIC)
	ZEND_ME(Shmetrics_CollectorRegistry, getOrRegisterHistogram, arginfo_class_Shmetrics_CollectorRegistry_getOrRegisterHistogram, ZEND_ACC_PUBLIC)
	ZEND_ME(Shmetrics_CollectorRegistry, registerSummary, arginfo_class_Shmetrics_CollectorRegistry_registerSummary, ZEND_ACC_PUBLIC)
	ZEND_ME(Shmetrics_CollectorRegistry, getSummary, arginfo_class_Shmetrics_CollectorRegistry_getSummary, ZEND_ACC_PUBLIC)
	ZEND_ME(Shmetrics_CollectorRegistry, getOrRegisterSummary, arginfo_class_Shmetrics_CollectorRegistry_getOrRegisterSummary, ZEND_ACC_PUBLIC)
	ZEND_FE_END
};

static zend_class_entry *register_class_Shmetrics_Ext_Store(void)
{
	zend_class_entry ce, *class_entry;

	INIT_NS_CLASS_ENTRY(ce, "Shmetrics\\Ext", "Store", class_Shmetrics_Ext_Store_methods);
	class_entry = zend_register_internal_class_ex(&ce, NULL);
	class_entry->ce_flags |= ZEND_ACC_FINAL|ZEND_ACC_NO_DYNAMIC_PROPERTIES|ZEND_ACC_NOT_SERIALIZABLE;

	return class_entry;
}

static zend_class_entry *register_class_Shmetrics_Storage_Shmetrics(void)
{
	zend_class_entry ce, *class_entry;

	INIT_NS_CLASS_ENTRY(ce, "Shmetrics\\Storage", "Shmetrics", class_Shmetrics_Storage_Shmetrics_methods);
	class_entry = zend_register_internal_class_ex(&ce, NULL);
	class_entry->ce_flags |= ZEND_ACC_FINAL|ZEND_ACC_NOT_SERIALIZABLE;

	zval const_FORMAT_TEXT_value;
	ZVAL_LONG(&const_FORMAT_TEXT_value, 0);
	zend_string *const_FORMAT_TEXT_name = zend_string_init_interned("FORMAT_TEXT", sizeof("FORMAT_TEXT") - 1, 1);
	zend_declare_class_constant_ex(class_entry, const_FORMAT_TEXT_name, &const_FORMAT_TEXT_value, ZEND_ACC_PUBLIC, NULL);
	zend_string_release(const_FORMAT_TEXT_name);

	zval const_FORMAT_OPENMETRICS_value;
	ZVAL_LONG(&const_FORMAT_OPENMETRICS_value, 1);
	zend_string *const_FORMAT_OPENMETRICS_name = zend_string_init_interned("FORMAT_OPENMETRICS", sizeof("FORMAT_OPENMETRICS") - 1, 1);
	zend_declare_class_constant_ex(class_entry, const_FORMAT_OPENMETRICS_name, &const_FORMAT_OPENMETRICS_value, ZEND_ACC_PUBLIC, NULL);
	zend_string_release(const_FORMAT_OPENMETRICS_name);

	zval property_ffi_default_value;
	ZVAL_NULL(&property_ffi_default_value);
	zend_string *property_ffi_name = zend_string_init("ffi", sizeof("ffi") - 1, 1);
	zend_declare_property_ex(class_entry, property_ffi_name, &property_ffi_default_value, ZEND_ACC_PUBLIC, NULL);
	zend_string_release(property_ffi_name);

	zval property_store_default_value;
	ZVAL_NULL(&property_store_default_value);
	zend_string *property_store_name = zend_string_init("store", sizeof("store") - 1, 1);
	zend_declare_property_ex(class_entry, property_store_name, &property_store_default_value, ZEND_ACC_PUBLIC, NULL);
	zend_string_release(property_store_name);

	return class_entry;
}

static zend_class_entry *register_class_Shmetrics_Collector(void)
{
	zend_class_entry ce, *class_entry;

	INIT_NS_CLASS_ENTRY(ce, "Shmetrics", "Collector", class_Shmetrics_Collector_methods);
	class_entry = zend_register_internal_class_ex(&ce, NULL);
	class_entry->ce_flags |= ZEND_ACC_ABSTRACT|ZEND_ACC_NO_DYNAMIC_PROPERTIES|ZEND_ACC_NOT_SERIALIZABLE;

	return class_entry;
}

static zend_class_entry *register_class_Shmetrics_Counter(zend_class_entry *class_entry_Shmetrics_Collector)
{
	zend_class_entry ce, *class_entry;

	INIT_NS_CLASS_ENTRY(ce, "Shmetrics", "Counter", class_Shmetrics_Counter_methods);
	class_entry = zend_register_internal_class_ex(&ce, class_entry_Shmetrics_Collector);
	class_entry->ce_flags |= ZEND_ACC_FINAL|ZEND_ACC_NO_DYNAMIC_PROPERTIES|ZEND_ACC_NOT_SERIALIZABLE;

	zval const_TYPE_value;
	zend_string *const_TYPE_value_str = zend_string_init("counter", strlen("counter"), 1);
	ZVAL_STR(&const_TYPE_value, const_TYPE_value_str);
	zend_string *const_TYPE_name = zend_string_init_interned("TYPE", sizeof("TYPE") - 1, 1);
	zend_declare_class_constant_ex(class_entry, const_TYPE_name, &const_TYPE_value, ZEND_ACC_PUBLIC, NULL);
	zend_string_release(const_TYPE_name);

	return class_entry;
}

static zend_class_entry *register_class_Shmetrics_Gauge(zend_class_entry *class_entry_Shmetrics_Collector)
{
	zend_class_entry ce, *class_entry;

	INIT_NS_CLASS_ENTRY(ce, "Shmetrics", "Gauge", class_Shmetrics_Gauge_methods);
	class_entry = zend_register_internal_class_ex(&ce, class_entry_Shmetrics_Collector);
	class_entry->ce_flags |= ZEND_ACC_FINAL|ZEND_ACC_NO_DYNAMIC_PROPERTIES|ZEND_ACC_NOT_SERIALIZABLE;

	zval const_TYPE_value;
	zend_string *const_TYPE_value_str = zend_string_init("gauge", strlen("gauge"), 1);
	ZVAL_STR(&const_TYPE_value, const_TYPE_value_str);
	zend_string *const_TYPE_name = zend_string_init_interned("TYPE", sizeof("TYPE") - 1, 1);
	zend_declare_class_constant_ex(class_entry, const_TYPE_name, &const_TYPE_value, ZEND_ACC_PUBLIC, NULL);
	zend_string_release(const_TYPE_name);

	return class_entry;
}

static zend_class_entry *register_class_Shmetrics_Histogram(zend_class_entry *class_entry_Shmetrics_Collector)
{
	zend_class_entry ce, *class_entry;

	INIT_NS_CLASS_ENTRY(ce, "Shmetrics", "Histogram", class_Shmetrics_Histogram_methods);
	class_entry = zend_register_internal_class_ex(&ce, class_entry_Shmetrics_Collector);
	class_entry->ce_flags |= ZEND_ACC_FINAL|ZEND_ACC_NO_DYNAMIC_PROPERTIES|ZEND_ACC_NOT_SERIALIZABLE;

	zval const_TYPE_value;
	zend_string *const_TYPE_value_str = zend_string_init("histogram", strlen("histogram"), 1);
	ZVAL_STR(&const_TYPE_value, const_TYPE_value_str);
	zend_string *const_TYPE_name = zend_string_init_interned("TYPE", sizeof("TYPE") - 1, 1);
	zend_declare_class_constant_ex(class_entry, const_TYPE_name, &const_TYPE_value, ZEND_ACC_PUBLIC, NULL);
	zend_string_release(const_TYPE_name);

	return class_entry;
}

static zend_class_entry *register_class_Shmetrics_Summary(zend_class_entry *class_entry_Shmetrics_Collector)
{
	zend_class_entry ce, *class_entry;

	INIT_NS_CLASS_ENTRY(ce, "Shmetrics", "Summary", class_Shmetrics_Summary_methods);
	class_entry = zend_register_internal_class_ex(&ce, class_entry_Shmetrics_Collector);
	class_entry->ce_flags |= ZEND_ACC_FINAL|ZEND_ACC_NO_DYNAMIC_PROPERTIES|ZEND_ACC_NOT_SERIALIZABLE;

	zval const_TYPE_value;
	zend_string *const_TYPE_value_str = zend_string_init("summary", strlen("summary"), 1);
	ZVAL_STR(&const_TYPE_value, const_TYPE_value_str);
	zend_string *const_TYPE_name = zend_string_init_interned("TYPE", sizeof("TYPE") - 1, 1);
	zend_declare_class_constant_ex(class_entry, const_TYPE_name, &const_TYPE_value, ZEND_ACC_PUBLIC, NULL);
	zend_string_release(const_TYPE_name);

	return class_entry;
}

static zend_class_entry *register_class_Shmetrics_CollectorRegistry(void)
{
	zend_class_entry ce, *class_entry;

	INIT_NS_CLASS_ENTRY(ce, "Shmetrics", "CollectorRegistry", class_Shmetrics_CollectorRegistry_methods);
	class_entry = zend_register_internal_class_ex(&ce, NULL);
	class_entry->ce_flags |= ZEND_ACC_NO_DYNAMIC_PROPERTIES|ZEND_ACC_NOT_SERIALIZABLE;

	return class_entry;
}
