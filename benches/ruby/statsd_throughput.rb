# frozen_string_literal: true

# statsd-instrument's `local-udp-throughput` shape (THREADS threads,
# ITERATIONS iterations, SERIES series, metrics only: per series an
# increment, a timed block and a gauge, tagged) against, in one run:
# - statsd-instrument 3.11.0 (the pinned copy, loaded with -I) sending UDP
#   synchronously, batched, and batched with aggregation;
# - the shmetrics facade, whose host exporter (`shmetrics serve
#   --statsd.address`) sends what the store aggregated every INTERVAL s.
# A UDP listener in a child process counts the datagrams each one puts on
# the wire. Part 2 keeps 1 and then 4 worker processes sending for
# SECONDS s, to show the datagram rate against the number of processes.
#
#   ruby benches/ruby/statsd_throughput.rb
#
# Env: THREADS (5), ITERATIONS (6000), SERIES (5), SECONDS (4), INTERVAL
# (1), STATSD_INSTRUMENT_DIR, SHMETRICS_BIN (target/release/shmetrics).

require "socket"
require "tmpdir"
require "logger"

ROOT = File.expand_path("../..", __dir__)
THREADS = Integer(ENV.fetch("THREADS", 5))
ITERATIONS = Integer(ENV.fetch("ITERATIONS", 6000))
SERIES = Integer(ENV.fetch("SERIES", 5))
SECONDS = Float(ENV.fetch("SECONDS", 4))
INTERVAL = ENV.fetch("INTERVAL", "1")
EVENTS = THREADS * ITERATIONS * SERIES * 3

si_dir = [ENV["STATSD_INSTRUMENT_DIR"], "../shared/peers/statsd-instrument-v3.11.0",
  "../../shared/peers/statsd-instrument-v3.11.0"].compact.map { |d| File.expand_path(d, ROOT) }
  .find { |d| File.directory?(File.join(d, "lib")) } or abort "statsd-instrument 3.11.0 not found"
$LOAD_PATH.unshift(File.join(si_dir, "lib"))
# The gem as benches/ruby/bench.sh installs it, or this tree's lib with a
# build of its native part in SHMETRICS_RUBY_EXT_DIR.
if (ext = ENV["SHMETRICS_RUBY_EXT_DIR"])
  $LOAD_PATH.unshift(ext, File.join(ROOT, "bindings/ruby/lib"))
end
require "statsd-instrument"
require "shmetrics/statsd"
StatsD.logger = Logger.new(File::NULL)
BIN = ENV.fetch("SHMETRICS_BIN", File.join(ROOT, "target/release/shmetrics"))

# Counts datagrams and bytes in a child process until told to stop.
class Listener
  attr_reader :port

  def initialize
    sock = UDPSocket.new
    sock.bind("127.0.0.1", 0)
    sock.setsockopt(Socket::SOL_SOCKET, Socket::SO_RCVBUF, 8 << 20)
    @port = sock.addr[1]
    @ctl_r, @ctl_w = IO.pipe
    @out_r, out_w = IO.pipe
    @pid = fork do
      @ctl_w.close
      @out_r.close
      counts = [0, 0]
      loop do
        ready = IO.select([sock, @ctl_r], nil, nil, 1)
        next unless ready
        break if ready[0].include?(@ctl_r) && @ctl_r.read_nonblock(1, exception: false) == "s"

        while (d = sock.recv_nonblock(65_535, exception: false)).is_a?(String)
          counts[0] += 1
          counts[1] += d.bytesize
        end
      end
      while (d = sock.recv_nonblock(65_535, exception: false)).is_a?(String)
        counts[0] += 1
        counts[1] += d.bytesize
      end
      out_w.puts(counts.join(" "))
      exit!(0)
    end
    sock.close
    @ctl_r.close
  end

  # [datagrams, bytes] received so far; the listener ends.
  def stop
    sleep 0.2 # what is in flight
    @ctl_w.write("s")
    counts = @out_r.gets.split.map(&:to_i)
    Process.wait(@pid)
    counts
  end
end

def send_metrics(client)
  SERIES.times do |i|
    tags = ["series:#{i}", "foo:bar", "baz:quc"]
    client.increment("StatsD.increment", 10, tags: tags)
    client.measure("StatsD.measure", tags: tags) { 1 + 1 }
    client.gauge("StatsD.gauge", 12.0, tags: tags)
  end
end

def run_threads(client)
  t0 = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  THREADS.times.map { Thread.new { ITERATIONS.times { send_metrics(client) } } }.each(&:join)
  Process.clock_gettime(Process::CLOCK_MONOTONIC) - t0
end

def statsd_instrument_client(port, env)
  StatsD::Instrument::Environment.new(ENV.to_h.merge(
    "STATSD_ADDR" => "127.0.0.1:#{port}", "STATSD_IMPLEMENTATION" => "dogstatsd", "STATSD_ENV" => "production",
  ).merge(env)).client
