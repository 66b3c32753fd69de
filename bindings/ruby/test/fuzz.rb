# frozen_string_literal: true

# API fuzzing of the shmetrics gem (issue 33, part 3): random sequences
# of public calls with random arguments (wrong types, nil, huge and
# negative numbers, NaN and infinities, strings of odd encodings, objects
# made with `allocate`), between which the store is wiped, reset,
# closed, reopened, replaced by another file, and the process forks.
#
# Each seed runs in a subprocess of its own, in a directory of its own.
# The only outcomes allowed for a call are a result or an exception of
# the classes the gem documents: Shmetrics::Error (and its subclasses),
# ArgumentError, TypeError and RangeError (FloatDomainError is one). Any
# other exception, a crash (a signal, Ruby's [BUG]), a hang (the
# subprocess's time limit) or a leak fails the run, which prints the seed
# and the last calls. The leak check is a probe of its own (LeakProbe):
# every native entry point, on its success and error paths, thousands
# of times, with the process's resident memory measured after a warm-up.
#
#   ruby test/fuzz.rb [--calls N] [--per-seed N] [--seed S] [--time SECONDS]
#
# runs the leak probe, the seeds of test/fuzz_seeds.txt (the seeds that
# ever failed, kept as regression cases), then new random seeds until N
# random calls in all (default 100000); it fails if they take more than
# SECONDS (default 60). --seed S runs one seed alone. Longer runs:
# `--calls 10000000 --time 3600`. Loads the gem as test/test_helper.rb
# does (SHMETRICS_RUBY_EXT_DIR, else the installed gem); libshmetrics
# from $SHMETRICS_LIBRARY.
require "rbconfig"
require "tmpdir"
require "timeout"

