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
  dnl Link-time optimisation, where the compiler has it (GCC): the hot path
  dnl crosses files (an update: shmetrics_metric.c, then shmetrics_defs.c),
  dnl and benches/php/instructions.php counts the calls that the files cost
  dnl without it. Fat objects: a link without the LTO plugin still works.
  SHMETRICS_LTO=
  AX_CHECK_COMPILE_FLAG([-flto=auto -ffat-lto-objects], [SHMETRICS_LTO="-flto=auto -ffat-lto-objects"], [], [-Werror])
  EXTRA_LDFLAGS="$EXTRA_LDFLAGS $SHMETRICS_LTO"
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
    ]), $ext_shared,, [-Wall -Wextra -Wno-unused-parameter $SHMETRICS_LTO])
  dnl The C ABI's declarations: bindings/php/include in the repository;
  dnl the PECL package (scripts/build-pecl.sh) has them beside the source.
  PHP_ADD_INCLUDE([$ext_srcdir/../include])
fi
