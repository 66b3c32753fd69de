# frozen_string_literal: true

# The Rack app of benches/ruby/puma_rps.rb: answers "ok", and makes one
# metric update per request, chosen by METRIC:
#   none       nothing (the baseline)
#   control    nothing either: a second baseline, whose difference from
#              `none` shows the noise of the run
#   native     the gem's native API, counter.increment(labels:)
#   datastore  prometheus-client 4.2.5 with Shmetrics::DataStore
#   direct     prometheus-client 4.2.5 with DirectFileStore (METRIC_DIR)
#   statsd     the StatsD facade, StatsD.increment(name, tags:)
# The labels are the route (from the request, so a new String each time)
# and the status.

metric = ENV.fetch("METRIC")
store_path = ENV.fetch("STORE", "")
record =
  case metric
  when "none", "control"
    ->(_route) {}
  when "native"
    require "shmetrics"
    requests = Shmetrics::Store.new(store_path).counter(:http_requests_total, help: "Requests.",
                                                         labels: %i[route status])
    ->(route) { requests.increment(labels: { route: route, status: "200" }) }
  when "datastore", "direct"
    $LOAD_PATH.unshift(File.join(ENV.fetch("CLIENT_RUBY_DIR"), "lib"))
    require "prometheus/client"
    Prometheus::Client.config.data_store =
      if metric == "direct"
        require "prometheus/client/data_stores/direct_file_store"
        Prometheus::Client::DataStores::DirectFileStore.new(dir: ENV.fetch("METRIC_DIR"))
      else
        require "shmetrics/data_store"
        Shmetrics::DataStore.new(store: store_path)
      end
    requests = Prometheus::Client.registry.counter(:http_requests_total, docstring: "Requests.",
                                                   labels: %i[route status])
    ->(route) { requests.increment(labels: { route: route, status: "200" }) }
  when "statsd"
    require "shmetrics/statsd"
    statsd = Shmetrics::StatsD::Instrument::Client.new(store: store_path, prefix: "app")
    ->(route) { statsd.increment("requests", tags: { route: route, status: "200" }) }
  else
    abort "unknown METRIC #{metric}"
  end

headers = { "content-type" => "text/plain" }.freeze
run(lambda do |env|
  record.call(env["PATH_INFO"])
  [200, headers, ["ok"]]
end)