module ShmetricsFuzz
  ALLOWED = %w[Shmetrics::Error ArgumentError TypeError RangeError].freeze
  SEEDS_FILE = File.expand_path("fuzz_seeds.txt", __dir__)
  # Rounds of the leak probe (19 calls each).
  LEAK_ROUNDS = 2_000
  # Resident memory a subprocess may gain after its warm-up, in kB
  # ($SHMETRICS_FUZZ_LEAK_KB, else 4096). A clean run gains 50 to 450 kB;
  # an injected leak of 2 kB per update made the probe gain 29 MB.
  LEAK_KB = Integer(ENV.fetch("SHMETRICS_FUZZ_LEAK_KB", 4 * 1024))

  # The arguments drawn from.
  module Values
    NUMBERS = [0, 1, -1, 2, 0.5, -0.0, 1e308, -1e308, 2**31, 2**32, 2**63, 2**64, -2**63,
               2**100, Float::NAN, Float::INFINITY, -Float::INFINITY, Float::EPSILON,
               Rational(1, 3), Complex(1, 1)].freeze

    def self.strings
      ["", "a", "route", "/api/users", "x" * 300, "\xFF\xFE".b, "/caf\xC3\xA9".b, "\0", "a\0b",
       "é/x".encode("UTF-16LE"), "é".encode("UTF-16BE"), "caf\xE9".dup.force_encoding("ISO-8859-1"),
       "\u3042".encode("Shift_JIS"), "bad\xC3".dup.force_encoding("UTF-8"), "\u{1F600}",
       "\xFF".dup.force_encoding("UTF-7"), "le", "quantile", "__name__", "with space"]
    end

    OTHERS = [nil, true, false, :sym, :route, :"", [], [1.0], {}, Object.new, 1..2, Class, -> {}].freeze
  end

  # The resident memory of this process, in kB.
  def self.rss_kb
    File.read("/proc/self/status")[/VmRSS:\s+(\d+)/, 1].to_i
  end

  # Ends a subprocess: its result line, then exit! (no at_exit handler,
  # nothing of the parent's state flushed twice after a fork).
  def self.finish(line, grow)
    puts line
    $stdout.flush
    exit!(grow > LEAK_KB ? 3 : 0)
  end

  # One subprocess: `calls` random calls from `seed`.
  class Child
    include Values

    # Small stores: creating the default size costs more than the calls.
    SMALL = { max_families: 16, max_series: 256, label_bytes: 1 << 16, max_writers: 8 }.freeze

    def initialize(seed, calls, dir, log)
      @rng = Random.new(seed)
      @calls = calls
      @dir = dir
      @log = log
      @strings = Values.strings
      @stores = []
      @families = []
      @series = []
      @paths = Array.new(3) { |i| File.join(dir, "s#{i}.shm") }
      @returned = 0
    end

    def run
      @paths.each { |p| Shmetrics::Store.new(p, **SMALL).close }
      warm = [@calls / 5, 1].max
      rss0 = nil
      @calls.times do |i|
        rss0 = ShmetricsFuzz.rss_kb if i == warm
        step(i)
      end
      GC.start
      grow = rss0 ? ShmetricsFuzz.rss_kb - rss0 : 0
      warn "fuzz: resident memory grew by #{grow} kB after the warm-up" if grow > LEAK_KB
      ShmetricsFuzz.finish("ok #{@calls} calls (#{@returned} returned), rss +#{grow} kB", grow)
    end

    private

    def pick(list) = list[@rng.rand(list.size)]

    def any
      case @rng.rand(10)
      when 0..2 then pick(NUMBERS)
      when 3..6 then pick(@strings)
      when 7 then pick(OTHERS)
      when 8 then @rng.rand(2).zero? ? symbol : Object.new
      else label_hash
      end
    end

    def symbol
      s = pick(@strings)
      s.valid_encoding? ? s.to_sym : :invalid
    end

    def number = @rng.rand(4).zero? ? any : pick(NUMBERS.first(8))
    def value = @rng.rand(3).zero? ? any : pick(@strings.first(6) + [1, 2, :a])

    def label_hash
      case @rng.rand(8)
      when 0 then nil
      when 1 then {}
      when 2 then { route: value }
      when 3 then { "route" => value, "status" => value }
      when 4 then { route: value, status: value, extra: value }
      when 5 then any_keys
      else { route: value, status: value }
      end
    end

    def any_keys
      h = @rng.rand(2).zero? ? {} : {}.compare_by_identity
      @rng.rand(6).times { h[@rng.rand(2).zero? ? symbol : any] = value }
      h
    end

    def store = @stores.empty? || @rng.rand(20).zero? ? Shmetrics::Store.allocate : pick(@stores)

    def family
      return pick([Shmetrics::Counter, Shmetrics::Gauge, Shmetrics::Histogram, Shmetrics::Summary]).allocate \
        if @families.empty? || @rng.rand(30).zero?
      pick(@families)
    end

    def options
      opts = {}
      keys = %i[create read_only mode max_families max_series label_bytes max_writers
                cells_per_writer sketch_cells_per_writer owner group bogus]
      @rng.rand(3).times { opts[pick(keys)] = @rng.rand(2).zero? ? any : [4, 16, 64, 0o600][@rng.rand(4)] }
      opts.delete(:read_only) if @rng.rand(2).zero?
      opts
    end

    def labels_arg = @rng.rand(4).zero? ? Array.new(@rng.rand(4)) { any } : pick([[], %i[route], %i[route status]])

    def family_kwargs
      kw = { help: @rng.rand(4).zero? ? any : "h", labels: labels_arg }
      extras = { unit: any, ttl: number, max_series: number, exemplars: any, buckets: [number, 1.0],
                 quantiles: [0.5, number], max_age: number, age_buckets: number, mode: any,
                 name_as_given: any }
      extras.each { |k, v| kw[k] = v if @rng.rand(8).zero? }
      kw
    end

    ONLY = { exemplars: %i[counter histogram], buckets: %i[histogram], quantiles: %i[summary],
             max_age: %i[summary], age_buckets: %i[summary], mode: %i[gauge], name_as_given: %i[counter] }.freeze

    def new_family
      s = store
      kind = pick(%i[counter gauge histogram summary])
      kw = family_kwargs.reject { |k, _| ONLY[k] && !ONLY[k].include?(kind) }
      name = @rng.rand(5).zero? ? any : pick(%w[requests latency temp jobs ratio])
      f = s.public_send(kind, name, **kw)
      @families << f if @families.size < 40
      f
    end

    # A store path: one of the run's, or (rarely) anything; a String is
    # taken relative to the run's directory (the subprocess's working
    # directory), never at the root of the file system.
    def new_store
      path = pick(@paths)
      if @rng.rand(15).zero?
        path = pick([any, "no/such/dir", "x\0y"])
        str = path.to_s.b
        path = File.join(@dir, str.delete("/")) if str.start_with?("/")
      end
      s = Shmetrics::Store.new(path, **options)
      @stores << s
      @stores.shift.close if @stores.size > 4
      s
    end

    def replace_file
      path = pick(@paths)
      tmp = "#{path}.new"
      Shmetrics::Store.new(tmp, **SMALL).close
      File.rename(tmp, path)
      Shmetrics.check_store
    end

    def forked
      pid = Process.fork do
        20.times { |i| step(i, log: false) }
        exit!(0)
      end
      _, status = Process.wait2(pid)
      raise "fuzz: a forked child died: #{status.inspect}" unless status.success?
    end

    # A random method of the family's class (public, or the native
    # part's own `__` methods) with random arguments.
    def family_call(f)
      m, args, kw = family_method
      return f.inspect unless f.respond_to?(m, true)
      r = kw ? f.public_send(m, *args, **kw) : f.send(m, *args)
      @series << r if r.is_a?(Shmetrics::Series)
      r
    end

    def family_method
      case @rng.rand(14)
      when 0 then [:increment, [], { by: number, labels: label_hash }]
      when 1 then [:increment, [], { labels: label_hash, exemplar: @rng.rand(2).zero? ? any : { trace_id: value } }]
      when 2 then [:set, [number], { labels: label_hash }]
      when 3 then [:decrement, [], { by: number, labels: label_hash }]
      when 4 then [:observe, [number], { labels: label_hash, **(@rng.rand(3).zero? ? { exemplar: { t: value } } : {}) }]
      when 5 then [:set_to_current_time, [], { labels: label_hash }]
      when 6 then [:remove, [], { labels: label_hash }]
      when 7 then [:get, [], { labels: label_hash }]
      when 8 then [:values, [], {}]
      when 9 then [:series, [label_hash], nil]
      when 10 then [:clear, [], {}]
      when 11 then [pick(%i[__counter_add __gauge_set __gauge_add __observe __touch]), [label_hash, number], nil]
      when 12 then [:__bind, [@rng.rand(3).zero? ? any : [value, value]], nil]
      else [pick(%i[label_names name spec store cached_series __register]), [], nil]
      end
    end

    def series_call
      s = pick(@series)
      case @rng.rand(6)
      when 0 then s.increment(by: number)
      when 1 then s.decrement(by: number)
      when 2 then s.set(number)
      when 3 then s.observe(number)
      when 4 then s.set_to_current_time
      else [s.inspect, s.label_values]
      end
    end

    def store_call(s)
      case @rng.rand(16)
      when 0 then s.render(@rng.rand(3).zero? ? any : pick(%i[text openmetrics]))
      when 1 then s.stats
      when 2 then s.snapshot(@rng.rand(2).zero? ? nil : any)
      when 3 then s.wipe
      when 4 then s.reset
      when 5 then s.reopen
      when 6 then s.close
      when 7 then s.check
      when 8 then s.path_now
      when 9 then s.release_slot
      when 10 then Shmetrics::Store.content_type(any)
      when 11 then Shmetrics::Store.negotiate(any)
      else [s.inspect, s.closed?, s.read_only?, s.generation, s.path]
      end
    end

    def cache_call
      sc = Shmetrics::StatsD::SeriesCache
      root = {}
      tags = @rng.rand(2).zero? ? any : [value.to_s, "a:1"]
      root[sc.key(tags)] = [any, @series.empty? ? any : pick(@series), @rng.rand(2).zero? ? any : [[tags, any], any]]
      case @rng.rand(4)
      when 0 then sc.find(root, tags)
      when 1 then sc.same?(any, tags)
      else sc.public_send(pick(%i[counter_add gauge_set observe]), @rng.rand(5).zero? ? any : root, tags, number)
      end
    rescue NoMethodError => e
      # A cached object that is no Series gets the Ruby call (the
      # facade's Dropped): an object without it raises, as Ruby does.
      raise unless e.name.to_s.start_with?("__") && !e.receiver.is_a?(Shmetrics::Series)
    end

    def call(kind)
      case kind
      when 0..1 then new_store
      when 2..6 then new_family
      when 7..26 then family_call(family)
      when 27..30 then @series.empty? ? new_family : series_call
      when 31..34 then store_call(store)
      when 35 then cache_call
      when 36 then replace_file
      when 37 then @rng.rand(10).zero? ? forked : Shmetrics.check_store
      else Shmetrics::Native.send(:__load, any, any)
      end
    end

    def step(i, log: true)
      kind = @rng.rand(39)
      @log.puts("#{i} #{kind}") if log
      @series.shift(@series.size - 200) if @series.size > 200
      call(kind)
      @returned += 1
    rescue Exception => e # rubocop:disable Lint/RescueException
      raise if e.is_a?(SystemExit) || e.is_a?(Interrupt)
      return if ALLOWED.any? { |c| e.is_a?(Object.const_get(c)) }
      warn "fuzz: call #{i} (kind #{kind}) raised #{e.class}: #{e.message}\n  #{e.backtrace.first(6).join("\n  ")}"
      exit!(2)
    end
  end

  # The leak check that random calls cannot make (most of them fail
  # early, and the caches fill): every native entry point, on its
  # success path and on its error paths, `rounds` times in one process;
  # its resident memory after a warm-up must not grow by more than
  # LEAK_KB.
  class LeakProbe
    def initialize(dir, rounds)
      @dir = dir
      @rounds = rounds
    end

    def ops # rubocop:disable Metrics/AbcSize,Metrics/MethodLength
      path = File.join(@dir, "probe.shm")
      store = Shmetrics::Store.new(path, **Child::SMALL)
      c = store.counter(:probe, labels: %i[a b], exemplars: true)
      h = store.histogram(:probe_h, labels: %i[a])
      g = store.gauge(:probe_g)
      s = c.series(a: "s", b: "t")
      [->(i) { c.increment(labels: { a: "x", b: (i % 50).to_s }) },
       ->(_) { c.increment(labels: { a: "x" }) },
       ->(_) { c.increment(by: "x", labels: { a: "x", b: "y" }) },
       ->(_) { c.increment(by: -1, labels: { a: "x", b: "y" }) },
       ->(i) { c.increment(labels: { a: "\xFF#{i % 7}".b, b: "é".encode("UTF-16LE") }) },
       ->(i) { c.increment(exemplar: { t: i.to_s }, labels: { a: "e", b: "f" }) },
       ->(i) { c.remove(labels: { a: "x", b: (i % 50).to_s }) },
       ->(i) { h.observe(0.1, labels: { a: (i % 10).to_s }) },
       ->(_) { s.increment },
       ->(i) { c.send(:__bind, ["u", (i % 10).to_s]).increment },
       ->(_) { store.snapshot("probe") },
       ->(_) { store.render(:openmetrics) },
       ->(_) { store.stats },
       ->(_) { Shmetrics::Store.new(File.join(@dir, "no/such"), create: true) },
       ->(_) { Shmetrics::Family.__new(store, { name: "probe", kind: 2 }) },
       ->(_) { Shmetrics::Counter.allocate.increment },
       ->(_) { Shmetrics::Store.new(path, max_families: -1) },
       ->(_) { Shmetrics.check_store },
       ->(i) { g.set(i) }]
    end

    def run
      list = ops
      allowed = ALLOWED.map { |c| Object.const_get(c) }
      rss0 = nil
      @rounds.times do |i|
        rss0 = ShmetricsFuzz.rss_kb if i == @rounds / 10
        list.each do |op|
          op.call(i)
        rescue *allowed
          nil
        end
      end
      GC.start
      grow = ShmetricsFuzz.rss_kb - rss0
      ShmetricsFuzz.finish("ok #{@rounds * list.size} calls (leak probe), rss +#{grow} kB", grow)
    end
  end

  # The parent: runs the seeds in subprocesses and judges them.
  class Runner
    def initialize(argv)
      @calls = 100_000
      @per_seed = 5_000
      @time = 60.0
      @seed = nil
      parse(argv)
    end

    def parse(argv)
      until argv.empty?
        case (a = argv.shift)
        when "--calls" then @calls = Integer(argv.shift)
        when "--per-seed" then @per_seed = Integer(argv.shift)
        when "--time" then @time = Float(argv.shift)
        when "--seed" then @seed = Integer(argv.shift)
        else abort "fuzz.rb: unknown argument #{a}"
        end
      end
    end

    def kept_seeds
      return [] unless File.exist?(SEEDS_FILE)
      File.readlines(SEEDS_FILE).map { |l| l.sub(/#.*/, "").split }.reject(&:empty?)
          .map { |seed, calls| [Integer(seed), Integer(calls || @per_seed)] }
    end

    def run
      exit(run_seed(@seed, @per_seed) ? 0 : 1) if @seed
      started = now
      kept = kept_seeds
      puts "fuzz: the leak probe, #{kept.size} kept seed(s) from #{File.basename(SEEDS_FILE)}, " \
           "then new seeds until #{@calls} calls (at most #{@time} s)"
      exit(1) unless run_seed(:leak_probe, LEAK_ROUNDS)
      done = 0
      kept.each do |seed, calls|
        exit(1) unless run_seed(seed, calls)
        done += calls
      end
      while done < @calls
        if now - started > @time
          warn "fuzz: only #{done} calls in #{@time} s"
          exit(1)
        end
        exit(1) unless run_seed(Random.new_seed % 2**32, @per_seed)
        done += @per_seed
      end
      puts format("fuzz: %d random calls in %.1f s, no crash, hang, leak or undocumented error", done, now - started)
    end

    private

    def now = Process.clock_gettime(Process::CLOCK_MONOTONIC)

    def ruby_args
      args = [RbConfig.ruby]
      if (ext = ENV["SHMETRICS_RUBY_EXT_DIR"])
        args += ["-I", ext, "-I", File.expand_path("../lib", __dir__)]
      end
      args
    end

    # Runs one seed (or the leak probe) in a subprocess whose working
    # directory is a new directory, in /dev/shm as stores are deployed
    # (a disk's writeback of the files a run creates would cost more than
    # the calls); false, after saying why, when it failed.
    def run_seed(seed, calls)
      Dir.mktmpdir("shmetrics-fuzz", File.writable?("/dev/shm") ? "/dev/shm" : nil) do |dir|
        log = File.join(dir, "calls.log")
        out = File.join(dir, "out")
        t0 = now
        mode = seed == :leak_probe ? "--leak-probe" : "--child"
        pid = Process.spawn(*ruby_args, File.expand_path(__FILE__), mode, seed.to_s, calls.to_s, dir, log,
                            out: out, err: %i[child out], pgroup: true, chdir: dir)
        status = wait(pid, [calls / 100.0, 30].max)
        # Ruby's crash report without its memory map.
        text = File.readlines(out).grep_v(/\A\h+-\h+ /).join
        if status&.success?
          puts format("fuzz: seed %s: %s (%.1f s)", seed, text.lines.last&.chomp, now - t0)
          return true
        end
        report(seed, calls, status, log, text)
        false
      end
    end

    def report(seed, calls, status, log, text)
      why = status.nil? ? "hung (killed after its time limit)" : status.inspect
      last = File.exist?(log) ? File.readlines(log).last(5).map(&:chomp).join(", ") : "?"
      warn "fuzz: seed #{seed} FAILED: #{why}; last calls (index kind): #{last}\n#{text[-8000..] || text}"
      if seed == :leak_probe
        warn "fuzz: the leak probe failed (resident memory grew by more than #{LEAK_KB} kB)"
      else
        warn "fuzz: rerun with `ruby #{__FILE__} --seed #{seed} --per-seed #{calls}`; once fixed, " \
             "keep it in #{SEEDS_FILE}"
      end
    end

    def wait(pid, limit)
      Timeout.timeout(limit) { Process.wait2(pid)[1] }
    rescue Timeout::Error
      Process.kill(:KILL, -pid)
      Process.wait(pid)
      nil
    end
  end
end

case ARGV.first
when "--leak-probe"
  _, _, rounds, dir = ARGV
  require "shmetrics"
  ShmetricsFuzz::LeakProbe.new(dir, Integer(rounds)).run
when "--child"
  _, seed, calls, dir, log = ARGV
  # Store.new(nil) opens the default store: this run's, not the host's.
  ENV["SHMETRICS_STORE"] = File.join(dir, "default.shm")
  require "shmetrics"
  require "shmetrics/statsd"
  $stderr.sync = true
  File.open(log, "w") do |f|
    f.sync = true
    ShmetricsFuzz::Child.new(Integer(seed), Integer(calls), dir, f).run
  end
else
  ShmetricsFuzz::Runner.new(ARGV).run
end
