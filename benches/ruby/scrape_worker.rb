# frozen_string_literal: true

# One side of benches/ruby/scrape.rb, in a process of its own:
#   ruby scrape_worker.rb write CONTENDER DIR SERIES WORKERS GENERATIONS
#     forks WORKERS processes, GENERATIONS times in turn; each increments
#     SERIES series of one counter (label `id`) once, waits until the
#     others of its generation have, and exits.
#   ruby scrape_worker.rb scrape CONTENDER DIR SERIES TOTAL K
#     scrapes K times (after one untimed scrape) and prints JSON: each
#     scrape's milliseconds; it first checks that the page has SERIES
#     series, each with the value TOTAL (increments over every worker).
# CONTENDER: shmetrics (prometheus-client with Shmetrics::DataStore,
# scraped from `shmetrics serve` over HTTP), inapp (the same store,
# rendered by Formats::Text.marshal in a process of the app, as
# Prometheus::Middleware::Exporter does), direct (prometheus-client's
# DirectFileStore, rendered so too), mmap (prometheus-client-mmap 0.16.2,
# Formats::Text.marshal_multiprocess).
# With SCRAPE_SHAPE=mixed (benches/inapp_render.sh), the SERIES series are
# those of SERIES / 8 families of 8 label sets (route, code) each, one
# family in ten a histogram with the library's default buckets observing
# 0.3, the others counters; a series' value checked is a counter's, or a
# histogram's `_count`.
require "json"
require "net/http"
require "socket"

mode, contender, dir = ARGV[0], ARGV[1], ARGV[2]
series = Integer(ARGV[3])
store_path = File.join(dir, "store.shm")
clock = -> { Process.clock_gettime(Process::CLOCK_MONOTONIC) }

mixed = ENV["SCRAPE_SHAPE"] == "mixed"
# The families of the shape: [name, histogram?], and the label sets.
families = if mixed
             Array.new(series / 8) { |f| f % 10 == 9 ? [:"app_f#{f}_seconds", true] : [:"app_f#{f}_total", false] }
           else
             [[:app_requests_total, false]]
           end
label_sets = mixed ? Array.new(8) { |j| { route: "/r/#{j / 2}", code: %w[200 500][j % 2] } } : nil

case contender
when "shmetrics", "inapp", "direct"
  $LOAD_PATH.unshift(File.join(ENV.fetch("CLIENT_RUBY_DIR"), "lib"))
  require "prometheus/client"
  require "prometheus/client/formats/text"
  if contender == "direct"
    require "prometheus/client/data_stores/direct_file_store"
    Prometheus::Client.config.data_store = Prometheus::Client::DataStores::DirectFileStore.new(dir: dir)
  else
    require "shmetrics/data_store"
    Prometheus::Client.config.data_store = Shmetrics::DataStore.new(store: store_path)
  end
  registry = Prometheus::Client::Registry.new
  if mixed
    metrics = families.map do |name, hist|
      hist ? registry.histogram(name, docstring: "Latency.", labels: %i[route code]) :
        registry.counter(name, docstring: "Requests.", labels: %i[route code])
    end
    inc = lambda do |_|
      metrics.each do |m|
        label_sets.each { |l| m.is_a?(Prometheus::Client::Histogram) ? m.observe(0.3, labels: l) : m.increment(labels: l) }
      end
    end
  else
    counter = registry.counter(:app_requests_total, docstring: "Requests.", labels: [:id])
    inc = ->(i) { counter.increment(labels: { id: i.to_s }) }
  end
when "mmap"
  ENV["prometheus_multiproc_dir"] = dir
  require "prometheus/client"
  require "prometheus/client/formats/text"
  registry = Prometheus::Client::Registry.new
  if mixed
    metrics = families.map do |name, hist|
      hist ? registry.histogram(name, "Latency.") : registry.counter(name, "Requests.")
    end
    inc = lambda do |_|
      metrics.each do |m|
        label_sets.each { |l| m.is_a?(Prometheus::Client::Histogram) ? m.observe(l, 0.3) : m.increment(l, 1) }
      end
    end
  else
    counter = registry.counter(:app_requests_total, "Requests.")
    inc = ->(i) { counter.increment({ id: i.to_s }, 1) }
  end
else
  abort "unknown contender #{contender}"
end

if mode == "write"
  workers = Integer(ARGV[4])
  Integer(ARGV[5]).times do
    ready_r, ready_w = IO.pipe
    go_r, go_w = IO.pipe
    pids = Array.new(workers) do
      fork do
        ready_r.close
        go_w.close
        (mixed ? 1 : series).times { |i| inc.call(i) }
        ready_w.write("x")
        go_r.read
        exit!(0)
      end
    end
    ready_w.close
    go_r.close
    ready_r.read(workers)
    go_w.close
    pids.each { |p| Process.wait(p) }
    raise "a writer failed" unless $?.success?
  end
  exit 0
end

total = Integer(ARGV[4])
k = Integer(ARGV[5])
scrape =
  case contender
  when "shmetrics"
    port = TCPServer.new("127.0.0.1", 0).then { |s| s.addr[1].tap { s.close } }
    pid = spawn(ENV.fetch("SHMETRICS_BIN"), "serve", "--store", store_path, "--listen", "127.0.0.1:#{port}",
                out: File::NULL, err: File::NULL)
    at_exit { Process.kill(:TERM, pid); Process.wait(pid) }
    http = nil
    200.times do
      http = Net::HTTP.start("127.0.0.1", port)
      break
    rescue SystemCallError
      sleep 0.05
    end
    -> { Net::HTTP.start("127.0.0.1", port) { |h| h.get("/metrics").body } }
  when "inapp", "direct" then -> { Prometheus::Client::Formats::Text.marshal(registry) }
  else -> { Prometheus::Client::Formats::Text.marshal_multiprocess(dir) }
  end
page = scrape.call
lines = page.lines.grep(mixed ? /^app_f\d+_(total|seconds_count)\{/ : /^app_requests_total\{/)
unless lines.size == series && lines.all? { |l| l.split.last.to_f == total }
  abort "#{contender}: expected #{series} series of #{total}, got #{lines.size} (#{lines.first(2).inspect})"
end
times = Array.new(k) do
  t = clock.call
  scrape.call
  (clock.call - t) * 1000
end
puts JSON.generate(ms: times.map { |x| x.round(2) })
