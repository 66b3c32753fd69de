# frozen_string_literal: true

# One contender of benches/ruby/ops.rb, in a process of its own
# (prometheus-client and prometheus-client-mmap both define
# Prometheus::Client, so they cannot share one):
#   ruby ops_worker.rb CONTENDER OP N REPEATS
# CONTENDER: native bound ffi pc_single pc_direct pc_shmetrics mmap empty
# OP: counter (increment with two labels) or histogram (observe with two
# labels). Prints one JSON line: the best time per operation over REPEATS
# runs of N operations, in ns, and the loop's own cost.
require "json"
require "tmpdir"

contender, op, n, repeats = ARGV[0], ARGV[1], Integer(ARGV[2]), Integer(ARGV[3] || 5)
dir = Dir.mktmpdir("shmetrics-ops")
at_exit { FileUtils.rm_rf(dir) }
labels = { route: "/api/users", status: "200" }

case contender
when "empty"
  # The loop and the lambda call alone: what every contender's figure
  # includes besides its operation.
  work = -> {}
when "native"
  require "shmetrics"
  store = Shmetrics::Store.new(File.join(dir, "ops.shm"))
  if op == "counter"
    c = store.counter(:requests_total, help: "x", labels: %i[route status])
    work = -> { c.increment(labels: { route: "/api/users", status: "200" }) }
  else
    h = store.histogram(:latency_seconds, help: "x", labels: %i[route status])
    work = -> { h.observe(0.042, labels: { route: "/api/users", status: "200" }) }
  end
when "bound"
  # The native API's bound series: the labels looked up once, outside the loop.
  require "shmetrics"
  store = Shmetrics::Store.new(File.join(dir, "ops.shm"))
  if op == "counter"
    s = store.counter(:requests_total, help: "x", labels: %i[route status]).series(route: "/api/users", status: "200")
    work = -> { s.increment }
  else
    s = store.histogram(:latency_seconds, help: "x", labels: %i[route status]).series(route: "/api/users", status: "200")
    work = -> { s.observe(0.042) }
  end
when "ffi"
  # The same hot path through ruby-ffi, as the gem would be without its
  # native part: a Hash of label sets to series handles, one FFI call.
  require_relative "ffi_binding"
  raise "ffi contender: counter only" unless op == "counter"
  c = FfiBinding.new(File.join(dir, "ops.shm")).counter("requests", %w[route status])
  work = -> { c.increment(labels: { route: "/api/users", status: "200" }) }
when "pc_single", "pc_direct", "pc_shmetrics"
  $LOAD_PATH.unshift(File.join(ENV.fetch("CLIENT_RUBY_DIR"), "lib"))
  require "prometheus/client"
  require "prometheus/client/data_stores/single_threaded"
  require "prometheus/client/data_stores/direct_file_store"
  Prometheus::Client.config.data_store =
    case contender
    when "pc_single" then Prometheus::Client::DataStores::SingleThreaded.new
    when "pc_direct" then Prometheus::Client::DataStores::DirectFileStore.new(dir: dir)
    else
      require "shmetrics/data_store"
      Shmetrics::DataStore.new(store: File.join(dir, "ops.shm"))
    end
  reg = Prometheus::Client::Registry.new
  if op == "counter"
    c = reg.counter(:requests_total, docstring: "x", labels: %i[route status])
    work = -> { c.increment(labels: { route: "/api/users", status: "200" }) }
  else
    h = reg.histogram(:latency_seconds, docstring: "x", labels: %i[route status])
    work = -> { h.observe(0.042, labels: { route: "/api/users", status: "200" }) }
  end
when "mmap"
  ENV["prometheus_multiproc_dir"] = dir
  require "prometheus/client"
  reg = Prometheus::Client::Registry.new
  if op == "counter"
    c = reg.counter(:requests_total, "x")
    work = -> { c.increment({ route: "/api/users", status: "200" }, 1) }
  else
    h = reg.histogram(:latency_seconds, "x")
    work = -> { h.observe({ route: "/api/users", status: "200" }, 0.042) }
  end
else
  abort "unknown contender #{contender}"
end
labels.freeze

# The loop bodies call the lambda, so that every contender pays the same
# loop and call; `empty` measures that part alone.
empty = -> {}
clock = -> { Process.clock_gettime(Process::CLOCK_MONOTONIC, :nanosecond) }
run = lambda do |fn|
  t = clock.call
  i = 0
  while i < n
    fn.call
    i += 1
  end
  (clock.call - t).fdiv(n)
end
if ENV["OPS_MODE"] == "instr"
  # For instruction counts (valgrind): 1,000 warm-up operations, then N;
  # ops.rb runs two N and divides the difference.
  1000.times { work.call }
  run.call(work)
  exit!(0)
end
run.call(work) # warm up: series created, caches filled
best = Array.new(repeats) { run.call(work) }.min
loop_ns = Array.new(repeats) { run.call(empty) }.min
puts JSON.generate(contender: contender, op: op, ns: best.round(1), loop_ns: loop_ns.round(1))
