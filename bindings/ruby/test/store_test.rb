# frozen_string_literal: true

require_relative "test_helper"

class StoreTest < Minitest::Test
  include ShmetricsTest

  def test_version_matches_header
    assert_equal Shmetrics::VERSION, Shmetrics::Native::HEADER_VERSION
    assert_equal Shmetrics::VERSION.split(".").first.to_i, Shmetrics::Native::ABI_MAJOR
    assert_equal Shmetrics::Native::HEADER_VERSION, Shmetrics::Native.version
  end

  def test_render_text_and_openmetrics
    c = @store.counter(:jobs_total, help: "Jobs.", labels: [:queue])
    c.increment(labels: { queue: "mail" }, by: 3)
    text = @store.render
    assert_includes text, "# TYPE jobs_total counter\n"
    assert_includes text, %(jobs_total{queue="mail"} 3\n)
    om = @store.render(:openmetrics)
    assert om.end_with?("# EOF\n"), om
    assert_raises(ArgumentError) { @store.render(:json) }
    assert_equal "text/plain; version=0.0.4; charset=utf-8", Shmetrics::Store.content_type
    assert_equal :openmetrics, Shmetrics::Store.negotiate("application/openmetrics-text; version=1.0.0")
    assert_equal :text, Shmetrics::Store.negotiate(nil)
  end

  def test_open_errors_carry_the_library_message
    File.write(File.join(@dir, "foreign"), "not a store" * 100)
    e = assert_raises(Shmetrics::ForeignFileError) { Shmetrics::Store.new(File.join(@dir, "foreign")) }
    assert_includes e.message, "foreign"
    assert_equal 2, e.code
    e = assert_raises(Shmetrics::IoError) { Shmetrics::Store.new(File.join(@dir, "missing"), create: false) }
    assert_includes e.message, "missing"
    assert_raises(ArgumentError) { Shmetrics::Store.new(@path, max_seris: 3) }
  end

  def test_read_only_store_refuses_writes
    @store.counter(:a).increment
    ro = Shmetrics::Store.new(@path, read_only: true)
    assert ro.read_only?
    assert_includes ro.render, "a_total 1"
    assert_raises(Shmetrics::ReadOnlyError) { ro.counter(:b).increment }
  ensure
    ro&.close
  end

  def test_capacities_apply_on_creation
    small = Shmetrics::Store.new(File.join(@dir, "small.shm"), max_families: 2)
    small.counter(:a)
    small.counter(:b)
    assert_raises(Shmetrics::StoreFullError) { small.counter(:c) }
    assert_equal 2, small.stats[:families_capacity]
  ensure
    small&.close
  end

  def test_closed_store_raises
    c = @store.counter(:a)
    @store.close
    assert @store.closed?
    e = assert_raises(Shmetrics::Error) { c.increment }
    assert_includes e.message, "closed"
    @store = nil
  end

  def test_reset_and_wipe
    c = @store.counter(:a, labels: [:x])
    c.increment(labels: { x: 1 })
    @store.reset
    assert_includes @store.render, %(a_total{x="1"} 0)
    @store.wipe
    refute_includes @store.render, "a_total"
    # The family registers again, and the series starts from zero.
    c.increment(labels: { x: 1 })
    assert_includes @store.render, %(a_total{x="1"} 1)
  end

  def test_default_store_from_environment
    out, err, st = ruby_run(<<~RUBY, "SHMETRICS_STORE" => File.join(@dir, "env.shm"))
      Shmetrics.store.counter(:from_env).increment
      print Shmetrics.store.path
    RUBY
    assert st.success?, err
    assert_equal File.join(@dir, "env.shm"), out
    assert_includes Shmetrics::Store.new(File.join(@dir, "env.shm")).render, "from_env_total 1"
  end

  # A long-lived store notices that its file was replaced (removed and
  # created again by another process) and reopens it; updates then land
  # in the new file.
  def test_check_reopens_a_replaced_file
    c = @store.counter(:hits, labels: [:x])
    c.increment(labels: { x: "a" })
    refute @store.check
    assert_equal :same, @store.path_now
    File.unlink(@path)
    assert_equal :gone, @store.path_now
    refute Shmetrics.check_store(@store), "nothing to reopen while the path is gone"
    _, err, st = ruby_run("Shmetrics::Store.new(#{@path.inspect}).counter(:other).increment")
    assert st.success?, err
    assert_equal :other, @store.path_now
    gen = @store.generation
    assert Shmetrics.check_store
    assert_equal gen + 1, @store.generation
    assert_equal :same, @store.path_now
    c.increment(labels: { x: "a" }, by: 5)
    fresh = Shmetrics::Store.new(@path, read_only: true)
    text = fresh.render
    assert_includes text, %(hits_total{x="a"} 5)
    assert_includes text, "other_total 1"
  ensure
    fresh&.close
  end
end

class CheckStoreMiddlewareTest < Minitest::Test
  include ShmetricsTest

  def test_checks_at_most_once_per_interval
    require "shmetrics/rack"
    calls = 0
    store = Object.new
    store.define_singleton_method(:check) { calls += 1 }
    app = Shmetrics::Rack::CheckStore.new(->(_env) { [200, {}, ["ok"]] }, interval: 3600, stores: [store])
    3.times { assert_equal 200, app.call({})[0] }
    assert_equal 1, calls
    app = Shmetrics::Rack::CheckStore.new(->(_env) { [200, {}, ["ok"]] }, interval: 0, stores: [store])
    2.times { app.call({}) }
    assert_equal 3, calls
  end

  def test_reopens_the_replaced_store_between_requests
    require "shmetrics/rack"
    c = @store.counter(:req)
    app = Shmetrics::Rack::CheckStore.new(->(_env) { c.increment; [200, {}, []] }, interval: 0)
    app.call({})
    File.unlink(@path)
    Shmetrics::Store.new(@path).close
    app.call({})
    assert_includes Shmetrics::Store.new(@path, read_only: true).render, "req_total 1\n"
  end
end
