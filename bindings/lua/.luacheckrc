-- luacheck's settings for the Lua binding; scripts/lua-tests.sh runs
-- `luacheck shmetrics.lua shmetrics` from bindings/lua.
-- LuaJIT's and ngx_lua's globals (ngx, jit, bit, ...) are known.
std = "ngx_lua"
max_line_length = 120
