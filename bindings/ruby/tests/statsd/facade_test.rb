# frozen_string_literal: true

# The facade against a real store: what each call leaves in the store, as
# `shmetrics dump` prints it, and what is passed through to an agent.
#
#   ruby bindings/ruby/tests/statsd/facade_test.rb  (scripts/ruby-statsd-tests.sh runs it)

# The gem as installed by scripts/ruby-statsd-tests.sh, or this tree's lib
# with a build of its native part in SHMETRICS_RUBY_EXT_DIR.
LIB_ARGS = if (ext = ENV["SHMETRICS_RUBY_EXT_DIR"])
  $LOAD_PATH.unshift(ext, File.expand_path("../../lib", __dir__))
  ["-I", ext, "-I", File.expand_path("../../lib", __dir__)]
else
  []
end
require "minitest/autorun"
require "tmpdir"
require "socket"
require "open3"
require "shmetrics/statsd"

class FacadeTest < Minitest::Test
  ROOT = File.expand_path("../../../..", __dir__)
  BIN = ENV.fetch("SHMETRICS_BIN", File.join(ROOT, "target/release/shmetrics"))
  Client = Shmetrics::StatsD::Instrument::Client

  def setup
    @dir = Dir.mktmpdir("shmetrics-statsd")
    @store = File.join(@dir, "s.shm")
    @client = Client.new(store: @store, prefix: "app")
  end

  def teardown
    FileUtils.rm_rf(@dir)
  end

  def dump
    out, err, st = Open3.capture3(BIN, "dump", "--store", @store)
    assert(st.success?, err)
    out
  end

  def sample(page, line_start)
    page.lines.find { |l| l.start_with?(line_start) }&.split&.last&.then { |v| Float(v) }
  end

  def test_increment_adds_to_a_counter_per_tag_set
    3.times { @client.increment("page.views", tags: { route: "/a" }) }
    @client.increment("page.views", 5, tags: ["route:/b"])
    page = dump
    assert_equal(3.0, sample(page, 'app:page:views_total{route="/a"}'))
    assert_equal(5.0, sample(page, 'app:page:views_total{route="/b"}'))
  end

  def test_no_prefix_and_default_tags
    c = Client.new(store: @store, prefix: "app", default_tags: ["env:prod"])
    c.increment("raw.count", no_prefix: true)
    c.increment("cooked.count", tags: { shard: 2 })
    page = dump
    assert_equal(1.0, sample(page, 'raw:count_total{env="prod"}'))
    assert_equal(1.0, sample(page, 'app:cooked:count_total{env="prod",shard="2"}'))
  end

  def test_bare_tags_missing_tags_and_new_tags
    log = StringIO.new
    Shmetrics::StatsD.logger = Logger.new(log)
    @client.increment("t", tags: ["a:1", "flag"])
    @client.increment("t", tags: ["a:2"])
    @client.increment("t", tags: ["a:1", "flag", "late:x"])
    page = dump
    assert_equal(2.0, sample(page, 'app:t_total{a="1",flag="true"}'))
    assert_equal(1.0, sample(page, 'app:t_total{a="2",flag=""}'))
    assert_match(/app\.t: tags late left out/, log.string)
  ensure
    Shmetrics::StatsD.logger = nil
  end

  def test_measure_distribution_and_histogram_observe_in_milliseconds
    assert_equal(:done, @client.measure("db.query") { :done })
    @client.measure("db.query", 12.5)
    @client.distribution("db.rows", 40)
    @client.histogram("db.bytes", 1024)
    page = dump
    assert_equal(2.0, sample(page, "app:db:query_count"))
    assert_operator(sample(page, "app:db:query_sum"), :>=, 12.5)
    assert_equal(1.0, sample(page, "app:db:rows_count"))
    assert_equal(1024.0, sample(page, "app:db:bytes_sum"))
    # An observation is sent as its bucket's upper bound: at most 9.05% above.
    bound = Shmetrics::StatsD::StoreSink::DEFAULT_BUCKETS.find { |b| b >= 12.5 }
    assert_operator(bound / 12.5, :<, 2**(1 / 8.0) + 1e-9)
  end

  def test_gauge_is_the_last_value_set_by_any_process
    @client.gauge("queue.depth", 3)
    pid = fork do
      Client.new(store: @store, prefix: "app").gauge("queue.depth", 7)
      exit!(0)
    end
    Process.wait(pid)
    assert_equal(7.0, sample(dump, "app:queue:depth "))
    @client.gauge("queue.depth", 4)
    assert_equal(4.0, sample(dump, "app:queue:depth "))
  end

  def test_counts_from_forked_workers_add_up
    @client.increment("boot") # the parent opens the store before forking, as preload_app! does
    pids = 4.times.map do
      fork do
        1000.times { Shmetrics::StatsD.singleton_client = @client; @client.increment("work", tags: { w: "x" }) }
        exit!(0)
      end
    end
    pids.each { |p| Process.wait(p) }
    assert_equal(4000.0, sample(dump, 'app:work_total{w="x"}'))
  end

  def test_capture_still_reaches_the_store
    metrics = @client.capture { @client.increment("captured", 2, tags: { k: "v" }) }
    assert_equal(["app.captured"], metrics.map(&:name))
    assert_equal(["k:v"], metrics.first.tags)
    assert_equal(2.0, sample(dump, 'app:captured_total{k="v"}'))
  end

  def test_negative_or_non_numeric_values_are_refused
    assert_raises(Shmetrics::StatsD::ValueError) { @client.increment("c", -1) }
    assert_raises(Shmetrics::StatsD::ValueError) { @client.measure("m", "slow") }
    assert_raises(ArgumentError) { @client.gauge("g", nil) }
    assert_raises(Shmetrics::StatsD::ValueError) { @client.gauge("g", Float::NAN) }
  end

  def test_set_event_and_service_check_need_an_agent
    e = assert_raises(Shmetrics::StatsD::UnsupportedError) { @client.set("users", "u1") }
    assert_match(/passthrough/, e.message)
    assert_raises(Shmetrics::StatsD::UnsupportedError) { @client.event("deploy", "v2") }
    assert_raises(Shmetrics::StatsD::UnsupportedError) { @client.service_check("db", :ok) }
  end

  def test_set_event_and_service_check_pass_through_to_the_agent
    agent = UDPSocket.new
    agent.bind("127.0.0.1", 0)
    c = Client.new(store: @store, prefix: "app", passthrough: "127.0.0.1:#{agent.addr[1]}", default_tags: ["env:t"])
    c.set("users", "u1", tags: { plan: "pro" })
    c.event("deploy", "v2 is out", alert_type: "info")
    c.service_check("db", :critical, message: "down")
    got = 3.times.map { agent.recv(1000) }
    assert_equal(["app.users:u1|s|#env:t,plan:pro", "_e{6,9}:deploy|v2 is out|t:info|#env:t",
      "_sc|app.db|2|#env:t|m:down"], got)
  ensure
    agent&.close
  end

  # The C extension's lookups: a deep copy of tags of every shape finds
  # its entry; tags that differ in a value, in length or in an encoding
  # that String#== tells apart do not.
  def test_series_cache_finds_equal_tags_of_every_shape
    sc = Shmetrics::StatsD::SeriesCache
    root = {}
    shapes = [nil, "a:1,b:2", ["a:1", "b:2"], { a: "1", b: "2" }, ["a:1", :b], ["k:é"], { a: "1", b: 2 },
      { "a" => "1" }, { a: 1.5 }]
    shapes.each_with_index { |t, i| sc.store(root, t, i) }
    shapes.each_with_index { |t, i| assert_equal(i, sc.find(root, Marshal.load(Marshal.dump(t))), t.inspect) }
    assert_equal(3, sc.find(root, { b: "2", a: "1" })) # Hash#== holds in any order
    [["a:1", "b:3"], ["a:1"], ["a:1", "b:2", "c:3"], ["a:1", "b"], ["k:é".b], "a:1,b:3", { a: "1", b: "3" },
     { a: "1" }, { a: "1", b: "2", c: "3" }, { a: "1", c: "2" }, { a: "1", b: 3 }, { "a" => "2" }].each do |t|
      assert_nil(sc.find(root, t), t.inspect)
    end
    assert_nil(sc.counter_add(root, ["x:1"], 1))
  end

  # Two different tag sets whose `hash` is the same keep their own series.
  def test_series_cache_tells_colliding_tags_apart
    tag = Struct.new(:s) do
      def hash = 42
      def to_s = s
    end
    a = [tag.new("k:a")]
    b = [tag.new("k:b")]
    assert_equal(a.hash, b.hash)
    root = {}
    Shmetrics::StatsD::SeriesCache.store(root, a, :series_a)
    Shmetrics::StatsD::SeriesCache.store(root, b, :series_b)
    assert_equal(:series_a, Shmetrics::StatsD::SeriesCache.find(root, [tag.new("k:a")]))
    assert_equal(:series_b, Shmetrics::StatsD::SeriesCache.find(root, [tag.new("k:b")]))
    assert_nil(Shmetrics::StatsD::SeriesCache.find(root, [tag.new("k:c")]))
    @client.increment("collide", tags: a)
    @client.increment("collide", tags: b)
    @client.increment("collide", tags: [tag.new("k:b")])
    page = dump
    assert_equal(1.0, sample(page, 'app:collide_total{k="a"}'))
    assert_equal(2.0, sample(page, 'app:collide_total{k="b"}'))
  end

  # Runs `code` in another process with the facade loaded, as another
  # worker or another program on the host would.
  def in_another_process(code)
    out, st = Open3.capture2e("ruby", *LIB_ARGS, "-rshmetrics/statsd", "-e", code)
    assert(st.success?, out)
  end

  def test_updates_go_on_after_another_process_wipes_the_store
    @client.increment("w", 5, tags: { k: "a" })
    @client.gauge("wg", 3)
    @client.distribution("wd", 2)
    in_another_process("Shmetrics::Store.new(#{@store.inspect}).wipe")
    refute_match(/^app:w/, dump)
    # The cached series went stale: each update looks it up again (the
    # family registered again) and starts from zero.
    @client.increment("w", tags: { k: "a" })
    @client.gauge("wg", 4)
    @client.distribution("wd", 2)
    page = dump
    assert_equal(1.0, sample(page, 'app:w_total{k="a"}'))
    assert_equal(4.0, sample(page, "app:wg "))
    assert_equal(1.0, sample(page, "app:wd_count"))
  end

  def test_a_series_idle_for_the_ttl_expires_and_comes_back_from_zero
    # A TTL long enough that the checks after the second update see the
    # series, on a loaded machine too.
    c = Client.new(store: @store, prefix: "app", ttl: 2)
    c.increment("idle", 7, tags: { k: "a" })
    c.measure("idle.t", 1)
    sleep 2.5
    refute_match(/^app:idle/, dump, "hidden once idle for the TTL")
    c.increment("idle", tags: { k: "a" })
    c.measure("idle.t", 1)
    page = dump
    assert_equal(1.0, sample(page, 'app:idle_total{k="a"}'))
    assert_equal(1.0, sample(page, "app:idle:t_count"))
  end

  def test_other_tag_keys_from_another_process_are_fitted_not_raised
    log = StringIO.new
    Shmetrics::StatsD.logger = Logger.new(log)
    in_another_process(<<~RUBY)
      Shmetrics::StatsD::Instrument::Client.new(store: #{@store.inspect}, prefix: "app").increment("x", tags: { a: 1 })
    RUBY
    # This process never used "x": its first use has other tag keys. The
    # host's definition (tag key a) is taken; b is left out, a is empty.
    @client.increment("x", tags: { b: 2 })
    @client.increment("x", tags: { b: 3, a: 1 })
    page = dump
    assert_equal(1.0, sample(page, 'app:x_total{a=""}'))
    assert_equal(2.0, sample(page, 'app:x_total{a="1"}'))
    assert_match(/app\.x: tags b left out: the metric's tags are a/, log.string)
    assert_nil(sample(page, "shmetrics_statsd_dropped_events_total"))
  ensure
    Shmetrics::StatsD.logger = nil
  end

  def test_tag_keys_that_change_across_a_wipe_are_fitted
    log = StringIO.new
    Shmetrics::StatsD.logger = Logger.new(log)
    @client.increment("z", tags: { a: 1 })
    in_another_process(<<~RUBY)
      Shmetrics::Store.new(#{@store.inspect}).wipe
      Shmetrics::StatsD::Instrument::Client.new(store: #{@store.inspect}, prefix: "app").increment("z", tags: { b: 1 })
    RUBY
    # The cached series is stale, and its family cannot register again:
    # the name now has tag key b. The event is fitted to that.
    @client.increment("z", tags: { a: 1 })
    page = dump
    assert_equal(1.0, sample(page, 'app:z_total{b="1"}'))
    assert_equal(1.0, sample(page, 'app:z_total{b=""}'))
    assert_match(/app\.z: tags a left out: the metric's tags are b/, log.string)
  ensure
    Shmetrics::StatsD.logger = nil
  end

  def test_a_name_taken_by_another_type_is_counted_as_dropped_not_raised
    log = StringIO.new
    Shmetrics::StatsD.logger = Logger.new(log)
    in_another_process(<<~RUBY)
      Shmetrics::Store.new(#{@store.inspect}).gauge("app:taken", mode: :shared).set(1)
    RUBY
    @client.increment("taken")
    @client.increment("taken", tags: { k: "v" })
    @client.measure("taken", 3)
    page = dump
    assert_equal(3.0, sample(page, 'shmetrics_statsd_dropped_events_total{reason="conflict"}'))
    assert_equal(1.0, sample(page, "app:taken "))
    assert_equal(1, log.string.scan(/app\.taken: events dropped \(conflict\)/).size, log.string)
  ensure
    Shmetrics::StatsD.logger = nil
  end

  def test_compat_defines_the_constant_only_on_request
    out, st = Open3.capture2e("ruby", *LIB_ARGS, "-e", 'require "shmetrics/statsd"; p defined?(::StatsD)')
    assert(st.success?, out)
    assert_equal("nil\n", out)
    out, st = Open3.capture2e("ruby", *LIB_ARGS, "-e",
      'require "shmetrics/statsd/compat"; p StatsD.equal?(Shmetrics::StatsD)')
    assert_equal("true\n", out)
    out, st = Open3.capture2e("ruby", *LIB_ARGS, "-e", 'module StatsD; end; require "shmetrics/statsd/compat"')
    refute(st.success?)
    assert_match(/already defined/, out)
  end
end
