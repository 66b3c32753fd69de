-- The workload of the nginx-lua-prometheus pair (tests/migration/test_nginx_lua.py),
-- run unchanged by nginx-lua-prometheus and by shmetrics' Lua binding: only
-- the `init` line of the nginx.conf differs. Request `i` makes the same
-- updates on both sides, so after the same requests both hold the same values.
local M = {}

-- Label values with quotes, a backslash, a newline, UTF-8 and the empty string.
M.LABELS = { "plain", 'say "hi"', "back\\slash", "new\nline", "ütf-8 ✓ 日本", "" }

function M.define(prometheus)
  -- With `_total` (nginx-lua-prometheus's README) and without (APISIX's
  -- http_status, Kong's bandwidth_bytes).
  M.requests = prometheus:counter("http_requests_total", "Number of HTTP requests", { "route", "status" })
  M.status = prometheus:counter("http_status", "HTTP status codes per service", { "code", "service" })
  M.bytes = prometheus:counter("bandwidth_bytes", "Total bandwidth in bytes")
  M.connections = prometheus:gauge("connections", "Connections by state", { "state" })
  M.inflight = prometheus:gauge("inflight_units", "A gauge that only rises")
  -- Integer and fractional bounds, integer bounds only, and the default ones.
  M.latency = prometheus:histogram("request_duration_seconds", "HTTP request latency", { "route" },
    { 0.005, 0.25, 1, 2.5, 10 })
  M.size = prometheus:histogram("response_size_bytes", "Response sizes", nil, { 1, 10, 100, 1000 })
  M.default = prometheus:histogram("upstream_seconds", "Upstream latency, default buckets", { "service" })
end

function M.run(i)
  local v = M.LABELS[i % #M.LABELS + 1]
  local route = "/r" .. (i % 3)
  M.requests:inc(1, { route, tostring(200 + (i % 2) * 300) })
  M.status:inc(1, { tostring(200 + i % 4), v })
  M.bytes:inc((i % 7) + 0.25)
  -- Constant per label value: the same whichever worker sets it last.
  M.connections:set(#v + 0.5, { v })
  M.inflight:inc(0.5)
  M.latency:observe((i % 13) * 0.25, { route })
  M.size:observe(i % 1500)
  M.default:observe((i % 11) / 10, { v })
end

return M
