-- The steps of tests/two_vms.c, which runs them in several Lua VMs of one
-- process (the global VM names the VM). Run from bindings/lua.
-- luacheck: globals VM step
package.path = "./?.lua;./tests/?.lua;" .. package.path

local H = require("helper")
local shmetrics = require("shmetrics")

local PATH = assert(os.getenv("TWO_VMS_STORE"), "TWO_VMS_STORE: the store's path")
local reg, requests

local steps = {}

function steps.init()
  -- No timer and no check between steps: only the explicit follow() does.
  -- A small store: valgrind reads every mapped page at exit.
  reg = shmetrics.init(PATH, { follow_interval = 1e6, max_series = 256, label_bytes = 65536 })
  requests = reg:counter("vm_requests_total", "Requests by VM.", { "vm" })
end

function steps.inc()
  requests:inc(1, { VM })
end

-- Another store, with a series of its own, moved over the path.
local replaced = 0
function steps.replace()
  replaced = replaced + 1
  local other = PATH .. ".next" .. replaced
  local q = shmetrics.init(other, { max_series = 256, label_bytes = 65536 })
  q:counter("replacement_total", "Marks the replacing file."):inc(1)
  assert(os.rename(other, PATH))
end

function steps.follow()
  H.eq(reg:follow(true), true, VM .. " follows the replaced file")
end

local function samples()
  return H.samples(H.dump(PATH))
end

function steps.check_after_follow()
  local got = samples()
  H.eq(got.replacement_total, 1, "the new file is served")
  H.eq(got['vm_requests_total{vm="http"}'], 1, "http's update after its follow")
  H.eq(got['vm_requests_total{vm="stream"}'], 2, "stream's updates after its follow")
end

function steps.check_after_reload()
  local got = samples()
  H.eq(got.replacement_total, 1, "the second replacement is served")
  H.eq(got['vm_requests_total{vm="reloaded"}'], 1,
    "a VM made after the replacement writes into the new file before any follow")
end

function step(name) -- the host calls it
  assert(steps[name], "no step " .. name)()
end