end

SI_MODES = {
  "statsd-instrument UDP sync" => { "STATSD_BUFFER_CAPACITY" => "0" },
  "statsd-instrument UDP batched" => {},
  "statsd-instrument batched+aggregation" => {
    "STATSD_ENABLE_AGGREGATION" => "true", "STATSD_AGGREGATION_FLUSH_INTERVAL" => INTERVAL,
  },
}.freeze

# The exporter flushing `store` to the listener.
def exporter(store, port)
  pid = spawn(BIN, "serve", "--store", store, "--listen", "127.0.0.1:0", "--statsd.address", "127.0.0.1:#{port}",
    "--statsd.flavor", "dogstatsd", "--statsd.interval", INTERVAL, "--statsd.colons-as-dots", "--log.level", "error", out: File::NULL)
  sleep 0.3
  pid
end

def stop_exporter(pid)
  Process.kill("TERM", pid)
  Process.wait(pid)
end

def fmt(n) = n.round.to_s.reverse.scan(/\d{1,3}/).join(",").reverse

results = {}
puts "== #{THREADS} threads x #{ITERATIONS} iterations x #{SERIES} series x 3 events = #{fmt(EVENTS)} events " \
  "(ruby #{RUBY_VERSION}, yjit #{defined?(RubyVM::YJIT) && RubyVM::YJIT.enabled? ? "on" : "off"})"
SI_MODES.each do |name, env|
  l = Listener.new
  client = statsd_instrument_client(l.port, env)
  secs = run_threads(client)
  client.shutdown if client.respond_to?(:shutdown)
  client.sink.shutdown if client.sink.respond_to?(:shutdown)
  dgrams, bytes = l.stop
  results[name] = EVENTS / secs
  puts format("%-40s %12s events/s  %8d datagrams  %9d bytes", name, fmt(EVENTS / secs), dgrams, bytes)
end

Dir.mktmpdir("statsd-bench") do |dir|
  store = File.join(dir, "bench.shm")
  l = Listener.new
  client = Shmetrics::StatsD::Instrument::Client.new(store: store)
  send_metrics(client) # the store file and families exist before the exporter attaches
  ex = exporter(store, l.port)
  secs = run_threads(client)
  stop_exporter(ex) # its last flush
  dgrams, bytes = l.stop
  results["shmetrics facade"] = EVENTS / secs
  puts format("%-40s %12s events/s  %8d datagrams  %9d bytes", "shmetrics facade (exporter every #{INTERVAL} s)",
    fmt(EVENTS / secs), dgrams, bytes)
end
agg = results["statsd-instrument batched+aggregation"]
puts format("facade / statsd-instrument aggregated: %.2fx; / batched: %.2fx; / sync: %.2fx",
  results["shmetrics facade"] / agg, results["shmetrics facade"] / results["statsd-instrument UDP batched"],
  results["shmetrics facade"] / results["statsd-instrument UDP sync"])

# Part 2: datagrams per second on the wire against worker processes.
def workers(n, seconds)
  r, w = IO.pipe
  pids = n.times.map do
    fork do
      r.close
      client = yield
      events = 0
      deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + seconds
      while Process.clock_gettime(Process::CLOCK_MONOTONIC) < deadline
        send_metrics(client)
        events += SERIES * 3
      end
      client.shutdown if client.respond_to?(:shutdown)
      client.sink.shutdown if client.sink.respond_to?(:shutdown)
      w.puts(events)
      exit!(0)
    end
  end
  w.close
  pids.each { |p| Process.wait(p) }
  r.read.split.sum(&:to_i)
end

puts "== #{SECONDS} s of sending per run, #{SERIES} series, flush interval #{INTERVAL} s"
[1, 4].each do |n|
  l = Listener.new
  env = SI_MODES["statsd-instrument batched+aggregation"]
  events = workers(n, SECONDS) { statsd_instrument_client(l.port, env) }
  dgrams, = l.stop
  puts format("%-40s %d process(es): %10s events/s  %8.1f datagrams/s",
    "statsd-instrument batched+aggregation", n, fmt(events / SECONDS), dgrams / SECONDS)

  Dir.mktmpdir("statsd-bench") do |dir|
    store = File.join(dir, "bench.shm")
    l = Listener.new
    send_metrics(Shmetrics::StatsD::Instrument::Client.new(store: store))
    ex = exporter(store, l.port)
    t0 = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    events = workers(n, SECONDS) { Shmetrics::StatsD::Instrument::Client.new(store: store) }
    stop_exporter(ex)
    wall = Process.clock_gettime(Process::CLOCK_MONOTONIC) - t0
    dgrams, = l.stop
    puts format("%-40s %d process(es): %10s events/s  %8.1f datagrams/s",
      "shmetrics facade", n, fmt(events / SECONDS), dgrams / wall)
  end
end
