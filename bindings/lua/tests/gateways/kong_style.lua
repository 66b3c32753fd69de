-- A gateway's metrics exporter written for tests/test_gateways.py in the
-- shape of Kong's prometheus plugin (kong/plugins/prometheus/
-- exporter.lua): nginx-lua-prometheus's API, init() in init_by_lua (the
-- master process) with a legacy string prefix and init_worker() in
-- init_worker_by_lua, the updates made from the log phase from a
-- serialized request (a table), and the page served by collect(). It is
-- written against nginx-lua-prometheus ("prometheus", a shared dict); the
-- test changes only the require and the init line to run it on shmetrics.
local _M = {}

local prometheus
local metrics = {}

local LATENCY_BUCKETS = { 1, 2, 5, 7, 10, 15, 20, 30, 50, 75, 100, 200, 500, 750, 1000 }

-- init_by_lua: the plugin's metrics.
function _M.init()
  prometheus = require("prometheus").init("prometheus_metrics", "kong_")
  metrics.connections = prometheus:gauge("nginx_connections_total",
    "Number of connections by subsystem", { "node_id", "subsystem", "state" })
  metrics.status = prometheus:counter("http_requests_total",
    "HTTP status codes per consumer/service/route in Kong",
    { "service", "route", "code", "source", "workspace", "consumer" })
  metrics.kong_latency = prometheus:histogram("kong_latency_ms",
    "Latency added by Kong and enabled plugins for each service/route in Kong",
    { "service", "route", "workspace" }, LATENCY_BUCKETS)
  metrics.total_latency = prometheus:histogram("request_latency_ms",
    "Total latency incurred during requests for each service/route in Kong",
    { "service", "route", "workspace" }, LATENCY_BUCKETS)
  metrics.bandwidth = prometheus:counter("bandwidth_bytes",
    "Total bandwidth (ingress/egress) throughput in bytes",
    { "service", "route", "direction", "workspace", "consumer" })
end

-- init_worker_by_lua.
function _M.init_worker()
  prometheus:init_worker()
end

-- The serialized request a log phase hands to the plugin.
function _M.serialize()
  local var = ngx.var
  return {
    service = { name = "svc" }, route = { name = var.uri }, workspace = "default",
    response = { status = ngx.status, size = tonumber(var.bytes_sent) },
    request = { size = tonumber(var.request_length) },
    latencies = { kong = 0.5, request = (ngx.now() - ngx.req.start_time()) * 1000 },
  }
end

-- log_by_lua: one request's metrics.
function _M.log(message)
  local service, route, ws = message.service.name, message.route.name, message.workspace
  local labels = { service, route, message.response.status, "service", ws, "" }
  metrics.status:inc(1, labels)
  metrics.bandwidth:inc(message.request.size, { service, route, "ingress", ws, "" })
  metrics.bandwidth:inc(message.response.size, { service, route, "egress", ws, "" })
  metrics.kong_latency:observe(message.latencies.kong, { service, route, ws })
  metrics.total_latency:observe(message.latencies.request, { service, route, ws })
end

-- content_by_lua of the metrics page.
function _M.collect()
  local var = ngx.var
  for _, state in ipairs({ "active", "reading", "writing", "waiting" }) do
    metrics.connections:set(tonumber(var["connections_" .. state]) or 0, { "node-1", "http", state })
  end
  prometheus:collect()
end

return _M
