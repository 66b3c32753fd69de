# frozen_string_literal: true

# Per-operation cost of `counter.increment(labels:)` and
# `histogram.observe(labels:)` (two labels each), in one run:
#   - prometheus-client 4.2.5 with Shmetrics::DataStore, with its
#     SingleThreaded store (its own in-memory floor) and with
#     DirectFileStore;
#   - prometheus-client-mmap 0.16.2;
#   - the gem's native API, and the same hot path through ruby-ffi
#     (ffi_binding.rb: why the gem is a C extension).
# Each contender runs in a process of its own (ops_worker.rb); rounds
# alternate between them and the best round counts. With --instr, each
# figure is instead the instructions per operation counted by valgrind's
# callgrind (the difference between two runs of different lengths), which
# the machine's load does not disturb.
#   ruby benches/ruby/ops.rb [--n 200000] [--rounds 3] [--instr]
# Needs $SHMETRICS_LIBRARY, $CLIENT_RUBY_DIR and the gem on the load path
# (benches/ruby/bench.sh sets them).
require "json"
require "open3"
require "optparse"
require "rbconfig"

opts = { n: 200_000, rounds: 3, instr: false, only: nil, ops: %w[counter histogram] }
OptionParser.new do |o|
  o.on("--only LIST", Array, "these contenders only (pc_single,native,...)") { |v| opts[:only] = v }
  o.on("--ops LIST", Array, "counter, histogram") { |v| opts[:ops] = v }
  o.on("--n N", Integer, "operations per timed run") { |v| opts[:n] = v }
  o.on("--rounds N", Integer, "rounds over all contenders") { |v| opts[:rounds] = v }
  o.on("--instr", "count instructions with callgrind instead of timing") { opts[:instr] = true }
end.parse!

WORKER = File.join(__dir__, "ops_worker.rb")
CONTENDERS = {
  "counter" => %w[pc_single pc_shmetrics pc_direct mmap native bound ffi empty],
  "histogram" => %w[pc_single pc_shmetrics pc_direct mmap native bound empty]
}.freeze
NAMES = {
  "pc_single" => "prometheus-client, SingleThreaded",
  "pc_shmetrics" => "prometheus-client, Shmetrics::DataStore",
  "pc_direct" => "prometheus-client, DirectFileStore",
  "mmap" => "prometheus-client-mmap 0.16.2",
  "native" => "shmetrics native API (C extension)",
  "bound" => "shmetrics native API, bound series",
  "ffi" => "the same hot path on ruby-ffi",
  "empty" => "(the loop and call alone)"
}.freeze

def wall(contender, op, n)
  out, err, st = Open3.capture3(RbConfig.ruby, WORKER, contender, op, n.to_s, "3")
  raise "#{contender} #{op}: #{err}" unless st.success?
  JSON.parse(out.lines.last)["ns"]
end

def instructions(contender, op, n)
  out, err, st = Open3.capture3({ "OPS_MODE" => "instr" }, "valgrind", "--tool=callgrind",
                                "--callgrind-out-file=/dev/null", RbConfig.ruby, WORKER, contender, op, n.to_s)
  raise "#{contender} #{op}: #{out}#{err}" unless st.success?
  Integer(err[/Collected : (\d+)/, 1])
end

unit = opts[:instr] ? "instructions" : "ns"
results = {}
CONTENDERS.each do |op, contenders|
  next unless opts[:ops].include?(op)
  contenders.each { |c| results[[op, c]] = nil if opts[:only].nil? || opts[:only].include?(c) }
end
if opts[:instr]
  # Ruby under valgrind runs some 50 times slower: short runs.
  n1 = 1_000
  n2 = n1 + [opts[:n] / 40, 5_000].max
  results.each_key do |op, c|
    a = instructions(c, op, n1)
    b = instructions(c, op, n2)
    results[[op, c]] = (b - a).fdiv(n2 - n1)
  end
else
  opts[:rounds].times do
    results.each_key do |op, c|
      v = wall(c, op, opts[:n])
      results[[op, c]] = [results[[op, c]], v].compact.min
    end
  end
end

CONTENDERS.each do |op, contenders|
  next unless opts[:ops].include?(op)
  contenders = contenders.select { |c| results.key?([op, c]) }
  puts
  puts "#{op == 'counter' ? 'counter.increment(labels:)' : 'histogram.observe(labels:)'}, #{unit} per operation " \
       "(#{opts[:instr] ? 'callgrind' : "best of #{opts[:rounds]} rounds of #{opts[:n]}"})"
  contenders.each do |c|
    puts format("  %-42s %12.1f", NAMES[c], results[[op, c]])
  end
  ratio = lambda do |label, a, b, target|
    return unless results[[op, a]] && results[[op, b]]
    puts format("    %-42s %6.2fx  %s", label, results[[op, a]] / results[[op, b]], target)
  end
  puts "  ratios (same run):"
  ratio.("Shmetrics::DataStore / SingleThreaded", "pc_shmetrics", "pc_single", "(target <= 1.3x)")
  ratio.("DirectFileStore / Shmetrics::DataStore", "pc_direct", "pc_shmetrics", "(target >= 4x)")
  ratio.("prometheus-client-mmap / native API", "mmap", "native", "(target >= 5x)")
  ratio.("ruby-ffi / native API", "ffi", "native", "")
end
