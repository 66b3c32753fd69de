# The workload of the statsd-instrument pair (tests/migration/test_statsd.py):
#   ruby statsd_workload.rb peer|shmetrics EVENTS
# `peer` is statsd-instrument 3.11.0 itself (STATSD_ENV=production: a
# datagram per event to STATSD_ADDR, DogStatsD dialect); `shmetrics` the
# same code after the switch, `require "shmetrics/statsd/compat"`, whose
# events land in SHMETRICS_STATSD_STORE for the exporter to send. Two
# forked processes make the events; event i is the same with either.
kind, events = ARGV
events = Integer(events)
if kind == "peer"
  require "statsd-instrument"
else
  require "shmetrics/statsd/compat"
end

# Tag values with quotes, a backslash, UTF-8 and an empty one (a newline
# or a `,` `|` `#` cannot travel in a DogStatsD tag; both sides would
# cut the datagram).
VALUES = ["plain", 'say "hi"', "back\\slash", "ütf-8 ✓ 日本", ""].freeze

def event(i)
  v = VALUES[i % VALUES.size]
  route = "/r#{i % 3}"
  StatsD.increment("requests", tags: { route: route, status: (200 + (i % 2) * 300).to_s })
  StatsD.increment("jobs.done", (i % 7) + 1, tags: ["service:#{v}"])
  StatsD.gauge("connections", v.bytesize + 0.5, tags: ["state:#{v}"])
  StatsD.distribution("upstream.latency", (i % 11) * 10 + 1, tags: ["service:#{v}"])
  StatsD.measure("db.query", (i % 13) * 2.5 + 0.5)
  StatsD.histogram("payload.size", i % 1500)
end

pids = Array.new(2) do |k|
  fork do
    k.step(events - 1, 2) { |i| event(i) }
    exit!(0)
  end
end
pids.each do |pid|
  _, status = Process.wait2(pid)
  abort "writer #{pid} failed: #{status}" unless status.success?
end
