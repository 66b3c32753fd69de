-- Deletion is seen by every process, and one exposed name is one family,
-- under plain LuaJIT. Run from bindings/lua (scripts/lua-tests.sh does):
--   SHMETRICS_LIBRARY=.../libshmetrics.so SHMETRICS_BIN=.../shmetrics luajit tests/cross_delete.lua [filter]
--
-- Another process (a forked child that opens the store anew, as another
-- nginx worker would) deletes with del() or reset() while this one keeps
-- incrementing through the handles it cached. Each cached handle's next
-- update finds the series deleted, looks it up again and lands in a new
-- series from zero: every round's totals are exact. Before the core saw
-- deletions, these updates went into the deleted series and vanished
-- (nginx-lua-prometheus's integration test_reset).
package.path = "./?.lua;./tests/?.lua;" .. package.path

local H = require("helper")
local shmetrics = require("shmetrics")
local test, eq = H.test, H.eq

local ROUNDS, PER_ROUND = 6, 2000

-- Runs `fn(registry)` in another process with its own open of the store.
local function elsewhere(path, fn)
  H.fork_each(1, function()
    fn(shmetrics.init(path, { log = function(msg) error("logged: " .. msg) end }))
  end)
end

test("del() and reset() in another process: cached handles lose no update", function()
  local logged = {}
  local path = H.store_path("cross")
  local p = shmetrics.init(path, { log = function(msg) logged[#logged + 1] = msg end })
  local jobs = p:counter("jobs_total", "Jobs.", { "queue" })
  local wait = p:histogram("wait_seconds", "Queue wait.", { "queue" }, { 0.1, 1 })
  local ticks = p:counter("ticks_total", "No labels.")
  for round = 1, ROUNDS do
    for _ = 1, PER_ROUND do
      jobs:inc(1, { "email" })
      wait:observe(0.5, { "email" })
      ticks:inc()
    end
    local s = H.samples(H.dump(path))
    eq(s['jobs_total{queue="email"}'], PER_ROUND, "round " .. round .. ": jobs")
    eq(s['wait_seconds_count{queue="email"}'], PER_ROUND, "round " .. round .. ": wait count")
    eq(s['wait_seconds_bucket{queue="email",le="1"}'], PER_ROUND, "round " .. round .. ": le 1")
    eq(s["ticks_total"], PER_ROUND, "round " .. round .. ": ticks")
    elsewhere(path, function(other)
      local j = other:counter("jobs_total", "Jobs.", { "queue" })
      local w = other:histogram("wait_seconds", "Queue wait.", { "queue" }, { 0.1, 1 })
      local t = other:counter("ticks_total", "No labels.")
      if round % 2 == 1 then
        j:del({ "email" })
        w:del({ "email" })
      else
        j:reset()
        w:reset()
      end
      t:reset()
    end)
    s = H.samples(H.dump(path))
    eq(s['jobs_total{queue="email"}'], nil, "round " .. round .. ": deleted")
    eq(s["ticks_total"], nil, "round " .. round .. ": reset")
  end
  eq(#logged, 0, "nothing logged: " .. table.concat(logged, "; "))
end)

test("a name another family exposes is refused, across types", function()
  local p = shmetrics.init(H.store_path("names"), { log = function() end })
  p:counter("x", "A counter.")
  H.raises(function() p:gauge("x_total", "A gauge.") end, 'the counter "x" already exposes')
  p:histogram("lat_seconds", "A histogram.", nil, { 0.1 })
  H.raises(function() p:gauge("lat_seconds_bucket", "A gauge.") end, 'histogram "lat_seconds"')
  H.raises(function() p:summary("lat_seconds_count", "A summary.") end, '"lat_seconds_count"')
  -- Near names are fine.
  p:gauge("x_totals", "A gauge.")
  p:gauge("lat_seconds_buckets", "A gauge.")
end)

H.run(arg[1])
