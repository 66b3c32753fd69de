<?php
// Loads shmetrics.cdef.h with FFI::cdef and uses the ABI end to end.
// Usage: php smoke.php shmetrics.cdef.h libshmetrics.so STORE_PATH
//
// PHP FFI cannot point a `const char *` struct field at a PHP string, so
// strings inside structs are copied into C memory (str() below), which
// must stay referenced ($keep) while the struct is in use. Function
// arguments of type `const char *` take PHP strings directly.
[$_, $cdef, $lib, $path] = $argv;
$ffi = FFI::cdef(file_get_contents($cdef), $lib);
$keep = [];
function str($ffi, string $s, array &$keep) {
    $r = $ffi->new("shmetrics_str");
    $n = strlen($s);
    if ($n > 0) {
        $buf = FFI::new("char[$n]");
        FFI::memcpy($buf, $s, $n);
        $keep[] = $buf;
        $r->ptr = FFI::cast("const char*", $buf);
    }
    $r->len = $n;
    return $r;
}
function check($ffi, $rc, $what) {
    if ($rc !== 0) {
        $len = $ffi->new("size_t");
        $buf = FFI::new("char[512]");
        $ffi->shmetrics_last_error($buf, 512, FFI::addr($len));
        throw new RuntimeException("$what: " . $ffi->shmetrics_strerror($rc) . ": " . FFI::string($buf, $len->cdata));
    }
}
$st = $ffi->new("shmetrics_store*");
check($ffi, $ffi->shmetrics_store_open($path, strlen($path), null, FFI::addr($st)), "open");
$d = $ffi->new("shmetrics_family_desc");
$d->name = str($ffi, "php_requests_total", $keep);
$d->help = str($ffi, "Requests.", $keep);
$d->kind = $ffi->SHMETRICS_KIND_COUNTER;
$labels = $ffi->new("shmetrics_str[1]");
$labels[0] = str($ffi, "route", $keep);
$d->label_names = $ffi->cast("const shmetrics_str*", FFI::addr($labels[0]));
$d->label_count = 1;
$fam = $ffi->new("shmetrics_family");
check($ffi, $ffi->shmetrics_register($st, FFI::addr($d), FFI::addr($fam)), "register");
$vals = $ffi->new("shmetrics_str[1]");
$vals[0] = str($ffi, "/ü", $keep);
$s = $ffi->new("shmetrics_series");
check($ffi, $ffi->shmetrics_series_get($st, FFI::addr($fam), FFI::addr($vals[0]), 1, FFI::addr($s)), "series_get");
check($ffi, $ffi->shmetrics_counter_inc($st, FFI::addr($s)), "inc");
check($ffi, $ffi->shmetrics_counter_add($st, FFI::addr($s), 2.5), "add");
$rc = $ffi->shmetrics_counter_add($st, FFI::addr($s), NAN);
if ($rc !== $ffi->SHMETRICS_INVALID_VALUE) throw new RuntimeException("NaN gave $rc");
$out = $ffi->new("shmetrics_buf*");
check($ffi, $ffi->shmetrics_render_alloc($st, 0, FFI::addr($out)), "render");
$text = FFI::string($ffi->shmetrics_buf_data($out), $ffi->shmetrics_buf_len($out));
$ffi->shmetrics_buf_free($out);
$ffi->shmetrics_store_close($st);
$want = "php_requests_total{route=\"/ü\"} 3.5\n";
if (strpos($text, $want) === false) throw new RuntimeException("missing line in:\n$text");
echo "php ok: ", $ffi->shmetrics_version(), "\n";
