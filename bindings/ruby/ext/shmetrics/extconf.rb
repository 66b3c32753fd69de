# Builds shmetrics_ext, the gem's native part: a thin C layer over
# libshmetrics's C ABI. It does not link libshmetrics: it loads it at run
# time with dlopen (see Shmetrics::Native.load in lib/shmetrics/native.rb),
# from $SHMETRICS_LIBRARY or the system's library path, so that one
# compiled gem works with any installed libshmetrics of its major version.
require "mkmf"

# The C ABI's declarations, shmetrics.h: from $SHMETRICS_INCLUDE_DIR, else
# the copy a packaged gem carries next to this file (the gemspec copies it
# in when the gem is built from the repository), else the repository's
# crates/ffi/include (a build from a checkout, `gem "shmetrics", path:`),
# else the system's include path.
here = __dir__
dirs = [ENV["SHMETRICS_INCLUDE_DIR"], here, File.expand_path("../../../../crates/ffi/include", here),
        "/usr/local/include", "/usr/include"].compact.reject(&:empty?)
dir = dirs.find { |d| File.exist?(File.join(d, "shmetrics.h")) } or
  abort "shmetrics: cannot find shmetrics.h (looked in #{dirs.join(', ')}); set $SHMETRICS_INCLUDE_DIR"
$INCFLAGS << " -I#{dir}" unless dir == here
$CFLAGS << " -std=gnu11 -O2 -Wall -Wextra -Wno-unused-parameter"
have_library("dl", "dlopen") || abort("shmetrics: dlopen is needed")
create_makefile("shmetrics/shmetrics_ext")
