# frozen_string_literal: true

# The Rack app the server tests run under Puma and Unicorn: every request
# is counted and timed through the StatsD facade (statsd-instrument's API),
# into the store at SHMETRICS_STATSD_STORE. The body is the worker's pid,
# so the test knows whom to kill.

require "shmetrics/statsd/compat"

# Loaded once in the master with preload_app!, once per worker without.
StatsD.increment("app.boots")

run(lambda do |env|
  route = env["PATH_INFO"]
  StatsD.measure("app.latency", tags: { route: route }) do
    StatsD.increment("app.requests", tags: { route: route, method: env["REQUEST_METHOD"] })
    StatsD.gauge("app.last_pid", Process.pid)
    [200, { "content-type" => "text/plain" }, [Process.pid.to_s]]
  end
end)
