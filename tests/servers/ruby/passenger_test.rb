# frozen_string_literal: true

# Debian's Phusion Passenger (mod_passenger in an Apache of the test's
# own, with the site of docs/ruby.md) serves passenger_app.ru, which
# counts every request through prometheus-client on
# Shmetrics::DataStore and through the native API. Under a bounded load
# over loopback, the exporter's page (`shmetrics serve`) must count
# exactly the successful responses the client saw, through the ways
# Passenger spawns, stops, restarts and loses its processes. Only a
# request in flight when its process was killed may be counted or not:
# the client saw it fail, so it is the slack.
#
#   ruby tests/servers/ruby/passenger_test.rb   (scripts/ruby-tests.sh runs it)

require "minitest/autorun"
require "net/http"
require "socket"
require "tmpdir"
require "fileutils"
require "etc"
require "set"
require "timeout"

class PassengerTest < Minitest::Test
  ROOT = File.expand_path("../../..", __dir__)
  HERE = __dir__
  DOC = File.join(ROOT, "docs/ruby.md")
  HTTPD_CONF = File.join(ROOT, "tests/servers/passenger/httpd.conf")
  APACHE = "/usr/sbin/apache2"
  BIN = ENV.fetch("SHMETRICS_BIN", File.join(ROOT, "target/release/shmetrics"))
  CLIENT_RUBY_DIR = [ENV["CLIENT_RUBY_DIR"], "../shared/peers/client_ruby-v4.2.5",
    "../../shared/peers/client_ruby-v4.2.5"].compact.map { |d| File.expand_path(d, ROOT) }
    .find { |d| File.directory?(File.join(d, "lib", "prometheus")) } or
    abort "prometheus-client 4.2.5 not found; set CLIENT_RUBY_DIR"
  THREADS = 8

  # What the client saw: 200s, requests that failed (no answer, or
  # Passenger's 502 for a process that died under it), pids that served
  # and pids that loaded the app they ran.
  class Load
    attr_reader :ok, :failed, :bad, :served, :loaded_in

    def initialize
      @ok = 0
      @failed = 0
      @bad = []
      @served = Set.new
      @loaded_in = Set.new
      @lock = Mutex.new
    end

    def one(http, path)
      res = http.get(path)
      @lock.synchronize do
        if res.code == "200" && (m = res.body.match(/\A(\d+) (\d+)\z/))
          @ok += 1
          @served << Integer(m[1])
          @loaded_in << Integer(m[2])
        elsif res.code == "502"
          @failed += 1
        else
          @bad << [res.code, res.body[0, 200]]
        end
      end
    rescue SystemCallError, IOError, Net::ReadTimeout, Net::HTTPBadResponse
      @lock.synchronize { @failed += 1 }
      http.finish if http.started?
      http.start
    end

    # Requests, THREADS at a time, until the block says done (or `n`
    # requests were sent, or `timeout` seconds passed).
    def run(port, path: "/work", n: nil, timeout: 60, &done)
      sent = 0
      deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + timeout
      Array.new(THREADS) do
        Thread.new do
          Net::HTTP.start("127.0.0.1", port, read_timeout: 20) do |http|
            loop do
              break if done&.call || Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
              break if n && @lock.synchronize { (sent += 1) > n }

              one(http, path)
            end
          end
        end
      end.each(&:join)
    end
  end

  def setup
    @user, @group = if Process.euid.zero?
      %w[www-data www-data]
    else
      [Etc.getpwuid(Process.euid).name, Etc.getgrgid(Process.egid).name]
    end
    # Under /tmp, open to the app's user, who creates the store in data/.
    @dir = Dir.mktmpdir("shmetrics-passenger-")
    File.chmod(0o755, @dir)
    @app = File.join(@dir, "app")
    FileUtils.mkdir_p([File.join(@app, "public"), File.join(@dir, "data"), File.join(@dir, "registry")])
    FileUtils.cp(File.join(HERE, "passenger_app.ru"), File.join(@app, "config.ru"))
    # Passenger runs the app as config.ru's owner.
    FileUtils.chown_R(@user, @group, [@app, File.join(@dir, "data")])
    @store = File.join(@dir, "data/app.shm")
    @procs = []
  end

  def teardown
    @procs.reverse_each do |pid|
      Process.kill("TERM", pid)
      Timeout.timeout(30) { Process.wait(pid) }
    rescue Errno::ESRCH, Errno::ECHILD
      nil
    rescue Timeout::Error
      Process.kill("KILL", pid)
      Process.wait(pid)
    end
    FileUtils.rm_rf(@dir)
  end

  def test_smart_spawning
    start(vhost: ["PassengerMinInstances 4"])
    wait_for("4 processes") { processes.size == 4 }
    load = Load.new
    load.run(@port, n: 800)
    assert_equal(0, load.failed, log)
    assert_operator(load.served.size, :>=, 2)
    # One preloader loaded the app; every process that served was forked
    # from it, and never loaded the app itself.
    assert_equal(1, load.loaded_in.size, "the app was loaded once")
    preloader = load.loaded_in.first
    refute_includes(load.served, preloader)
    assert_includes(File.read("/proc/#{preloader}/cmdline"), "Passenger AppPreloader")
    load.served.each { |pid| assert_equal(preloader, ppid(pid), "process #{pid} forked from the preloader") }
    assert_counted(load)
  end

  def test_idle_processes_stop_and_load_spawns_them
    start(server: ["PassengerPoolIdleTime 2"])
    wait_for("1 process") { processes.size == 1 }
    load = Load.new
    seen = Set.new
    watching do |watch|
      2.times do
        watch[:most] = 0
        # Slow enough requests that 1 process is overloaded: Passenger
        # spawns more, up to PassengerMaxPoolSize.
        load.run(@port, path: "/work?sleep=0.05") { watch[:most] >= 4 }
        assert_equal(4, watch[:most], "Passenger spawned up to #{watch[:most]} processes\n#{log}")
        # The load stops: idle processes stop, down to PassengerMinInstances.
        wait_for("idle processes to stop") { watch[:now].size == 1 }
      end
      seen = watch[:seen] - watch[:now]
    end
    assert_operator(seen.size, :>=, 6, "Passenger stopped only #{seen.to_a}")
    seen.each { |pid| refute(File.exist?("/proc/#{pid}"), "stopped process #{pid} exited") }
    load.run(@port, n: 100)
    assert_equal(0, load.failed, log)
    assert_empty(seen - load.served, "every stopped process had served")
    assert_counted(load)
    # A stopped process's writer slot goes to a later process.
    # As the app's user: `shmetrics inspect` has no option to trust
    # another owner's store.
    as_user = Process.euid.zero? ? ["runuser", "-u", @user, "--"] : []
    out = IO.popen([*as_user, BIN, "inspect", "--store", @store], &:read)
    m = out.match(/writers\s+(\d+) live, (\d+) dead, \d+ slots; (\d+) claims, (\d+) reuses/) or flunk(out)
    live, dead, claims, reuses = m.captures.map { |v| Integer(v) }
    assert_operator(claims, :>=, load.served.size, out)
    assert_operator(reuses, :>, 0, out)
    assert_operator(live + dead, :<, load.served.size, out)
  end

  def test_restart_app
    start(vhost: ["PassengerMinInstances 4"])
    wait_for("4 processes") { processes.size == 4 }
    before = processes
    load = Load.new
    under_load(load) do
      passenger("passenger-config", "restart-app", @app)
      wait_for("new processes") { (processes & before).empty? }
      wait_for("a new process to serve") { !(load.served - before).empty? }
    end
    refute_empty(load.served & before, "old processes served")
    assert_equal(0, load.failed, "requests failed across a restart\n#{log}")
    assert_equal(2, load.loaded_in.size, "a new preloader loaded the app again")
    assert_counted(load)
  end

  def test_process_killed_with_sigkill
    start(vhost: ["PassengerMinInstances 4"])
    wait_for("4 processes") { processes.size == 4 }
    before = processes
    load = Load.new
    victim = nil
    under_load(load) do
      victim = (load.served & before).min
      Process.kill("KILL", victim) # under load: it may be in a request
      wait_for("Passenger to replace it") { (now = processes).size == 4 && !now.include?(victim) }
      wait_for("the new process to serve") { !(load.served - before).empty? }
    end
    # The request in flight in the killed process fails (Passenger answers
    # 502), and so may the next one, which Passenger hands the dead process
    # before it sees it died: that one never reaches the app (docs/ruby.md).
    assert_operator(load.failed, :<=, 2, log)
    assert_counted(load)
  end

  private

  def log
    f = File.join(@dir, "apache-error.log")
    File.exist?(f) ? File.read(f)[-3000..] || File.read(f) : "(no log)"
  end

  # docs/ruby.md's site with this test's port, folder and store, `server`
  # lines before it and `vhost` lines inside it; the gem, its library and
  # prometheus-client come from the test's environment.
  def site(port, server, vhost)
    sites = File.read(DOC).scan(/```apache\n(.*?)```/m).flatten
    assert_equal(1, sites.size, "docs/ruby.md has one apache snippet, the Passenger site")
    text = sites.first
    [["*:80", "*:#{port}"], ["/srv/myapp", @app], ["/dev/shm/myapp.shm", @store]].each do |old, new|
      assert_includes(text, old)
      text = text.gsub(old, new)
    end
    env = { "GEM_PATH" => ENV.fetch("GEM_PATH"), "SHMETRICS_LIBRARY" => ENV.fetch("SHMETRICS_LIBRARY"),
            "CLIENT_RUBY_DIR" => CLIENT_RUBY_DIR }.map { |k, v| "SetEnv #{k} #{v}" }
    text = text.sub("</VirtualHost>", (env + vhost).map { |l| "    #{l}\n" }.join + "</VirtualHost>")
    [*server, text].join("\n")
  end

  # Apache with Passenger and the exporter, both up (another port if
  # Apache's was taken in between).
  def start(server: [], vhost: [])
    3.times do |attempt|
      @port = free_port
      conf = File.read(HTTPD_CONF)
      { "@DIR@" => @dir, "@PORT@" => @port.to_s, "@USER@" => @user, "@GROUP@" => @group }
        .each { |k, v| conf = conf.gsub(k, v) }
      File.write(File.join(@dir, "apache2.conf"), conf + site(@port, server, vhost))
      # TMPDIR: where Passenger keeps its spawn folders and error reports.
      apache = spawn({ "TMPDIR" => @dir }, APACHE, "-f", File.join(@dir, "apache2.conf"), "-DFOREGROUND", pgroup: true,
        out: File::NULL, err: File.join(@dir, "apache.out"))
      @procs << apache
      break if wait_up(apache, @port)
      raise "Apache did not start:\n#{log}" if attempt == 2 || !log.include?("in use")

      Process.kill("TERM", apache)
      Process.wait(apache)
      @procs.delete(apache)
    end
    @metrics_port = free_port
    owner = Process.euid.zero? ? ["--store.owner", @user] : []
    @procs << spawn(BIN, "serve", "--store", @store, *owner, "--listen", "127.0.0.1:#{@metrics_port}",
      "--log.level", "warn")
    wait_for("the exporter") { get(@metrics_port, "/healthz") }
  end

  def wait_up(pid, port)
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 60
    while Process.clock_gettime(Process::CLOCK_MONOTONIC) < deadline
      return false if Process.wait(pid, Process::WNOHANG)
      return true if get(port, "/ready")

      sleep 0.1
    end
    false
  end

  def get(port, path)
    Net::HTTP.get_response(URI("http://127.0.0.1:#{port}#{path}")).code == "200"
  rescue SystemCallError, IOError
    false
  end

  def free_port
    s = TCPServer.new("127.0.0.1", 0)
    s.addr[1]
  ensure
    s.close
  end

  def passenger(*args)
    out = IO.popen({ "PASSENGER_INSTANCE_REGISTRY_DIR" => File.join(@dir, "registry") }, args, err: %i[child out],
      &:read)
    assert($?.success?, "#{args.join(" ")}: #{out}")
    out
  end

  # The app's processes, as Passenger lists them.
  def processes
    passenger("passenger-status").scan(/\* PID: (\d+)/).flatten.to_set(&:to_i)
  end

  def ppid(pid)
    Integer(File.read("/proc/#{pid}/stat")[/\) \S (\d+)/, 1])
  end

  # The app's processes sampled by a thread (passenger-status is a Ruby
  # program: the load's threads must not run it between requests).
  def watching
    watch = { now: processes, most: 0, seen: Set.new }
    watch[:seen] |= watch[:now]
    stop = false
    thread = Thread.new do
      until stop
        sleep 0.25
        now = processes
        watch[:now] = now
        watch[:seen] |= now
        watch[:most] = [watch[:most], now.size].max
      end
    end
    yield watch
  ensure
    stop = true
    thread&.join
  end

  # Requests all the while the block runs (at most 60 s), once 100 got
  # through.
  def under_load(load, &block)
    stop = false
    runner = Thread.new { load.run(@port, path: "/work?sleep=0.002", timeout: 90) { stop } }
    wait_for("the load to start") { load.ok > 100 }
    block.call
  ensure
    stop = true
    runner&.join
  end

  # The exporter counts each of the client's successes once, through both
  # APIs, and of its failures at most one (the request in flight in a
  # killed process); the histogram agrees.
  def assert_counted(load)
    assert_empty(load.bad, "responses other than 200 and 502")
    res = Net::HTTP.get_response(URI("http://127.0.0.1:#{@metrics_port}/metrics"))
    assert_equal("200", res.code)
    page = res.body
    why = "client: #{load.ok} ok, #{load.failed} failed"
    %w[http_requests_total http_request_duration_seconds_count app_served_total].each do |name|
      got = Float(page[/^#{name}\{route="\/work"\} (\S+)$/, 1] || 0)
      assert_includes(load.ok..(load.ok + [load.failed, 1].min), got, "#{name}: #{why}")
    end
    buckets = page.scan(/^http_request_duration_seconds_bucket\{route="\/work",le="[^"]+"\} (\S+)$/).flatten
      .map { |v| Float(v) }
    assert_equal(5, buckets.size, page)
    assert_equal(buckets.sort, buckets, "cumulative buckets")
    assert_equal(Float(page[/^http_request_duration_seconds_count\{route="\/work"\} (\S+)$/, 1]), buckets.last)
  end

  def wait_for(what, seconds = 60)
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + seconds
    until yield
      flunk("timed out waiting for #{what}\n#{log}") if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
      sleep 0.1
    end
  end
end
