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
# scraped from `shmetrics serve` over HTTP), direct (prometheus-client's
# DirectFileStore, scraped by Formats::Text.marshal in a process of the
# app, as Prometheus::Middleware::Exporter does), mmap
# (prometheus-client-mmap 0.16.2, Formats::Text.marshal_multiprocess).
require "json"
require "net/http"
require "socket"

mode, contender, dir = ARGV[0], ARGV[1], ARGV[2]
series = Integer(ARGV[3])
store_path = File.join(dir, "store.shm")
clock = -> { Process.clock_gettime(Process::CLOCK_MONOTONIC) }

case contender
when "shmetrics", "direct"
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
  counter = registry.counter(:app_requests_total, docstring: "Requests.", labels: [:id])
  inc = ->(i) { counter.increment(labels: { id: i.to_s }) }
when "mmap"
  ENV["prometheus_multiproc_dir"] = dir
  require "prometheus/client"
  require "prometheus/client/formats/text"
  registry = Prometheus::Client::Registry.new
  counter = registry.counter(:app_requests_total, "Requests.")
  inc = ->(i) { counter.increment({ id: i.to_s }, 1) }
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
        series.times { |i| inc.call(i) }
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
  when "direct" then -> { Prometheus::Client::Formats::Text.marshal(registry) }
  else -> { Prometheus::Client::Formats::Text.marshal_multiprocess(dir) }
  end
page = scrape.call
lines = page.lines.grep(/^app_requests_total\{/)
unless lines.size == series && lines.all? { |l| l.split.last.to_f == total }
  abort "#{contender}: expected #{series} series of #{total}, got #{lines.size} (#{lines.first(2).inspect})"
end
times = Array.new(k) do
  t = clock.call
  scrape.call
  (clock.call - t) * 1000
end
puts JSON.generate(ms: times.map { |x| x.round(2) })
