-- shmetrics for LuaJIT: nginx-lua-prometheus's API on the shared store.
--
-- Every nginx worker writes into one shared-memory store through the C ABI
-- (libshmetrics.so, LuaJIT's ffi), without locks; a separate exporter
-- process (`shmetrics serve`) serves the sum over all workers, so a scrape
-- never runs inside a worker. See docs/lua.md.
--
--   local prometheus = require("shmetrics").init("/dev/shm/nginx.metrics")
--   local requests = prometheus:counter("nginx_http_requests_total",
--       "Number of HTTP requests", {"host", "status"})
--   requests:inc(1, {ngx.var.server_name, ngx.var.status})
--
-- This module only translates: names, values and every check live in the
-- Rust core. The one thing it keeps is a per-metric cache from label values
-- to series handles, so that the hot path is a few table lookups and one
-- ffi call, all compiled by the JIT. Off the hot path, two things keep
-- nginx-lua-prometheus's behaviour: a label value the store refuses as not
-- UTF-8 is cut at its first invalid byte, and before a series is created
-- the update's value is checked, so that a refused update creates none.

local ffi = require("ffi")

local type, tostring, tonumber, error, pairs, ipairs = type, tostring, tonumber, error, pairs, ipairs
local ffi_string, ffi_new = ffi.string, ffi.new

local M = { _VERSION = "1.0.0" }

-- Result codes of the C ABI (enum shmetrics_result in shmetrics.h);
-- tests/unit.lua checks them against the library's own descriptions.
local OK, INVALID_OPTIONS, OVERFLOW, STALE_HANDLE, INVALID_UTF8 = 0, 9, 12, 14, 101

local FORMATS = { prometheus = 0, openmetrics = 1 }

local GAUGE_MODES = {
  all = 1, liveall = 2, sum = 3, livesum = 4, max = 5, livemax = 6,
  min = 7, livemin = 8, mostrecent = 9, livemostrecent = 10, shared = 11,
  liveaverage = 12,
}

-- nginx-lua-prometheus's default histogram buckets.
M.DEFAULT_BUCKETS = {
  0.005, 0.01, 0.02, 0.03, 0.05, 0.075, 0.1, 0.2, 0.3, 0.4, 0.5, 0.75,
  1, 1.5, 2, 3, 4, 5, 10,
}

-- Label-value combinations each metric remembers per worker before it
-- forgets them all and starts again (see `label_cache_size`).
local DEFAULT_LABEL_CACHE_SIZE = 10000

----------------------------------------------------------------------------
-- Loading the C declarations and the library (once per Lua VM).

local C -- the library's namespace, once loaded

local function module_dir()
  local src = debug.getinfo(1, "S").source
  if src:sub(1, 1) == "@" then
    return src:sub(2):match("^(.*)/[^/]*$") or "."
  end
  return "."
end

local function read_file(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local s = f:read("*a")
  f:close()
  return s
end

-- The generated declarations (crates/ffi/include/shmetrics.cdef.h): the
-- `cdef` option, $SHMETRICS_CDEF, a shmetrics.cdef.h next to this file,
-- then the module shmetrics.cdef, the same text as a Lua string, which is
-- installed with this one (luarocks, OPM, the .deb) and found on
-- package.path. Never a hand-written copy, so they cannot drift.
local function find_cdef(opt)
  local tried = {}
  for _, p in ipairs({ opt or false, os.getenv("SHMETRICS_CDEF") or false,
                      module_dir() .. "/shmetrics.cdef.h" }) do
    if p then
      local s = read_file(p)
      if s then return s end
      tried[#tried + 1] = p
    end
  end
  local ok, cdef = pcall(require, "shmetrics.cdef")
  if ok and type(cdef) == "string" then return cdef end
  tried[#tried + 1] = "the module shmetrics.cdef (" .. tostring(cdef):gsub("\n%s*", " ") .. ")"
  error("shmetrics: cannot read the C declarations (shmetrics.cdef.h); tried "
        .. table.concat(tried, ", ") .. "; install shmetrics/cdef.lua with this module,"
        .. " or set the `cdef` option or $SHMETRICS_CDEF", 3)
end

-- The major version of the C ABI this module is written for (its own
-- version's): a library whose shmetrics_version_major() differs is refused.
local ABI_MAJOR = tonumber(M._VERSION:match("^(%d+)%."))

-- The libraries to try in turn: the `library` option or $SHMETRICS_LIBRARY
-- alone, else the names the dynamic loader looks up on the system's library
-- path, libshmetrics.so.<major> (its SONAME) first.
local function libraries(opt)
  if opt then return { opt } end
  local env = os.getenv("SHMETRICS_LIBRARY")
  if env and env ~= "" then return { env } end
  return { "libshmetrics.so." .. ABI_MAJOR, "libshmetrics.so" }
end

local function open_library(opt)
  local errors = {}
  for _, name in ipairs(libraries(opt)) do
    local ok, lib = pcall(ffi.load, name)
    if ok then return lib, name end
    errors[#errors + 1] = "'" .. name .. "': " .. tostring(lib)
  end
  error("shmetrics: cannot load the library " .. table.concat(errors, ", ")
        .. " (install libshmetrics.so." .. ABI_MAJOR .. " on the system's library path, or build it with"
        .. " `cargo build --release -p shmetrics-ffi` and set the `library` option or $SHMETRICS_LIBRARY)", 4)
end

-- Refuses a library of another major version than ABI_MAJOR.
local function check_major(lib, name)
  local major = tonumber(lib.shmetrics_version_major())
  if major ~= ABI_MAJOR then
    error(("shmetrics: the library '%s' is version %s (major %d), but this module is written for"
           .. " major %d: install libshmetrics.so.%d, or point the `library` option or"
           .. " $SHMETRICS_LIBRARY at a library of major %d")
          :format(name, ffi_string(lib.shmetrics_version()), major, ABI_MAJOR, ABI_MAJOR, ABI_MAJOR), 4)
  end
end

local function load(opts)
  if C then return C end
  if not pcall(ffi.typeof, "shmetrics_series") then
    ffi.cdef(find_cdef(opts.cdef))
  end
  local lib, name = open_library(opts.library)
  check_major(lib, name)
  C = lib
  return C
end

----------------------------------------------------------------------------
-- Errors.

local errbuf, errlen -- the thread's last error message, copied out

-- The message of the last failed call on this thread, or the code's
-- description when there is none.
local function last_error(rc)
  if not errbuf then
    errbuf = ffi_new("char[?]", 1024)
    errlen = ffi_new("size_t[1]")
  end
  if C.shmetrics_last_error(errbuf, 1024, errlen) == OK and errlen[0] > 0 then
    return ffi_string(errbuf, errlen[0] < 1024 and errlen[0] or 1023)
  end
  return ffi_string(C.shmetrics_strerror(rc))
end

local function default_log(msg)
  if ngx and ngx.log then
    ngx.log(ngx.ERR, msg)
  else
    io.stderr:write(msg, "\n")
  end
end

----------------------------------------------------------------------------
-- Anchors: what C reads through a pointer must stay reachable.
--
-- A pointer the C side reads (into a Lua string, or into a cdata array a
-- struct field points to) does not keep its object alive: LuaJIT's
-- collector knows nothing of it. A local table holding those objects is
-- not enough either: once the code never reads it again it is dead to the
-- JIT, which may not even allocate it (allocation sinking), and an
-- allocation before the C call (ffi.new) may run a collection step that
-- frees what only that table held: a label value made by tostring(), the
-- label-name array of a family description. So every slow-path call that
-- passes such pointers first stores the table in `ANCHORS`, a module
-- table (a store the JIT must make, as the table escapes), and takes it
-- out after the call, when nothing points there any more. A stack, as
-- such calls nest (a series lookup may register the family again).

local ANCHORS, anchored = {}, 0

local function hold(t)
  anchored = anchored + 1
  ANCHORS[anchored] = t
  return t
end

local function let_go()
  ANCHORS[anchored] = nil
  anchored = anchored - 1
end

-- Adds `v` (not nil) to the table held last, and returns it: for what a
-- call's pointers point into that is made after hold(), such as the cdata
-- arrays of a family description.
local function anchor(v)
  local t = ANCHORS[anchored]
  t[#t + 1] = v
  return v
end

-- For tests: how many anchor tables are held now (0 between calls).
function M._anchored()
  return anchored
end

----------------------------------------------------------------------------
-- Metrics.

local Metric = {}
Metric.__index = Metric

-- A number from a number or a numeric string (ngx.var values are strings),
-- else nil.
local function num(v)
  if type(v) == "number" then return v end
  if type(v) == "string" then return tonumber(v) end
  return nil
end

-- Registers (or finds, if another worker registered it already) the
-- family described by `self`, filling in self.family.
function Metric:_register()
  local names = self.label_names
  local n = #names
  local d = ffi_new("shmetrics_family_desc")
  -- What `d` points into, held until shmetrics_register returns: the
  -- strings (self.name and self.help are held by self too) and the arrays.
  hold({ names })
  d.name.ptr, d.name.len = self.name, #self.name
  d.help.ptr, d.help.len = self.help, #self.help
  if n > 0 then
    local ln = anchor(ffi_new("shmetrics_str[?]", n))
    for i = 1, n do
      ln[i - 1].ptr, ln[i - 1].len = names[i], #names[i]
    end
    d.label_names, d.label_count = ln, n
  end
  d.kind = self.kind
  d.gauge_mode = self.gauge_mode or 0
  if self.buckets then
    local b = anchor(ffi_new("double[?]", #self.buckets, self.buckets))
    d.buckets, d.bucket_count = b, #self.buckets
  end
  if self.quantiles then
    local q = anchor(ffi_new("double[?]", #self.quantiles, self.quantiles))
    d.quantiles, d.quantile_count = q, #self.quantiles
    d.max_age_ms = self.max_age_ms or 0
    d.age_buckets = self.age_buckets or 0
  end
  local native = self.native
  if native then
    d.native = 1
    d.native_bucket_factor = native.bucket_factor
    d.native_zero_threshold = native.zero_threshold
    d.native_max_buckets = native.max_buckets
  end
  d.exemplars = self.exemplars == true and 1 or 0
  d.ttl_ms = self.ttl_ms or 0
  -- A counter keeps the name it was given in the text format, as in
  -- nginx-lua-prometheus: `_total` only if the name has it.
  d.name_as_given = self.kind == 1 and 1 or 0
  -- And the page nginx-lua-prometheus served: bounds as Lua writes
  -- numbers (le="1", not "1.0"), no _created, the text format only (see
  -- docs/ARCHITECTURE.md, "Exposition hints").
  d.hints = C.SHMETRICS_HINT_SHORT_BOUNDS + C.SHMETRICS_HINT_NO_CREATED
    + C.SHMETRICS_HINT_TEXT_ONLY
  -- nginx-lua-prometheus's names: the legacy character sets, checked by
  -- the store.
  d.name_rules = C.SHMETRICS_NAMES_LEGACY
  local fam = ffi_new("shmetrics_family")
  local rc = C.shmetrics_register(self.store, d, fam)
  let_go()
  if rc ~= OK then
    return nil, last_error(rc)
  end
  self.family = fam
  self.cache, self.cached = {}, 0
  self.nolabels = nil
  return true
end

-- Counts and logs an error on the hot path. It never raises: a metric call
-- must not fail the request it is measuring.
function Metric:_fail(what, msg)
  self.registry:_error(self.name .. ": " .. what .. ": " .. msg)
end

-- The series for these label values, from the cache or, on a miss, from
-- the store. Returns nil (after counting the error) if they are wrong.
-- series() and update() below are local functions, called directly, not
-- methods: a method call looks the name up in the metric, its class and
-- Metric (three hash lookups, in compiled code as well) before it calls.
local function series(self, lv, v)
  local n = self.nlabels
  if n == 0 then
    if lv ~= nil and (type(lv) ~= "table" or lv[1] ~= nil) then
      return self:_miss(lv, v)
    end
    local s = self.nolabels
    if s == nil then return self:_miss(lv, v) end
    return s
  end
  if type(lv) ~= "table" then
    return self:_miss(lv, v)
  end
  -- Unrolled for up to four labels: a loop whose trip count differs from
  -- metric to metric makes LuaJIT abort its traces ("loop unroll limit"),
  -- which tests/jit.lua checks for. `extra` is lv[n + 1], which must be
  -- nil (no more values than labels), read at a constant index for up to
  -- four labels: LuaJIT can then skip allocating the caller's label table
  -- (allocation sinking), which a read at a variable index prevents.
  local node = self.cache[lv[1]]
  local extra
  if n == 1 then
    extra = lv[2]
  else
    if node == nil then return self:_miss(lv, v) end
    node = node[lv[2]]
    if n == 2 then
      extra = lv[3]
    else
      if node == nil then return self:_miss(lv, v) end
      node = node[lv[3]]
      if n == 3 then
        extra = lv[4]
      else
        if node == nil then return self:_miss(lv, v) end
        node = node[lv[4]]
        if n == 4 then
          extra = lv[5]
        else
          for i = 5, n do
            if node == nil then return self:_miss(lv, v) end
            node = node[lv[i]]
          end
          extra = lv[n + 1]
        end
      end
    end
  end
  if node == nil or extra ~= nil then
    return self:_miss(lv, v)
  end
  return node
end
Metric._series = series

local function is_key(v)
  return type(v) == "string" or (type(v) == "number" and v == v)
end

-- Well-formed UTF-8 sequences (the Unicode standard's table 3-7), each
-- anchored where the search starts.
local UTF8_SEQUENCES = {
  "^[%z\1-\127]+", "^[\194-\223][\128-\191]", "^\224[\160-\191][\128-\191]",
  "^[\225-\236\238\239][\128-\191][\128-\191]", "^\237[\128-\159][\128-\191]",
  "^\240[\144-\191][\128-\191][\128-\191]",
  "^[\241-\243][\128-\191][\128-\191][\128-\191]",
  "^\244[\128-\143][\128-\191][\128-\191]",
}

-- `s` up to its first byte that does not begin a well-formed UTF-8
-- sequence: where nginx-lua-prometheus cuts a label value that is not
-- UTF-8 (request URIs often are not), which the store refuses whole.
local function utf8_prefix(s)
  local at = 1
  while at <= #s do
    local last
    for i = 1, #UTF8_SEQUENCES do
      local _, e = string.find(s, UTF8_SEQUENCES[i], at)
      if e then
        last = e
        break
      end
    end
    if last == nil then return s:sub(1, at - 1) end
    at = last + 1
  end
  return s
end

-- The label values `lv` (a table of n, counted already) as the C ABI's
-- strings, and `keep`, the Lua strings the pointers point into (numbers
-- as text), held (see ANCHORS): the caller calls let_go() once its C
-- calls are done. `cacheable` is false when a value cannot be a table key
-- (NaN). Nil (after counting the error, nothing held) for a value of
-- another type.
local function label_strs(self, what, lv, n)
  local vals = n > 0 and ffi_new("shmetrics_str[?]", n) or nil
  local keep, cacheable = hold({}), true
  for i = 1, n do
    local v = lv[i]
    local t = type(v)
    if t ~= "string" then
      if t == "number" or t == "boolean" then
        cacheable = cacheable and is_key(v)
        v = tostring(v)
      else
        let_go()
        self:_fail(what, "label value " .. i .. " is a " .. t .. ", not a string or number")
        return nil
      end
    end
    keep[i] = v
    vals[i - 1].ptr, vals[i - 1].len = v, #v
  end
  return vals, keep, cacheable
end

-- After the store refused a label value as not UTF-8: cuts each such
-- value at its first invalid byte, as nginx-lua-prometheus does, counts
-- and logs it, and points `vals` at the cut values.
local function cut_to_utf8(self, what, vals, keep)
  for i = 1, #keep do
    local cut = utf8_prefix(keep[i])
    if cut ~= keep[i] then
      self:_fail(what, "label value " .. i .. " is not valid UTF-8; cut to " .. string.format("%q", cut))
      keep[i] = cut
      vals[i - 1].ptr, vals[i - 1].len = cut, #cut
    end
  end
end

-- shmetrics_series_get, registering the family again (once) if the store
-- was wiped since this worker registered it. Nil after counting a failed
-- registration.
function Metric:_get(vals, n, s)
  local rc = C.shmetrics_series_get(self.store, self.family, vals, n, s)
  if rc == STALE_HANDLE then
    local ok, err = self:_register()
    if not ok then
      self:_fail("register", err)
      return nil
    end
    rc = C.shmetrics_series_get(self.store, self.family, vals, n, s)
  end
  return rc
end

-- Whether the store would refuse the value `v` (a number) of an update:
-- NaN always, a negative counter increment. The store checks every
-- update; this check runs only before a series is created, so that an
-- update the store refuses creates no series (as in nginx-lua-prometheus).
function Metric:_refuses(v, what)
  if v ~= v then
    self:_fail(what, "the value is NaN")
    return true
  end
  if v < 0 and self.kind == 1 then
    self:_fail(what, "a counter only goes up; got " .. tostring(v))
    return true
  end
  return false
end

-- The slow path: checks the values, asks the store for the series
-- (creating it if need be) and remembers the handle. `v`, the update's
-- value, creates no series if the store would refuse it.
function Metric:_miss(lv, v)
  local n = self.nlabels
  local got = 0
  if lv ~= nil then
    if type(lv) ~= "table" then
      self:_fail("labels", "label values must be a table, got " .. type(lv))
      return nil
    end
    got = #lv
  end
  if got ~= n or (lv ~= nil and lv[n + 1] ~= nil) then
    self:_fail("labels", "expected " .. n .. " label values (" .. table.concat(self.label_names, ", ")
               .. "), got " .. got)
    return nil
  end
  if v ~= nil and self:_refuses(v, "update") then return nil end
  local vals, keep, cacheable = label_strs(self, "labels", lv, n)
  if keep == nil then return nil end
  local s = ffi_new("shmetrics_series")
  local rc = self:_get(vals, n, s)
  if rc == INVALID_UTF8 then
    cut_to_utf8(self, "labels", vals, keep)
    cacheable = false -- so that each such update is counted
    rc = self:_get(vals, n, s)
  end
  let_go()
  if rc == nil then return nil end
  if rc ~= OK and rc ~= OVERFLOW then
    self:_fail("labels", last_error(rc))
    return nil
  end
  -- On OVERFLOW `s` is the family's overflow series: record into it (the
  -- store counts overflows; the exporter reports them).
  if n == 0 then
    self.nolabels = s
  elseif cacheable then
    self:_remember(lv, n, s)
  end
  return s
end

-- Caches the handle `s` for the label values `lv`, emptying the cache
-- first when it is full.
function Metric:_remember(lv, n, s)
  if self.cached >= self.cache_limit then
    self.cache, self.cached = {}, 0
  end
  local node = self.cache
  for i = 1, n - 1 do
    local k = lv[i]
    local next_node = node[k]
    if next_node == nil then
      next_node = {}
      node[k] = next_node
    end
    node = next_node
  end
  node[lv[n]] = s
  self.cached = self.cached + 1
end

-- Runs an update, and handles its failure: a stale handle (the store was
-- wiped, or the series expired: its family has a TTL) is retried once
-- with the series looked up again (an expired one comes back from zero);
-- anything else is counted.
function Metric:_retry(rc, fn, v, lv, what)
  if rc == STALE_HANDLE then
    self.cache, self.cached, self.nolabels = {}, 0, nil
    local s = series(self, lv, v)
    if s == nil then return end
    rc = fn(self.store, s, v)
    if rc == OK then return end
  end
  self:_fail(what, last_error(rc))
end

-- Deletes the series with these label values, in every worker's view.
-- Another worker that still holds its handle finds it stale at its next
-- update and recreates the series (see docs/lua.md).
function Metric:del(lv)
  local n = self.nlabels
  if (lv == nil and n ~= 0) or (lv ~= nil and (type(lv) ~= "table" or #lv ~= n)) then
    self:_fail("del", "expected " .. n .. " label values")
    return
  end
  local vals, keep = label_strs(self, "del", lv or {}, n)
  if keep == nil then return end
  local existed = ffi_new("bool[1]")
  local rc = C.shmetrics_series_delete(self.store, self.family, vals, n, existed)
  if rc == INVALID_UTF8 then
    cut_to_utf8(self, "del", vals, keep)
    rc = C.shmetrics_series_delete(self.store, self.family, vals, n, existed)
  end
  let_go()
  self.cache, self.cached, self.nolabels = {}, 0, nil
  if rc ~= OK then
    self:_fail("del", last_error(rc))
  end
end

-- Deletes every series of this metric.
function Metric:reset()
  local deleted = ffi_new("size_t[1]")
  local rc = C.shmetrics_family_clear(self.store, self.family, deleted)
  self.cache, self.cached, self.nolabels = {}, 0, nil
  if rc ~= OK then
    self:_fail("reset", last_error(rc))
  end
end

-- An update's value: `value` as a number, or `default` when `value` is
-- nil and there is a default; nil (counted and logged) if it is no number.
-- A local function, as series(): the hot path makes no method lookups.
local function value_of(self, what, value, default)
  if value == nil and default ~= nil then return default end
  local v = num(value)
  if v == nil then self:_fail(what, "the value is not a number") end
  return v
end

-- What every update method does: find the series, take the value
-- (`default` when it is nil and there is a default), make the call. A
-- stale handle is retried once; any other failure is counted and logged.
local function update(self, what, fn, value, default, lv)
  local v = value_of(self, what, value, default)
  if v == nil then return end
  local s = series(self, lv, v)
  if s == nil then return end
  local rc = fn(self.store, s, v)
  if rc ~= OK then self:_retry(rc, fn, v, lv, what) end
end

-- An update with an exemplar (`exemplar`, a table of label names to
-- values): as update(), with the exemplar's labels as two arrays for `fn`
-- (shmetrics_counter_add_exemplar or shmetrics_observe_exemplar). The
-- store checks them; a refused exemplar refuses the update too. Off the
-- hot path: updates without an exemplar never come here.
local function update_exemplar(self, what, fn, value, default, lv, exemplar)
  local v = value_of(self, what, value, default)
  if v == nil then return end
  local s = series(self, lv, v)
  if s == nil then return end
  if type(exemplar) ~= "table" then
    self:_fail(what, "the exemplar must be a table of label names to values, got " .. type(exemplar))
    return
  end
  local names, n = {}, 0
  for k in pairs(exemplar) do
    if type(k) ~= "string" then
      self:_fail(what, "exemplar label names must be strings, got a " .. type(k))
      return
    end
    n = n + 1
    names[n] = k
  end
  -- A Lua table has no order: sorted, the exemplar's labels are shown in
  -- the same order every time.
  table.sort(names)
  local cn = n > 0 and ffi_new("shmetrics_str[?]", n) or nil
  local cv = n > 0 and ffi_new("shmetrics_str[?]", n) or nil
  hold({}) -- the values made by tostring() below
  for i = 1, n do
    local k = names[i]
    local x = exemplar[k]
    local t = type(x)
    if t ~= "string" then
      if t == "number" or t == "boolean" then
        x = tostring(x)
      else
        let_go()
        self:_fail(what, "exemplar label " .. k .. " is a " .. t .. ", not a string or number")
        return
      end
    end
    anchor(x)
    cn[i - 1].ptr, cn[i - 1].len = k, #k
    cv[i - 1].ptr, cv[i - 1].len = x, #x
  end
  local rc = fn(self.store, s, v, cn, cv, n)
  if rc == STALE_HANDLE then
    self.cache, self.cached, self.nolabels = {}, 0, nil
    s = series(self, lv, v)
    if s == nil then
      let_go()
      return
    end
    rc = fn(self.store, s, v, cn, cv, n)
  end
  let_go()
  if rc ~= OK then
    local msg = last_error(rc)
    if rc == INVALID_OPTIONS then
      msg = msg .. " (create the metric with the option exemplars = true)"
    end
    self:_fail(what, msg)
  end
end

local Counter = setmetatable({}, { __index = Metric })
Counter.__index = Counter

-- Adds `value` (default 1; negative, NaN or +Inf is an error) to the series.
-- `exemplar` (optional; a counter created with {exemplars = true}) is a
-- table of label names to values, e.g. {trace_id = "..."}: the latest is
-- shown with the series in the OpenMetrics exposition.
function Counter:inc(value, lv, exemplar)
  if exemplar ~= nil then
    return update_exemplar(self, "inc", C.shmetrics_counter_add_exemplar, value, 1, lv, exemplar)
  end
  return update(self, "inc", C.shmetrics_counter_add, value, 1, lv)
end

local Gauge = setmetatable({}, { __index = Metric })
Gauge.__index = Gauge

-- Sets the series to `value` (NaN is an error).
function Gauge:set(value, lv)
  return update(self, "set", C.shmetrics_gauge_set, value, nil, lv)
end

-- Adds `value` (default 1, may be negative) to the series.
function Gauge:inc(value, lv)
  return update(self, "inc", C.shmetrics_gauge_add, value, 1, lv)
end

-- Subtracts `value` (default 1) from the series.
function Gauge:dec(value, lv)
  local v = num(value or 1)
  if v == nil then
    self:_fail("dec", "the value is not a number")
    return
  end
  return self:inc(-v, lv)
end

local Histogram = setmetatable({}, { __index = Metric })
Histogram.__index = Histogram

-- Records one observation (NaN is an error). `exemplar` (optional; a
-- histogram created with {exemplars = true}) is a table of label names to
-- values, e.g. {trace_id = "..."}: the latest of each bucket is shown in
-- the OpenMetrics exposition.
function Histogram:observe(value, lv, exemplar)
  if exemplar ~= nil then
    return update_exemplar(self, "observe", C.shmetrics_observe_exemplar, value, nil, lv, exemplar)
  end
  return update(self, "observe", C.shmetrics_observe, value, nil, lv)
end

----------------------------------------------------------------------------
-- The registry: what init() returns.

local Prometheus = {}
Prometheus.__index = Prometheus

-- The methods the hot path calls, which _metric() copies into each
-- metric (the ones its class has).
local UPDATE_METHODS = { "inc", "dec", "set", "observe" }

-- A copy of the list `t` (nil: empty), whose items must be of Lua type
-- `item` ("string", "number"): anything else raises the binding's error
-- here, not a conversion error deep in the C ABI's structs.
local function copy_list(t, what, item)
  local out = {}
  if t == nil then return out end
  if type(t) ~= "table" then
    error("shmetrics: " .. what .. " must be a table", 4)
  end
  for i = 1, #t do
    if type(t[i]) ~= item then
      error("shmetrics: " .. what .. " must be a table of " .. item .. "s, item " .. i
            .. " is a " .. type(t[i]), 4)
    end
    out[i] = t[i]
  end
  return out
end

function Prometheus:_metric(class, kind, name, help, label_names, extra)
  if type(name) ~= "string" then
    error("shmetrics: a metric name must be a string", 3)
  end
  if help ~= nil and type(help) ~= "string" then
    error("shmetrics: " .. name .. ": help must be a string", 3)
  end
  local m = setmetatable({
    registry = self,
    store = self.store,
    name = self.prefix .. name,
    help = help or "",
    kind = kind,
    label_names = copy_list(label_names, "label names", "string"),
    cache_limit = self.label_cache_size,
  }, class)
  m.nlabels = #m.label_names
  for k, v in pairs(extra) do m[k] = v end
  -- The update methods as the metric's own fields: `m:inc(...)` then
  -- finds `inc` in the first table it looks in, one lookup at a slot
  -- the JIT knows, where through the metatable it makes three (a miss
  -- in `m`, its metatable, the class), about 30 instructions per update.
  for _, k in ipairs(UPDATE_METHODS) do m[k] = class[k] end
  local ok, err = m:_register()
  if not ok then
    self:_error(m.name .. ": register: " .. err)
    error("shmetrics: cannot register " .. m.name .. ": " .. err, 3)
  end
  self.metrics[#self.metrics + 1] = m
  return m
end

-- A series TTL in seconds as the C ABI's ttl_ms (nil for none). The store
-- checks the range (0.1 s to about 49 days).
local function ttl_ms(name, what, seconds)
  local s = tonumber(seconds)
  if s == nil or s ~= s or s <= 0 or s == math.huge then
    error("shmetrics: " .. tostring(name) .. ": " .. what
          .. " must be a positive number of seconds, got " .. tostring(seconds), 4)
  end
  return math.max(1, math.floor(s * 1000 + 0.5))
end

-- nginx-lua-prometheus's 4th argument is `exptime`: seconds after which a
-- series that was not updated goes away (nil or 0: never, as in
-- ngx.shared.DICT). That is the store's series TTL.
local function exptime_ms(name, exptime)
  if exptime == nil or exptime == 0 then return nil end
  return ttl_ms(name, "exptime", exptime)
end

-- options.ttl: the series TTL in seconds, or nil for none.
local function ttl_option(name, options)
  if options.ttl == nil then return nil end
  return ttl_ms(name, "options.ttl", options.ttl)
end

-- options.exemplars, as given: true, false or nil. The store refuses it
-- where it does not apply (gauges, summaries, native-only histograms).
local function exemplars_option(name, options)
  local e = options.exemplars
  if e ~= nil and type(e) ~= "boolean" then
    error("shmetrics: " .. tostring(name) .. ": options.exemplars must be true or false", 3)
  end
  return e
end

-- Errors for keys of `options` not in `known`.
local function check_options(name, what, options, known)
  for k in pairs(options) do
    if not known[k] then
      error("shmetrics: " .. tostring(name) .. ": unknown " .. what .. " option '" .. tostring(k) .. "'", 3)
    end
  end
end

-- counter(name, help, label_names [, options]) registers a counter. A
-- trailing `_total` is kept in the exposed name, not doubled.
-- options.exemplars = true keeps OpenMetrics exemplars, which inc() then
-- takes. options.ttl (seconds) makes series that no worker updated for
-- that long expire; a number in place of options is nginx-lua-prometheus's
-- exptime, the same.
function Prometheus:counter(name, help, label_names, options)
  local extra = {}
  if type(options) == "table" then
    check_options(name, "counter", options, { exemplars = true, ttl = true })
    extra.exemplars = exemplars_option(name, options)
    extra.ttl_ms = ttl_option(name, options)
  else
    extra.ttl_ms = exptime_ms(name, options)
  end
  return self:_metric(Counter, 1, name, help, label_names, extra)
end

-- gauge(name, help, label_names [, options]) registers a gauge. Like
-- nginx-lua-prometheus's, it is one value shared by all workers
-- (`mode = "shared"`, the default); options.mode may be any of the store's
-- multi-process modes ("livesum", "max", ...), see docs/lua.md.
-- options.ttl, or a number (exptime) in place of options: as counter().
function Prometheus:gauge(name, help, label_names, options)
  local mode = GAUGE_MODES.shared
  local exemplars, ttl
  if type(options) == "table" and options.mode ~= nil then
    mode = GAUGE_MODES[options.mode]
    if mode == nil then
      error("shmetrics: unknown gauge mode '" .. tostring(options.mode) .. "'", 2)
    end
  elseif type(options) ~= "table" and type(options) ~= "boolean" then
    -- (A boolean is the local_storage flag of Kong's fork of
    -- nginx-lua-prometheus: every gauge is in the store.)
    ttl = exptime_ms(name, options)
  end
  if type(options) == "table" then
    -- For the store to refuse: gauges keep no exemplars.
    exemplars = exemplars_option(name, options)
    ttl = ttl_option(name, options)
  end
  return self:_metric(Gauge, 2, name, help, label_names,
                      { gauge_mode = mode, exemplars = exemplars, ttl_ms = ttl })
end

-- The keys of a histogram's options.native: client_golang's
-- NativeHistogramBucketFactor, NativeHistogramZeroThreshold and
-- NativeHistogramMaxBucketNumber.
local NATIVE_OPTIONS = { bucket_factor = true, zero_threshold = true, max_bucket_number = true }
-- options.native as the C ABI's fields: the factor, the zero threshold
-- (0 for the default) and the bucket limit (0 for the default, UINT32_MAX
-- for none). The store checks the values.
local function native_desc(name, native)
  if type(native) ~= "table" then
    error("shmetrics: " .. name .. ": options.native must be a table", 3)
  end
  for k, v in pairs(native) do
    if not NATIVE_OPTIONS[k] then
      error("shmetrics: " .. name .. ": unknown native histogram option '" .. tostring(k)
            .. "'; the options are bucket_factor, zero_threshold, max_bucket_number", 3)
    end
    if type(v) ~= "number" then
      error("shmetrics: " .. name .. ": native histogram option " .. k .. " must be a number", 3)
    end
  end
  local max = native.max_bucket_number
  if max ~= nil and (max < 0 or max > 0xFFFFFFFF or max % 1 ~= 0) then
    error("shmetrics: " .. name .. ": max_bucket_number must be an integer from 0 to 2^32-1", 3)
  end
  return {
    bucket_factor = native.bucket_factor or 0, -- 0: the store's default (1.1)
    zero_threshold = native.zero_threshold or 0,
    max_buckets = max == nil and 0 or (max == 0 and 0xFFFFFFFF or max),
  }
end

-- histogram(name, help, label_names [, buckets [, options]]) registers a
-- histogram; buckets default to nginx-lua-prometheus's (M.DEFAULT_BUCKETS).
-- options.native (a table of bucket_factor, zero_threshold and
-- max_bucket_number, client_golang's options; {} for the defaults) adds
-- native (exponential) buckets, which Prometheus scrapes in the protobuf
-- format; without buckets the histogram is then native only.
-- options.exemplars = true keeps OpenMetrics exemplars in the classic
-- buckets, which observe() then takes. options.ttl, or a number (exptime)
-- in place of options: as counter().
function Prometheus:histogram(name, help, label_names, buckets, options)
  local extra = {}
  if type(options) == "table" then
    check_options(name, "histogram", options, { native = true, exemplars = true, ttl = true })
    if options.native ~= nil then
      extra.native = native_desc(tostring(name), options.native)
    end
    extra.exemplars = exemplars_option(name, options)
    extra.ttl_ms = ttl_option(name, options)
  else
    extra.ttl_ms = exptime_ms(name, options)
  end
  if buckets ~= nil or extra.native == nil then
    extra.buckets = copy_list(buckets or M.DEFAULT_BUCKETS, "buckets", "number")
  end
  return self:_metric(Histogram, 3, name, help, label_names, extra)
end

-- summary(name, help, label_names [, options]) registers a summary, which
-- nginx-lua-prometheus does not have. Its count and sum cover every
-- observation; options.quantiles (e.g. {0.5, 0.9, 0.99}) adds quantiles
-- over a sliding window of options.max_age seconds (default 600) in
-- options.age_buckets periods (default 5), merged across workers: exact
-- while each period of each worker saw at most 16 observations, else each
-- within 0.99% of the exact value. It is observed like a histogram.
-- options.ttl: as counter().
function Prometheus:summary(name, help, label_names, options)
  local extra = {}
  if options ~= nil then
    if type(options) ~= "table" then
      error("shmetrics: summary options must be a table", 2)
    end
    if options.quantiles ~= nil then
      extra.quantiles = copy_list(options.quantiles, "quantiles", "number")
    end
    if options.max_age ~= nil then
      local ms = tonumber(options.max_age)
      -- The C ABI's max_age_ms is a uint64_t: past 2^53 ms (285,000
      -- years) a double no longer holds every whole number.
      if ms == nil or ms ~= ms or ms <= 0 or ms * 1000 >= 2 ^ 53 then
        error("shmetrics: summary max_age must be a positive number of seconds, under 2^53 ms", 2)
      end
      extra.max_age_ms = math.floor(ms * 1000 + 0.5)
    end
    local ab = options.age_buckets
    if ab ~= nil and (type(ab) ~= "number" or ab < 1 or ab > 0xFFFFFFFF or ab % 1 ~= 0) then
      error("shmetrics: summary age_buckets must be a whole number from 1 to 2^32-1", 2)
    end
    extra.age_buckets = ab
    -- For the store to refuse: summaries keep no exemplars.
    extra.exemplars = exemplars_option(name, options)
    extra.ttl_ms = ttl_option(name, options)
  end
  return self:_metric(Histogram, 4, name, help, label_names, extra)
end

-- Counts an error in the error counter and logs it.
function Prometheus:_error(msg)
  if self.errors_series then
    C.shmetrics_counter_inc(self.store, self.errors_series)
  end
  self.log("shmetrics: " .. msg)
end

-- The whole store's exposition in format `f` (FORMATS) as a string and
-- its content type, or nil and the error.
function Prometheus:_render(f)
  local buf = ffi_new("shmetrics_buf*[1]")
  local rc = C.shmetrics_render_alloc(self.store, f, buf)
  if rc ~= OK then
    return nil, last_error(rc)
  end
  local b = buf[0]
  local s = ffi_string(C.shmetrics_buf_data(b), C.shmetrics_buf_len(b))
  C.shmetrics_buf_free(b)
  return s, ffi_string(C.shmetrics_format_content_type(f))
end

-- The whole store's exposition as an array of lines, each ending in a
-- newline, as nginx-lua-prometheus returns it (callers such as APISIX's
-- plugin table.concat it): "prometheus" (text 0.0.4, the default) or
-- "openmetrics". Nil and the error if the store cannot be read. A
-- function in place of the format (the write_fn of Kong's fork) is
-- called with the text exposition instead, and nothing is returned.
-- Rendering runs in the calling worker; for a busy server, let the
-- exporter serve scrapes instead.
function Prometheus:metric_data(format)
  if type(format) == "function" then
    local lines = self:metric_data()
    if lines then format(table.concat(lines)) end
    return
  end
  local f = FORMATS[format or "prometheus"]
  if f == nil then
    error("shmetrics: unknown format '" .. tostring(format) .. "'", 2)
  end
  self:follow()
  local body, err = self:_render(f)
  if body == nil then
    self:_error("metric_data: " .. err)
    return nil, err
  end
  local lines, n = {}, 0
  for line in body:gmatch("[^\n]*\n") do
    n = n + 1
    lines[n] = line
  end
  return lines
end

-- Serves the exposition from nginx (content_by_lua), as
-- nginx-lua-prometheus's collect() does, rendered by the core, in the
-- format the core negotiates from the Accept header (as the exporter does).
function Prometheus:collect()
  self:follow()
  local accept = ngx.var.http_accept
  local f = C.shmetrics_negotiate(accept, accept and #accept or 0)
  local body, ctype = self:_render(f == FORMATS.openmetrics and f or FORMATS.prometheus)
  if body == nil then
    self:_error("collect: " .. ctype)
    ngx.status = 500
    ngx.say("shmetrics: ", ctype)
    return
  end
  ngx.header["Content-Type"] = ctype
  ngx.print(body)
end

----------------------------------------------------------------------------
-- Following a replaced store file.
--
-- A worker keeps its store handle while the path names its file. If the
-- file at the path is replaced (removed and created again, or another
-- file moved there), the exporter serves the new file, and updates
-- through the old handle would be lost to it. So, at most every
-- `follow_interval` seconds, off the update path (a timer every worker
-- runs, and each metric_data() and collect()), the registry asks the
-- library what the path names now (one fstat and one lstat), and when it
-- is another file opens it and looks every metric's family up again
-- there; the series handles cached in the metrics are dropped and looked
-- up again at their next update, and the old handle is closed, which
-- unmaps the old file. A path that names nothing (the file was removed,
-- not created again) is left alone: updates go on into the old file.

-- The current handle of each path and the registries on it, shared by
-- every init() of the path in this Lua VM: { store, options, registries,
-- next_check }.
local PATHS = {}

local function now_seconds()
  if ngx and ngx.now then
    ngx.update_time()
    return ngx.now()
  end
  return os.time()
end

-- Points every metric of `reg` at `store` and registers their families
-- there again; each metric's cached series are dropped.
function Prometheus:_reattach(store)
  self.store = store
  for _, m in ipairs(self.metrics) do
    m.store = store
    local ok, err = m:_register()
    if not ok then self:_error(m.name .. ": register after the store was replaced: " .. err) end
  end
  self.errors_series = self.errors:_series(nil)
end

-- Opens the path again if it names another file than this worker's
-- handle now; at most once per `follow_interval` unless `force`. Returns
-- true if it switched to a new file.
function Prometheus:follow(force)
  local shared = PATHS[self.path]
  if shared.store ~= self.store then
    -- Another registry on the path switched already.
    self:_reattach(shared.store)
    return true
  end
  local now = now_seconds()
  if not force and now < shared.next_check then return false end
  shared.next_check = now + self.follow_interval
  local what = ffi_new("shmetrics_path_now[1]")
  local rc = C.shmetrics_store_path_now(shared.store, what)
  if rc ~= OK then
    self:_error("follow: " .. last_error(rc))
    return false
  end
  if what[0] ~= C.SHMETRICS_PATH_OTHER then return false end
  local st = ffi_new("shmetrics_store*[1]")
  -- The process's handle of the path, shared with the other Lua VMs of
  -- this worker (nginx runs one for `http` and one for `stream`): the
  -- first VM to follow opens the new file, the others get its handle.
  rc = C.shmetrics_store_reopen_persistent(self.path, #self.path, shared.options, st)
  if rc ~= OK then
    self:_error("follow: cannot open the replaced store " .. self.path .. ": " .. last_error(rc))
    return false
  end
  local old = shared.store
  shared.store = st[0]
  for _, reg in ipairs(shared.registries) do
    reg:_reattach(shared.store)
  end
  -- Nothing in this VM refers to the old handle any more: every registry
  -- on the path (all of this VM's, through PATHS) and its metrics moved
  -- to the new one above, and dropped their cached series handles. This
  -- VM's reference goes back to the library, which unmaps the old file
  -- (and, if it was removed, its memory) once the last VM of the worker
  -- that held it has followed too.
  C.shmetrics_store_close_persistent(old)
  return true
end

-- The store's fill and writer slots (shmetrics_stats) as a table.
function Prometheus:stats()
  local st = ffi_new("shmetrics_stats")
  local rc = C.shmetrics_store_stats(self.store, st)
  if rc ~= OK then
    return nil, last_error(rc)
  end
  local out = {}
  for _, k in pairs({ "layout_version", "families", "families_capacity", "series_allocated",
                      "series_capacity", "writers_capacity", "writers_live", "writers_dead",
                      "file_size", "label_bytes_used", "label_bytes_capacity", "cells_used",
                      "cells_capacity", "writer_claims_total", "writer_reuses_total",
                      "writers_exhausted_total", "overflows_total", "lock_recoveries_total",
                      "sketch_cells_used", "sketch_cells_capacity", "series_expired_total" }) do
    out[k] = tonumber(st[k])
  end
  return out
end

local function parse_mode(m)
  if type(m) == "string" then
    local v = tonumber(m, 8)
    if v == nil then error("shmetrics: mode '" .. m .. "' is not an octal number", 4) end
    return v
  end
  return m
end

-- A new store's capacities where the core's defaults are smaller than
-- what nginx-lua-prometheus users keep in a shared dict (a 512 MB dict
-- holds some 250,000 series): room for 262,144 series and 64 MiB of
-- names and label values. The file is sparse: pages cost memory only
-- once written. See "Sizing a store" in docs/lua.md.
M.DEFAULT_CAPACITIES = { max_series = 262144, label_bytes = 64 * 1024 * 1024 }

local CAPACITIES = { "max_families", "max_series", "label_bytes", "max_writers",
                     "cells_per_writer", "sketch_cells_per_writer" }

-- Sets the integer field `k` (a capacity, the mode) of the C ABI's
-- options `o` to `v`, a whole number that the field holds exactly: LuaJIT
-- would store -1 as 4294967295 and 2^32 + 5 as 5 in a uint32_t, and drop
-- a fraction.
local function set_whole(o, k, v)
  if type(v) == "number" and v >= 0 and v == math.floor(v) then
    o[k] = v
    if tonumber(o[k]) == v then return end
  end
  local max = type(o[k]) == "cdata" and "2^64 - 1" or "4294967295"
  error("shmetrics: init: option " .. k .. " must be a whole number from 0 to " .. max
        .. ", got " .. tostring(v), 4)
end

-- The C ABI's options for init()'s `options`.
local function store_options(options)
  local o = ffi_new("shmetrics_options")
  C.shmetrics_options_default(o)
  if options.create ~= nil then o.create = options.create and 1 or 0 end
  if options.mode ~= nil then set_whole(o, "mode", parse_mode(options.mode)) end
  for _, k in ipairs(CAPACITIES) do
    local v = options[k]
    if v == nil then v = M.DEFAULT_CAPACITIES[k] end
    if v ~= nil then set_whole(o, k, v) end
  end
  return o
end

-- init()'s arguments checked: the path, and the options table (a string
-- in its place is nginx-lua-prometheus's legacy prefix).
local function init_args(path, options)
  if type(path) ~= "string" or path == "" then
    error("shmetrics: init(path, options): path must be the store file's path", 3)
  end
  if not path:find("/", 1, true) then
    error("shmetrics: init(\"" .. path .. "\"): init takes the store file's path now, not the name"
          .. " of a lua_shared_dict; for example init(\"/dev/shm/nginx.metrics\") (see docs/lua.md,"
          .. " Migrating from nginx-lua-prometheus)", 3)
  end
  if type(options) == "string" then return { prefix = options } end
  options = options or {}
  if type(options) ~= "table" then
    error("shmetrics: init(path, options): options must be a table or a prefix", 3)
  end
  return options
end

-- init(path [, options]) opens (creating if need be) the store at `path`
-- (a path: a name without a "/", nginx-lua-prometheus's shared dict
-- name, raises) and returns the registry. Call it in init_worker_by_lua,
-- so that every worker opens the store itself. Options (a string in their
-- place is the prefix, as in nginx-lua-prometheus):
--   prefix             prepended to every metric name, the error counter's too ("")
--   error_metric_name  the counter of metric errors ("nginx_metric_errors_total")
--   label_cache_size   label-value combinations each metric caches (10000)
--   log                function(msg) for errors (ngx.log at ERR, or stderr)
--   create             create the store if missing (true)
--   follow_interval    seconds between checks that the path still names the
--                      file this worker writes to (1; 0: at every
--                      metric_data() and collect(), and no timer); see follow()
--   mode               the new store file's mode, "0600" or "0660" ("0600")
--   max_families, max_series, label_bytes, max_writers, cells_per_writer,
--   sketch_cells_per_writer
--                      a new store's capacities (M.DEFAULT_CAPACITIES, else
--                      the core's defaults)
--   library, cdef      where libshmetrics.so and shmetrics.cdef.h are
function M.init(path, options)
  options = init_args(path, options)
  load(options)
  -- One handle per path in this Lua VM: init() again (from another
  -- module, or in init_by_lua and then init_worker_by_lua) shares it, as
  -- it does the handle follow() switched to. The first is the library's
  -- persistent handle of the path, which outlives the VM (nginx makes a
  -- new one at each reload) rather than being mapped again by each, and
  -- which the process's other Lua VMs share. It is the handle of the file
  -- the path names now: after a reload (HUP) the master, whose library
  -- still holds the handle of its first init, gets a handle of the file
  -- that replaced it, if one did, and hands that to its new workers. A
  -- worker forked from the master claims its own writer slot at its
  -- first update.
  local shared = PATHS[path]
  if shared == nil then
    local o = store_options(options)
    local st = ffi_new("shmetrics_store*[1]")
    local rc = C.shmetrics_store_reopen_persistent(path, #path, o, st)
    if rc ~= OK then
      error("shmetrics: cannot open the store " .. path .. ": " .. last_error(rc), 2)
    end
    shared = { store = st[0], options = o, registries = {}, next_check = 0 }
    PATHS[path] = shared
  end
  local self = setmetatable({
    path = path,
    store = shared.store,
    prefix = options.prefix or "",
    label_cache_size = options.label_cache_size or DEFAULT_LABEL_CACHE_SIZE,
    log = options.log or default_log,
    follow_interval = options.follow_interval or 1,
    metrics = {},
  }, Prometheus)
  for k, want in pairs({ prefix = "string", error_metric_name = "string", log = "function" }) do
    if options[k] ~= nil and type(options[k]) ~= want then
      error("shmetrics: init: option " .. k .. " must be a " .. want .. ", got a " .. type(options[k]), 2)
    end
  end
  if type(self.label_cache_size) ~= "number" or self.label_cache_size < 1 then
    error("shmetrics: label_cache_size must be a positive number", 2)
  end
  local fi = self.follow_interval
  if type(fi) ~= "number" or fi ~= fi or fi < 0 then
    error("shmetrics: follow_interval must be a number of seconds, 0 or more", 2)
  end
  -- The prefix applies to the error counter too, as in
  -- nginx-lua-prometheus (which prefixes every name on output).
  local errors = self:_metric(Counter, 1, options.error_metric_name or "nginx_metric_errors_total",
    "Number of nginx-lua-prometheus errors", {}, {})
  self.errors_series = errors:_series(nil)
  self.errors = errors
  shared.registries[#shared.registries + 1] = self
  self:_start_following()
  return self
end

-- nginx-lua-prometheus's init_worker(sync_interval), for configurations
-- that call init() in init_by_lua and this in init_worker_by_lua. Nothing
-- is buffered per worker (a worker claims its writer slot at its first
-- update), so there is nothing to start: it only returns.
function Prometheus:init_worker(_sync_interval)
  self:_start_following()
end

-- In an nginx worker (init_worker_by_lua), a timer that follows a
-- replaced store file every `follow_interval` seconds (see follow()).
-- Elsewhere (init_by_lua, plain LuaJIT) nothing: metric_data() and
-- collect() still follow.
function Prometheus:_start_following()
  if self.following or self.follow_interval == 0 then return end
  if not (ngx and ngx.timer and ngx.get_phase and ngx.get_phase() == "init_worker") then return end
  local ok, err = ngx.timer.every(self.follow_interval, function(premature)
    if not premature then self:follow(true) end
  end)
  if not ok then
    self:_error("cannot start the timer that follows a replaced store: " .. tostring(err))
    return
  end
  self.following = true
end

-- The description of a result code (for tests and diagnostics).
function M.strerror(code)
  if not C then error("shmetrics: call init() first", 2) end
  if type(code) ~= "number" or code < 0 or code > 0xFFFFFFFF or code % 1 ~= 0 then
    error("shmetrics: strerror(code): code must be a whole number from 0 to 2^32-1", 2)
  end
  return ffi_string(C.shmetrics_strerror(code))
end

return M
