# frozen_string_literal: true

# The Rack app the server tests run under Puma and Unicorn: every request
# is counted and timed twice into the store at SHMETRICS_STATSD_STORE:
# through the StatsD facade (statsd-instrument's API), and through
# prometheus-client 4.2.5 (from CLIENT_RUBY_DIR) with Shmetrics::DataStore.
# The body is the worker's pid, so the test knows whom to kill.

require "shmetrics/statsd/compat"
$LOAD_PATH.unshift(File.join(ENV.fetch("CLIENT_RUBY_DIR"), "lib"))
require "prometheus/client"
require "shmetrics/data_store"

Prometheus::Client.config.data_store = Shmetrics::DataStore.new(store: ENV.fetch("SHMETRICS_STATSD_STORE"))
registry = Prometheus::Client.registry
requests = registry.counter(:http_requests_total, docstring: "Requests.", labels: %i[route])
latency = registry.histogram(:http_request_duration_seconds, docstring: "Latency.", labels: %i[route],
                                                             buckets: [0.001, 0.01, 0.1, 1])

# Loaded once in the master with preload_app!, once per worker without.
StatsD.increment("app.boots")

run(lambda do |env|
  route = env["PATH_INFO"]
  StatsD.measure("app.latency", tags: { route: route }) do
    StatsD.increment("app.requests", tags: { route: route, method: env["REQUEST_METHOD"] })
    StatsD.gauge("app.last_pid", Process.pid)
    requests.increment(labels: { route: route })
    latency.observe(0.005, labels: { route: route })
    [200, { "content-type" => "text/plain" }, [Process.pid.to_s]]
  end
end)
