# frozen_string_literal: true

# Instructions per event (valgrind --tool=callgrind), which the load of a
# shared machine does not change: statsd-instrument 3.11.0 batched with
# aggregation against the shmetrics facade, for the throughput benchmark's
# three events (an increment, a timed block and a gauge, 3 tags), on one
# thread. Each mode runs twice, with N and 2N rounds; the difference over
# N rounds is the cost of one round, without start-up.
#
#   ruby benches/ruby/statsd_instructions.rb        (N=2000)

require "open3"
require "rbconfig"
require "tmpdir"

ROOT = File.expand_path("../..", __dir__)
N = Integer(ENV.fetch("N", 2000))
SI = [ENV["STATSD_INSTRUMENT_DIR"], "../shared/peers/statsd-instrument-v3.11.0",
  "../../shared/peers/statsd-instrument-v3.11.0"].compact.map { |d| File.expand_path(d, ROOT) }
  .find { |d| File.directory?(File.join(d, "lib")) } or abort "statsd-instrument 3.11.0 not found"

if ARGV[0] == "--child"
  mode, rounds = ARGV[1], Integer(ARGV[2])
  $LOAD_PATH.unshift(File.join(SI, "lib"))
  # The gem as benches/ruby/bench.sh installs it, or this tree's lib with a
  # build of its native part in SHMETRICS_RUBY_EXT_DIR.
  if (ext = ENV["SHMETRICS_RUBY_EXT_DIR"])
    $LOAD_PATH.unshift(ext, File.join(ROOT, "bindings/ruby/lib"))
  end
  require "statsd-instrument"
  require "shmetrics/statsd"
  require "tmpdir"
  StatsD.logger = Logger.new(File::NULL)
  client = if mode == "facade"
    Shmetrics::StatsD::Instrument::Client.new(store: File.join(Dir.tmpdir, "statsd-instr-#{Process.pid}.shm"))
  else
    StatsD::Instrument::Environment.new("STATSD_ADDR" => "127.0.0.1:9", "STATSD_IMPLEMENTATION" => "dogstatsd",
      "STATSD_ENV" => "production", "STATSD_ENABLE_AGGREGATION" => "true",
      "STATSD_AGGREGATION_FLUSH_INTERVAL" => "60").client
  end
  round = lambda do
    tags = ["series:1", "foo:bar", "baz:quc"]
    client.increment("StatsD.increment", 10, tags: tags)
    client.measure("StatsD.measure", tags: tags) { 1 + 1 }
    client.gauge("StatsD.gauge", 12.0, tags: tags)
  end
  round.call # series made, caches warm
  rounds.times { round.call }
  File.delete(*Dir[File.join(Dir.tmpdir, "statsd-instr-#{Process.pid}.shm*")])
  exit!(0)
end

def instructions(mode, rounds)
  out = File.join(Dir.tmpdir, "callgrind.statsd.#{mode}.#{rounds}")
  _, err, st = Open3.capture3("valgrind", "--tool=callgrind", "--callgrind-out-file=#{out}",
    RbConfig.ruby, __FILE__, "--child", mode, rounds.to_s)
  abort err unless st.success?
  Integer(File.read(out)[/^summary: (\d+)/, 1]).tap { File.delete(out) }
end

per = {}
%w[statsd-instrument-aggregated facade].each do |mode|
  per[mode] = (instructions(mode, 2 * N) - instructions(mode, N)) / (3.0 * N)
  puts format("%-32s %8.0f instructions per event", mode, per[mode])
end
puts format("statsd-instrument aggregated / facade: %.2fx", per["statsd-instrument-aggregated"] / per["facade"])
