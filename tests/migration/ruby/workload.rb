# The workload of the client_ruby pairs (tests/migration/test_client_ruby.py):
#   ruby workload.rb STORE REQUESTS OUT
# STORE is the data store: `synchronized` (client_ruby's default: one
# process, two writing threads), `direct_file` (DirectFileStore in DIR=$MIGRATION_DIR)
# or `shmetrics` (Shmetrics::DataStore on $MIGRATION_STORE); with the last
# two, two forked processes write. Request i makes the same updates with
# every store. Then the parent writes to OUT the page
# Prometheus::Client::Formats::Text renders (what
# Prometheus::Middleware::Exporter serves), and to OUT.pids its own pid
# then the writers' (the forked ones), one a line.
require "prometheus/client"
require "prometheus/client/formats/text"

kind, requests, out = ARGV
requests = Integer(requests)
case kind
when "synchronized"
  Prometheus::Client.config.data_store = Prometheus::Client::DataStores::Synchronized.new
when "direct_file"
  require "prometheus/client/data_stores/direct_file_store"
  Prometheus::Client.config.data_store =
    Prometheus::Client::DataStores::DirectFileStore.new(dir: ENV.fetch("MIGRATION_DIR"))
when "shmetrics"
  require "shmetrics/data_store"
  Prometheus::Client.config.data_store = Shmetrics::DataStore.new(store: ENV.fetch("MIGRATION_STORE"))
else
  abort "unknown store #{kind}"
end

# Label values with quotes, a backslash, a newline, UTF-8 and the empty string.
LABELS = ["plain", 'say "hi"', "back\\slash", "new\nline", "ütf-8 ✓ 日本", ""].freeze
r = Prometheus::Client.registry
# client_ruby has no namespace option: the names carry the prefix.
REQS = r.counter(:myapp_http_requests_total, docstring: "Number of HTTP requests", labels: %i[route status])
JOBS = r.counter(:myapp_jobs, docstring: "Jobs per code and service", labels: %i[code service])
BYTES = r.counter(:myapp_bandwidth_bytes, docstring: "Total bandwidth in bytes")
CONNS = r.gauge(:myapp_connections, docstring: "Connections by state", labels: %i[state])
INFLIGHT = r.gauge(:myapp_inflight_units, docstring: "A gauge that only rises")
LATENCY = r.histogram(:myapp_request_duration_seconds, docstring: "HTTP request latency", labels: %i[route],
                                                       buckets: [0.005, 0.25, 1, 2.5, 10])
SIZE = r.histogram(:myapp_response_size_bytes, docstring: "Response sizes", buckets: [1, 10, 100, 1000])
UPSTREAM = r.histogram(:myapp_upstream_seconds, docstring: "Upstream latency, default buckets", labels: %i[service])

def run(i)
  v = LABELS[i % LABELS.size]
  route = "/r#{i % 3}"
  REQS.increment(labels: { route: route, status: (200 + (i % 2) * 300).to_s })
  JOBS.increment(labels: { code: (200 + i % 4).to_s, service: v })
  BYTES.increment(by: (i % 7) + 0.25)
  # Constant per label value: the same whichever writer sets it last.
  CONNS.set(v.bytesize + 0.5, labels: { state: v })
  INFLIGHT.increment(by: 0.5)
  LATENCY.observe((i % 13) * 0.25, labels: { route: route })
  SIZE.observe(i % 1500)
  UPSTREAM.observe((i % 11) / 10.0, labels: { service: v })
end

writers = 2
pids = []
if kind == "synchronized"
  (0...writers).map { |k| Thread.new { k.step(requests - 1, writers) { |i| run(i) } } }.each(&:join)
else
  writers.times do |k|
    pids << fork do
      k.step(requests - 1, writers) { |i| run(i) }
      exit!(0)
    end
  end
  pids.each do |pid|
    _, status = Process.wait2(pid)
    abort "writer #{pid} failed: #{status}" unless status.success?
  end
end
File.write("#{out}.pids", [Process.pid, *pids].map { |p| "#{p}\n" }.join)
File.write(out, Prometheus::Client::Formats::Text.marshal(r))
