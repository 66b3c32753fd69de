-- Loads shmetrics.cdef.h with ffi.cdef and uses the ABI end to end.
-- Usage: luajit smoke.lua shmetrics.cdef.h libshmetrics.so STORE_PATH
--
-- A Lua string assigned to a `const char *` field points into the string:
-- keep the string referenced while the struct is in use.
local ffi = require("ffi")
local cdef_path, lib_path, store_path = arg[1], arg[2], arg[3]
local f = assert(io.open(cdef_path)); ffi.cdef(f:read("*a")); f:close()
local C = ffi.load(lib_path)

local function check(rc, what)
  if rc ~= 0 then
    local buf, len = ffi.new("char[512]"), ffi.new("size_t[1]")
    C.shmetrics_last_error(buf, 512, len)
    error(what .. ": " .. ffi.string(C.shmetrics_strerror(rc)) .. ": " .. ffi.string(buf, len[0]))
  end
end
local function str(s) return ffi.new("shmetrics_str", s, #s) end

local st = ffi.new("shmetrics_store*[1]")
check(C.shmetrics_store_open(store_path, #store_path, nil, st), "open")
local store = st[0]
local labels = ffi.new("shmetrics_str[1]", { str("route") })
local d = ffi.new("shmetrics_family_desc")
local name, help = "lua_requests_total", "Requests."
d.name, d.help = str(name), str(help)
d.kind = C.SHMETRICS_KIND_COUNTER
d.label_names, d.label_count = labels, 1
local fam = ffi.new("shmetrics_family")
check(C.shmetrics_register(store, d, fam), "register")
local vals = ffi.new("shmetrics_str[1]", { str("/x") })
local s = ffi.new("shmetrics_series")
check(C.shmetrics_series_get(store, fam, vals, 1, s), "series_get")
local rc = C.shmetrics_counter_inc(store, s)
assert(type(rc) == "number", "results are plain numbers, got " .. type(rc))
check(rc, "inc")
for _ = 1, 100000 do C.shmetrics_counter_add(store, s, 1) end
assert(C.shmetrics_counter_add(store, s, 0/0) == C.SHMETRICS_INVALID_VALUE)
local out = ffi.new("shmetrics_buf*[1]")
check(C.shmetrics_render_alloc(store, C.SHMETRICS_FORMAT_OPENMETRICS, out), "render")
local text = ffi.string(C.shmetrics_buf_data(out[0]), C.shmetrics_buf_len(out[0]))
C.shmetrics_buf_free(out[0])
C.shmetrics_store_close(store)
local want = 'lua_requests_total{route="/x"} 100001\n'
assert(text:find(want, 1, true), "missing line in:\n" .. text)
print("luajit ok: " .. ffi.string(C.shmetrics_version()))
