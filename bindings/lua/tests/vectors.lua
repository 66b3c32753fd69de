-- The shared test vectors (tests/vectors/updates.json) through the Lua API.
-- The C ABI, Python and PHP run the same file; all must render the same
-- text. Errors in updates are not raised in Lua: each must be counted in
-- the error counter. Run from bindings/lua, as tests/unit.lua.
package.path = "./?.lua;./tests/?.lua;" .. package.path

local cjson = require("cjson")
local H = require("helper")
local shmetrics = require("shmetrics")

local vectors = cjson.decode(H.read("../../tests/vectors/updates.json"))

local function value(v)
  if v == "NaN" then return 0 / 0 end
  if v == "+Inf" then return math.huge end
  if v == "-Inf" then return -math.huge end
  return v
end

local function make(p, fam)
  if fam.kind == "counter" then
    -- The vectors' text names a counter `name_total`, as the other
    -- bindings do; Lua keeps a counter's name as given (as
    -- nginx-lua-prometheus does), so it is given with `_total`.
    local name = fam.name:match("_total$") and fam.name or fam.name .. "_total"
    return p:counter(name, fam.help, fam.labels, fam.exemplars and { exemplars = true } or nil)
  elseif fam.kind == "gauge" then
    return p:gauge(fam.name, fam.help, fam.labels, { mode = fam.mode })
  elseif fam.kind == "histogram" then
    local b
    if fam.buckets then
      b = {}
      for i, x in ipairs(fam.buckets) do b[i] = value(x) end
    end
    local options
    if fam.native or fam.exemplars then
      options = { exemplars = fam.exemplars }
      if fam.native then options.native = { bucket_factor = fam.native.bucket_factor } end
    end
    return p:histogram(fam.name, fam.help, fam.labels, b, options)
  elseif fam.kind == "summary" then
    local qs = {}
    for i, x in ipairs(fam.quantiles or {}) do qs[i] = value(x) end
    return p:summary(fam.name, fam.help, fam.labels, { quantiles = qs })
  end
  error("unknown kind " .. fam.kind)
end

local function apply(metrics, op)
  local m = metrics[op.family]
  local v = value(op.value)
  -- An exemplar's names come out of cjson in no order; the binding sorts
  -- them, and the vectors write them sorted.
  if op.op == "inc" then m:inc(v, op.labels, op.exemplar)
  elseif op.op == "set" then m:set(v, op.labels)
  elseif op.op == "observe" then m:observe(v, op.labels, op.exemplar)
  else error("unknown op " .. op.op) end
end

local ERRORS = "vector_errors_total"

-- The rendered text without the error counter's lines.
local function without_errors(text)
  local out = {}
  for line in text:gmatch("[^\n]*\n") do
    local name = line:match("^# %u+ (%S+)") or line:match("^([^{ ]+)")
    if name ~= ERRORS then out[#out + 1] = line end
  end
  return table.concat(out)
end

-- `text` with its `le` and `quantile` values as nginx-lua-prometheus
-- writes them (`le="1"`): the vectors write them in OpenMetrics' canonical
-- form (`le="1.0"`), and the binding's families have the short-bounds
-- hint (tests/vectors/README.md).
local function short_bounds(text)
  for _, label in ipairs({ "le", "quantile" }) do
    text = text:gsub("(%f[%w]" .. label .. '="%-?%d+)%.0"', '%1"')
  end
  return text
end

-- An OpenMetrics exposition as the vectors write it: without `_created`
-- samples, each exemplar's timestamp replaced by `T`; and here without the
-- error counter (`vector_errors` in OpenMetrics).
local function normalize_openmetrics(text)
  local out = {}
  local family = ERRORS:gsub("_total$", "")
  for line in text:gmatch("[^\n]*\n") do
    local name = line:match("^# %u+ (%S+)") or line:match("^([^{ ]+)")
    if name ~= family and name ~= ERRORS and not (name and name:find("_created$")) then
      if line:find(" # {", 1, true) then
        line = line:gsub(" %S+\n$", " T\n")
      end
      out[#out + 1] = line
    end
  end
  return table.concat(out)
end

for _, case in ipairs(vectors.cases) do
  H.test(case.name, function()
    local logged = {}
    local p = shmetrics.init(H.store_path("vec"), {
      error_metric_name = ERRORS,
      log = function(msg) logged[#logged + 1] = msg end,
    })
    local metrics = {}
    for _, fam in ipairs(case.families) do metrics[fam.name] = make(p, fam) end
    for _, op in ipairs(case.ops) do apply(metrics, op) end
    H.eq(#logged, 0, "errors from the valid ops: " .. table.concat(logged, "; "))
    for i, e in ipairs(case.errors) do
      apply(metrics, e)
      H.eq(#logged, i, "an error counted for " .. cjson.encode(e))
    end
    local text = table.concat(p:metric_data())
    H.eq(without_errors(text), short_bounds(case.text), "rendered text")
    H.eq(H.samples(text)[ERRORS], #case.errors, "the error counter")
    if case.openmetrics then
      H.eq(normalize_openmetrics(table.concat(p:metric_data("openmetrics"))), short_bounds(case.openmetrics),
        "OpenMetrics")
    end
  end)
end

-- The Lua binding registers under the legacy name rules (as
-- nginx-lua-prometheus checks names): every case, `legacy_only` ones too,
-- is refused.
for _, bad in ipairs(vectors.register_errors) do
  H.test("register error: " .. bad.family.name .. " / " .. bad.error, function()
    local p = shmetrics.init(H.store_path("vec"), { log = function() end })
    H.raises(function() make(p, bad.family) end, "cannot register")
  end)
end

H.run(arg[1])
