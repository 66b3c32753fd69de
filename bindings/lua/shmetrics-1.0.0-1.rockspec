-- The Lua binding as a LuaRocks package: shmetrics.lua and its generated
-- declarations (shmetrics/cdef.lua, from crates/ffi/gen-header.sh). LuaJIT
-- only (it uses LuaJIT's ffi). The library, libshmetrics.so.1, is not in
-- the rock: install it on the system's library path (the .deb, or a build
-- of crates/ffi) or point $SHMETRICS_LIBRARY at it; see docs/install.md.
-- `luarocks make bindings/lua/shmetrics-1.0.0-1.rockspec` from the
-- repository's root installs this checkout's module.
rockspec_format = "3.0"
package = "shmetrics"
version = "1.0.0-1"
source = {
   url = "git+https://example.invalid/shmetrics.git",
   tag = "v1.0.0",
}
description = {
   summary = "nginx-lua-prometheus's API on a shared-memory metric store, for nginx and OpenResty",
   detailed = [[
Every nginx worker writes its metrics into one shared-memory store, without
locks and without a shared dict; a separate exporter (shmetrics serve)
serves Prometheus, so no scrape runs in a worker. Counters, gauges,
histograms and summaries with quantiles survive reloads and killed workers.
]],
   homepage = "https://example.invalid/shmetrics",
   license = "Apache-2.0",
   labels = { "prometheus", "metrics", "nginx", "openresty", "ffi" },
}
dependencies = {
   "lua == 5.1",
}
build = {
   type = "builtin",
   modules = {
      shmetrics = "bindings/lua/shmetrics.lua",
      ["shmetrics.cdef"] = "bindings/lua/shmetrics/cdef.lua",
   },
}
