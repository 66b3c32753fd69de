<?php

declare(strict_types=1);

namespace Shmetrics;

use FFI;
use FFI\CData;
use Shmetrics\Exception\InvalidArgumentException;
use Shmetrics\Exception\MetricsRegistrationException;
use Shmetrics\Exception\ShmetricsException;
use Shmetrics\Exception\StorageException;

/**
 * The C ABI (libshmetrics) as PHP sees it: loading it through FFI, its
 * result codes, and the mapping of each code to an exception.
 *
 * The FFI definitions come, in this order, from:
 * 1. the scope "SHMETRICS", made at startup by `ffi.preload` (php-fpm with
 *    `ffi.enable=preload`; see docs/php.md and bin/shmetrics-ffi-header);
 * 2. FFI::cdef() of include/shmetrics.cdef.h (this package's copy of
 *    crates/ffi/include/shmetrics.cdef.h, kept current by gen-header.sh),
 *    when FFI is allowed at run time (`ffi.enable=true`, or the CLI).
 *
 * The library is found through configure(), else $SHMETRICS_LIBRARY, else
 * by the dynamic loader on the system's library path, as
 * libshmetrics.so.<major> (its SONAME), then libshmetrics.so. A library of
 * another major version than ABI_MAJOR is refused. The header likewise:
 * configure(), $SHMETRICS_CDEF, then include/shmetrics.cdef.h in this
 * package.
 */
final class Native
{
    /** The FFI scope name that ffi.preload headers declare. */
    public const SCOPE = 'SHMETRICS';

    /**
     * The major version of the C ABI this binding is written for: a library
     * whose shmetrics_version_major() differs is refused.
     */
    public const ABI_MAJOR = 1;

    // The C ABI's result codes (enum shmetrics_result). They never change;
    // tests/NativeTest.php checks them against the header.
    public const OK = 0;
    public const IO = 1;
    public const FOREIGN_FILE = 2;
    public const VERSION_MISMATCH = 3;
    public const TRUNCATED = 4;
    public const CORRUPT = 5;
    public const INVALID_NAME = 6;
    public const LABEL_COUNT = 7;
    public const INVALID_VALUE = 8;
    public const INVALID_OPTIONS = 9;
    public const CONFLICT = 10;
    public const STORE_FULL = 11;
    public const OVERFLOW = 12;
    public const WRONG_TYPE = 13;
    public const STALE_HANDLE = 14;
    public const READ_ONLY = 15;
    public const BUSY = 16;
    public const UNTRUSTED = 17;
    public const ERROR = 99;
    public const NULL_PARAMETER = 100;
    public const INVALID_UTF8 = 101;
    public const BUFFER_TOO_SMALL = 102;
    public const PANIC = 103;
    public const INVALID_ARGUMENT = 104;

    // The updates of shmetrics_update (enum shmetrics_op).
    public const OP_COUNTER_ADD = 1;
    public const OP_GAUGE_SET = 2;
    public const OP_GAUGE_ADD = 3;
    public const OP_OBSERVE = 4;
    public const OP_GAUGE_SET_TO_CURRENT_TIME = 5;

    /** Result codes that mean the caller passed something invalid. */
    private const INVALID_INPUT = [
        self::INVALID_NAME, self::LABEL_COUNT, self::INVALID_VALUE, self::INVALID_OPTIONS,
        self::INVALID_UTF8, self::INVALID_ARGUMENT,
    ];

    private static ?FFI $ffi = null;
    private static ?string $library = null;
    private static ?string $cdef = null;

    private function __construct()
    {
    }

    /**
     * Sets the library and header to load, for when the defaults do not
     * find them. Call it before the first store is opened in the process.
     */
    public static function configure(?string $library = null, ?string $cdef = null): void
    {
        self::$library = $library;
        self::$cdef = $cdef;
        self::$ffi = null;
    }

    /** The FFI instance every class of this package calls through. */
    public static function ffi(): FFI
    {
        return self::$ffi ??= self::checkMajor(self::load());
    }

    /** The path (or name) of the shared library FFI::cdef() loads first. */
    public static function library(): string
    {
        return self::libraries()[0];
    }

