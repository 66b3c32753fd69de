-- Unit tests of the Lua binding under plain LuaJIT. Run from bindings/lua:
--   SHMETRICS_LIBRARY=.../libshmetrics.so SHMETRICS_BIN=.../shmetrics luajit tests/unit.lua [filter]
-- The exemplar tests read OpenMetrics with prometheus_client's parser:
-- $SHMETRICS_PYTHON (else python3) must import it.
package.path = "./?.lua;./tests/?.lua;" .. package.path

local ffi = require("ffi")
local H = require("helper")
local shmetrics = require("shmetrics")
local test, eq, contains = H.test, H.eq, H.contains

-- A registry on a fresh small store whose errors are collected in a list.
local function fresh(opts)
  opts = opts or {}
  local logged = {}
  opts.log = function(msg) logged[#logged + 1] = msg end
  local path = H.store_path()
  local p = shmetrics.init(path, opts)
  return p, path, logged
end

-- The first lua block of the section `title` of docs/lua.md.
local function doc_block(title)
  local doc = H.read("../../docs/lua.md")
  local block = doc:match("\n## " .. title .. "\n.-```lua\n(.-)```")
  H.truthy(block, "the ## " .. title .. " section has a lua block")
  return block
end

-- Runs Lua source `code` with the names of `env` before the globals, as
-- pcall does: ok, or false and the error.
local function run_in(env, code)
  setmetatable(env, { __index = _G })
  return pcall(setfenv(assert(loadstring(code, "docs/lua.md")), env))
end

test("init creates the store 0600 by default, 0660 on request", function()
  local _, path = fresh()
  eq(H.sh("stat -c %a " .. path), "600\n", "mode")
  local _, path2 = fresh({ mode = "0660" })
  eq(H.sh("stat -c %a " .. path2), "660\n", "mode")
  H.raises(function() shmetrics.init(H.store_path(), { mode = "rw" }) end, "not an octal number")
end)

test("init's errors name the path and the cause", function()
  H.raises(function() shmetrics.init(nil) end, "path must be")
  H.raises(function() shmetrics.init("") end, "path must be")
  H.raises(function() shmetrics.init("/x", 5) end, "options must be a table or a prefix")
  H.raises(function() shmetrics.init(H.tmpdir() .. "/no/such/dir/s.shm") end, "no/such/dir")
  H.raises(function() shmetrics.init(H.tmpdir() .. "/absent.shm", { create = false }) end, "absent.shm")
end)

test("arguments of the wrong type raise the binding's error, not a conversion error", function()
  local p = fresh()
  local cases = {
    { function() p:counter("c1", {}, {}) end, "c1: help must be a string" },
    { function() p:counter("c2", "h", { "a", {} }) end, "label names must be a table of strings, item 2" },
    { function() p:histogram("h1", "h", {}, { 1, "2" }) end, "buckets must be a table of numbers" },
    { function() p:summary("s1", "h", {}, { quantiles = { {} } }) end, "quantiles must be a table of numbers" },
    { function() p:summary("s2", "h", {}, { max_age = 1e300 }) end, "max_age must be a positive number" },
    { function() p:summary("s3", "h", {}, { age_buckets = -1 }) end, "age_buckets must be a whole number" },
    { function() shmetrics.init(H.store_path(), { prefix = {} }) end, "option prefix must be a string" },
    { function() shmetrics.init(H.store_path(), { log = "x" }) end, "option log must be a function" },
    { function() shmetrics.init(H.store_path(), { mode = print }) end, "option mode must be a whole number" },
    { function() shmetrics.strerror("12") end, "code must be a whole number" },
  }
  for _, c in ipairs(cases) do
    local err = H.raises(c[1], c[2])
    contains(err, "shmetrics: ")
  end
end)

test("store capacities are whole numbers the option holds, never wrapped or truncated", function()
  local cases = {
    { "max_series", -1, "from 0 to 4294967295, got -1" },
    { "max_series", 2 ^ 32 + 64, "got 4294967360" },
    { "max_writers", 1.5, "got 1.5" },
    { "max_families", "8", "got 8" },
    { "label_bytes", -4096, "from 0 to 2^64 - 1, got -4096" },
    { "cells_per_writer", 0 / 0, "got nan" },
    { "sketch_cells_per_writer", math.huge, "got inf" },
  }
  for _, c in ipairs(cases) do
    local path = H.store_path("capacity")
    local err = H.raises(function() shmetrics.init(path, { [c[1]] = c[2] }) end, c[3])
    contains(err, "option " .. c[1])
    eq(io.open(path), nil, c[1] .. ": no store was made")
  end
  -- Whole numbers in range are taken as they are.
  local p = fresh({ max_series = 64, max_families = 8, label_bytes = 4096, max_writers = 2 })
  eq(p:stats().series_capacity, 64, "series capacity")
end)

test("foreign, empty, truncated, other-version and corrupt files are refused and left alone", function()
  local foreign = H.store_path("foreign")
  local junk = string.rep("not a store ", 1000)
  H.write(foreign, junk)
  H.raises(function() shmetrics.init(foreign) end, "not a shmetrics store")
  eq(H.read(foreign), junk, "the foreign file's content")
  local empty = H.store_path("empty")
  H.write(empty, "")
  H.raises(function() shmetrics.init(empty) end, "empty")

  local _, good = fresh({ max_series = 64, max_families = 8, label_bytes = 4096, max_writers = 2 })
  local bytes = H.read(good)
  local bad = H.store_path("bad")
  H.write(bad, bytes:sub(1, #bytes / 2))
  H.raises(function() shmetrics.init(bad) end, "truncated")
  -- The layout version is the u32 after the 8-byte magic.
  H.write(bad, bytes:sub(1, 8) .. string.char(99, 0, 0, 0) .. bytes:sub(13))
  H.raises(function() shmetrics.init(bad) end, "99")
  -- A byte inside the checksummed fixed part.
  H.write(bad, bytes:sub(1, 40) .. string.char(bit.bxor(bytes:byte(41), 0xFF)) .. bytes:sub(42))
  H.raises(function() shmetrics.init(bad) end, "corrupt")
end)

test("counter: inc, labels, numbers as label values, the name kept as given", function()
  local p, path = fresh()
  local c = p:counter("nginx_http_requests_total", "Number of HTTP requests", { "host", "status" })
  c:inc(1, { "example.com", "200" })
  c:inc(nil, { "example.com", "200" })
  c:inc(2.5, { "example.com", 404 })
  c:inc("3", { "example.com", 404 }) -- ngx.var values are strings
  local plain = p:counter("plain", "no labels")
  plain:inc()
  plain:inc(4)
  local s = H.samples(H.dump(path))
  eq(s['nginx_http_requests_total{host="example.com",status="200"}'], 2, "200")
  eq(s['nginx_http_requests_total{host="example.com",status="404"}'], 5.5, "404")
  eq(s["plain"], 5, "plain, without _total as in nginx-lua-prometheus")
  eq(s["plain_total"], nil, "no plain_total")
  eq(s["nginx_metric_errors_total"], 0, "errors")
  local text = H.dump(path)
  contains(text, "# HELP nginx_http_requests_total Number of HTTP requests\n")
  contains(text, "# TYPE plain counter\nplain 5\n")
  -- OpenMetrics names a counter's samples name_total, as it must.
  local om = H.dump(path, "openmetrics")
  contains(om, "# TYPE plain counter\n")
  contains(om, "\nplain_total 5\n")
  contains(om, '\nnginx_http_requests_total{host="example.com",status="200"} 2\n')
  -- Another registration of the same counter shares it.
  p:counter("plain", "no labels"):inc()
  eq(H.samples(H.dump(path))["plain"], 6, "shared")
end)

test("bad updates are counted and logged, never raised", function()
  local p, path, logged = fresh()
  local c = p:counter("reqs_total", "h", { "route" })
  local g = p:gauge("temp", "h", { "room" })
  local h = p:histogram("lat", "h", { "route" })
  c:inc(-1, { "/" })          -- 1: negative
  c:inc(0 / 0, { "/" })       -- 2: NaN
  c:inc("many", { "/" })      -- 3: not a number
  c:inc(1, {})                -- 4: too few values
  c:inc(1, { "/", "x" })      -- 5: too many
  c:inc(1)                    -- 6: none
  c:inc(1, "/")               -- 7: not a table
  c:inc(1, { {} })            -- 8: a table as a value
  c:inc(1, 5)                 -- 9: a number as the label table
  p:counter("nolabels_total", "h"):inc(1, 7) -- 10: the same, no labels
  g:set(0 / 0, { "a" })       -- 11: NaN
  g:set(nil, { "a" })         -- 12: no value
  h:observe(0 / 0, { "/" })   -- 13: NaN
  h:observe("x", { "/" })     -- 14
  c:inc(1, { "/" })           -- fine
  local s = H.samples(H.dump(path))
  eq(s["nginx_metric_errors_total"], 14, "errors counted")
  eq(#logged, 14, "errors logged")
  eq(s['reqs_total{route="/"}'], 1, "the good increment")
  contains(logged[1], "reqs_total")
  contains(logged[1], "only goes up; got -1")
  contains(logged[4], "expected 1 label values (route), got 0")
  contains(logged[5], "got 2")
  contains(logged[7], "must be a table")
  contains(logged[8], "table, not a string")
  contains(logged[9], "must be a table, got number")
  contains(logged[10], "must be a table, got number")
end)

test("gauge: set, inc, dec; shared by every process by default", function()
  local p, path = fresh()
  local g = p:gauge("nginx_http_connections", "Number of HTTP connections", { "state" })
  g:set(7, { "reading" })
  g:set("9", { "writing" })
  g:inc(2, { "reading" })
  g:dec(nil, { "reading" })
  g:inc(-0.5, { "reading" })
  H.fork_each(2, function(i) g:set(100 + i, { "waiting" }) end)
  local s = H.samples(H.dump(path))
  eq(s['nginx_http_connections{state="reading"}'], 7.5, "reading")
  eq(s['nginx_http_connections{state="writing"}'], 9, "writing")
  local w = s['nginx_http_connections{state="waiting"}']
  H.truthy(w == 101 or w == 102, "one shared value, the last set: " .. tostring(w))
  local live = p:gauge("inflight", "h", nil, { mode = "livesum" })
  live:inc(3)
  eq(H.samples(H.dump(path))["inflight"], 3, "livesum")
  H.raises(function() p:gauge("g2", "h", nil, { mode = "sideways" }) end, "unknown gauge mode")
end)

test("histogram: nginx-lua-prometheus's default buckets, custom buckets, exact counts", function()
  local p, path = fresh()
  local h = p:histogram("nginx_http_request_duration_seconds", "HTTP request latency", { "host" })
  for _, v in ipairs({ 0.001, 0.004, 0.05, 0.3, 12 }) do h:observe(v, { "a" }) end
  h:observe("0.2", { "a" })
  local s = H.samples(H.dump(path))
  local b = 'nginx_http_request_duration_seconds_bucket{host="a",le="%s"}'
  eq(s[b:format("0.005")], 2, "le 0.005")
  eq(s[b:format("0.05")], 3, "le 0.05")
  eq(s[b:format("0.2")], 4, "le 0.2")
  -- Integer bounds as nginx-lua-prometheus writes them: le="10", not "10.0".
  eq(s[b:format("10")], 5, "le 10")
  eq(s[b:format("+Inf")], 6, "+Inf")
  eq(s['nginx_http_request_duration_seconds_count{host="a"}'], 6, "count")
  local n = 0
  for k in pairs(s) do if k:find("_bucket{", 1, true) then n = n + 1 end end
  eq(n, #shmetrics.DEFAULT_BUCKETS + 1, "bucket lines")
  local c = p:histogram("sizes", "h", nil, { 10, 100 })
  c:observe(50)
  c:observe(500)
  s = H.samples(H.dump(path))
  eq(s['sizes_bucket{le="100"}'], 1, "custom le 100")
  eq(s['sizes_bucket{le="+Inf"}'], 2, "custom +Inf")
  eq(s["sizes_sum"], 550, "sum")
end)

test("histogram: native buckets, native only or with classic buckets, from several workers", function()
  local p, path, logged = fresh()
  local function define()
    return p:histogram("rpc_seconds", "RPC latency", { "route" }, nil,
                       { native = { bucket_factor = 2, zero_threshold = 0.5 } }),
           p:histogram("job_seconds", "Job duration", nil, { 1, 10 }, { native = { max_bucket_number = 0 } })
  end
  local values = { 0, 0.25, 0.75, 3, 3.5, 100, -3 }
  local function observe_all()
    local rpc, job = define() -- the same definitions: the same families
    for _, v in ipairs(values) do
      rpc:observe(v, { "/a" })
      job:observe(v)
    end
  end
  observe_all()
  H.fork_each(2, observe_all)
  local n, sum = 3 * #values, 3 * (0.25 + 0.75 + 3 + 3.5 + 100 - 3)
  local text = H.dump(path)
  local s = H.samples(text)
  -- The text formats carry the classic part: only +Inf for native only.
  eq(s['rpc_seconds_bucket{route="/a",le="+Inf"}'], n, "native only +Inf")
  eq(s['rpc_seconds_count{route="/a"}'], n, "native only count")
  eq(s['rpc_seconds_sum{route="/a"}'], sum, "native only sum")
  local buckets = 0
  for k in pairs(s) do if k:find("^rpc_seconds_bucket") then buckets = buckets + 1 end end
  eq(buckets, 1, "native only: no classic bucket lines")
  eq(s['job_seconds_bucket{le="1"}'], 12, "both: le 1")
  eq(s['job_seconds_bucket{le="10"}'], 18, "both: le 10")
  eq(s["job_seconds_count"], n, "both: count")
  eq(s["job_seconds_sum"], sum, "both: sum")
  -- The protobuf exposition (native buckets) has both families; the
  -- Python and PHP tests decode it.
  local pb = H.dump(path, "protobuf")
  contains(pb, "rpc_seconds", "protobuf")
  contains(pb, "job_seconds", "protobuf")
  eq(#logged, 0, "nothing logged")
  -- {} takes the defaults, and still means native only.
  local d = p:histogram("d_seconds", "h", nil, nil, { native = {} })
  d:observe(1.5)
  s = H.samples(H.dump(path))
  eq(s['d_seconds_bucket{le="+Inf"}'], 1, "defaults: +Inf")
  eq(s['d_seconds_bucket{le="0.005"}'], nil, "defaults: no classic buckets")
end)

test("histogram: native option errors raise with the reason; a number is exptime", function()
  local p, path, logged = fresh()
  H.raises(function() p:histogram("n1", "h", nil, nil, { native = { bucket_factor = 1 } }) end, "bucket factor")
  H.raises(function() p:histogram("n2", "h", nil, nil, { native = { bucket_factor = 0.5 } }) end, "bucket factor")
  H.raises(function() p:histogram("n3", "h", nil, nil, { native = { zero_threshold = -1 } }) end, "zero threshold")
  H.raises(function() p:histogram("n4", "h", nil, nil, { native = { factor = 1.1 } }) end, "'factor'")
  H.raises(function() p:histogram("n5", "h", nil, nil, { native = { bucket_factor = "1.1" } }) end, "must be a number")
  H.raises(function() p:histogram("n6", "h", nil, nil, { native = { max_bucket_number = -1 } }) end, "max_bucket_number")
  H.raises(function() p:histogram("n7", "h", nil, nil, { native = 1.1 }) end, "must be a table")
  H.raises(function() p:histogram("n8", "h", nil, nil, { nativ = {} }) end, "'nativ'")
  p:histogram("c_seconds", "h", nil, { 1 })
  H.raises(function() p:histogram("c_seconds", "h", nil, { 1 }, { native = { bucket_factor = 1.1 } }) end, "c_seconds")
  -- nginx-lua-prometheus's 5th argument, exptime: the series TTL.
  local before = #logged
  local h = p:histogram("exp_seconds", "h", nil, { 1 }, 60)
  h:observe(0.5)
  eq(#logged, before, "nothing logged")
  eq(H.samples(H.dump(path))['exp_seconds_bucket{le="1"}'], 1, "classic histogram with exptime")
  H.raises(function() p:histogram("exp_seconds", "h", nil, { 1 }) end, "exp_seconds")
end)

test("summary: count, sum and quantiles over the window, merged", function()
  local p, path = fresh()
  local sm = p:summary("rt_seconds", "RT", { "route" }, { quantiles = { 0.5, 0.99 }, max_age = 300, age_buckets = 3 })
  for i = 1, 100 do sm:observe(i / 100, { "/" }) end
  local plain = p:summary("size_bytes", "sizes")
  plain:observe(3)
  local s = H.samples(H.dump(path))
  eq(s['rt_seconds_count{route="/"}'], 100, "count")
  local near = function(got, want, what)
    assert(math.abs(got - want) <= want * 0.0099, what .. ": " .. tostring(got) .. " vs " .. want)
  end
  -- Nearest ranks ceil(q * 100) of 0.01 .. 1.00 (100 observations: the
  -- sketch's estimates, past the 16 a period keeps exactly).
  near(s['rt_seconds{route="/",quantile="0.5"}'], 0.50, "median")
  near(s['rt_seconds{route="/",quantile="0.99"}'], 0.99, "p99")
  eq(s["size_bytes_count"], 1, "plain count")
  eq(s["size_bytes_sum"], 3, "plain sum")
  H.raises(function() p:summary("s1", "h", nil, { quantiles = { 1.5 } }) end, "s1")
  H.raises(function() p:summary("s2", "h", nil, { max_age = "long" }) end, "max_age")
  H.raises(function() p:summary("s3", "h", nil, "opts") end, "must be a table")
end)

test("exemplars: the latest per counter series and histogram bucket, from several workers", function()
  local p, path, logged = fresh()
  local function define()
    return p:counter("jobs_total", "Jobs", { "queue" }, { exemplars = true }),
           p:histogram("job_seconds", "Job duration", nil, { 0.1, 1 }, { exemplars = true })
  end
  local c, h = define()
  local t0 = os.time()
  c:inc(1, { "email" }, { trace_id = "parent" })
  c:inc(3, { "sms" }, { trace_id = "sms-1", span_id = 7 })
  c:inc(nil, { "sms" }) -- without an exemplar: the last one stays
  h:observe(0.05, nil, { trace_id = "parent-low" })
  h:observe("0.7", nil, { trace_id = "parent-mid" })
  h:observe(0.2)
  H.fork_each(1, function()
    local c2, h2 = define() -- another worker: the same families
    c2:inc(2, { "email" }, { trace_id = "child" })
    h2:observe(0.5, nil, { trace_id = "child-mid" })
  end)
  local om = H.dump(path, "openmetrics")
  local ex = H.exemplars(om)
  -- The other worker wrote last: its exemplars win where both wrote.
  local e = ex['jobs_total{queue="email"}']
  eq(e.labels.trace_id, "child", "email exemplar")
  eq(e.value, 2, "email exemplar value")
  e = ex['jobs_total{queue="sms"}']
  eq(e.labels.trace_id, "sms-1", "sms trace_id")
  eq(e.labels.span_id, "7", "a number as a value")
  eq(e.value, 3, "sms exemplar value")
  -- A Lua table has no order: the labels are sorted by name.
  contains(om, 'jobs_total{queue="sms"} 4 # {span_id="7",trace_id="sms-1"} 3 ')
  eq(ex['job_seconds_bucket{le="0.1"}'].labels.trace_id, "parent-low", "le 0.1")
  eq(ex['job_seconds_bucket{le="0.1"}'].value, 0.05, "le 0.1 value")
  eq(ex['job_seconds_bucket{le="1"}'].labels.trace_id, "child-mid", "le 1")
  eq(ex['job_seconds_bucket{le="+Inf"}'], nil, "no exemplar in +Inf")
  local n = 0
  for _, x in pairs(ex) do
    n = n + 1
    H.truthy(x.timestamp >= t0 - 1 and x.timestamp <= os.time() + 1, "timestamp " .. x.timestamp)
  end
  eq(n, 4, "exemplars")
  -- Every update counted; the text format 0.0.4 has no exemplars.
  local text = H.dump(path)
  H.not_contains(text, " # ")
  local s = H.samples(text)
  eq(s['jobs_total{queue="email"}'], 3, "email")
  eq(s['jobs_total{queue="sms"}'], 4, "sms")
  eq(s["job_seconds_count"], 4, "observations")
  eq(#logged, 0, "nothing logged: " .. table.concat(logged, "; "))
end)

test("a refused exemplar is counted and logged, and refuses the update", function()
  local p, path, logged = fresh()
  local c = p:counter("ex_total", "h", nil, { exemplars = true })
  local h = p:histogram("ex_seconds", "h", nil, { 1 }, { exemplars = true })
  local bad = {
    -- Exemplar label names follow the store's UTF-8 rule
    -- (nginx-lua-prometheus has no exemplars): "trace-id" is taken.
    { { [""] = "x" }, "empty" },
    { { __x = "y" }, "__x" },
    { { trace_id = string.rep("x", 121) }, "128" },
    { { "abc" }, "label names must be strings, got a number" },
    { { trace_id = {} }, "exemplar label trace_id is a table" },
    { "abc", "must be a table of label names to values, got string" },
  }
  for _, b in ipairs(bad) do
    local before = #logged
    c:inc(1, nil, b[1])
    h:observe(0.5, nil, b[1])
    eq(#logged, before + 2, "errors logged for " .. b[2])
    contains(logged[before + 1], b[2])
    contains(logged[before + 2], b[2])
  end
  local nbad = #logged
  c:inc(-1, nil, { trace_id = "negative" })
  h:observe(0 / 0, nil, { trace_id = "nan" })
  h:observe("x", nil, { trace_id = "not a number" })
  local plain = p:counter("plain_total", "h")
  plain:inc(1, nil, { trace_id = "x" })
  contains(logged[#logged], "exemplars = true")
  p:histogram("plain_seconds", "h", nil, { 1 }):observe(1, nil, { trace_id = "x" })
  contains(logged[#logged], "exemplars = true")
  p:summary("sm_seconds", "h"):observe(1, nil, { trace_id = "x" }) -- summaries keep none
  eq(#logged, nbad + 6, "every refusal logged")
  -- 8 + 120 characters: at the limit; {} is an exemplar without labels.
  c:inc(1, nil, { trace_id = string.rep("x", 120) })
  h:observe(2, nil, {})
  local s = H.samples(H.dump(path))
  eq(s["nginx_metric_errors_total"], nbad + 6, "errors counted")
  eq(s["ex_total"], 1, "only the accepted increment")
  eq(s["ex_seconds_count"], 1, "only the accepted observation")
  eq(s["plain_total"], 0, "a counter without exemplars counted nothing")
  eq(s["sm_seconds_count"], 0, "the summary counted nothing")
  local ex = H.exemplars(H.dump(path, "openmetrics"))
  eq(ex["ex_total"].labels.trace_id, string.rep("x", 120), "at the limit")
  eq(next(ex['ex_seconds_bucket{le="+Inf"}'].labels), nil, "no labels")
end)

test("exemplars are opt-in, part of the definition, refused where they do not apply", function()
  local p, path, logged = fresh()
  H.raises(function() p:counter("e1_total", "h", nil, { exemplars = "yes" }) end, "must be true or false")
  H.raises(function() p:counter("e2_total", "h", nil, { exemplar = true }) end, "unknown counter option 'exemplar'")
  H.raises(function() p:histogram("e3", "h", nil, nil, { exemplar = true }) end, "unknown histogram option")
  H.raises(function() p:gauge("e4", "h", nil, { exemplars = true }) end, "exemplars")
  H.raises(function() p:gauge("e5", "h", nil, { mode = "max", exemplars = true }) end, "exemplars")
  H.raises(function() p:summary("e6", "h", nil, { exemplars = true }) end, "exemplars")
  H.raises(function() p:histogram("e7", "h", nil, nil, { native = {}, exemplars = true }) end, "classic")
  p:counter("same_total", "h", nil, { exemplars = true })
  H.raises(function() p:counter("same_total", "h") end, "same_total")
  p:counter("same_total", "h", nil, { exemplars = true }):inc(1, nil, { trace_id = "a" })
  p:counter("off_total", "h", nil, { exemplars = false }):inc()
  -- A number is nginx-lua-prometheus's exptime, the series TTL.
  local before = #logged
  p:counter("exp_total", "h", nil, 60):inc()
  eq(#logged, before, "nothing logged")
  local s = H.samples(H.dump(path))
  eq(s["same_total"], 1, "same")
  eq(s["off_total"], 1, "off")
  eq(s["exp_total"], 1, "exptime")
end)

test("updates with exemplars survive a wipe of the store by another handle", function()
  local p, path, logged = fresh()
  local c = p:counter("w_total", "h", { "x" }, { exemplars = true })
  c:inc(1, { "a" }, { trace_id = "before" })
  local C = ffi.load(os.getenv("SHMETRICS_LIBRARY"))
  local st = ffi.new("shmetrics_store*[1]")
  eq(C.shmetrics_store_open(path, #path, nil, st), 0, "open")
  eq(C.shmetrics_store_wipe(st[0]), 0, "wipe")
  C.shmetrics_store_close(st[0])
  c:inc(2, { "a" }, { trace_id = "after" })
  eq(H.exemplars(H.dump(path, "openmetrics"))['w_total{x="a"}'].labels.trace_id, "after", "exemplar")
  eq(H.samples(H.dump(path))['w_total{x="a"}'], 2, "recorded after the wipe")
  eq(#logged, 0, "no error: " .. table.concat(logged, "; "))
end)

test("docs/lua.md's exemplar example runs as written", function()
  local block = doc_block("Exemplars")
  local p, path, logged = fresh()
  local saved = ngx
  local trace_id = "4bf92f3577b34da6"
  ngx = {
    var = { uri = "/a", http_x_trace_id = trace_id },
    status = 200,
    now = function() return 100.25 end,
    req = { start_time = function() return 100 end },
  }
  local env = { prometheus = p }
  local ok, err = run_in(env, block)
  ngx.var.http_x_trace_id = nil -- an untraced request: no exemplar
  if ok then ok, err = run_in(env, block:match("\n%-%- log_by_lua_block\n(.*)$")) end
  ngx = saved
  H.truthy(ok, tostring(err))
  local ex = H.exemplars(H.dump(path, "openmetrics"))
  local e = ex['nginx_http_requests_total{route="/a",status="200"}']
  eq(e.labels.trace_id, trace_id, "counter exemplar")
  eq(e.value, 1, "counter exemplar value")
  e = ex['nginx_http_request_duration_seconds_bucket{route="/a",le="0.3"}']
  eq(e.labels.trace_id, trace_id, "bucket exemplar")
  eq(e.value, 0.25, "bucket exemplar value")
  local s = H.samples(H.dump(path))
  eq(s['nginx_http_requests_total{route="/a",status="200"}'], 2, "both requests counted")
  eq(#logged, 0, "nothing logged: " .. table.concat(logged, "; "))
end)

test("docs/lua.md's series TTL example runs as written", function()
  local block = doc_block("Series TTL")
  local p, path, logged = fresh()
  local saved = ngx
  ngx = { var = { upstream_addr = "10.0.0.1:80", upstream_response_time = "0.25" } }
  local ok, err = run_in({ prometheus = p }, block)
  ngx = saved
  H.truthy(ok, tostring(err))
  local s = H.samples(H.dump(path))
  eq(s['nginx_upstream_requests_total{upstream="10.0.0.1:80"}'], 1, "counter")
  eq(s['nginx_upstream_seconds_sum{upstream="10.0.0.1:80"}'], 0.25, "histogram")
  eq(#logged, 0, "nothing logged: " .. table.concat(logged, "; "))
  -- Both have the TTL of the example: the same names without one conflict.
  H.raises(function() p:counter("nginx_upstream_requests_total", "Requests per upstream", { "upstream" }) end,
           "nginx_upstream_requests_total")
  H.raises(function() p:histogram("nginx_upstream_seconds", "Upstream latency", { "upstream" }) end,
           "nginx_upstream_seconds")
  p:counter("nginx_upstream_requests_total", "Requests per upstream", { "upstream" }, { ttl = 3600 })
end)

test("registration errors raise with the reason", function()
  local p = fresh()
  H.raises(function() p:counter("bad-name", "h") end, "bad-name")
  H.raises(function() p:counter("ok", "h", { "bad label" }) end, "bad label")
  H.raises(function() p:histogram("h1", "h", nil, { 2, 1 }) end, "h1")
  p:counter("taken", "h")
  H.raises(function() p:gauge("taken", "h") end, "taken")
  H.raises(function() p:counter(42) end, "must be a string")
  -- The same definition again is the same metric (another worker, a reload).
  local a = p:counter("same_total", "h", { "x" })
  local b = p:counter("same_total", "h", { "x" })
  a:inc(1, { "v" })
  b:inc(1, { "v" })
  eq(H.samples(p:metric_data())['same_total{x="v"}'], 2, "shared family")
end)

test("del and reset delete series; the next update starts from zero", function()
  local p, path = fresh()
  local c = p:counter("hits_total", "h", { "k" })
  c:inc(5, { "a" })
  c:inc(6, { "b" })
  c:del({ "a" })
  local s = H.samples(H.dump(path))
  eq(s['hits_total{k="a"}'], nil, "deleted")
  eq(s['hits_total{k="b"}'], 6, "kept")
  c:inc(1, { "a" })
  eq(H.samples(H.dump(path))['hits_total{k="a"}'], 1, "recreated from zero")
  c:reset()
  s = H.samples(H.dump(path))
  eq(s['hits_total{k="a"}'], nil, "reset a")
  eq(s['hits_total{k="b"}'], nil, "reset b")
  c:inc(2, { "b" })
  eq(H.samples(H.dump(path))['hits_total{k="b"}'], 2, "after reset")
end)

test("prefix and error_metric_name options; the prefix applies to the error counter", function()
  local p, path = fresh({ prefix = "edge_", error_metric_name = "errors_total" })
  local c = p:counter("reqs_total", "h")
  c:inc(2)
  c:inc(1, { "unexpected" })
  local s = H.samples(H.dump(path))
  eq(s["edge_reqs_total"], 2, "prefixed")
  eq(s["edge_errors_total"], 1, "custom error counter, prefixed")
  eq(s["errors_total"], nil, "no unprefixed error counter")
  local q, path2 = fresh({ prefix = "edge_" })
  q:gauge("g", "h"):set(nil)
  s = H.samples(H.dump(path2))
  eq(s["edge_nginx_metric_errors_total"], 1, "default error counter, prefixed")
  eq(s["nginx_metric_errors_total"], nil, "no unprefixed default error counter")
end)

test("init(path, prefix): a string in place of the options is the legacy prefix", function()
  local path = H.store_path()
  local p = shmetrics.init(path, "legacy_")
  p:counter("reqs_total", "h"):inc(2)
  local s = H.samples(H.dump(path))
  eq(s["legacy_reqs_total"], 2, "prefixed metric")
  eq(s["legacy_nginx_metric_errors_total"], 0, "prefixed error counter")
end)

test("init(dict_name): a shared dict's name is refused with what to pass instead", function()
  local err = H.raises(function() shmetrics.init("prometheus_metrics") end,
                       "init takes the store file's path now, not the name of a lua_shared_dict")
  contains(err, 'init("prometheus_metrics")')
  contains(err, "/dev/shm/")
  H.raises(function() shmetrics.init("prometheus_metrics", { prefix = "x_" }) end, "lua_shared_dict")
  -- Nothing was created in the working directory.
  eq(io.open("prometheus_metrics", "rb"), nil, "no file named after the dict")
end)

test("init_worker() is accepted and changes nothing", function()
  local p, path = fresh()
  local c = p:counter("w_total", "h")
  eq(p:init_worker(), nil, "init_worker()")
  eq(p:init_worker(0.1), nil, "init_worker(sync_interval)")
  c:inc()
  -- Kong's fork takes a boolean (local_storage) as a gauge's 4th argument.
  p:gauge("local_gauge", "h", nil, true):set(3)
  eq(H.samples(H.dump(path))["local_gauge"], 3, "a gauge with a boolean 4th argument")
  eq(H.samples(H.dump(path))["w_total"], 1, "updates after init_worker")
  eq(H.samples(H.dump(path))["nginx_metric_errors_total"], 0, "no error")
end)

test("a new store holds at least 250,000 series by default", function()
  local p = fresh()
  local st = p:stats()
  H.truthy(st.series_capacity >= 250000, "series capacity " .. st.series_capacity)
  H.truthy(st.label_bytes_capacity >= 64 * 1024 * 1024, "label bytes " .. st.label_bytes_capacity)
  local q = fresh({ max_series = 1000 })
  eq(q:stats().series_capacity, 1000, "max_series still sets it")
end)

test("metric_data returns the exposition as an array of lines, as nginx-lua-prometheus", function()
  local p = fresh()
  p:counter("a_total", "h", { "k" }):inc(1, { "x" })
  p:gauge("g", "gauge help"):set(3)
  local lines = p:metric_data()
  eq(type(lines), "table", "an array")
  for i, line in ipairs(lines) do
    eq(line:sub(-1), "\n", "line " .. i .. " ends in a newline")
    eq(line:find("\n", 1, true), #line, "line " .. i .. " is one line")
  end
  local text = table.concat(lines)
  eq(text, H.dump(p.path), "table.concat of the lines is the page")
  contains(text, 'a_total{k="x"} 1\n')
  contains(text, "# HELP g gauge help\n")
  local om = table.concat(p:metric_data("openmetrics"))
  contains(om, "# TYPE a counter\n")
  eq(om:sub(-6), "# EOF\n", "OpenMetrics ends with # EOF")
  H.raises(function() p:metric_data("xml") end, "unknown format")
  -- Kong's fork passes a write function.
  local written = {}
  eq(p:metric_data(function(s) written[#written + 1] = s end), nil, "nothing returned")
  eq(#written, 1, "one write")
  eq(written[1], text, "the page written")
end)

test("a label value that is not UTF-8 is cut at its first invalid byte, and counted", function()
  local p, path, logged = fresh()
  local c = p:counter("uri_total", "h", { "uri", "status" })
  c:inc(1, { "/caf\xC3\xA9/\xFFrest", "200" })   -- é is valid, \xFF is not
  c:inc(1, { "/caf\xC3\xA9/\xFFrest", "200" })   -- not cached: counted again
  c:inc(1, { "/caf\xC3\xA9/", "200" })            -- the cut value itself
  c:inc(1, { "/a\xE2\x82", 404 })                -- a sequence cut short
  c:inc(1, { "\xED\xA0\x80x", "500" })           -- a surrogate: cut to ""
  c:inc(1, { "ok\xF4\x90\x80\x80", "500" })      -- above U+10FFFF
  local s = H.samples(H.dump(path))
  eq(s['uri_total{uri="/caf\xC3\xA9/",status="200"}'], 3, "cut series")
  eq(s['uri_total{uri="/a",status="404"}'], 1, "cut short sequence")
  eq(s['uri_total{uri="",status="500"}'], 1, "surrogate")
  eq(s['uri_total{uri="ok",status="500"}'], 1, "above U+10FFFF")
  eq(s["nginx_metric_errors_total"], 5, "each cut counted")
  eq(#logged, 5, "each cut logged")
  contains(logged[1], "label value 1 is not valid UTF-8")
  local g = p:gauge("g", "h", { "v" })
  g:set(4, { "\x80" })
  eq(H.samples(H.dump(path))['g{v=""}'], 4, "a gauge too")
  g:del({ "\x80" })
  eq(H.samples(H.dump(path))['g{v=""}'], nil, "del cuts the same way")
  c:inc(1, { "\xF0\x9F\x98\x80", "200" })        -- valid 4-byte UTF-8 stays whole
  eq(H.samples(H.dump(path))['uri_total{uri="\xF0\x9F\x98\x80",status="200"}'], 1, "emoji")
end)

test("a refused update (NaN, negative increment, nil, no number) creates no series", function()
  local p, path, logged = fresh()
  local c, g, h = p:counter("c_total", "h", { "k" }), p:gauge("g", "h", { "k" }), p:histogram("h", "h", { "k" })
  -- Each: the metric, the method, the label value (nil: no labels), the value.
  local refused = {
    { c, "inc", "neg", -1 }, { c, "inc", "nan", 0 / 0 }, { c, "inc", "word", "x" },
    { g, "set", "nil" }, { g, "set", "nan", 0 / 0 }, { g, "inc", "nan", 0 / 0 },
    { h, "observe", "nan", 0 / 0 }, { h, "observe", "nil" },
    { p:counter("plain_total", "h"), "inc", nil, -2 },
  }
  for _, r in ipairs(refused) do
    r[1][r[2]](r[1], r[4], r[3] and { r[3] } or nil)
  end
  local text = H.dump(path)
  eq(#logged, 9, "each refusal logged")
  eq(H.samples(text)["nginx_metric_errors_total"], 9, "each refusal counted")
  for _, name in ipairs({ "c_total{", "g{", "h_bucket{", "h_count{", "plain_total " }) do
    H.not_contains(text, "\n" .. name, "the exposition")
  end
  contains(logged[1], "a counter only goes up; got -1")
  contains(logged[2], "NaN")
  -- A refused value on an existing series is refused by the store.
  c:inc(1, { "neg" })
  c:inc(-1, { "neg" })
  g:inc(-3, { "down" })
  eq(H.samples(H.dump(path))['c_total{k="neg"}'], 1, "existing series unchanged")
  eq(H.samples(H.dump(path))['g{k="down"}'], -3, "a gauge may go down")
  eq(#logged, 10, "the refusal on the existing series logged")
end)

test("the label cache stays within label_cache_size and values stay exact", function()
  local p, path = fresh({ label_cache_size = 3 })
  local c = p:counter("k_total", "h", { "a", "b" })
  for round = 1, 5 do
    for i = 1, 10 do
      c:inc(1, { "x" .. i, tostring(round % 2) })
      H.truthy(c.cached <= 3, "cached " .. c.cached)
    end
  end
  local s = H.samples(H.dump(path))
  eq(s['k_total{a="x1",b="1"}'], 3, "x1/1")
  eq(s['k_total{a="x10",b="0"}'], 2, "x10/0")
end)

test("a full store records into the overflow series: nothing is lost", function()
  local p, path = fresh({ max_series = 16, max_families = 4, label_bytes = 4096 })
  local c = p:counter("many_total", "h", { "id" })
  for i = 1, 100 do c:inc(1, { tostring(i) }) end
  local total, overflow = 0, nil
  for k, v in pairs(H.samples(H.dump(path))) do
    if k:find("^many_total{") then total = total + v end
    if k:find('shmetrics_overflow="true"', 1, true) then overflow = v end
  end
  eq(total, 100, "every increment counted")
  H.truthy(overflow and overflow > 0, "the overflow series has the rest")
end)

test("each forked process gets its own writer slot; totals are exact", function()
  local p, path = fresh()
  local c = p:counter("forked_total", "h", { "w" })
  local h = p:histogram("forked_seconds", "h", nil, { 1 })
  H.fork_each(4, function()
    for _ = 1, 20000 do
      c:inc(1, { "all" })
      h:observe(0.5)
    end
  end)
  local s = H.samples(H.dump(path))
  eq(s['forked_total{w="all"}'], 80000, "sum over processes")
  eq(s['forked_seconds_bucket{le="1"}'], 80000, "bucket")
  eq(s["forked_seconds_count"], 80000, "count")
  H.truthy(p:stats().writer_claims_total >= 4, "a slot per process")
end)

-- Sleeps past a TTL of 0.2 s.
local function idle() ffi.C.poll(nil, 0, 450) end
ffi.cdef("int poll(void *fds, unsigned long nfds, int timeout);")

test("ttl: exptime and options.ttl expire idle series; stale handles look them up again", function()
  local p, path, logged = fresh()
  local c = p:counter("visits_total", "h", { "user" }, 0.2) -- exptime
  local g = p:gauge("temp", "h", { "room" }, { ttl = 0.2 })
  local gl = p:gauge("workers", "h", { "pool" }, { mode = "livesum", ttl = 0.2 })
  local h = p:histogram("lat_seconds", "h", { "route" }, { 0.1, 1 }, { ttl = 0.2 })
  local sm = p:summary("size_bytes", "h", { "route" }, { quantiles = { 0.5 }, ttl = 0.2 })
  local plain = p:counter("plain_total", "h", nil, { ttl = 0.2 })
  c:inc(5, { "alice" })
  g:set(21.5, { "kitchen" })
  gl:inc(3, { "a" })
  h:observe(0.5, { "/" })
  sm:observe(100, { "/" })
  plain:inc(2)
  local s = H.samples(H.dump(path))
  eq(s['visits_total{user="alice"}'], 5, "counter")
  eq(s['temp{room="kitchen"}'], 21.5, "gauge")
  eq(s['workers{pool="a"}'], 3, "livesum gauge")
  eq(s['lat_seconds_count{route="/"}'], 1, "histogram")
  eq(s['size_bytes_sum{route="/"}'], 100, "summary")
  eq(s["plain_total"], 2, "no labels")

  idle()
  -- Hidden at once, before any sweep.
  s = H.samples(H.dump(path))
  eq(s['visits_total{user="alice"}'], nil, "counter expired")
  eq(s['temp{room="kitchen"}'], nil, "gauge expired")
  eq(s['lat_seconds_count{route="/"}'], nil, "histogram expired")
  eq(s['size_bytes_count{route="/"}'], nil, "summary expired")
  eq(s["plain_total"], nil, "no labels expired")

  -- New label sets sweep each family; the cached handles of the expired
  -- series are stale then, and the updates through them look them up
  -- again: they come back from zero.
  c:inc(1, { "bob" })
  g:set(1, { "hall" })
  gl:inc(1, { "b" })
  h:observe(0.05, { "/new" })
  sm:observe(1, { "/new" })
  c:inc(1, { "alice" })
  g:inc(1, { "kitchen" })
  gl:inc(1, { "a" })
  h:observe(2, { "/" })
  sm:observe(7, { "/" })
  plain:inc()
  s = H.samples(H.dump(path))
  eq(s['visits_total{user="alice"}'], 1, "counter from zero")
  eq(s['visits_total{user="bob"}'], 1, "bob")
  eq(s['temp{room="kitchen"}'], 1, "gauge from zero")
  eq(s['workers{pool="a"}'], 1, "livesum gauge from zero")
  eq(s['lat_seconds_count{route="/"}'], 1, "histogram from zero")
  eq(s['lat_seconds_bucket{route="/",le="1"}'], 0, "histogram buckets from zero")
  eq(s['size_bytes_sum{route="/"}'], 7, "summary from zero")
  -- No new label set swept plain_total's family, but an update of an
  -- idle series expires it first: it starts from zero too.
  eq(s["plain_total"], 1, "no labels, from zero")
  eq(p:stats().series_expired_total, 6, "the six expired series counted")
  eq(#logged, 0, "no error: " .. table.concat(logged, "; "))
  -- An update within the TTL keeps a series.
  c:inc(1, { "alice" })
  eq(H.samples(H.dump(path))['visits_total{user="alice"}'], 2, "kept")
end)

test("ttl: bad values raise; exptime 0 is none; the TTL is part of the definition", function()
  local p = fresh()
  H.raises(function() p:counter("t1_total", "h", nil, { ttl = 0 }) end, "options.ttl must be a positive")
  H.raises(function() p:counter("t2_total", "h", nil, { ttl = -1 }) end, "positive")
  H.raises(function() p:counter("t3_total", "h", nil, { ttl = "soon" }) end, "positive")
  H.raises(function() p:counter("t4_total", "h", nil, { ttl = 0 / 0 }) end, "positive")
  H.raises(function() p:counter("t5_total", "h", nil, -5) end, "exptime must be a positive")
  H.raises(function() p:gauge("t6", "h", nil, { ttl = 0.01 }) end, "TTL")
  H.raises(function() p:summary("t7", "h", nil, { ttl = 1e9 }) end, "TTL")
  H.raises(function() p:histogram("t8", "h", nil, nil, 0.05) end, "TTL")
  p:counter("none_total", "h", nil, 0) -- ngx.shared.DICT's exptime 0: never
  p:counter("none_total", "h") -- the same definition
  p:counter("ttl_total", "h", nil, 600)
  p:counter("ttl_total", "h", nil, { ttl = 600 }) -- the same
  H.raises(function() p:counter("ttl_total", "h") end, "ttl_total")
  H.raises(function() p:counter("ttl_total", "h", nil, 60) end, "ttl_total")
end)

test("updates survive a wipe of the store by another handle (stale handles re-register)", function()
  local p, path, logged = fresh()
  local c = p:counter("w_total", "h", { "x" })
  c:inc(1, { "a" })
  -- Wipe through a handle of our own, as another process would.
  local C = ffi.load(os.getenv("SHMETRICS_LIBRARY"))
  local st = ffi.new("shmetrics_store*[1]")
  eq(C.shmetrics_store_open(path, #path, nil, st), 0, "open")
  eq(C.shmetrics_store_wipe(st[0]), 0, "wipe")
  C.shmetrics_store_close(st[0])
  c:inc(2, { "a" })
  eq(H.samples(H.dump(path))['w_total{x="a"}'], 2, "recorded after the wipe")
  eq(#logged, 0, "no error: " .. table.concat(logged, "; "))
end)

test("one value too many is an error at every label count, cached series or not", function()
  -- The cached lookup is unrolled for up to four labels, each count with
  -- its own check of the value after the last.
  local p, path, logged = fresh()
  for n = 1, 6 do
    local names, values = {}, {}
    for i = 1, n do
      names[i] = "l" .. i
      values[i] = "v" .. i
    end
    local c = p:counter("labels" .. n .. "_total", "h", names)
    local more = { unpack(values) }
    more[n + 1] = "extra"
    c:inc(1, more)   -- not cached yet
    c:inc(1, values) -- caches the series
    c:inc(1, more)   -- cached
    c:inc(1, values)
  end
  eq(#logged, 12, "errors logged: " .. table.concat(logged, "; "))
  for i = 1, 12 do contains(logged[i], "label values") end
  local s = H.samples(H.dump(path))
  eq(s["nginx_metric_errors_total"], 12, "errors counted")
  eq(s['labels1_total{l1="v1"}'], 2, "1 label")
  eq(s['labels4_total{l1="v1",l2="v2",l3="v3",l4="v4"}'], 2, "4 labels")
  eq(s['labels6_total{l1="v1",l2="v2",l3="v3",l4="v4",l5="v5",l6="v6"}'], 2, "6 labels")
end)

test("init twice on one path shares the handle and the writer slot", function()
  local path = H.store_path()
  local a = shmetrics.init(path)
  local b = shmetrics.init(path)
  a:counter("t_total", "h"):inc()
  b:counter("t_total", "h"):inc()
  eq(H.samples(a:metric_data())["t_total"], 2, "total")
  eq(a:stats().writer_claims_total, 1, "one slot")
end)

test("label values made by tostring reach the store intact under a collector that runs at every step", function()
  -- Numbers as label values become strings that only the binding holds
  -- while C reads them (see ANCHORS in shmetrics.lua). With the collector
  -- made as eager as it goes, a string that nothing held would be freed
  -- by the allocations before the C call, and the series would get
  -- another label value (or none). Run hot, so that the JIT compiles it.
  local p, path, logged = fresh()
  local c = p:counter("anchored_total", "h", { "a", "b" })
  local h = p:histogram("anchored_seconds", "h", { "a" }, { 1 })
  local pause, stepmul = collectgarbage("setpause", 1), collectgarbage("setstepmul", 1000)
  local ok, err = pcall(function()
    for i = 1, 3000 do
      local n = i % 1000
      c:inc(1, { n, n * 2 + 0.5 })
      h:observe(0.5, { n + 0.25 })
      c:del({ n + 10000, 1 }) -- deletes nothing, and empties the cache: all misses
    end
  end)
  collectgarbage("setpause", pause)
  collectgarbage("setstepmul", stepmul)
  H.truthy(ok, tostring(err))
  eq(#logged, 0, "errors logged: " .. table.concat(logged, "; "))
  eq(shmetrics._anchored(), 0, "anchors held after the calls")
  local got = H.samples(H.dump(path))
  for n = 0, 999 do
    local key = 'anchored_total{a="' .. n .. '",b="' .. tostring(n * 2 + 0.5) .. '"}'
    eq(got[key], 3, key)
    eq(got['anchored_seconds_count{a="' .. tostring(n + 0.25) .. '"}'], 3, "histogram " .. n)
  end
  local series = 0
  for k in pairs(got) do
    if k:find("^anchored_total{") then series = series + 1 end
  end
  eq(series, 1000, "counter series")
end)

test("no anchor stays held after failed calls", function()
  local p = fresh()
  local c = p:counter("held_total", "h", { "a" }, { exemplars = true })
  c:inc(1, { {} })                       -- a label value of the wrong type
  c:inc(1, { "x" }, { trace = {} })      -- an exemplar value of the wrong type
  c:inc(1, { "x" }, { trace = "t" })
  c:inc(1, { "\255" })                   -- not UTF-8: cut and counted
  c:del({ "nope" })
  c:del({ {} })
  eq(shmetrics._anchored(), 0, "anchors held")
end)

test("a replaced store file is followed: metric_data() opens the new file and updates land there", function()
  local path = H.store_path("follow")
  local logged = {}
  local p = shmetrics.init(path, { follow_interval = 0, log = function(m) logged[#logged + 1] = m end })
  local c = p:counter("followed_total", "h", { "a" })
  local h = p:histogram("followed_seconds", "h", {}, { 1 })
  c:inc(2, { "x" })
  h:observe(0.5)
  eq(p:follow(), false, "nothing to follow while the path names the same file")
  -- Another store moved over the path: the exporter now serves that one.
  local other = H.store_path("replacement")
  local q = shmetrics.init(other)
  q:counter("other_total", "h"):inc(7)
  local out, ok = H.sh("mv " .. other .. " " .. path)
  H.truthy(ok, "mv: " .. out)
  c:inc(1, { "x" }) -- before the check: into the old file, which nothing serves
  local lines = p:metric_data()
  local got = H.samples(lines)
  eq(got.other_total, 7, "metric_data() renders the new file")
  eq(got['followed_total{a="x"}'], nil, "no series in the new file yet")
  c:inc(3, { "x" })
  c:inc(1, { "y" })
  h:observe(2)
  got = H.samples(H.dump(path))
  eq(got['followed_total{a="x"}'], 3, "updates after the switch land in the new file")
  eq(got['followed_total{a="y"}'], 1, "a new series too")
  eq(got['followed_seconds_count'], 1, "histogram")
  eq(got.other_total, 7, "the new file's own series")
  eq(#logged, 0, "errors logged: " .. table.concat(logged, "; "))
  -- A removed path (nothing there) is left alone: updates go on.
  os.remove(path)
  eq(p:follow(true), false, "a removed file is not followed")
  c:inc(1, { "x" })
  eq(#logged, 0, "errors logged after removal: " .. table.concat(logged, "; "))
end)

test("result codes match the library's descriptions", function()
  fresh()
  contains(shmetrics.strerror(0):lower(), "success")
  contains(shmetrics.strerror(12):lower(), "capacity exceeded")
  contains(shmetrics.strerror(14):lower(), "stale")
end)

-- Runs `code` in another LuaJIT with `env` (shell assignments) before it,
-- from this directory: its output and whether it exited with 0.
local function luajit_with(env, code)
  local file = H.tmpdir() .. "/child.lua"
  H.write(file, 'package.path = "./?.lua;" .. package.path\n' .. code)
  local out, ok = H.sh(env .. " luajit " .. file)
  return out, ok
end

local ABI_MAJOR = tonumber(shmetrics._VERSION:match("^(%d+)%."))

test("without $SHMETRICS_LIBRARY the library is found by the dynamic loader as libshmetrics.so.<major>", function()
  local dir, empty = H.tmpdir() .. "/lib", H.tmpdir() .. "/nolib"
  local out, ok = H.sh("mkdir -p " .. dir .. " " .. empty .. " && ln -sf " .. os.getenv("SHMETRICS_LIBRARY")
       .. " " .. dir .. "/libshmetrics.so." .. ABI_MAJOR)
  H.truthy(ok, "the library link: " .. out)
  local code = 'local p = require("shmetrics").init("' .. H.store_path() .. '")\n'
    .. 'p:counter("loaded_total", "h"):inc()\nprint("loaded")'
  out, ok = luajit_with("env -u SHMETRICS_LIBRARY LD_LIBRARY_PATH=" .. dir, code)
  H.truthy(ok, "loads through LD_LIBRARY_PATH: " .. out)
  contains(out, "loaded")
  out, ok = luajit_with("env -u SHMETRICS_LIBRARY LD_LIBRARY_PATH=" .. empty, code)
  H.truthy(not ok, "nothing to load on an empty library path")
  contains(out, "cannot load the library 'libshmetrics.so." .. ABI_MAJOR .. "'")
  contains(out, "'libshmetrics.so'")
end)

test("a library of another major version is refused with both versions named", function()
  local other = os.getenv("SHMETRICS_OTHER_MAJOR_LIBRARY")
  H.truthy(other and other ~= "", "$SHMETRICS_OTHER_MAJOR_LIBRARY (scripts/build-other-major.sh prints it)")
  local out, ok = luajit_with("SHMETRICS_LIBRARY=" .. other,
    'require("shmetrics").init("' .. H.store_path() .. '")')
  H.truthy(not ok, "init with the other major's library fails")
  local next = ABI_MAJOR + 1
  contains(out, "the library '" .. other .. "' is version " .. next .. ".0.0 (major " .. next .. ")")
  contains(out, "this module is written for major " .. ABI_MAJOR)
end)

H.run(arg[1])
