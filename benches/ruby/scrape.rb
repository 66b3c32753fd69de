# frozen_string_literal: true

# Scrape cost, in one run: 1,000 and 10,000 series written by 1, 4 and 16
# worker processes, then, for 1,000 series, after 100 more workers lived
# and died (25 generations of 4, as in restarts): the host's exporter
# (`shmetrics serve`, over HTTP) on a store written through
# Shmetrics::DataStore, against prometheus-client's DirectFileStore and
# prometheus-client-mmap 0.16.2 (see scrape_worker.rb). Prints the median
# scrape in milliseconds and the ratios.
#   ruby benches/ruby/scrape.rb [--k 3] [--series 1000,10000] [--workers 1,4,16]
# With --inapp (benches/inapp_render.sh), the render inside the app
# instead, for the first of --series and --workers (default 10,000 x 16),
# in the mixed shape of counters and histograms (see scrape_worker.rb):
# Formats::Text.marshal on Shmetrics::DataStore, on DirectFileStore, and
# prometheus-client-mmap's marshal_multiprocess; the last line says
# `inapp ruby MS_SHMETRICS MS_DIRECTFILESTORE MS_MMAP`.
require "json"
require "open3"
require "optparse"
require "rbconfig"
require "tmpdir"

opts = { k: 3, series: [1000, 10_000], workers: [1, 4, 16], dead: 100, inapp: false }
OptionParser.new do |o|
  o.on("--k N", Integer, "timed scrapes per cell") { |v| opts[:k] = v }
  o.on("--series LIST", Array, "series counts") { |v| opts[:series] = v.map { |x| Integer(x) } }
  o.on("--workers LIST", Array, "worker counts") { |v| opts[:workers] = v.map { |x| Integer(x) } }
  o.on("--dead N", Integer, "dead workers (a multiple of 4)") { |v| opts[:dead] = v }
  o.on("--inapp", "the render inside the app, 10,000 series x 16 workers unless given") { opts[:inapp] = true }
end.parse!

WORKER = File.join(__dir__, "scrape_worker.rb")
CONTENDERS = %w[shmetrics direct mmap].freeze

def run!(*args)
  out, err, st = Open3.capture3(RbConfig.ruby, WORKER, *args.map(&:to_s))
  raise "scrape_worker #{args.join(' ')}: #{err}#{out}" unless st.success?
  out
end

def median(xs)
  s = xs.sort
  s[s.size / 2]
end

def cell(contender, dir, series, total, k)
  median(JSON.parse(run!("scrape", contender, dir, series, total, k).lines.last)["ms"])
end

def row(label, ms)
  puts format("  %-34s %10.2f %10.2f %10.2f %8.1fx %8.1fx", label, ms["shmetrics"], ms["direct"], ms["mmap"],
              ms["direct"] / ms["shmetrics"], ms["mmap"] / ms["shmetrics"])
end

if opts[:inapp]
  ENV["SCRAPE_SHAPE"] = "mixed"
  series = opts[:series] == [1000, 10_000] ? 10_000 : opts[:series].first
  workers = opts[:workers] == [1, 4, 16] ? 16 : opts[:workers].first
  ms = {}
  %w[inapp direct mmap].each do |c|
    Dir.mktmpdir("shmetrics-inapp", File.directory?("/dev/shm") ? "/dev/shm" : nil) do |dir|
      run!("write", c, dir, series, workers, 1)
      ms[c] = cell(c, dir, series, workers, opts[:k])
    end
  end
  puts format("in-app render, median of %d (ms), %d series x %d workers: DataStore %.2f, " \
              "DirectFileStore %.2f (%.2fx), prometheus-client-mmap %.2f (%.2fx)", opts[:k], series, workers,
              ms["inapp"], ms["direct"], ms["direct"] / ms["inapp"], ms["mmap"], ms["mmap"] / ms["inapp"])
  puts format("inapp ruby %.3f %.3f %.3f", ms["inapp"], ms["direct"], ms["mmap"])
  exit
end

puts "scrape, median of #{opts[:k]} (ms)       exporter  DirectFile      mmap  DFS/exp  mmap/exp"
opts[:series].each do |series|
  opts[:workers].each do |workers|
    ms = {}
    CONTENDERS.each do |c|
      Dir.mktmpdir("shmetrics-scrape") do |dir|
        run!("write", c, dir, series, workers, 1)
        ms[c] = cell(c, dir, series, workers, opts[:k])
      end
    end
    row("#{series} series x #{workers} workers", ms)
  end
end

series = opts[:series].min
before = {}
after = {}
CONTENDERS.each do |c|
  Dir.mktmpdir("shmetrics-scrape") do |dir|
    run!("write", c, dir, series, 4, 1)
    before[c] = cell(c, dir, series, 4, opts[:k])
    run!("write", c, dir, series, 4, opts[:dead] / 4)
    after[c] = cell(c, dir, series, 4 + opts[:dead], opts[:k])
  end
end
row("#{series} series x 4 workers", before)
row("... after #{opts[:dead]} dead workers", after)
puts format("  growth after the dead workers: exporter %.2fx, DirectFileStore %.2fx, mmap %.2fx",
            after["shmetrics"] / before["shmetrics"], after["direct"] / before["direct"], after["mmap"] / before["mmap"])
