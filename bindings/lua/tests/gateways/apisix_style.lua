-- A gateway's metrics exporter written for tests/test_gateways.py in the
-- shape of APISIX's prometheus plugin (apisix/plugins/prometheus/
-- exporter.lua): nginx-lua-prometheus's API, a legacy string prefix, the
-- metrics defined in init_worker, counters named without `_total`, the
-- updates made from the log phase with ngx.var values (strings), and the
-- page made by table.concat of metric_data(). It is written against
-- nginx-lua-prometheus ("prometheus", a shared dict); the test changes
-- only the require and the init line to run it on shmetrics.
local base_prometheus = require("prometheus")

local concat = table.concat

local _M = {}

local prometheus
local metrics = {}

local DEFAULT_BUCKETS = { 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 30000, 60000 }

-- init_worker_by_lua: the plugin's metrics.
function _M.http_init()
  prometheus = base_prometheus.init("prometheus-metrics", "apisix_")
  metrics.connections = prometheus:gauge("nginx_http_current_connections",
    "Number of HTTP connections", { "state" })
  metrics.requests = prometheus:gauge("http_requests_total",
    "The total number of client requests since APISIX started")
  metrics.status = prometheus:counter("http_status",
    "HTTP status codes per service in APISIX",
    { "code", "route", "matched_uri", "matched_host", "service", "consumer", "node" })
  metrics.latency = prometheus:histogram("http_latency",
    "HTTP request latency in milliseconds per service in APISIX",
    { "type", "route", "service", "consumer", "node" }, DEFAULT_BUCKETS)
  metrics.bandwidth = prometheus:counter("bandwidth",
    "Total bandwidth in bytes consumed per service in APISIX",
    { "type", "route", "service", "consumer", "node" })
end

-- log_by_lua: one request's metrics.
function _M.http_log()
  local vars = ngx.var
  local route, service, consumer, node = vars.uri, "svc-1", "", "127.0.0.1"
  metrics.status:inc(1, { vars.status, route, route, vars.host, service, consumer, node })
  local latency = (ngx.now() - ngx.req.start_time()) * 1000
  metrics.latency:observe(latency, { "request", route, service, consumer, node })
  metrics.bandwidth:inc(vars.request_length, { "ingress", route, service, consumer, node })
  metrics.bandwidth:inc(vars.bytes_sent, { "egress", route, service, consumer, node })
end

local function vars_number(name)
  return tonumber(ngx.var[name]) or 0
end

-- content_by_lua of the metrics page.
function _M.collect()
  metrics.connections:set(vars_number("connections_active"), { "active" })
  metrics.connections:set(vars_number("connections_reading"), { "reading" })
  metrics.connections:set(vars_number("connections_writing"), { "writing" })
  metrics.connections:set(vars_number("connections_waiting"), { "waiting" })
  metrics.requests:set(vars_number("connection_requests"))
  ngx.header["Content-Type"] = "text/plain"
  ngx.print(concat(prometheus:metric_data()))
end

return _M
