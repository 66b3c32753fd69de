# frozen_string_literal: true

require_relative "test_helper"

# Calls a user can write that must never crash the process, leak, or
# store something else than what was given (issue 33): objects made
# without their constructor, a moving garbage collector, label values of
# any encoding, out-of-range integers. What could crash runs in a
# subprocess, whose exit status is checked.
class RobustnessTest < Minitest::Test
  include ShmetricsTest

  # Runs `code` in a subprocess; fails unless it exits 0, and returns its
  # standard output.
  def run_ok(code)
    out, err, status = ruby_run(code)
    assert status.success?, "the subprocess died (#{status.inspect}):\n#{err[-3000..] || err}"
    out
  end

  def test_counter_new_without_a_store_raises_instead_of_crashing
    out = run_ok(<<~RUBY)
      begin
        Shmetrics::Counter.new.increment
        puts "no error"
      rescue Shmetrics::Error => e
        puts "Shmetrics::Error"
      end
    RUBY
    assert_equal "Shmetrics::Error\n", out
  end

  # Every method of every class of the native part, on an object made by
  # `allocate` (no constructor run), with assorted arguments: each call
  # returns or raises Shmetrics::Error, ArgumentError or TypeError.
  def test_every_method_of_an_allocated_object_raises_the_binding_error
    out = run_ok(<<~RUBY)
      allowed = [Shmetrics::Error, ArgumentError, TypeError, RangeError]
      args = [nil, 1, -1, "x", :x, {}, { a: "1" }, [], [1.0], Float::NAN]
      classes = [Shmetrics::Store, Shmetrics::Family, Shmetrics::Counter, Shmetrics::Gauge,
                 Shmetrics::Histogram, Shmetrics::Summary]
      bad = []
      calls = 0
      classes.each do |klass|
        methods = [klass, *(klass < Shmetrics::Family ? [Shmetrics::Family] : [])].flat_map do |k|
          k.public_instance_methods(false) + k.private_instance_methods(false)
        end
        (methods.uniq - %i[__value]).each do |m|
          arity = klass.instance_method(m).arity
          n = arity.negative? ? -arity - 1 : arity
          args.each do |a|
            obj = klass.allocate
            begin
              calls += 1
              obj.send(m, *([a] * n))
            rescue *allowed
            rescue Exception => e
              bad << "\#{klass}#\#{m}(\#{a.inspect}): \#{e.class}: \#{e.message}"
            end
          end
        end
      end
      begin
        Shmetrics::Series.allocate
        bad << "Series.allocate made an object"
      rescue TypeError
      end
      puts bad
      puts "calls \#{calls}"
    RUBY
    assert_match(/\Acalls \d+\n\z/, out)
  end

  def test_a_family_made_twice_with_init_is_refused
    c = @store.counter(:once, labels: [:a])
    assert_raises(Shmetrics::Error) { c.send(:__init, @store, { name: "other", kind: 1 }, nil) }
    c.increment(labels: { a: "1" })
    assert_equal 1.0, c.get(labels: { a: "1" })
  end

  def test_a_family_spec_of_wrong_types_raises
    [{ name: 5, kind: 1 }, { name: "x", kind: "1" }, { name: "x", kind: 3, buckets: 5 },
     { name: "x", kind: 1, labels: "a" }, { name: "x", kind: 1, labels: [5] },
     { name: "x", kind: 1, help: 7 }].each do |spec|
      assert_raises(TypeError, spec.inspect) { Shmetrics::Family.__new(@store, spec) }
    end
    assert_raises(TypeError) { Shmetrics::Family.__new(@store, { name: "x", kind: 1 }, 5) }
  end

  def test_statsd_series_cache_with_a_malformed_root_raises_or_misses
    sc = Shmetrics::StatsD::SeriesCache
    key = sc.key(["a:1"])
    assert_nil sc.find({ key => [["b"], :s, [5, [], [["a:1"]]]] }, ["a:1"])
    assert_nil sc.find({ key => [["b"], :s, 5] }, ["a:1"])
    assert_equal :t, sc.find({ key => [["b"], :s, [[["a:1"], :t]]] }, ["a:1"])
  end

  # Label names and values, and the definition's strings, read while the
  # garbage collector compacts at every allocation: each series keeps
  # exactly its own label values.
  def test_label_values_survive_gc_compaction
    out = run_ok(<<~RUBY)
      store = Shmetrics::Store.new(#{@path.dump})
      GC.auto_compact = true
      GC.stress = true
      c = store.counter(:compact_total, help: "h", labels: %i[route status method], exemplars: true)
      h = store.histogram(:compact_seconds, labels: %i[route], buckets: [0.1, 1])
      8.times do |i|
        route = +"/r\#{i}"
        c.increment(labels: { route: route, status: (200 + i).to_s, method: "m\#{i}" })
        h.observe(0.5, labels: { route: "/h\#{i}" })
        c.series(route: "/s\#{i}", status: "1", method: "x").increment(by: 2)
        c.increment(exemplar: { trace_id: "t\#{i}" }, labels: { route: "/e\#{i}", status: "2", method: "y" })
        c.remove(labels: { route: "/gone\#{i}", status: "3", method: "z" })
      end
      GC.stress = false
      puts store.snapshot.flat_map { |f| f[:series].map { |s| [f[:name], *s[:labels]].join(" ") } }.sort
    RUBY
    want = (0..7).flat_map do |i|
      ["compact /r#{i} #{200 + i} m#{i}", "compact /s#{i} 1 x", "compact /e#{i} 2 y", "compact_seconds /h#{i}"]
    end
    assert_equal want.sort, out.lines.map(&:chomp)
  end

  # A label value whose #to_s, and a bucket bound whose #to_f, move every
  # object of the heap (GC.verify_compaction_references) while the
  # native part is inside a call: what it read before must be read again.
  def test_strings_read_again_after_user_code_compacts_the_heap
    out = run_ok(<<~RUBY)
      class Compacting
        def to_s
          GC.verify_compaction_references(toward: :empty, double_heap: true)
          "moved"
        end
      end
      class CompactingBound < Numeric
        def to_f
          GC.verify_compaction_references(toward: :empty, double_heap: true)
          0.25
        end
      end
      store = Shmetrics::Store.new(#{@path.dump})
      c = store.counter(:exemplary_total, help: "Exemplary.", labels: %i[route], exemplars: true)
      c.increment(exemplar: { trace_id: +"abcdef" }, labels: { route: Compacting.new })
      spec = { name: +"compacted_seconds", help: +"Compacted help.", kind: 3,
               labels: [+"path"], buckets: [CompactingBound.new, 1.0] }
      h = Shmetrics::Family.__new(store, spec)
      h.__observe({ path: "/p" }, 0.5)
      text = store.render(:openmetrics)
      puts text.lines.grep(/exemplary_total\{|compacted_seconds_bucket|# HELP compacted/)
    RUBY
    assert_includes out, %(exemplary_total{route="moved"} 1 # {trace_id="abcdef"} 1)
    assert_includes out, %(# HELP compacted_seconds Compacted help.\n)
    assert_includes out, %(compacted_seconds_bucket{path="/p",le="0.25"} 0\n)
    assert_includes out, %(compacted_seconds_bucket{path="/p",le="1.0"} 1\n)
  end

  # The error classes the native part raises are kept in place when the
  # heap is compacted, and alive when their constants are removed.
  def test_error_classes_survive_compaction_and_removal
    out = run_ok(<<~RUBY)
      store = Shmetrics::Store.new(#{@path.dump})
      store.close
      GC.verify_compaction_references(toward: :empty, double_heap: true)
      begin
        store.render
      rescue => e
        puts e.class.name
      end
      %i[Error LibraryError LibraryVersionError].each { |c| Shmetrics.send(:remove_const, c) }
      GC.start
      GC.verify_compaction_references(toward: :empty, double_heap: true)
      begin
        store.render
      rescue => e
        puts e.class.ancestors.include?(StandardError)
      end
    RUBY
    assert_equal "Shmetrics::Error\ntrue\n", out
  end

  # Rack's PATH_INFO is ASCII-8BIT: its bytes are taken as UTF-8, bytes
  # that are not UTF-8 become U+FFFD; a String of another encoding is
  # transcoded to UTF-8. No update raises for a value's encoding.
  def test_label_values_of_any_encoding
    c = @store.counter(:enc_total, labels: [:path])
    c.increment(labels: { path: "/caf\xC3\xA9".b })
    c.increment(labels: { path: "/a\xFFb".b })
    c.increment(labels: { path: "/é16".encode("UTF-16LE") })
    c.increment(labels: { path: "/caf\xE9".dup.force_encoding("ISO-8859-1") })
    c.increment(labels: { path: "/bad\xC3".dup.force_encoding("UTF-8") })
    c.increment(labels: { path: "/\u3042".encode("Shift_JIS") })
    got = c.values.map { |v| v[:labels][:path] }.sort
    assert_equal ["/a\uFFFDb", "/bad\uFFFD", "/café", "/é16", "/\u3042"].sort, got.uniq.sort
    assert_equal 2.0, c.get(labels: { path: "/café" })
    assert(got.all? { |v| v.encoding == Encoding::UTF_8 && v.valid_encoding? })
    refute_includes @store.render, "\0"
    s = c.series(path: "/x\xFF".b)
    s.increment
    assert_equal ["/x\uFFFD"], s.label_values
    # A label name (a Hash key) of invalid UTF-8 is an unexpected label.
    assert_raises(Shmetrics::LabelError) { c.increment(labels: { "pa\xC3th" => "x" }) }
    assert c.remove(labels: { path: "/a\xFFb".b })
    assert_nil c.get(labels: { path: "/a\uFFFDb" })
  end

  def test_store_options_out_of_range_raise
    p2 = File.join(@dir, "o.shm")
    { max_families: [-1, 2**32], max_series: [-1, 2**32], max_writers: [-5, 2**32],
      mode: [-1, 2**32], label_bytes: [-1, 2**64], cells_per_writer: [-1, 2**64],
      sketch_cells_per_writer: [-1, 2**64], owner: [2**63], group: [2**63] }.each do |opt, values|
      values.each do |v|
        e = assert_raises(ArgumentError, RangeError, "#{opt}: #{v}") { Shmetrics::Store.new(p2, opt => v) }
        assert_includes e.message, opt.to_s
        refute File.exist?(p2), "#{opt}: #{v} created the store"
      end
    end
    assert_raises(TypeError) { Shmetrics::Store.new(p2, max_families: "3") }
    assert_raises(TypeError) { Shmetrics::Store.new(p2, max_families: 3.5) }
  end

  def test_family_integers_out_of_range_raise
    assert_raises(ArgumentError) { @store.counter(:ttl_neg_total, ttl: -1) }
    assert_raises(ArgumentError) { @store.summary(:age_neg, max_age: -1) }
    assert_raises(ArgumentError, RangeError) { @store.summary(:age_big, age_buckets: 2**32) }
    assert_raises(ArgumentError, RangeError) { @store.counter(:ms_neg_total, max_series: -1) }
    assert_raises(ArgumentError, RangeError) { @store.counter(:ms_big_total, max_series: 2**40) }
    assert_raises(TypeError) { @store.counter(:ttl_str_total, ttl: "5") }
    assert_raises(ArgumentError, RangeError) { Shmetrics::Family.__new(@store, { name: "k", kind: -1 }) }
    assert_raises(ArgumentError, RangeError) { Shmetrics::Family.__new(@store, { name: "k", kind: 1, cache_limit: -1 }) }
    assert_equal 0, @store.stats[:families]
  end
end
