# frozen_string_literal: true

# Puma cluster requests per second with one metric line per request,
# against the same app without it (benches/ruby/puma/app.ru). One Puma
# cluster per variant (WORKERS workers, preload_app!) runs for the whole
# benchmark; wrk loads one at a time, in turn, for ROUNDS rounds.
#
# Two figures per variant:
# - requests per second (wrk), best of the rounds;
# - CPU time of the Puma processes (master and workers, from /proc) per
#   request: the least of the rounds, and the median. On a shared machine
#   other processes take cores away and req/s moves with them; the CPU
#   each request costs the server moves less, and its least value over
#   many rounds (the least disturbed run) is the figure to read the
#   line's cost from.
#
#   ruby benches/ruby/puma_rps.rb     (benches/ruby/bench.sh puma)
#
# Env: METRICS (none,control,native,statsd,datastore,direct), ROUNDS (6), DURATION
# (3 s per wrk run), CONNECTIONS (16), WORKERS (4), CLIENT_RUBY_DIR (for
# prometheus-client).

require "socket"
require "tmpdir"
require "fileutils"
require "net/http"

HERE = File.join(__dir__, "puma")
METRICS = ENV.fetch("METRICS", "none,control,native,statsd,datastore,direct").split(",")
ROUNDS = Integer(ENV.fetch("ROUNDS", 6))
DURATION = Integer(ENV.fetch("DURATION", 3))
CONNECTIONS = Integer(ENV.fetch("CONNECTIONS", 16))
TICKS = 100.0 # USER_HZ, clock ticks per second in /proc/<pid>/stat

def free_port
  s = TCPServer.new("127.0.0.1", 0)
  s.addr[1]
ensure
  s&.close
end

# One Puma cluster serving the app with METRIC=metric.
class Server
  attr_reader :metric, :port

  def initialize(metric, dir)
    @metric = metric
    @port = free_port
    @dir = File.join(dir, metric)
    FileUtils.mkdir_p(File.join(@dir, "metrics"))
    env = {
      "METRIC" => metric, "PORT" => @port.to_s, "PUMA_PID" => File.join(@dir, "puma.pid"),
      "STORE" => File.join(@dir, "app.shm"), "METRIC_DIR" => File.join(@dir, "metrics"),
      "RACK_ENV" => "production"
    }
    @pid = spawn(env, "puma", "-C", File.join(HERE, "puma.rb"), File.join(HERE, "app.ru"),
                 out: File.join(@dir, "puma.log"), err: File.join(@dir, "puma.log"))
  end

  def wait_ready
    deadline = Time.now + 120
    until workers.size == Integer(ENV.fetch("WORKERS", 4)) && ok?
      raise "#{@metric}: Puma did not start:\n#{File.read(File.join(@dir, "puma.log"))}" if Time.now > deadline

      sleep 0.5
    end
  end

  def ok?
    Net::HTTP.get_response(URI("http://127.0.0.1:#{@port}/warmup")).code == "200"
  rescue SystemCallError, IOError
    false
  end

  def workers
    Dir.glob("/proc/[0-9]*/stat").filter_map do |f|
      fields = File.read(f).split(") ").last.split
      Integer(File.basename(File.dirname(f))) if Integer(fields[1]) == @pid
    rescue SystemCallError
      nil
    end
  end

  # CPU seconds (user + system) of the master and its workers so far.
  def cpu
    ([@pid] + workers).sum do |p|
      fields = File.read("/proc/#{p}/stat").split(") ").last.split
      (Integer(fields[11]) + Integer(fields[12])) / TICKS
    rescue SystemCallError
      0
    end
  end

  def stop
    Process.kill("TERM", @pid)
    Process.wait(@pid)
  rescue Errno::ESRCH, Errno::ECHILD
    nil
  end
end

# Runs wrk against `server` for `seconds`: [requests, req/s, CPU s].
def load(server, seconds)
  cpu0 = server.cpu
  out = IO.popen(["wrk", "-t", "2", "-c", CONNECTIONS.to_s, "-d", "#{seconds}s",
                  "http://127.0.0.1:#{server.port}/api/users"], &:read)
  cpu = server.cpu - cpu0
  requests = Integer(out[/(\d+) requests in/, 1])
  rps = Float(out[/Requests\/sec:\s+([\d.]+)/, 1])
  errors = out[/Non-2xx or 3xx responses: (\d+)/, 1]
  raise "#{server.metric}: #{errors} failed requests" if errors

  [requests, rps, cpu]
end

abort "wrk not found (apt-get install wrk)" unless system("which wrk > /dev/null")
dir = Dir.mktmpdir("shmetrics-puma-rps")
servers = METRICS.map { |m| Server.new(m, dir) }
begin
  servers.each(&:wait_ready)
  servers.each { |s| load(s, 1) } # warm up
  results = Hash.new { |h, k| h[k] = [] }
  ROUNDS.times do
    servers.each { |s| results[s.metric] << load(s, DURATION) }
  end
  load_avg = File.read("/proc/loadavg").split.first(3).join(" ")
  puts "== Puma #{`puma --version`.strip[/[\d.]+/]}, #{ENV.fetch("WORKERS", 4)} workers (preload_app!, 2 threads), " \
       "wrk #{CONNECTIONS} connections, #{ROUNDS} rounds of #{DURATION} s, ruby #{RUBY_VERSION}, load average #{load_avg}"
  rps = results.transform_values { |rs| rs.map { |r| r[1] }.max }
  per = results.transform_values { |rs| rs.map { |n, _, c| c / n * 1e6 }.sort }
  puts format("%-10s %12s %14s %14s   %s", "metric", "best req/s", "least CPU/req", "median CPU/req",
              "against none: req/s, least CPU/req, median CPU/req")
  METRICS.each do |m|
    median = per[m][per[m].size / 2]
    line = format("%-10s %12.0f %11.1f µs %11.1f µs", m, rps[m], per[m].first, median)
    if rps["none"] && m != "none"
      base = per["none"]
      line += format("   %+.1f%%, %+.1f%%, %+.1f%%", (rps[m] / rps["none"] - 1) * 100,
                     (per[m].first / base.first - 1) * 100, (median / base[base.size / 2] - 1) * 100)
    end
    puts line
  end
ensure
  servers.each(&:stop)
  FileUtils.rm_rf(dir)
end
