# frozen_string_literal: true

# The cost of an update through a series made before a fork, in the child.
# Puma's preload_app! and Unicorn's preload_app true give every worker the
# metrics (and the series handles) the master made. This times
# increment on a counter without labels and on one with a label, the
# series made in the master, in the master and then in a forked worker:
# the best of 5 rounds of 1,000,000 calls each. Run by
# `benches/ruby/bench.sh prefork`.

require "shmetrics"
require "tmpdir"

def best_ns(n = 1_000_000, rounds = 5)
  Array.new(rounds) do
    start = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    i = 0
    while i < n
      yield
      i += 1
    end
    (Process.clock_gettime(Process::CLOCK_MONOTONIC) - start) / n * 1e9
  end.min
end

def report(where, plain, labelled, labels)
  figures = [
    format("increment %.1f ns", best_ns { plain.increment }),
    format("increment(labels:) %.1f ns", best_ns { labelled.increment(labels: labels) })
  ]
  puts "#{where}: #{figures.join(', ')}"
  $stdout.flush
end

Dir.mktmpdir("prefork", File.directory?("/dev/shm") ? "/dev/shm" : nil) do |dir|
  store = Shmetrics::Store.new(File.join(dir, "store"))
  plain = store.counter(:prefork_plain)
  labelled = store.counter(:prefork_labelled, labels: [:route])
  labels = { route: "/" }
  report("master", plain, labelled, labels)
  pid = fork do
    report("forked worker", plain, labelled, labels)
    exit!(0)
  end
  Process.wait(pid)
end