    /**
     * The libraries to try in turn: the configured one or
     * $SHMETRICS_LIBRARY alone, else the names the dynamic loader looks up.
     *
     * @return non-empty-list<string>
     */
    private static function libraries(): array
    {
        if (self::$library !== null) {
            return [self::$library];
        }
        $env = getenv('SHMETRICS_LIBRARY');
        if (is_string($env) && $env !== '') {
            return [$env];
        }
        return ['libshmetrics.so.' . self::ABI_MAJOR, 'libshmetrics.so'];
    }

    /** The path of shmetrics.cdef.h, the declarations FFI::cdef() parses. */
    public static function cdefPath(): string
    {
        if (self::$cdef !== null) {
            return self::$cdef;
        }
        $env = getenv('SHMETRICS_CDEF');
        if (is_string($env) && $env !== '') {
            return $env;
        }
        return dirname(__DIR__) . '/include/shmetrics.cdef.h';
    }

    /**
     * The header to give `ffi.preload`: the declarations of
     * shmetrics.cdef.h under FFI_SCOPE "SHMETRICS", with FFI_LIB set to
     * $library (an absolute path, or a name on the system's library path).
     * bin/shmetrics-ffi-header prints it.
     */
    public static function scopeHeader(?string $library = null): string
    {
        $library ??= self::library();
        if (strpbrk($library, "\"\\\n") !== false) {
            throw new InvalidArgumentException("the library path must not contain quotes, backslashes or newlines: $library");
        }
        return "#define FFI_SCOPE \"" . self::SCOPE . "\"\n"
            . "#define FFI_LIB \"$library\"\n"
            . self::readCdef();
    }

    /** The library's version, e.g. "1.0.0". */
    public static function version(): string
    {
        return self::ffi()->shmetrics_version();
    }

    /**
     * Whether the `shmetrics` extension is loaded: it then provides the
     * metric classes and the registry (instead of src/), and the store
     * calls of Storage\Shmetrics and Snapshot go through it, not FFI.
     */
    public static function extension(): bool
    {
        return \extension_loaded('shmetrics');
    }

    /** The calling thread's message for the last failed C call. */
    public static function lastError(): string
    {
        if (self::$ffi === null && self::extension()) {
            return \Shmetrics\Ext\last_error();
        }
        $ffi = self::ffi();
        $len = $ffi->new('size_t');
        $ffi->shmetrics_last_error(null, 0, FFI::addr($len));
        $cap = $len->cdata + 1;
        $buf = $ffi->new("char[$cap]");
        $ffi->shmetrics_last_error($buf, $cap, FFI::addr($len));
        return FFI::string($buf, $len->cdata);
    }

    /**
     * The exception for result code $code of a call that just failed on
     * this thread, with $context (what was being done) and the library's
     * message, which says what to fix.
     */
    public static function exception(int $code, string $context): ShmetricsException
    {
        $message = $context . ': ' . self::lastError();
        if (in_array($code, self::INVALID_INPUT, true)) {
            return new InvalidArgumentException($message, $code);
        }
        if ($code === self::CONFLICT) {
            return new MetricsRegistrationException($message, $code);
        }
        return new StorageException($message, $code);
    }

    /**
     * Copies $values into C memory as a `shmetrics_str[n]`. Returns the
     * array (NULL when empty) and the buffers its pointers point to, which
     * must stay referenced while the array is used: PHP FFI cannot point a
     * struct's `const char *` at a PHP string.
     *
     * @param list<string> $values
     * @return array{0: ?CData, 1: list<CData>}
     */
    public static function strs(FFI $ffi, array $values): array
    {
        $n = count($values);
        if ($n === 0) {
            return [null, []];
        }
        $arr = $ffi->new("shmetrics_str[$n]");
        $keep = [];
        foreach ($values as $i => $v) {
            $len = strlen($v);
            if ($len > 0) {
                $buf = $ffi->new("char[$len]");
                FFI::memcpy($buf, $v, $len);
                $arr[$i]->ptr = $ffi->cast('const char *', $buf);
                $keep[] = $buf;
            }
            $arr[$i]->len = $len;
        }
        return [$arr, $keep];
    }

