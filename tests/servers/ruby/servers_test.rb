# frozen_string_literal: true

# Real Puma (cluster, 4 workers) and real Unicorn (4 workers) serve
# config.ru, which counts and times every request through the StatsD
# facade and through prometheus-client with Shmetrics::DataStore.
# Requests come in batches; between batches a worker is killed with
# SIGKILL, or Puma makes a phased restart. At the end the totals must be
# exact: on the exporter's /metrics page, scraped over HTTP (both the
# facade's and prometheus-client's), which promtool must accept, and in
# the DogStatsD stream the exporter sent to a UDP listener here.
#
#   ruby tests/servers/ruby/servers_test.rb   (scripts/ruby-statsd-tests.sh runs it)

require "minitest/autorun"
require "net/http"
require "socket"
require "tmpdir"
require "timeout"
require "open3"

class ServersTest < Minitest::Test
  ROOT = File.expand_path("../../..", __dir__)
  HERE = __dir__
  BIN = ENV.fetch("SHMETRICS_BIN", File.join(ROOT, "target/release/shmetrics"))
  BATCH = Integer(ENV.fetch("BATCH", 300))
  # prometheus-client 4.2.5 with its lib (CLIENT_RUBY_DIR, else the pinned
  # copy beside the repository or its worktree folder).
  CLIENT_RUBY_DIR = [ENV["CLIENT_RUBY_DIR"], "../shared/peers/client_ruby-v4.2.5",
    "../../shared/peers/client_ruby-v4.2.5"].compact.map { |d| File.expand_path(d, ROOT) }
    .find { |d| File.directory?(File.join(d, "lib", "prometheus")) } or
    abort "prometheus-client 4.2.5 not found; set CLIENT_RUBY_DIR"
  CLIENTS = 8

  def setup
    @dir = Dir.mktmpdir("shmetrics-servers")
    @store = File.join(@dir, "app.shm")
    @lines = Queue.new
    @udp = UDPSocket.new
    @udp.bind("127.0.0.1", 0)
    @listener = Thread.new do
      loop { @udp.recv(65_535).split("\n").each { |l| @lines << l } }
    rescue IOError
      nil
    end
    @metrics_port = free_port
    @exporter = spawn(BIN, "serve", "--store", @store, "--listen", "127.0.0.1:#{@metrics_port}",
      "--statsd.address", "127.0.0.1:#{@udp.addr[1]}", "--statsd.flavor", "dogstatsd",
      "--statsd.interval", "0.5", "--statsd.colons-as-dots", "--log.level", "warn")
    wait_for { scrape_status == "200" }
    @port = free_port
    @sent = Hash.new(0)
  end

  def teardown
    [@server, @exporter].compact.each do |pid|
      Process.kill("KILL", pid)
      Process.wait(pid)
    rescue Errno::ESRCH, Errno::ECHILD
      nil
    end
    @udp.close
    @listener.join
    FileUtils.rm_rf(@dir)
  end

  def test_puma_cluster_preloaded_with_sigkill
    start_puma(phased: false)
    batch("/a")
    kill_a_worker
    batch("/b")
    kill_a_worker
    batch("/a")
    stop_server("TERM")
    check_totals
  end

  def test_puma_cluster_phased_restart
    start_puma(phased: true)
    batch("/a")
    before = workers
    system("pumactl", "-S", File.join(@dir, "puma.state"), "phased-restart", out: File::NULL, exception: true)
    wait_for(60) { (workers & before).empty? && workers.size == 4 }
    batch("/b")
    kill_a_worker
    batch("/c")
    stop_server("TERM")
    check_totals
  end

  def test_unicorn_with_sigkill
    pidfile = File.join(@dir, "unicorn.pid")
    @server = spawn(server_env("UNICORN_PID" => pidfile), "unicorn", "-c", File.join(HERE, "unicorn.rb"),
      File.join(HERE, "config.ru"), out: log, err: log)
    wait_until_serving
    batch("/a")
    kill_a_worker
    batch("/b")
    kill_a_worker
    batch("/c")
    stop_server("QUIT")
    check_totals
  end

  private

  def log = File.join(@dir, "server.log")

  def server_env(extra)
    {
      # The gem as installed by scripts/ruby-statsd-tests.sh (GEM_PATH), or
      # this tree's lib with a build of its native part.
      "RUBYLIB" => (ext = ENV["SHMETRICS_RUBY_EXT_DIR"]) && "#{ext}:#{File.join(ROOT, "bindings/ruby/lib")}",
      "SHMETRICS_STATSD_STORE" => @store,
      "CLIENT_RUBY_DIR" => CLIENT_RUBY_DIR,
      "PORT" => @port.to_s,
      "RACK_ENV" => "production",
    }.merge(extra)
  end

  def start_puma(phased:)
    env = server_env("PUMA_STATE" => File.join(@dir, "puma.state"), "PUMA_PID" => File.join(@dir, "puma.pid"),
      "PUMA_PHASED" => phased ? "1" : "0")
    @server = spawn(env, "puma", "-C", File.join(HERE, "puma.rb"), File.join(HERE, "config.ru"), out: log, err: log)
    wait_until_serving
  end

  def wait_until_serving
    # Warm-up requests until all workers are up; how many got through is
    # read from the page, and the stream must agree with it.
    wait_for(60) { workers.size == 4 && get("/warmup") }
  end

  # SIGKILLs one worker between batches (nothing in flight), then waits
  # for the master to start a new one and for it to serve.
  def kill_a_worker
    victim = workers.first
    Process.kill("KILL", victim)
    wait_for(60) { !workers.include?(victim) && workers.size == 4 }
  end

  def workers
    `ps -o pid= --ppid #{@server}`.split.map(&:to_i)
  end

  # BATCH requests to `route` from CLIENTS threads; counts the 200s.
  def batch(route)
    done = Queue.new
    CLIENTS.times.map do |c|
      Thread.new do
        Net::HTTP.start("127.0.0.1", @port) do |http|
          (BATCH / CLIENTS + (c < BATCH % CLIENTS ? 1 : 0)).times do
            done << (http.get(route).code == "200")
          end
        end
      end
    end.each(&:join)
    ok = Array.new(done.size) { done.pop }
    assert(ok.all?, "every request answered")
    @sent[route] += ok.size
  end

  def stop_server(signal)
    Process.kill(signal, @server)
    Timeout.timeout(60) { Process.wait(@server) }
    @server = nil
    sleep 1.2 # two flushes of the exporter
    assert_equal("200", scrape_status)
    Process.kill("TERM", @exporter) # and its last flush
    Process.wait(@exporter)
    @exporter = nil
    sleep 0.3
  end

  def check_totals
    page = File.read(File.join(@dir, "page.txt"))
    scraped = page.scan(/^app:requests_total\{method="GET",route="([^"]*)"\} (\S+)$/).to_h { |r, v| [r, Float(v)] }
    warmups = scraped.delete("/warmup")
    assert_operator(warmups, :>=, 1)
    assert_equal(@sent.transform_values(&:to_f), scraped, "requests on the exporter's page")
    check_prometheus_client(page, warmups)

    counts = Hash.new(0)
    latency = Hash.new(0)
    lines = Array.new(@lines.size) { @lines.pop }
    lines.each do |l|
      if (m = l.match(/\Aapp\.requests:(\d+)\|c\|#(.*)\z/))
        counts[m[2][/route:([^,]*)/, 1]] += Integer(m[1])
      elsif (m = l.match(/\Aapp\.latency:([^|]+)\|d(?:\|@([^|]+))?\|#(.*)\z/))
        # Each value stands for 1/rate observations (the agent truncates 1/rate).
        latency[m[3][/route:([^,]*)/, 1]] += m[1].split(":").size * (m[2] ? (1 / Float(m[2])).floor : 1)
      end
    end
    assert_equal(warmups, counts.delete("/warmup").to_f, "warm-up requests in the StatsD stream")
    assert_equal(@sent, counts, "requests in the StatsD stream")
    latency.delete("/warmup")
    assert_equal(@sent, latency, "timings in the StatsD stream (distribution counts)")
  end

  # prometheus-client's counter and histogram, written by every worker
  # through Shmetrics::DataStore: exact on the exporter's page, the
  # histogram one family with the app's buckets, and promtool accepts it.
  def check_prometheus_client(page, warmups)
    by_route = lambda do |name|
      page.scan(/^#{name}\{route="([^"]*)"\} (\S+)$/).to_h { |r, v| [r, Float(v)] }
    end
    [by_route.call("http_requests_total"), by_route.call("http_request_duration_seconds_count")].each do |got|
      assert_equal(warmups, got.delete("/warmup"), "prometheus-client's warm-up requests")
      assert_equal(@sent.transform_values(&:to_f), got, "prometheus-client's requests on the exporter's page")
    end
    buckets = page.scan(/^http_request_duration_seconds_bucket\{route="\/a",le="([^"]+)"\}/).flatten
    # The app's Integer bound 1 as client_ruby writes it (le="1").
    assert_equal(%w[0.001 0.01 0.1 1 +Inf], buckets)
    assert_equal(1, page.scan(/^# TYPE http_request_duration_seconds histogram$/).size)
    # prometheus-client's families alone: promtool finds nothing to say.
    families = page.split(/^(?=# HELP )/).grep(/\A# HELP http_request/).join
    out, st = Open3.capture2e("promtool", "check", "metrics", stdin_data: families)
    assert(st.success?, "promtool check metrics:\n#{out}")
    # The whole page parses; promtool's lint only objects to the colons of
    # the StatsD facade's names (app:requests, sent as app.requests), a
    # naming convention (docs/ruby.md).
    out, = Open3.capture2e("promtool", "check", "metrics", stdin_data: page)
    assert_equal(%w[app:boots_total app:last_pid app:latency app:requests_total]
                   .map { |n| "#{n} metric names should not contain ':'" }, out.lines.map(&:strip).reject(&:empty?).sort)
  end

  def scrape_status
    res = Net::HTTP.get_response(URI("http://127.0.0.1:#{@metrics_port}/metrics"))
    File.write(File.join(@dir, "page.txt"), res.body) if res.code == "200"
    res.code
  rescue SystemCallError
    nil
  end

  def get(path)
    Net::HTTP.get_response(URI("http://127.0.0.1:#{@port}#{path}")).code == "200"
  rescue SystemCallError, EOFError
    false
  end

  def free_port
    s = TCPServer.new("127.0.0.1", 0)
    s.addr[1]
  ensure
    s.close
  end

  def wait_for(seconds = 20)
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + seconds
    until yield
      if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
        flunk("timed out; server log:\n#{File.exist?(log) ? File.read(log)[-3000..] : "(none)"}")
      end
      sleep 0.1
    end
  end
end
