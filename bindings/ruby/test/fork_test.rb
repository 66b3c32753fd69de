# frozen_string_literal: true

require_relative "test_helper"

# Pre-fork servers (Puma cluster mode with preload_app!, Unicorn with
# preload_app true) open the store and define metrics in the master, then
# fork: each worker must write through a writer slot of its own.
class ForkTest < Minitest::Test
  include ShmetricsTest

  def test_forked_workers_write_their_own_slots
    c = @store.counter(:requests, labels: [:worker])
    g = @store.gauge(:busy, mode: :liveall)
    c.increment(labels: { worker: "master" }) # the master claims a slot and caches a handle
    claims = @store.stats[:writer_claims_total]
    pids = 4.times.map do |w|
      fork do
        2000.times { c.increment(labels: { worker: "all" }) }
        c.increment(labels: { worker: w })
        g.set(1)
        exit!(0)
      end
    end
    pids.each { |p| Process.wait(p); assert $?.success? }
    text = @store.render
    assert_includes text, %(requests_total{worker="all"} 8000\n)
    4.times { |w| assert_includes text, %(requests_total{worker="#{w}"} 1\n) }
    assert_includes text, %(requests_total{worker="master"} 1\n)
    assert_equal claims + 4, @store.stats[:writer_claims_total]
    # The workers are dead: a live gauge mode shows none of them.
    refute_match(/^busy\{/, text)
  end

  # A handle the master made (a preloading master's metrics) is placed
  # for the worker by its first update there: the updates after it take
  # the library's fast path.
  def test_a_handle_made_before_the_fork_is_placed_for_the_worker
    c = @store.counter(:placed, labels: [:route])
    c.increment(labels: { route: "/" })
    handle = c.series(route: "/")
    assert handle.__placed?
    pid = fork do
      before = handle.__placed?
      c.increment(labels: { route: "/" })
      after = handle.__placed?
      exit!(!before && after && c.series(route: "/").equal?(handle) ? 0 : 1)
    end
    Process.wait(pid)
    assert $?.success?, "the worker's handle was not placed: exit #{$?.exitstatus}"
    assert handle.__placed?
    assert_includes @store.render, %(placed_total{route="/"} 2\n)
  end

  def test_killed_worker_keeps_its_counts
    c = @store.counter(:done)
    r, w = IO.pipe
    pid = fork do
      r.close
      100.times { c.increment }
      w.puts "ready"
      sleep
    end
    w.close
    assert_equal "ready\n", r.gets
    Process.kill(:KILL, pid)
    Process.wait(pid)
    assert_includes @store.render, "done_total 100\n"
  end
end