    /**
     * One `shmetrics_str` holding a copy of $s; keep the returned buffer.
     *
     * @return array{0: CData, 1: ?CData}
     */
    public static function str(FFI $ffi, string $s): array
    {
        $r = $ffi->new('shmetrics_str');
        $n = strlen($s);
        if ($n === 0) {
            return [$r, null];
        }
        $buf = $ffi->new("char[$n]");
        FFI::memcpy($buf, $s, $n);
        $r->ptr = $ffi->cast('const char *', $buf);
        $r->len = $n;
        return [$r, $buf];
    }

    /**
     * A `double[n]` holding $values (NULL when empty).
     *
     * @param list<float|int> $values
     */
    public static function doubles(FFI $ffi, array $values): ?CData
    {
        $n = count($values);
        if ($n === 0) {
            return null;
        }
        $arr = $ffi->new("double[$n]");
        foreach (array_values($values) as $i => $v) {
            if (!is_int($v) && !is_float($v)) {
                throw new InvalidArgumentException('expected numbers, got ' . get_debug_type($v));
            }
            $arr[$i] = (float) $v;
        }
        return $arr;
    }

    private static function load(): FFI
    {
        if (!extension_loaded('ffi')) {
            throw new StorageException(
                "PHP's FFI extension is not loaded; enable it (extension=ffi) and set ffi.enable: see docs/php.md"
            );
        }
        try {
            return FFI::scope(self::SCOPE);
        } catch (\FFI\Exception $e) {
            $scopeError = $e->getMessage();
        }
        $enable = (string) ini_get('ffi.enable');
        $runtime = in_array(strtolower($enable), ['1', 'on', 'true', 'yes'], true)
            || ($enable === 'preload' && PHP_SAPI === 'cli');
        if (!$runtime) {
            throw new StorageException(sprintf(
                'PHP FFI is restricted here (ffi.enable=%s, SAPI %s) and the FFI scope "%s" is not usable (%s). '
                . 'For php-fpm set ffi.enable=preload, ffi.preload to the header printed by bin/shmetrics-ffi-header, '
                . 'and opcache.preload to bindings/php/preload.php; or set ffi.enable=true. See docs/php.md.',
                $enable === '' ? '0' : $enable,
                PHP_SAPI,
                self::SCOPE,
                $scopeError
            ));
        }
        $cdef = self::readCdef();
        $errors = [];
        foreach (self::libraries() as $library) {
            try {
                return FFI::cdef($cdef, $library);
            } catch (\FFI\Exception $e) {
                $errors[] = "\"$library\": " . $e->getMessage();
            }
        }
        throw new StorageException(sprintf(
            'cannot load the shmetrics library %s with the declarations of %s. Install libshmetrics.so.%d on the '
            . 'system\'s library path, or build it with `cargo build --release -p shmetrics-ffi` and point '
            . '$SHMETRICS_LIBRARY or Shmetrics\Native::configure() at it (the header must match the library)',
            implode(', ', $errors),
            self::cdefPath(),
            self::ABI_MAJOR
        ), 0, $e);
    }

    /**
     * $ffi when its library has the major version this binding is written
     * for; else the error that names both.
     */
    private static function checkMajor(FFI $ffi): FFI
    {
        $major = $ffi->shmetrics_version_major();
        if ($major !== self::ABI_MAJOR) {
            throw new StorageException(sprintf(
                'the shmetrics library %s is version %s (major %d), but this binding is written for major %d: '
                . 'install libshmetrics.so.%4$d, or point $SHMETRICS_LIBRARY at a library of major %4$d',
                self::library(),
                $ffi->shmetrics_version(),
                $major,
                self::ABI_MAJOR
            ));
        }
        return $ffi;
    }

    private static function readCdef(): string
    {
        $path = self::cdefPath();
        $text = is_file($path) ? file_get_contents($path) : false;
        if ($text === false) {
            throw new StorageException(
                "cannot read the C declarations $path: reinstall the package (its include/shmetrics.cdef.h), "
                . 'or set $SHMETRICS_CDEF or Shmetrics\\Native::configure() to a shmetrics.cdef.h of the library'
            );
        }
        return $text;
    }
}
