# frozen_string_literal: true

require_relative "test_helper"

class MetricsTest < Minitest::Test
  include ShmetricsTest

  def test_counter_labels_in_any_order_and_any_type
    c = @store.counter(:http_requests_total, help: "Requests.", labels: %i[route status])
    c.increment(labels: { route: "/", status: "200" })
    c.increment(labels: { status: "200", route: "/" }, by: 2)
    c.increment(labels: { route: :/, status: 200 }, by: 0.5)
    c.increment(labels: { "route" => "/", "status" => "200" })
    assert_equal [%(http_requests_total{route="/",status="200"} 4.5)],
                 samples(@store.render, "http_requests_total{")
    assert_equal 4.5, c.get(labels: { route: "/", status: 200 })
  end

  def test_label_errors_say_what_is_wrong
    c = @store.counter(:a, labels: %i[x y])
    e = assert_raises(Shmetrics::LabelError) { c.increment(labels: { x: 1 }) }
    assert_includes e.message, "missing label :y"
    e = assert_raises(Shmetrics::LabelError) { c.increment(labels: { x: 1, y: 2, z: 3 }) }
    assert_includes e.message, "unexpected label :z"
    assert_raises(Shmetrics::LabelError) { c.increment }
    assert_raises(TypeError) { c.increment(labels: [1, 2]) }
  end

  # The fast path reads a label Hash in one pass, matching keys by
  # identity: a key it does not know must still be refused after the label
  # set is cached, also for a family whose updates may carry extra keys
  # (the data store's `le`), and values such as false or nil are values.
  def test_cached_label_sets_still_refuse_unknown_keys
    c = Shmetrics::Family.__new(@store, { name: "extra", help: "", kind: 1, labels: %i[x y] }, [:le])
    3.times { c.__counter_add({ x: false, y: nil, le: "1" }, 1) }
    3.times { c.__counter_add({ y: nil, x: false }, 1) }
    e = assert_raises(Shmetrics::LabelError) { c.__counter_add({ x: false, y: nil, z: "1" }, 1) }
    assert_includes e.message, "unexpected label :z"
    e = assert_raises(Shmetrics::LabelError) { c.__counter_add({ x: false, le: "1" }, 1) }
    assert_includes e.message, "missing label :y"
    assert_equal 1, c.cached_series
    assert_equal 6.0, c.get(labels: { x: "false", y: "" })
  end

  def test_value_errors_come_from_the_core
    c = @store.counter(:a)
    e = assert_raises(Shmetrics::InvalidValueError) { c.increment(by: -1) }
    assert_equal 8, e.code
    assert_raises(Shmetrics::InvalidValueError) { c.increment(by: Float::NAN) }
    assert_raises(TypeError) { c.increment(by: "1") }
    assert_raises(Shmetrics::InvalidNameError) { @store.counter(:"bad name") }
    assert_raises(Shmetrics::ConflictError) { @store.gauge(:a) }
    assert_raises(Shmetrics::InvalidOptionsError) { @store.histogram(:h, buckets: [2, 1]) }
    # A help text is checked by the core (label values are made UTF-8 by
    # the gem: robustness_test.rb).
    assert_raises(Shmetrics::InvalidUtf8Error) { @store.counter(:u, help: "\xff".b) }
  end

  def test_gauge_modes
    g = @store.gauge(:temp, labels: [:room])
    g.set(20, labels: { room: "a" })
    g.increment(by: 2, labels: { room: "a" })
    g.decrement(labels: { room: "a" })
    assert_equal 21.0, g.get(labels: { room: "a" })
    all = @store.gauge(:per_pid, mode: :all)
    all.set(7)
    assert_includes @store.render, %(per_pid{pid="#{Process.pid}"} 7)
    t = @store.gauge(:ts)
    t.set_to_current_time
    assert_in_delta Time.now.to_f, t.get, 5
    assert_raises(ArgumentError) { @store.gauge(:x, mode: :avg) }
  end

  def test_histogram_and_summary
    h = @store.histogram(:latency_seconds, help: "Latency.", labels: [:route], buckets: [0.1, 1, 10])
    [0.05, 0.5, 0.5, 20].each { |v| h.observe(v, labels: { route: "/" }) }
    text = @store.render
    assert_includes text, %(latency_seconds_bucket{route="/",le="0.1"} 1\n)
    assert_includes text, %(latency_seconds_bucket{route="/",le="1.0"} 3\n)
    assert_includes text, %(latency_seconds_bucket{route="/",le="+Inf"} 4\n)
    assert_includes text, %(latency_seconds_sum{route="/"} 21.05\n)
    v = h.get(labels: { route: "/" })
    assert_equal 4, v[:count]
    assert_equal({ 0.1 => 1, 1.0 => 3, 10.0 => 3, Float::INFINITY => 4 }, v[:buckets])
    s = @store.summary(:size_bytes, quantiles: [0.5, 0.99], max_age: 60)
    (1..100).each { |i| s.observe(i) }
    sv = s.get
    assert_equal 100, sv[:count]
    assert_in_delta 50, sv[:quantiles][0.5], 1
    assert_in_delta 99, sv[:quantiles][0.99], 1.5
  end

  def test_exemplars
    c = @store.counter(:ex, exemplars: true)
    c.increment(exemplar: { trace_id: "abc" })
    h = @store.histogram(:exh, buckets: [1], exemplars: true)
    h.observe(0.5, exemplar: { trace_id: "def" })
    om = @store.render(:openmetrics)
    assert_match(/ex_total 1 # \{trace_id="abc"\} 1/, om)
    assert_match(/exh_bucket\{le="1.0"\} 1 # \{trace_id="def"\} 0.5/, om)
    e = assert_raises(Shmetrics::InvalidOptionsError) { @store.counter(:noex).increment(exemplar: { a: 1 }) }
    assert_includes e.message, "exemplar"
  end

  def test_remove_and_clear
    c = @store.counter(:a, labels: [:x])
    c.increment(labels: { x: 1 })
    c.increment(labels: { x: 2 })
    assert c.remove(labels: { x: 1 })
    refute c.remove(labels: { x: 1 })
    assert_equal [%(a_total{x="2"} 1)], samples(@store.render, "a_total{")
    c.increment(labels: { x: 1 })
    assert_equal 2, c.clear
    assert_empty samples(@store.render, "a_total{")
  end

  # Another process deletes a series this one has cached: the next update
  # finds its handle stale, looks the series up again and records there.
  def test_series_deleted_by_another_process_is_looked_up_again
    c = @store.counter(:shared, labels: [:x])
    c.increment(labels: { x: "k" }, by: 10)
    _, err, st = ruby_run(<<~RUBY)
      s = Shmetrics::Store.new(#{@path.inspect})
      exit(s.counter(:shared, labels: [:x]).remove(labels: { x: "k" }) ? 0 : 1)
    RUBY
    assert st.success?, err
    assert_empty samples(@store.render, "shared_total{")
    c.increment(labels: { x: "k" })
    assert_equal [%(shared_total{x="k"} 1)], samples(@store.render, "shared_total{")
  end

  # A bound Series is looked up again in place when another process
  # deletes its series, when the store is wiped, and when a TTL expires it.
  def test_bound_series_survives_delete_wipe_and_ttl
    c = @store.counter(:bound, labels: %i[x y])
    s = c.series(x: "k", y: 2)
    assert_equal %w[k 2], s.label_values
    assert_same c, s.family
    assert_same s, c.series(y: 2, x: "k")
    s.increment(by: 10)
    _, err, st = ruby_run(<<~RUBY)
      s = Shmetrics::Store.new(#{@path.inspect})
      exit(s.counter(:bound, labels: %i[x y]).remove(labels: { x: "k", y: 2 }) ? 0 : 1)
    RUBY
    assert st.success?, err
    s.increment
    assert_equal [%(bound_total{x="k",y="2"} 1)], samples(@store.render, "bound_total{")
    _, err, st = ruby_run("Shmetrics::Store.new(#{@path.inspect}).wipe")
    assert st.success?, err
    s.increment(by: 3)
    assert_equal [%(bound_total{x="k",y="2"} 3)], samples(@store.render, "bound_total{")

    g = @store.gauge(:idle, labels: [:x], ttl: 1, mode: :sum).series(x: "a")
    g.set(5)
    sleep 1.5
    assert_empty samples(@store.render, "idle{"), "expired after the TTL"
    g.increment(by: 2)
    assert_equal [%(idle{x="a"} 2)], samples(@store.render, "idle{")
  end

  def test_bound_series_of_each_type
    h = @store.histogram(:h, labels: [:x], buckets: [1, 2]).series(x: "a")
    h.observe(1.5)
    assert_includes @store.render, %(h_bucket{x="a",le="2.0"} 1)
    g = @store.gauge(:g, mode: :sum).series({})
    g.set(3)
    g.decrement(by: 1)
    assert_includes @store.render, "g 2"
    assert_raises(Shmetrics::WrongTypeError) { h.set(1) }
    assert_raises(Shmetrics::InvalidValueError) { @store.counter(:c).series({}).increment(by: -1) }
  end

  # Frozen label values are known by identity in front of the cache; a
  # String changed between updates must still find its own series.
  def test_label_values_changed_between_updates_find_their_own_series
    c = @store.counter(:m, labels: %i[x y])
    v = +"a"
    c.increment(labels: { x: v, y: 1 })
    v << "b"
    c.increment(labels: { x: v, y: 1 })
    k = "k".freeze
    3.times { c.increment(labels: { x: k, y: 1 }) }
    c.increment(labels: { x: "k", y: 1 })
    c.increment(labels: { x: :k, y: 1 })
    assert_equal [%(m_total{x="a",y="1"} 1), %(m_total{x="ab",y="1"} 1), %(m_total{x="k",y="1"} 5)],
                 samples(@store.render, "m_total{").sort
  end

  def test_same_definition_shares_the_family
    a = @store.counter(:a, labels: [:x])
    assert_same a, @store.counter(:a, labels: [:x])
  end

  def test_cache_limit_keeps_counting
    c = Shmetrics::Counter.__new(@store, { name: "lim", help: "", labels: [:x], kind: 1, cache_limit: 10 })
    25.times { |i| c.increment(labels: { x: i }) }
    assert_operator c.cached_series, :<=, 10
    25.times { |i| c.increment(labels: { x: i }) }
    assert_equal 25, samples(@store.render, "lim_total{").size
    assert(samples(@store.render, "lim_total{").all? { |l| l.end_with?(" 2") })
  end

  def test_threads_count_exactly
    c = @store.counter(:t, labels: [:x])
    8.times.map { |i| Thread.new { 5000.times { c.increment(labels: { x: i % 2 }) } } }.each(&:join)
    assert_equal 20_000.0, c.get(labels: { x: 0 })
    assert_equal 20_000.0, c.get(labels: { x: 1 })
  end
end
