-- Checks that the hot path compiles: runs the updates a log phase makes,
-- with LuaJIT's jit.v reporting every trace, and fails on any trace abort
-- (an NYI operation, an unstitchable C function, a blacklisted loop).
-- Run from bindings/lua, as tests/unit.lua:  luajit tests/jit.lua
package.path = "./?.lua;./tests/?.lua;" .. package.path

local H = require("helper")
local shmetrics = require("shmetrics")

local p = shmetrics.init(H.store_path("jit"))
local requests = p:counter("nginx_http_requests_total", "h", { "host", "status" })
local latency = p:histogram("nginx_http_request_duration_seconds", "h", { "host" })
local conns = p:gauge("nginx_http_connections", "h", { "state" })
local plain = p:counter("plain_total", "h")

local hosts = { "a.example", "b.example", "c.example" }
local statuses = { "200", "404", "500", "301" }
local times = { "0.001", "0.020", "0.300", "2.5" } -- ngx.var.request_time is a string

-- What a log_by_lua handler does per request; label tables are fresh per
-- call, as in real handlers.
local function request(i)
  local host = hosts[i % 3 + 1]
  requests:inc(1, { host, statuses[i % 4 + 1] })
  latency:observe(tonumber(times[i % 4 + 1]), { host })
  conns:set(i % 7, { "active" })
  plain:inc()
end

-- Warm the label caches outside the traced run: a miss takes the slow path,
-- which creates the series once.
for i = 1, 12 do request(i) end

-- Traces form while the loop warms up; aborts then are normal (a side
-- trace that meets the loop before the loop has its own trace). What must
-- hold is the steady state: a second run adds no abort, and nearly all of
-- its time is in compiled code.
local function traced(name, n)
  local log = H.tmpdir() .. "/" .. name
  require("jit.v").start(log)
  for i = 1, n do request(i) end
  require("jit.v").off()
  local text = H.read(log)
  local traces, aborts = 0, {}
  for line in text:gmatch("[^\n]+") do
    if line:find("^%[TRACE +%d+ ") then traces = traces + 1 end
    if line:find("^%[TRACE %-%-%-") then aborts[#aborts + 1] = line end
  end
  io.write("-- jit.v, ", name, ":\n", text)
  return traces, aborts
end

jit.flush()
local warm_traces = traced("warm.log", 200000)
local _, steady_aborts = traced("steady.log", 200000)

-- jit.p's VM-state mode: N native (compiled) code, I interpreter, C C
-- functions, G garbage collector, J the JIT compiler itself.
local prof = H.tmpdir() .. "/prof.txt"
require("jit.p").start("v", prof)
for i = 1, 1000000 do request(i) end
require("jit.p").stop()
local profile = H.read(prof)
io.write("-- jit.p (VM states):\n", profile)
local interpreted = tonumber(profile:match("(%d+)%%%s+Interpreted")) or 0
local compiled = tonumber(profile:match("(%d+)%%%s+Compiled")) or 0

H.test("the hot path is compiled into traces", function()
  H.truthy(warm_traces > 0, "at least one trace was recorded")
end)

H.test("no trace aborts once warm", function()
  H.eq(#steady_aborts, 0, "aborted traces (" .. table.concat(steady_aborts, "; ") .. ")")
end)

H.test("the warm hot path runs compiled, not interpreted", function()
  -- The rest is the garbage collector (the label tables a handler makes
  -- per call), whose share varies with the machine's load.
  H.truthy(compiled >= 50 and interpreted <= 5,
           "compiled " .. compiled .. "%, interpreted " .. interpreted .. "%")
end)

H.test("the traced run counted exactly", function()
  local s = H.samples(p:metric_data())
  H.eq(s["plain_total"], 1400012, "plain")
  local total = 0
  for k, v in pairs(s) do
    if k:find("^nginx_http_requests_total{") then total = total + v end
  end
  H.eq(total, 1400012, "requests")
  H.eq(s['nginx_http_request_duration_seconds_count{host="a.example"}']
       + s['nginx_http_request_duration_seconds_count{host="b.example"}']
       + s['nginx_http_request_duration_seconds_count{host="c.example"}'], 1400012, "observations")
end)

H.run(arg[1])
