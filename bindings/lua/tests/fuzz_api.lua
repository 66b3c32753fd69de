-- API fuzzing of the Lua binding: random sequences of public calls with
-- random arguments (wrong types, nil, huge and negative numbers, NaN and
-- ±Inf, invalid UTF-8 and NUL bytes, tables where strings go and the
-- reverse), interleaved with what other processes do to the store (wipe
-- it, replace the file, remove it) and with forks. The only outcomes
-- allowed are a result or the binding's own error (a string starting with
-- "shmetrics"); any other error, a crash, or a hang fails.
--
-- From bindings/lua, with SHMETRICS_LIBRARY set:
--   luajit tests/fuzz_api.lua [--runs N] [--calls N] [--seed S] [--timeout S]
-- runs N children (each its own process, under `timeout`), seeds S, S+1...,
-- each making --calls calls; every seed in tests/fuzz_seeds.txt (the seeds
-- that ever failed) runs first. A failing seed is printed with the call
-- that failed; keep it in tests/fuzz_seeds.txt. To fuzz longer:
--   luajit tests/fuzz_api.lua --runs 2000 --calls 20000 --seed $RANDOM
-- `--child SEED CALLS` is one child's run, in this process.
package.path = "./?.lua;./tests/?.lua;" .. package.path

local ffi = require("ffi")

local function arg_value(name, default)
  for i = 1, #arg - 1 do
    if arg[i] == name then return arg[i + 1] end
  end
  return default
end

-- ---- the child: one seed's calls --------------------------------------

-- The binding's own error: "shmetrics: ...", after the position of the
-- caller that error() names.
local function own_error(err)
  return type(err) == "string" and (err:find("^shmetrics") or err:find("^[^\n]-:%d+: shmetrics")) ~= nil
end

local rng_state
local function rand(n) -- 1..n
  -- xorshift32, so that a seed gives the same run in every LuaJIT.
  local x = rng_state
  x = bit.bxor(x, bit.lshift(x, 13))
  x = bit.bxor(x, bit.rshift(x, 17))
  x = bit.bxor(x, bit.lshift(x, 5))
  rng_state = x
  return (x % n + n) % n + 1
