# frozen_string_literal: true

# The Rack app passenger_test.rb runs under Passenger with the site of
# docs/ruby.md: every request is counted and timed through
# prometheus-client 4.2.5 (from CLIENT_RUBY_DIR) on Shmetrics::DataStore,
# and counted through the native API, in the one store at
# SHMETRICS_STORE. No Passenger hook. The body is the serving pid and the
# pid that loaded the app (the preloader's, with smart spawning).

require "shmetrics"
$LOAD_PATH.unshift(File.join(ENV.fetch("CLIENT_RUBY_DIR"), "lib"))
require "prometheus/client"
require "shmetrics/data_store"

loaded_in = Process.pid
store = Shmetrics.store # $SHMETRICS_STORE
Prometheus::Client.config.data_store = Shmetrics::DataStore.new(store: store)
registry = Prometheus::Client.registry
requests = registry.counter(:http_requests_total, docstring: "Requests.", labels: %i[route])
latency = registry.histogram(:http_request_duration_seconds, docstring: "Latency.", labels: %i[route],
                                                             buckets: [0.001, 0.01, 0.1, 1])
served = store.counter(:app_served_total, help: "Requests served.", labels: %i[route])

run(lambda do |env|
  route = env["PATH_INFO"]
  started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  delay = env["QUERY_STRING"][/\Asleep=([\d.]+)\z/, 1]
  sleep(Float(delay)) if delay
  requests.increment(labels: { route: route })
  served.increment(labels: { route: route })
  latency.observe(Process.clock_gettime(Process::CLOCK_MONOTONIC) - started, labels: { route: route })
  [200, { "content-type" => "text/plain" }, ["#{Process.pid} #{loaded_in}"]]
end)
