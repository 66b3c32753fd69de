dnl The shmetrics PHP extension: the package's hot classes (CollectorRegistry,
dnl Counter, Gauge, Histogram, Summary) in C over libshmetrics' C ABI, which
dnl it loads at run time (dlopen of $SHMETRICS_LIBRARY, the ini setting
dnl shmetrics.library, else the SONAME libshmetrics.so.1), as the FFI
dnl binding does: building needs no library, only PHP's headers.
dnl   phpize && ./configure && make && make install
PHP_ARG_ENABLE([shmetrics],
  [whether to enable the shmetrics extension],
  [AS_HELP_STRING([--enable-shmetrics], [Enable the shmetrics extension])],
  [yes])

if test "$PHP_SHMETRICS" != "no"; then
  PHP_ADD_LIBRARY(dl, 1, SHMETRICS_SHARED_LIBADD)
  PHP_SUBST(SHMETRICS_SHARED_LIBADD)
  dnl The sources, by concern (php_shmetrics.h lists what each owns).
  PHP_NEW_EXTENSION(shmetrics, m4_normalize([
      shmetrics_ext.c
      shmetrics_lib.c
      shmetrics_calls.c
      shmetrics_store.c
      shmetrics_storage.c
      shmetrics_metric.c
      shmetrics_defs.c
      shmetrics_collector.c
      shmetrics_registry.c
    ]), $ext_shared,, [-Wall -Wextra -Wno-unused-parameter])
  dnl The C ABI's declarations: bindings/php/include in the repository;
  dnl the PECL package (scripts/build-pecl.sh) has them beside the source.
  PHP_ADD_INCLUDE([$ext_srcdir/../include])
fi