end
local function pick(t) return t[rand(#t)] end

local NAMES = { "jobs", "jobs_total", "req_seconds", "in_flight", "q", "a:b", "utf8_é", "",
                "1bad", "__x", "le", string.rep("n", 300) }
local LABELS = { "route", "status", "le", "quantile", "__name__", "", "é", "a b" }

local function odd_string()
  local kinds = {
    function() return "" end,
    function() return "x\0y" end,
    function() return "\255\254" end,
    function() return "a\"b\\c\nd" end,
    function() return "é✓" end,
    function() return string.rep("v", rand(5000)) end,
    function()
      local b = {}
      for i = 1, rand(16) do b[i] = string.char(rand(256) - 1) end
      return table.concat(b)
    end,
  }
  return pick(kinds)()
end

local NUMBERS = { 0, -0.0, 1, -1, 0.5, 1e-300, 1e308, -1e308, 2 ^ 31, 2 ^ 32, 2 ^ 53, 2 ^ 64,
                  -2 ^ 63, 0 / 0, math.huge, -math.huge, 4294967295, 4294967296, 1.5 }

local value -- forward
local function odd_table(depth)
  local t = {}
  for i = 1, rand(4) - 1 do t[i] = value(depth + 1) end
  if rand(4) == 1 then t.x = value(depth + 1) end
  return t
end

value = function(depth)
  depth = depth or 0
  local r = rand(depth > 1 and 7 or 10)
  if r == 1 then return nil
  elseif r == 2 then return rand(2) == 1
  elseif r == 3 then return pick(NUMBERS)
  elseif r == 4 then return rand(2000) - 1000
  elseif r == 5 then return odd_string()
  elseif r == 6 then return pick(NAMES)
  elseif r == 7 then return pick(LABELS)
  elseif r == 8 then return odd_table(depth)
  elseif r == 9 then return ffi.new("int64_t", -1)
  else return function() end
  end
end

-- Label values: mostly a list of strings of about the right length.
local function label_values(m)
  local r = rand(6)
  if r == 1 then return value() end
  local n = (m and m.nlabels or 1) + (r == 2 and rand(3) - 2 or 0)
  local t = {}
  for i = 1, math.max(n, 0) do
    t[i] = rand(8) == 1 and value(1) or pick({ "GET", "/", "200", "", "é", "\255" })
  end
  return t
end

local function label_names()
  if rand(6) == 1 then return value() end
  local t = {}
  for i = 1, rand(4) - 1 do t[i] = rand(8) == 1 and value(1) or pick(LABELS) end
  return t
end

local function options()
  if rand(3) == 1 then return value() end
  local o = {}
  for _, k in ipairs({ "ttl", "exemplars", "native", "max_series", "quantiles", "max_age",
                       "mode", "foo" }) do
    if rand(4) == 1 then o[k] = value(1) end
  end
  return o
end

local function buckets()
  if rand(4) == 1 then return value() end
  local t = {}
  for i = 1, rand(6) - 1 do t[i] = rand(6) == 1 and value(1) or i * 0.5 end
  return t
end

local function store_options(logged)
  local o = { log = function(msg) logged[#logged + 1] = msg end, follow_interval = 0 }
  for _, k in ipairs({ "max_series", "max_families", "label_bytes", "max_writers", "mode",
                       "create", "prefix", "label_cache_size" }) do
    if rand(8) == 1 then o[k] = value(1) end
  end
  -- Mostly small stores; under valgrind (FUZZ_SMALL) only small ones,
  -- since valgrind reads every mapped page at exit.
  if rand(3) > 1 or os.getenv("FUZZ_SMALL") then
    o.max_series, o.max_families, o.label_bytes, o.max_writers = 256, 32, 65536, 8
  end
  return o
end

local function child(seed, calls)
  rng_state = seed ~= 0 and seed or 1
  local shmetrics = require("shmetrics")
  local lib = ffi.load(assert(os.getenv("SHMETRICS_LIBRARY"), "SHMETRICS_LIBRARY"))
  local dir = assert(os.getenv("FUZZ_DIR"), "FUZZ_DIR")
  local path = dir .. "/store"
  local logged = {}
  local regs, metrics = {}, {}
  local replaced = 0
  local what = ""

  -- What another process does to the store.
  local function wipe()
    local st = ffi.new("shmetrics_store*[1]")
    if lib.shmetrics_store_open(path, #path, nil, st) == 0 then
      lib.shmetrics_store_wipe(st[0])
      lib.shmetrics_store_close(st[0])
    end
  end
  local function replace()
    replaced = replaced + 1
    local other = dir .. "/next" .. replaced
    local st = ffi.new("shmetrics_store*[1]")
    local o = ffi.new("shmetrics_options")
    lib.shmetrics_options_default(o)
    o.max_series, o.label_bytes, o.max_writers = 128, 32768, 8
    if lib.shmetrics_store_open(other, #other, o, st) == 0 then
      lib.shmetrics_store_close(st[0])
      os.rename(other, path)
    end
  end

  local ops
  ops = {
    function()
      what = "init"
      local p = rand(10) == 1 and value() or path
      if type(p) == "string" and p ~= path and p:find("/", 1, true) then
        -- A junk path stays in this run's folder.
        p = dir .. "/junk" .. p:gsub("/", "_")
      end
      local o = (rand(10) == 1 and not os.getenv("FUZZ_SMALL")) and value() or store_options(logged)
      regs[#regs + 1] = shmetrics.init(p, o)
    end,
    function()
      if #regs == 0 then return end
      local reg = pick(regs)
      local kind = pick({ "counter", "gauge", "histogram", "summary" })
      what = kind
      local name = rand(5) == 1 and value() or pick(NAMES)
      local help = rand(5) == 1 and value() or "help"
      local m
      if kind == "histogram" then
        m = reg:histogram(name, help, label_names(), buckets(), options())
      else
        m = reg[kind](reg, name, help, label_names(), options())
      end
      metrics[#metrics + 1] = m
    end,
    function()
      if #metrics == 0 then return end
      local m = pick(metrics)
      local method = pick({ "inc", "dec", "set", "observe", "del", "reset" })
      what = method
      if m[method] == nil then return end
      if method == "reset" then m:reset()
      elseif method == "del" then m:del(label_values(m))
      else m[method](m, rand(3) == 1 and value() or rand(100) / 10, label_values(m),
                     rand(8) == 1 and value() or nil)
      end
    end,
    function()
      if #regs == 0 then return end
      local reg = pick(regs)
      local r = rand(4)
      if r == 1 then what = "metric_data"; reg:metric_data(rand(4) == 1 and value() or nil)
      elseif r == 2 then what = "stats"; reg:stats()
      elseif r == 3 then what = "follow"; reg:follow(value())
      else what = "strerror"; shmetrics.strerror(value())
      end
    end,
    function()
      local r = rand(40)
      if r == 1 then what = "wipe"; wipe()
      elseif r == 2 then what = "replace"; replace()
      elseif r == 3 then what = "remove"; os.remove(path)
      elseif r == 4 and rand(5) == 1 then what = "fork"
        local pid = ffi.C.fork()
        if pid == 0 then
          -- The child goes on with the same objects for a while.
          for _ = 1, 50 do
            local ok, err = pcall(ops[3])
            if not ok and not own_error(err) then
              io.stderr:write("forked child: ", tostring(err), "\n")
              ffi.C._exit(3)
            end
          end
          ffi.C._exit(0)
        end
        local status = ffi.new("int[1]")
        ffi.C.waitpid(pid, status, 0)
        if status[0] ~= 0 then
          error("FUZZ: a forked child ended with status " .. status[0], 0)
        end
      end
    end,
  }
  -- A registry to start with (it also declares the C ABI for wipe()).
  regs[1] = shmetrics.init(path, {
    log = function(msg) logged[#logged + 1] = msg end, follow_interval = 0,
    max_series = 256, max_families = 32, label_bytes = 65536, max_writers = 8,
  })
  local weights = { 1, 3, 12, 2, 2 }
  local bag = {}
  for i, w in ipairs(weights) do for _ = 1, w do bag[#bag + 1] = i end end
  for i = 1, calls do
    local ok, err = pcall(ops[pick(bag)])
    if not ok and not own_error(err) then
      io.stderr:write(string.format("seed %d, call %d (%s): %s\n", seed, i, what, tostring(err)))
      os.exit(2)
    end
    if #logged > 1000 then logged = {} end
  end
  print(string.format("seed %d: %d calls, %d registries, %d metrics", seed, calls, #regs, #metrics))
end

ffi.cdef [[
int fork(void);
int waitpid(int pid, int *status, int options);
void _exit(int status);
]]

if arg[1] == "--child" then
  child(tonumber(arg[2]), tonumber(arg[3]))
  os.exit(0)
end

-- ---- the driver: children, each in its own process --------------------

local runs = tonumber(arg_value("--runs", 20))
local calls = tonumber(arg_value("--calls", 5000))
local first = tonumber(arg_value("--seed", os.time() % 100000))
local limit = tonumber(arg_value("--timeout", 60))

local seeds = {}
local f = io.open("tests/fuzz_seeds.txt")
if f then
  for line in f:lines() do
    local s = line:match("^(%d+)")
    if s then seeds[#seeds + 1] = tonumber(s) end
  end
  f:close()
end
for i = 0, runs - 1 do seeds[#seeds + 1] = first + i end

local failed, total = 0, 0
for _, seed in ipairs(seeds) do
  local dir = io.popen("mktemp -d /tmp/shmetrics-lua-fuzz.XXXXXX"):read("*l")
  local cmd = string.format("FUZZ_DIR=%s timeout -s KILL %d luajit tests/fuzz_api.lua --child %d %d 2>&1",
                            dir, limit, seed, calls)
  local p = io.popen(cmd .. "; echo __status=$?")
  local out = p:read("*a")
  p:close()
  os.execute("rm -rf " .. dir)
  local status = tonumber(out:match("__status=(%d+)\n$"))
  total = total + calls
  if status ~= 0 then
    failed = failed + 1
    local why = status == 137 and "hung (killed after " .. limit .. " s)"
      or status > 128 and "crashed (signal " .. (status - 128) .. ")"
      or "exit " .. tostring(status)
    io.write(string.format("FAIL seed %d: %s\n%s", seed, why, out:gsub("__status=%d+\n$", "")))
  end
end
io.write(string.format("fuzz: %d seeds, %d calls; %d passed, %d failed\n", #seeds, total,
                       #seeds - failed, failed))
os.exit(failed == 0 and 0 or 1)
