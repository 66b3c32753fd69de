-- A small test runner and helpers for the Lua binding's tests, which run
-- under plain LuaJIT: `luajit tests/unit.lua` from bindings/lua (see
-- scripts/lua-tests.sh for the environment it needs).

local ffi = require("ffi")

local H = {}

local tests = {}

function H.test(name, fn)
  tests[#tests + 1] = { name = name, fn = fn }
end

-- Runs the tests whose names contain the filter (arg[1]), prints a line per
-- test and exits non-zero if any failed or none ran.
function H.run(filter)
  local failed, ran = 0, 0
  for _, t in ipairs(tests) do
    if not filter or t.name:find(filter, 1, true) then
      ran = ran + 1
      local ok, err = xpcall(t.fn, debug.traceback)
      if ok then
        io.write("ok   ", t.name, "\n")
      else
        failed = failed + 1
        io.write("FAIL ", t.name, "\n", tostring(err), "\n")
      end
    end
  end
  io.write(string.format("%d tests, %d failed\n", ran, failed))
  if ran == 0 then
    io.write("no test ran\n")
    os.exit(1)
  end
  os.exit(failed == 0 and 0 or 1)
end

local function show(v)
  if type(v) == "string" then return string.format("%q", v) end
  return tostring(v)
end

function H.eq(got, want, what)
  if got ~= want then
    error((what or "value") .. ": got " .. show(got) .. ", want " .. show(want), 2)
  end
end

function H.truthy(v, what)
  if not v then error((what or "condition") .. " is false", 2) end
end

function H.contains(s, part, what)
  if type(s) ~= "string" or not s:find(part, 1, true) then
    error((what or "text") .. " does not contain " .. show(part) .. ":\n" .. tostring(s), 2)
  end
end

function H.not_contains(s, part, what)
  if type(s) == "string" and s:find(part, 1, true) then
    error((what or "text") .. " contains " .. show(part) .. ":\n" .. s, 2)
  end
end

-- Calls fn, which must raise an error containing `part`.
function H.raises(fn, part)
  local ok, err = pcall(fn)
  if ok then error("no error raised (wanted one containing " .. show(part) .. ")", 2) end
  if not tostring(err):find(part, 1, true) then
    error("the error " .. show(tostring(err)) .. " does not contain " .. show(part), 2)
  end
  return tostring(err)
end

local dir
-- A fresh directory for this run's store files, in $SHMETRICS_TEST_TMPDIR
-- (which scripts/lua-tests.sh makes and removes afterwards), else in /tmp.
function H.tmpdir()
  if not dir then
    local parent = os.getenv("SHMETRICS_TEST_TMPDIR") or "/tmp"
    local p = io.popen("mktemp -d '" .. parent .. "/shmetrics-lua.XXXXXX'")
    dir = p:read("*l")
    p:close()
  end
  return dir
end

local n = 0
function H.store_path(name)
  n = n + 1
  return H.tmpdir() .. "/" .. (name or "s") .. n .. ".shm"
end

-- Runs a shell command; returns its output (stderr included), whether it
-- exited 0, and its exit status. The status comes from the shell itself
-- (a marker line at the end of the output): LuaJIT's popen close, with
-- Lua 5.1 semantics, returns true whatever the command's status was.
function H.sh(cmd)
  local p = io.popen("{ " .. cmd .. "\n} 2>&1; echo \"__status=$?\"")
  local out = p:read("*a")
  p:close()
  local body, code = out:match("^(.*)__status=(%d+)\n$")
  code = tonumber(code)
  if not code then error("no exit status from: " .. cmd .. "\n" .. out, 2) end
  return body, code == 0, code
end

-- The store's exposition as `shmetrics dump` prints it (another process).
function H.dump(path, format)
  local bin = os.getenv("SHMETRICS_BIN") or "shmetrics"
  local out, ok = H.sh(bin .. " dump --store " .. path .. (format and (" --format " .. format) or ""))
  if not ok then error("shmetrics dump failed: " .. out, 2) end
  return out
end

-- Parses sample lines of the text format (a string, or an array of lines
-- as metric_data() returns) into { ['name{labels}'] = value }.
function H.samples(text)
  if type(text) == "table" then text = table.concat(text) end
  local out = {}
  for line in text:gmatch("[^\n]+") do
    if line:sub(1, 1) ~= "#" then
      local key, val = line:match("^(%S+) (%S+)$")
      if not key then
        key, val = line:match("^(.-}) (%S+)$")
      end
      if key then out[key] = tonumber(val) or val end
    end
  end
  return out
end

-- The exemplars of an OpenMetrics exposition, read by prometheus_client's
-- OpenMetrics parser ($SHMETRICS_PYTHON, else python3), which also checks
-- the whole exposition: { ['name{l="v"}'] (or 'name' without labels) =
-- { labels = {...}, value = n, timestamp = seconds } }.
local EXEMPLARS_PY = [[
import json, sys
from prometheus_client.openmetrics.parser import text_string_to_metric_families
out = {}
for fam in text_string_to_metric_families(open(sys.argv[1], encoding="utf-8").read()):
    for s in fam.samples:
        if s.exemplar is None:
            continue
        labels = ",".join('%s="%s"' % kv for kv in s.labels.items())
        out[s.name + ("{%s}" % labels if labels else "")] = {
            "labels": s.exemplar.labels,
            "value": float(s.exemplar.value),
            "timestamp": float(s.exemplar.timestamp),
        }
print(json.dumps(out))
]]
local exemplar_files = 0
function H.exemplars(openmetrics)
  exemplar_files = exemplar_files + 1
  local dir = H.tmpdir()
  local text, script = dir .. "/om" .. exemplar_files .. ".txt", dir .. "/exemplars.py"
  H.write(text, openmetrics)
  H.write(script, EXEMPLARS_PY)
  local python = os.getenv("SHMETRICS_PYTHON") or "python3"
  local out, ok = H.sh(python .. " " .. script .. " " .. text)
  if not ok then error("prometheus_client's OpenMetrics parser refused the exposition: " .. out, 2) end
  return require("cjson").decode(out)
end

function H.read(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("*a")
  f:close()
  return s
end

function H.write(path, s)
  local f = assert(io.open(path, "wb"))
  f:write(s)
  f:close()
end

ffi.cdef [[
  int fork(void);
  int waitpid(int pid, int *status, int options);
  void _exit(int status);
]]

-- Runs fn in `count` forked children (child i gets i) and waits for them;
-- every child must exit 0.
function H.fork_each(count, fn)
  io.stdout:flush()
  io.stderr:flush()
  local pids = {}
  for i = 1, count do
    local pid = ffi.C.fork()
    if pid == 0 then
      local ok, err = pcall(fn, i)
      if not ok then io.stderr:write(tostring(err), "\n") end
      io.stdout:flush()
      ffi.C._exit(ok and 0 or 1)
    end
    assert(pid > 0, "fork failed")
    pids[#pids + 1] = pid
  end
  local status = ffi.new("int[1]")
  for _, pid in ipairs(pids) do
    ffi.C.waitpid(pid, status, 0)
    H.eq(status[0], 0, "child exit status")
  end
end

return H
